//go:build !linux

package clock

import "time"

var processStart = time.Now()

// rawNow falls back to Go's monotonic clock.
func rawNow() time.Duration { return time.Since(processStart) }
