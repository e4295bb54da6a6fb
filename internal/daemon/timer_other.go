//go:build !linux

package daemon

import "time"

// newLoopTimer makes the loop's timer: a Go timer (timer_linux.go says why
// Linux has its own).
func newLoopTimer(d time.Duration) loopTimer { return newRealTimer(d) }
