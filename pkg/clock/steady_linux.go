package clock

import (
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawNow reads CLOCK_MONOTONIC_RAW: the oscillator, which adjtimex does not
// touch.
//
// It is a raw syscall: Go's vDSO reads cover only the clocks the runtime
// uses, so this one costs a syscall per reading (mutexd reads it several
// times per frame), and clock_gettime never blocks, so the scheduler need
// not hear of it. Through unix.ClockGettime each reading entered and left
// the scheduler's syscall state, which wakes the runtime's monitor thread
// whenever it sleeps (every P idle, as a daemon is between frames): a
// thread wake-up, and its spin, per frame.
func rawNow() time.Duration {
	var ts unix.Timespec
	if _, _, e := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_MONOTONIC_RAW, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		// It exists on every Linux since 2.6.28; failing to read it is a
		// broken system, not an input to handle.
		panic(fmt.Sprintf("clock: reading CLOCK_MONOTONIC_RAW: %v", e))
	}
	return time.Duration(ts.Nano())
}
