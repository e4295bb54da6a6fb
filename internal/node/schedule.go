package node

import (
	"time"

	"github.com/synclab/synclab/pkg/core"
)

// MaxSleep bounds how long a driver lets a core that schedules its own
// ticks (core.Scheduler) go without one: housekeeping (a status that shows
// the time, a rate limiter's expiry) runs at least this often, and a core
// with nothing scheduled still sees the clock move.
const MaxSleep = time.Second

// StaleRetry is how long a driver waits before ticking again a core whose
// deadline, read right after a Tick at now, is not after now: the core did
// not move its own timer (a bug in the core). Ticking it at once would spin
// the loop; waiting StaleRetry costs what the fixed tick did.
const StaleRetry = 10 * time.Millisecond

// Scheduled reports whether the core says when it next needs Tick
// (core.Scheduler). A driver ticks a core that does not at a fixed interval.
func (n *Node) Scheduled() bool {
	_, ok := n.core.(core.Scheduler)
	return ok
}

// NextTick is the local time at which the driver must next call Tick, for
// a core that schedules its own ticks, read after the core last ran (a
// Tick, a Receive, a driver's Do) at local time now: the core's deadline,
// at most MaxSleep away. A deadline already due means at once (now),
// unless it is not after the last Tick: that Tick should have done what
// was due, so the core's timer is stale (a bug in the core, counted in
// Stats.StaleDeadlines) and the next Tick comes StaleRetry after the last.
// A core that wants Tick as soon as possible returns a time after its last
// Tick (the time of the Step that made the work). ok is false for a core
// that does not schedule its ticks, and before the first Tick: the driver
// ticks first at its own phase (a daemon one TickInterval after it
// starts), as it always did.
func (n *Node) NextTick(now time.Time) (next time.Time, ok bool) {
	s, ok := n.core.(core.Scheduler)
	if !ok || !n.ticked {
		return time.Time{}, false
	}
	limit := now.Add(MaxSleep)
	if due := n.noticeDue(); !due.IsZero() {
		limit = minTime(limit, maxTime(due, now))
	}
	if n.agree != nil {
		limit = minTime(limit, n.agreeDeadline(now))
		if n.agree.standing != StandingAgreed {
			// The core is not ticked: its deadline means nothing now.
			return limit, true
		}
	}
	dl := s.Deadline()
	switch {
	case dl.IsZero():
		return limit, true
	case !dl.After(n.lastTick):
		n.stats.StaleDeadlines++
		return n.lastTick.Add(StaleRetry), true
	case dl.Before(now):
		return now, true
	case dl.After(limit):
		return limit, true
	}
	return dl, true
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// TickDue reports whether the core, which schedules its own ticks, asks
// for one now: its deadline passed, and is after its last Tick (a Step or
// a driver's Do made work due at once: a grant a frame completed is judged
// at a reading of the clock, not at the frame's receive stamp). A driver
// that has just stepped the core, with no frame waiting, ticks it at once
// instead of arming its timer for now and ticking on the next pass: the
// same Tick, without the pass and a second write of the state. False
// before the first Tick, while the core is held back (the configurations
// do not agree), and for a core whose deadline is stale (NextTick).
func (n *Node) TickDue(now time.Time) bool {
	s, ok := n.core.(core.Scheduler)
	if !ok || !n.ticked || n.agree != nil && n.agree.standing != StandingAgreed {
		return false
	}
	dl := s.Deadline()
	return !dl.IsZero() && dl.After(n.lastTick) && !dl.After(now)
}
