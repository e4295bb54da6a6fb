package clock

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// rawNow reads CLOCK_MONOTONIC_RAW: the oscillator, which adjtimex does not
// touch.
func rawNow() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC_RAW, &ts); err != nil {
		// It exists on every Linux since 2.6.28; failing to read it is a
		// broken system, not an input to handle.
		panic(fmt.Sprintf("clock: reading CLOCK_MONOTONIC_RAW: %v", err))
	}
	return time.Duration(ts.Nano())
}
