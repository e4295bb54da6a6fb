package wire

import (
	"testing"
	"time"
)

// TestNTPShortNeverUnderstates: a root delay or dispersion served must not
// say less than the server knows. Rounding to the nearest 2^-16 s said up
// to 7.6 us less (7 us went out as 0).
func TestNTPShortNeverUnderstates(t *testing.T) {
	for _, d := range []time.Duration{time.Nanosecond, 7 * time.Microsecond, 22 * time.Microsecond, 1*time.Millisecond + 7*time.Microsecond, time.Second - time.Nanosecond} {
		if got := NTPShortFromDuration(d).Duration(); got < d {
			t.Errorf("%v served as %v", d, got)
		}
	}
}
