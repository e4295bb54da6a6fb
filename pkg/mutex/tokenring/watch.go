package tokenring

import (
	"fmt"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/wire"
)

// Watching the neighbours. A ring needs to know whether the member it
// passes the token to is alive, and nothing more: every other failure is
// found by the protocol itself (a pass that is not acknowledged, a want
// that goes unanswered, a probe's silent members). So a member sends its
// heartbeats only to the members it watches, and is watched by them: its
// nearest successor and predecessor, and, while one of those is down, the
// next ones beyond it, up to the first that is not (the walk of the
// token's own route). An idle ring sends 2N heartbeats per interval in
// all, where heartbeats to everyone cost N(N-1) (3851 frames/s at 64
// members, issue 15).
//
// Any frame from a member is its sign of life (pkg/liveness's Detector
// keeps the times of all of them), but only a watched member can be taken
// for down, and only after DeadAfter of watching: a member that starts
// watching one beyond a dead neighbour gives it a whole DeadAfter to be
// heard, while that member, which lost the same neighbour at about the
// same time, starts sending its heartbeats here. A member nobody watches
// is presumed up until a token passed to it is not acknowledged (it is
// then skipped, as before, until heard again).

// rewatch recomputes the watched members: from this member both ways round
// the ring, every member up to and including the first that is not down.
// A member newly watched is watched from now.
func (c *Core) rewatch() {
	ms := c.cfg.Members
	n := len(ms)
	i, _ := slices.BinarySearch(ms, c.self)
	next := make(map[uint32]time.Time, 2)
	for _, step := range []int{1, n - 1} { // successors, then predecessors
		for k := 1; k < n; k++ {
			m := ms[(i+step*k)%n]
			if _, ok := next[m]; ok {
				break // met the other walk: every member is watched
			}
			since, ok := c.watching[m]
			if !ok {
				since = c.now
			}
			next[m] = since
			if !c.silentSince(m, since) {
				break
			}
		}
	}
	for m := range c.reportedDown {
		if _, ok := next[m]; !ok {
			delete(c.reportedDown, m) // no longer a neighbour: nothing more to say about it
		}
	}
	c.watching = next
}

// silentSince says whether member m, watched since since, has been silent
// for DeadAfter of watching.
func (c *Core) silentSince(m uint32, since time.Time) bool {
	return c.det != nil && c.det.State(m) == liveness.Suspect && !c.now.Before(since.Add(c.cfg.DeadAfter))
}

// down says whether member m is a watched neighbour silent for DeadAfter
// (never before the core's first Tick or Step).
func (c *Core) down(m uint32) bool {
	since, ok := c.watching[m]
	return ok && c.silentSince(m, since)
}

// watched lists the watched members, in ID order.
func (c *Core) watched() []uint32 {
	out := make([]uint32, 0, len(c.watching))
	for m := range c.watching {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// watchDeadline is when a watched member that is not down yet would be,
// unless heard.
func (c *Core) watchDeadline() time.Time {
	var ts []time.Time
	for m, since := range c.watching {
		if !c.down(m) {
			ts = append(ts, later(c.det.Expires(m), since.Add(c.cfg.DeadAfter)))
		}
	}
	return core.Earliest(ts...)
}

// heartbeat tells the watched members this one is alive.
func (c *Core) heartbeat() {
	alive := 1
	for _, m := range c.cfg.Members {
		if m != c.self && !c.down(m) {
			alive++
		}
	}
	hb := wire.Heartbeat{Interval: uint32(c.cfg.HeartbeatInterval / time.Millisecond), Alive: uint32(alive)}
	for _, m := range c.watched() {
		c.send(m, wire.KindHeartbeat, hb, false)
	}
}

// reportLiveness walks the ring again after the detector's news and turns
// what changed into the ring's events: member_down when a watched member's
// silence reaches DeadAfter, member_up when a member reported down is heard.
func (c *Core) reportLiveness() {
	c.det.Transitions() // drained: the ring reports its neighbours only
	c.rewatch()
	for _, m := range c.watched() {
		if c.down(m) && !c.reportedDown[m] {
			c.reportedDown[m] = true
			v, _ := c.det.Member(m)
			silent := c.now.Sub(v.LastHeard)
			if v.LastHeard.IsZero() {
				silent = c.now.Sub(c.begun)
			}
			c.emit(liveness.EventMemberDown, fmt.Sprintf("member %d is down: silent for %v", m, silent), "member", m)
		}
	}
}

// heardFrom notes a sign of life of m for the watch: a member reported
// down is up again, and the walk round the ring shortens.
func (c *Core) heardFrom(m uint32) {
	if !c.reportedDown[m] {
		return
	}
	delete(c.reportedDown, m)
	c.emit(liveness.EventMemberUp, fmt.Sprintf("member %d is up", m), "member", m)
	c.rewatch()
}
