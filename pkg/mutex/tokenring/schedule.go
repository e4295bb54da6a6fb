package tokenring

import (
	"time"

	"github.com/synclab/synclab/pkg/core"
)

// Deadline is the earliest local time at which Tick has something to do
// (core.Scheduler): the next heartbeat, the moment a silent member is
// taken for down, and for each lock the end of a lease, an
// acknowledgement's or a probe's timeout, the end of a regenerated token's
// hold while a request waits, the moment a waiting member looks for the
// token, and the reclaiming of an idle entry; and at once after a Step
// that completed a grant or a renewal, which is made at a reading of the
// clock, not on the frame's stamp (tryGrant). Tick at any earlier time
// changes nothing. Before its first Tick or Step the core has no clock
// yet: the deadline is then in the past, so the driver ticks it at once.
func (c *Core) Deadline() time.Time {
	if !c.started {
		return time.Time{}.Add(1)
	}
	if !c.catchUp.IsZero() {
		return c.catchUp // everything else is due already
	}
	d := c.timersDeadline()
	if c.grantDue {
		// A reading of the clock at once (after the last Tick's, which
		// may have read c.now): a grant or renewal a frame completed is
		// judged there (tryGrant).
		d = core.Earliest(d, c.now.Add(time.Nanosecond))
	}
	return core.Earliest(d, c.unsaved.Deadline(c.now))
}

// timersDeadline is when the core's timers next need a Tick.
func (c *Core) timersDeadline() time.Time {
	// The detector's own deadline too: it takes a Check much later than it
	// asked for as a stall of this member (pkg/liveness).
	ts := []time.Time{c.nextBeat, c.reqs.Deadline(), c.det.Deadline(), c.watchDeadline()}
	for _, l := range c.locks {
		ts = append(ts, c.lockDeadline(l))
	}
	return core.Earliest(ts...)
}

func (c *Core) lockDeadline(l *lock) time.Time {
	var ts []time.Time
	ts = append(ts, l.handoff.Deadline())
	ts = append(ts, l.prepareAt)
	for _, p := range []*probe{l.locate, l.prepare, l.check, l.vouch} {
		if p != nil {
			ts = append(ts, p.Deadline())
		}
	}
	waiting := c.reqs.Waiting(l.name) > 0
	if l.tok != nil && waiting && !c.reqs.Held(l.name) && l.tok.holdUntil.After(c.now) {
		ts = append(ts, l.tok.holdUntil)
		if ahead := l.tok.holdUntil.Add(-c.checkAhead()); ahead.After(c.now) {
			ts = append(ts, ahead) // the first grant's check (tryGrant)
		}
	}
	if l.tok == nil && l.handoff.Len() == 0 && waiting && !l.lossAt.IsZero() && l.locate == nil && l.prepare == nil && l.prepareAt.IsZero() {
		ts = append(ts, later(l.lossAt, l.backoff))
	}
	if l.promised <= c.floor && c.quiet(l) {
		ts = append(ts, later(l.used.Add(c.cfg.LossTimeout), l.outstanding))
	}
	return core.Earliest(ts...)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
