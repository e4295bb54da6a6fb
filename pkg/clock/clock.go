package clock

import (
	"errors"
	"time"
)

// Clock is a wall clock that can be read and corrected. The Linux
// implementation disciplines CLOCK_REALTIME through adjtimex; Sim is a
// simulated clock driven by a true-time source (real time in a daemon,
// virtual time in the simulator).
//
// Implementations are safe for concurrent use: the daemon loop corrects the
// clock while transport goroutines read it to stamp packets.
type Clock interface {
	// Now reads the clock.
	Now() time.Time
	// FromKernel converts a kernel CLOCK_REALTIME timestamp (a packet's
	// receive time) into this clock's time scale.
	FromKernel(t time.Time) time.Time
	// Slew moves the clock by offset gradually (positive: forward), never
	// faster than the clock's maximum slew rate. A new slew replaces the
	// remainder of the previous one.
	Slew(offset time.Duration) error
	// Step jumps the clock by offset. A negative offset is refused with
	// ErrBackwardStep unless the clock was built to allow it.
	Step(offset time.Duration) error
	// SetFrequency sets the long-term frequency correction in ppm
	// (positive: the clock runs faster), replacing the previous one.
	SetFrequency(ppm float64) error
	// SetSync records what the discipline knows: whether the clock is
	// synchronised and its estimated and maximum error.
	SetSync(synced bool, estErr, maxErr time.Duration) error
	// State reports the clock's discipline state.
	State() (State, error)
}

// State is what a clock reports about its discipline.
type State struct {
	Synchronized bool          // the discipline is locked to a source
	Frequency    float64       // current frequency correction, ppm
	SlewLeft     time.Duration // part of the last Slew not yet applied
	EstError     time.Duration // estimated error
	MaxError     time.Duration // maximum error
}

// ErrBackwardStep is returned by Step for a negative offset on a clock that
// must never go backwards.
var ErrBackwardStep = errors.New("clock: refusing to step the clock backwards")

// AdjustKind says what an Adjustment does.
type AdjustKind uint8

const (
	AdjustSlew      AdjustKind = iota + 1 // Slew(Offset)
	AdjustStep                            // Step(Offset)
	AdjustFrequency                       // SetFrequency(PPM)
	AdjustSync                            // SetSync(Synced, EstError, MaxError)
)

func (k AdjustKind) String() string {
	switch k {
	case AdjustSlew:
		return "slew"
	case AdjustStep:
		return "step"
	case AdjustFrequency:
		return "frequency"
	case AdjustSync:
		return "sync"
	}
	return "unknown"
}

// Adjustment is one correction decided by a pure servo, applied by the
// daemon (or the simulator) with Apply. Keeping it a value lets cores decide
// without touching a clock.
type Adjustment struct {
	Kind     AdjustKind
	Offset   time.Duration // AdjustSlew, AdjustStep
	PPM      float64       // AdjustFrequency
	Synced   bool          // AdjustSync
	EstError time.Duration // AdjustSync
	MaxError time.Duration // AdjustSync
}

// Apply performs a on c.
func Apply(c Clock, a Adjustment) error {
	switch a.Kind {
	case AdjustSlew:
		return c.Slew(a.Offset)
	case AdjustStep:
		return c.Step(a.Offset)
	case AdjustFrequency:
		return c.SetFrequency(a.PPM)
	case AdjustSync:
		return c.SetSync(a.Synced, a.EstError, a.MaxError)
	}
	return errors.New("clock: unknown adjustment kind " + a.Kind.String())
}
