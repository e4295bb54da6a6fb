package testenv

import (
	"sync"
	"time"
)

// Clock is a clock that moves only when the test advances it: what a test
// injects where the code under test reads the time (a `now func()
// time.Time` seam), so that ages, deadlines and schedules are exact
// instead of raced against the host's speed. Safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d and returns its new reading.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}
