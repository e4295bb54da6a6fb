//go:build !linux

package clock

import "time"

// System is the host's real clock. It can only be disciplined on Linux:
// elsewhere NewSystem fails with ErrUnsupported and a System is never built.
type System struct{}

var _ Clock = (*System)(nil)

// NewSystem fails with ErrUnsupported: adjtimex is Linux only.
func NewSystem(opts SystemOptions) (*System, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return nil, ErrUnsupported
}

func (*System) Now() time.Time                                   { return time.Now().Round(0) }
func (*System) FromKernel(t time.Time) time.Time                 { return t }
func (*System) Slew(time.Duration) error                         { return ErrUnsupported }
func (*System) Step(time.Duration) error                         { return ErrUnsupported }
func (*System) SetFrequency(float64) error                       { return ErrUnsupported }
func (*System) SetSync(bool, time.Duration, time.Duration) error { return ErrUnsupported }
func (*System) State() (State, error)                            { return State{}, ErrUnsupported }
func (*System) Close() error                                     { return nil }
