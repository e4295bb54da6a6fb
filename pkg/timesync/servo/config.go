package servo

import (
	"fmt"
	"math"
	"time"
)

// Defaults of Config.
const (
	// DefaultMaxSlewPPM is chrony's default maxslewrate: 83,333 ppm (1/12
	// s per second), reached on Linux by moving the tick length.
	DefaultMaxSlewPPM = 83333.0
	// DefaultMaxFrequencyPPM is the kernel PLL's frequency limit (MAXFREQ).
	DefaultMaxFrequencyPPM = 500.0
	// DefaultMaxDriftPPM is RFC 5905's PHI: the frequency wander a good
	// oscillator stays within, and the rate the error bound grows at.
	DefaultMaxDriftPPM = 15.0
	// DefaultFrequencyWindow is how many recent measurements the frequency
	// regression uses.
	DefaultFrequencyWindow = 16
	// DefaultStepLimit is how many first updates may step when stepping is
	// enabled (chrony's "makestep 1 3").
	DefaultStepLimit = 3
)

// Config configures a Servo. The zero value is valid: Validate fills the
// defaults.
type Config struct {
	// MaxSlewPPM is the rate at which the clock slews, ppm (default
	// 83333). It must match the clock being driven (clock.SimConfig
	// MaxSlewPPM, or the system clock's tick-based slew): the servo
	// predicts when a slew completes to keep its error bound and its
	// frequency estimate exact.
	MaxSlewPPM float64
	// MaxFrequencyPPM bounds the frequency correction, ppm (default 500,
	// the kernel's limit).
	MaxFrequencyPPM float64
	// MaxDriftPPM is the assumed bound on unmodelled frequency change
	// (wander, temperature), ppm (default 15). The error bound grows at
	// this rate plus the frequency estimate's own uncertainty.
	MaxDriftPPM float64
	// Frequency is the initial frequency correction, ppm (default 0): the
	// value Servo.Frequency returned before the last shutdown, restored
	// from the state directory so the clock does not re-learn its drift.
	Frequency float64
	// FrequencyError is the worst-case error of Frequency, ppm, as
	// State().FrequencyError reported it when Frequency was saved. When it
	// is set, a regression replaces the restored Frequency only once its
	// own worst-case error is smaller (after adding RestoredWanderPPM for
	// what may have changed since the save): the first fits after a
	// restart, over two or three points still carrying the large root
	// distances of a filling clock filter, must not throw away a frequency
	// learned over hours. Zero: Frequency is a guess that the first
	// regression replaces.
	FrequencyError float64
	// StepThreshold, when positive, lets the servo step the clock forward
	// by offsets larger than it during the first StepLimit updates
	// (chrony's makestep). Zero (the default) never steps: every offset is
	// slewed. The clock is never stepped backwards whatever this says.
	StepThreshold time.Duration
	// StepLimit is the number of first updates during which a step is
	// allowed (default 3; ignored when StepThreshold is 0).
	StepLimit int
	// PhaseGain is the fraction of each measured offset corrected by one
	// update, in (0, 1] (default 1: slew the whole offset, as chrony
	// does). Lower values average measurement noise at the cost of
	// convergence time.
	PhaseGain float64
	// FrequencyWindow is the number of recent measurements the frequency
	// is estimated from by linear regression, at least 2 (default 16).
	// Longer windows average noise, shorter ones follow wander.
	FrequencyWindow int
	// MeasureOnly runs the servo open loop (timed run --no-adjust): it
	// estimates the offset, the drift and the bound of a clock that
	// nobody corrects, and commands nothing. Update returns no
	// adjustments and a zero Correction, Pending and Slewed are zero (so
	// samples are taken as measured and the filters are never shifted),
	// Offset and Bound predict the untouched clock (drifting at the
	// estimated drift), and Frequency is the correction it would apply
	// (minus the drift), not one in force. Frequency and FrequencyError
	// of a disciplined run do not describe such a clock: leave them zero.
	MeasureOnly bool
}

// Validate fills defaults for zero fields and rejects impossible values.
func (c *Config) Validate() error {
	if c.MaxSlewPPM == 0 {
		c.MaxSlewPPM = DefaultMaxSlewPPM
	}
	if c.MaxFrequencyPPM == 0 {
		c.MaxFrequencyPPM = DefaultMaxFrequencyPPM
	}
	if c.MaxDriftPPM == 0 {
		c.MaxDriftPPM = DefaultMaxDriftPPM
	}
	if c.StepLimit == 0 {
		c.StepLimit = DefaultStepLimit
	}
	if c.PhaseGain == 0 {
		c.PhaseGain = 1
	}
	if c.FrequencyWindow == 0 {
		c.FrequencyWindow = DefaultFrequencyWindow
	}
	switch {
	case !finite(c.MaxSlewPPM) || c.MaxSlewPPM <= 0 || c.MaxSlewPPM >= 1e6:
		return fmt.Errorf("%w: max slew %g ppm must be within (0, 1e6)", ErrConfig, c.MaxSlewPPM)
	case !finite(c.MaxFrequencyPPM) || c.MaxFrequencyPPM <= 0 || c.MaxFrequencyPPM >= 1e6:
		return fmt.Errorf("%w: max frequency %g ppm must be within (0, 1e6)", ErrConfig, c.MaxFrequencyPPM)
	case !finite(c.MaxDriftPPM) || c.MaxDriftPPM < 0:
		return fmt.Errorf("%w: max drift %g ppm must be positive", ErrConfig, c.MaxDriftPPM)
	case !finite(c.FrequencyError) || c.FrequencyError < 0:
		return fmt.Errorf("%w: frequency error %g ppm must be finite and >= 0", ErrConfig, c.FrequencyError)
	case !finite(c.Frequency) || math.Abs(c.Frequency) > c.MaxFrequencyPPM:
		return fmt.Errorf("%w: initial frequency %g ppm is beyond ±%g ppm (a corrupt drift file?)", ErrConfig, c.Frequency, c.MaxFrequencyPPM)
	case c.StepThreshold < 0:
		return fmt.Errorf("%w: step threshold %v must not be negative (0 disables stepping)", ErrConfig, c.StepThreshold)
	case c.StepLimit < 0:
		return fmt.Errorf("%w: step limit %d must not be negative", ErrConfig, c.StepLimit)
	case !finite(c.PhaseGain) || c.PhaseGain <= 0 || c.PhaseGain > 1:
		return fmt.Errorf("%w: phase gain %g must be within (0, 1]", ErrConfig, c.PhaseGain)
	case c.FrequencyWindow < 2:
		return fmt.Errorf("%w: frequency window %d must be at least 2", ErrConfig, c.FrequencyWindow)
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
