package liveness

import (
	"fmt"
	"time"
)

// The duration checks every core's Config.validate shares, mutual
// exclusion and election alike. Each error names the field and its value,
// without a package prefix: the caller wraps it in its own error.

// Duration is one duration field of a Config: its name, as the errors
// call it, where it is, and its default.
type Duration struct {
	Name  string
	Value *time.Duration
	// Default replaces a zero Value; a zero Default leaves it zero for the
	// caller to derive from other fields.
	Default time.Duration
}

// FillDurations refuses a negative duration and gives each zero one its
// default, in order.
func FillDurations(fields ...Duration) error {
	for _, f := range fields {
		switch {
		case *f.Value < 0:
			return fmt.Errorf("%s %v is negative", f.Name, *f.Value)
		case *f.Value == 0:
			*f.Value = f.Default
		}
	}
	return nil
}

// CheckTimers runs CheckTimeout, the one range check of protocol timers,
// on each timer in order; the error wraps ErrTimeoutRange.
func CheckTimers(timers ...Duration) error {
	for _, t := range timers {
		if err := CheckTimeout(t.Name, *t.Value); err != nil {
			return err
		}
	}
	return nil
}

// FillTimers gives each zero timer its default and checks it with
// CheckTimeout, in order (a negative one is out of range): for a Config
// whose every duration is a protocol timer.
func FillTimers(timers ...Duration) error {
	for _, t := range timers {
		if *t.Value == 0 {
			*t.Value = t.Default
		}
		if err := CheckTimeout(t.Name, *t.Value); err != nil {
			return err
		}
	}
	return nil
}
