package servo

import "errors"

// ErrConfig is wrapped by every error Config.Validate returns.
var ErrConfig = errors.New("servo: invalid configuration")

// Errors returned by Servo.Update for a measurement it cannot use. The
// servo's state is unchanged after any of them.
var (
	// ErrFutureMeasurement: the measurement's Time is after now.
	ErrFutureMeasurement = errors.New("servo: measurement is from the future")
	// ErrOutOfOrder: the measurement is not newer than the last one used
	// (the clock filter's rule: each sample once, never an older one).
	ErrOutOfOrder = errors.New("servo: measurement is not newer than the last one")
	// ErrBadMeasurement: a zero time or a negative root distance.
	ErrBadMeasurement = errors.New("servo: invalid measurement")
)
