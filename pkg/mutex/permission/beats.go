package permission

import (
	"time"

	"github.com/synclab/synclab/pkg/core"
)

// When a frame heard directly counts toward this member's majority (the
// cut-off, grants, leases): the package doc's "Links" argues the rule,
// this file is its mechanism.

// beat is one of this member's heartbeats to all (or a request to all,
// which counts as one): when it left, and when the next was due as the
// schedule stood right after it.
type beat struct {
	at, due time.Time
}

// maxBeats is how many beats countFor looks back over: the covering
// terms reach back a HeartbeatInterval of beat spacings (five busy
// beats), and a frame read late (a loop that ticked before it read what
// its kernel kept) may be stamped a few beats back.
const maxBeats = 16

// beaten notes that a heartbeat (or a request) left to every member now.
func (c *Core) beaten() {
	c.lastBeat = c.now
	c.beats = append(c.beats, beat{at: c.now, due: c.nextBeat()})
	if len(c.beats) > maxBeats {
		c.beats = c.beats[len(c.beats)-maxBeats:]
	}
}

// inFlight is how long a frame may have been on its way when its link
// failed and still count as sent before: the beats countFor weighs are
// those sent by its kernel stamp less this. A quarter of Margin (50 ms
// with the defaults), far above a LAN's delay and a loaded loop's lag.
func (c *Core) inFlight() time.Duration { return c.cfg.Margin / 4 }

// countFor is the instant a frame received directly, stamped r by the
// kernel, counts for toward this member's majority, whenever it is read
// (before or after the ticks of a loop that ran late): r, but no later
// than inFlight after any of
//
//	b(j) + sp(j) + ... + sp(1)   (j = 1, and each j whose sum of spacings is within HeartbeatInterval)
//
// where b(1), b(2), ... are this member's beats sent by r - inFlight,
// latest first, and sp(i) is the spacing due after b(i) when it left
// (the next beat's due time less b(i)). With beats on time each term is
// the next beat's due time, at or after r - inFlight, and the frame
// counts at r. A beat sent late (a loop that stalled, or was busy)
// shortens every term across the gap by its lateness, until beats on
// time since span a HeartbeatInterval; the inFlight lag keeps a late
// beat that the others may not have heard (a partition that began
// just before it) from crediting the frames in flight across it.
//
// The package doc says why that bound holds: the others of a majority M
// last heard this member at F no earlier than its last beat before the
// link failed that reached one of them (the beats a working link loses
// are those BusyBeatsCovered allows), and every term from that beat on is
// at most F plus a HeartbeatInterval.
//
// ok is false for a frame stamped before every beat kept (read many beats
// after it came): it counts for nothing.
func (c *Core) countFor(r time.Time) (at time.Time, ok bool) {
	if len(c.beats) == 0 {
		return r, true // nothing sent yet: nobody hears this member, nothing to bound
	}
	t := r.Add(-c.inFlight())
	i := len(c.beats) - 1
	for i >= 0 && c.beats[i].at.After(t) {
		i--
	}
	if i < 0 {
		if len(c.beats) < maxBeats {
			return r, true // sent before this member's first beat
		}
		return time.Time{}, false
	}
	// The due times as they stood when each beat left, not as they stand
	// now (a request makes this member busy, and its beats come sooner):
	// the count of a frame must not depend on when it is read.
	bound := c.beats[i].due
	span := c.beats[i].due.Sub(c.beats[i].at)
	for j := i - 1; j >= 0; j-- {
		span += c.beats[j].due.Sub(c.beats[j].at)
		if span > c.cfg.HeartbeatInterval {
			break
		}
		bound = core.Earliest(bound, c.beats[j].at.Add(span))
	}
	return core.Earliest(r, bound.Add(c.inFlight())), true
}
