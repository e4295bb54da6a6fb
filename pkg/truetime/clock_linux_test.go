package truetime

import (
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkClockGettime is clock_gettime(CLOCK_REALTIME) as a system
// call (golang.org/x/sys/unix does not use the vDSO): what a read would
// cost if it entered the kernel.
func BenchmarkClockGettime(b *testing.B) {
	var ts unix.Timespec
	for b.Loop() {
		if err := unix.ClockGettime(unix.CLOCK_REALTIME, &ts); err != nil {
			b.Fatal(err)
		}
	}
}
