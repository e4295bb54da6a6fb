package clock

import (
	"fmt"
	"math"
)

// SystemOptions configures System, the host's real clock.
type SystemOptions struct {
	// MaxSlewPPM is the fastest large offsets are slewed, ppm (default
	// 83333, chrony's maxslewrate; at most 100000, the kernel's ±10% tick
	// range).
	MaxSlewPPM float64
	// AllowBackwardStep lets Step move the clock backwards.
	AllowBackwardStep bool
	// ReadOnly makes the clock read-only: Now, FromKernel and State work,
	// every write returns ErrReadOnly. timed --no-adjust and every test use
	// it.
	ReadOnly bool
}

// maxSystemSlewPPM is the kernel's tick range: ±10% of the nominal tick.
const maxSystemSlewPPM = 100000.0

// validate fills defaults and rejects impossible values.
func (o *SystemOptions) validate() error {
	if o.MaxSlewPPM == 0 {
		o.MaxSlewPPM = DefaultMaxSlewPPM
	}
	if math.IsNaN(o.MaxSlewPPM) || o.MaxSlewPPM <= 0 || o.MaxSlewPPM > maxSystemSlewPPM {
		return fmt.Errorf("clock: max slew %g ppm: must be within (0, %g]", o.MaxSlewPPM, maxSystemSlewPPM)
	}
	return nil
}
