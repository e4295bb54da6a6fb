package permission

import (
	"fmt"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutexcount"
	"github.com/synclab/synclab/pkg/wire"
)

// Acquire queues r at local time now (mutex.Algorithm). The grant arrives
// as a mutex.Granted outcome (and mutex.EventGranted) with the returned ID.
//
// A Lamport release held back for r's lock (Release) travels with the
// request it makes, in one frame; any other is made first.
func (c *Core) Acquire(now time.Time, r mutex.Request) (mutex.RequestID, error) {
	c.observe(now)
	checked, err := c.reqs.Check(c.self, r)
	if err != nil {
		return 0, err
	}
	if c.lamport.Now() >= wire.MaxPermStamp-floorSlack {
		c.count("clock_exhausted")
		return 0, ErrClockExhausted
	}
	l, err := c.lockFor(r.Lock, c.self)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", mutex.ErrTooManyLocks, err)
	}
	id, err := c.reqs.Enqueue(c.now, c.self, r)
	if err != nil {
		return 0, err
	}
	c.leases[id] = checked.Lease
	l.touched = c.now
	c.advance(l)
	return id, nil
}

// Release ends request id (mutex.Algorithm): a holder gives its lock back,
// a waiting request leaves the queue. A holder whose lease ended first
// lost the grant with it: ErrExpired.
//
// Lamport's release to all is not made here but later, so that the
// client has its answer while the frames travel: at the loop's next turn
// (Deadline is now) when another member's request for the lock is queued
// here, as that member waits for it; else it waits, at most
// Config.ReleaseHold, for this member's next request for the lock, and
// goes with it in one frame (Acquire). Any other call of the core makes it
// first. A release only lets the others in: one that leaves later makes
// them wait longer, never enter sooner; and none waits for a release held
// back for ReleaseHold: a request that comes meanwhile (any frame) makes
// it leave, before the acknowledgement.
func (c *Core) Release(now time.Time, id mutex.RequestID) error {
	c.observe(now)
	c.flushReleases()
	st, err := c.reqs.Release(c.now, id)
	c.drain()
	if l := c.locks[st.Lock]; l != nil {
		c.holdRelease = c.cfg.ReleaseHold()
		if c.othersQueued(l) {
			c.holdRelease = 0
		}
		c.settle(l)
		c.holdRelease = -1
	}
	return err
}

// othersQueued says whether another member's request for l is in this
// member's queue (Lamport): its release is then awaited, and leaves at once.
func (c *Core) othersQueued(l *lock) bool {
	for _, w := range l.want {
		if w != 0 {
			return true
		}
	}
	return false
}

// flushReleases makes the Lamport releases a client's Release held back,
// before any other frame: every frame is stamped when it is made, and a
// request made after a release must be stamped after it, or the receivers
// would take the request for stale.
func (c *Core) flushReleases() {
	rs := c.releases
	c.releases = nil
	for _, r := range rs {
		if l := c.locks[r.name]; l != nil {
			c.sendRelease(l, r.stamp)
		}
	}
}

// takeRelease takes the release of lock name held back, if any, out of
// the held ones: its stamp (0: none).
func (c *Core) takeRelease(name string) uint64 {
	for i, r := range c.releases {
		if r.name == name {
			c.releases = slices.Delete(c.releases, i, i+1)
			return r.stamp
		}
	}
	return 0
}

// Renew asks that granted request id's lease run lease from now
// (mutex.Algorithm). It is confirmed once this member has heard a
// majority since it was asked: the heartbeat it sends at once asks the
// others to answer (a round trip), and an older member's own heartbeat
// does as well. A lease that ends first is lost.
func (c *Core) Renew(now time.Time, id mutex.RequestID, lease time.Duration) error {
	c.observe(now)
	c.flushReleases()
	err := c.reqs.Renew(c.now, id, lease)
	if err == nil {
		if lease != 0 {
			c.leases[id] = lease
		}
		c.renewAsked[id] = c.now
	}
	c.drain()
	for _, l := range c.locks {
		c.settle(l) // a renewal after the lease ran out lost the lock
	}
	if c.renewing() {
		// Announced at once, asking for acknowledgements: the renewal
		// waits for a majority heard since it was asked, and, bounded,
		// for that majority's acknowledgement of its end (lease.go).
		c.sendBeat(core.Broadcast)
	}
	return err
}

// drain turns the table's outcomes into the core's outcomes and events;
// a request that ended keeps no lease.
func (c *Core) drain() {
	mutexcount.Drain(c.reqs, &c.outcomes, &c.events, mutexcount.Grants{Epoch: "incarnation"}, func(id mutex.RequestID) {
		delete(c.leases, id)
		delete(c.renewAsked, id)
	})
}

// settle ends this member's request for l when nothing of it is left in
// the table (the holder released or lost it, or every waiting client
// withdrew), then moves on.
func (c *Core) settle(l *lock) {
	if l.stamp != 0 && !c.reqs.Held(l.name) && (l.granted || c.reqs.Waiting(l.name) == 0) {
		c.exit(l)
	}
	c.advance(l)
}

// advance does what lock l needs now: a request for the client at the head
// of its queue, a grant when every answer is in, a renewal to confirm.
func (c *Core) advance(l *lock) {
	if l.stamp != 0 && !l.granted && c.reqs.Waiting(l.name) == 0 {
		c.exit(l) // every client withdrew
	}
	if l.stamp == 0 && c.reqs.Waiting(l.name) > 0 && !c.reqs.Held(l.name) && !c.cutOff && !c.rejoining() {
		c.request(l)
	}
	if l.stamp != 0 && !l.granted {
		c.tryGrant(l)
	}
	if c.reqs.Renewing(l.name) && c.freshMajority() {
		c.confirm(l.name)
	}
}

// request stamps a new request for l and sends it to every other member;
// with the release of l held back, if any, in one frame (a requeue: the
// release stamped one below the request).
func (c *Core) request(l *lock) {
	if c.lamport.Now() >= wire.MaxPermStamp-floorSlack {
		c.flushReleases()
		c.count("clock_exhausted")
		for _, id := range c.reqs.Grantable(l.name) {
			c.reqs.Refuse(id, "clock_exhausted")
		}
		c.drain()
		return
	}
	if c.cfg.Variant == Bakery {
		c.doorway(l)
		return
	}
	released := c.takeRelease(l.name)
	c.flushReleases() // the others' releases are stamped before this request
	if released != 0 {
		c.lamport.Send() // the release's stamp, one below the request's
		c.count("requeues_sent")
	}
	l.stamp = c.lamport.Send()
	l.granted = false
	clear(l.got)
	clear(l.sentAt)
	c.count("requests_sent")
	if c.cfg.Variant == RicartAgrawala {
		// Requests this member deferred because its own came first may
		// come first now.
		c.answerDeferred(l, false)
	}
	for _, m := range c.others() {
		if released != 0 {
			c.sendRequeue(l, m, released)
			continue
		}
		c.sendRequest(l, m, l.stamp)
	}
	// Heard by every member: it counts as this member's (busy) heartbeat.
	c.saidBusy = true
	c.beaten()
}

// sendRequest sends l's request to m; lamport is its stamp on the first
// send (one logical send, the same in every frame), 0 on a retry.
func (c *Core) sendRequest(l *lock, m uint32, lamport uint64) {
	kind := wire.KindLamportRequest
	switch c.cfg.Variant {
	case RicartAgrawala:
		kind = wire.KindRARequest
	case Bakery:
		kind = l.phase.read()
	}
	at := c.send(m, kind, wire.PermRequest{Name: l.name, Incarnation: c.inc, Stamp: l.stamp, Fence: l.known}, lamport)
	l.sentAt[m] = c.now
	if kind == wire.KindLamportRequest {
		c.lend(l, m, at) // stamped after any request of m it did not see yet
	}
}

// sendRequeue sends m the release of l's request stamped released and
// l's new request, in one frame stamped with the new request's stamp.
func (c *Core) sendRequeue(l *lock, m uint32, released uint64) {
	at := c.send(m, wire.KindLamportRequeue, wire.PermRequeue{
		PermRequest: wire.PermRequest{Name: l.name, Incarnation: c.inc, Stamp: l.stamp, Fence: l.known},
		Released:    released}, l.stamp)
	l.sentAt[m] = c.now
	c.lend(l, m, at) // the release, and the request, stamped after any request of m it did not see yet
}

// needs says whether l's request still needs something from member m: its
// answer (a reply; a frame stamped after the request), or, in Lamport's
// queue, word that an earlier request of m ended.
func (c *Core) needs(l *lock, m uint32) bool {
	if !l.got[m] {
		return true
	}
	if c.cfg.Variant == Lamport {
		if w := l.want[m]; w != 0 && before(w, m, l.stamp, c.self) {
			return true
		}
	}
	return false
}

// resend asks again every live member whose answer l's request has lacked
// for RetryInterval: it repairs a lost request, answer or release.
func (c *Core) resend(l *lock) {
	if l.stamp == 0 || l.granted {
		return
	}
	for _, m := range c.others() {
		if c.givenUp(m) || !c.needs(l, m) || c.now.Sub(l.sentAt[m]) < c.cfg.RetryInterval {
			continue
		}
		c.count("requests_resent")
		c.forceRelay = true // the answer may be lost on a broken link: ask both ways
		c.sendRequest(l, m, 0)
		c.forceRelay = false
	}
}

// tryGrant grants l to the client at the head of its queue when the
// algorithm allows: every member not taken for dead answered (and, in
// Lamport's queue, no earlier request of a live member waits), those
// answers and this member make a majority, a majority was heard within
// FreshWindow, and the request's fence exceeds every fence known.
func (c *Core) tryGrant(l *lock) {
	if c.cutOff || !c.freshMajority() {
		return
	}
	n := 1
	for _, m := range c.others() {
		if c.givenUp(m) {
			continue
		}
		if c.needs(l, m) {
			return
		}
		n++
	}
	if c.cfg.Variant == Bakery && l.phase != phaseTicket {
		c.nextRead(l)
		return
	}
	if n < c.majority {
		return
	}
	fence := c.fence(l.stamp, c.self)
	if fence <= l.known {
		// A member given up for dead granted a fence above this
		// request's (its stamp came before that member's grant reached
		// us): ask again with a stamp above it, which the clock now is.
		c.count("requests_reissued")
		c.emit(EventReissued, fmt.Sprintf("%s: request stamped %d is below the known fence %d: asking again", l.name, l.stamp, l.known),
			"lock", l.name, "stamp", l.stamp, "known", l.known)
		c.exit(l)
		c.lamport.Witness(l.known >> 16)
		c.request(l)
		return
	}
	ids := c.reqs.Grantable(l.name)
	if len(ids) == 0 {
		return
	}
	if c.stamped {
		// Every answer is in, but now is the last one's receive stamp: a
		// loop that read it late (a busy host; a process paused with the
		// answers already read, or stamped by the kernel on arrival) would
		// report a grant whose lease, counted from the stamp, had already
		// ended. The grant is made at the next reading of the clock (the
		// Tick Deadline asks for at once, or a client's call), where every
		// condition above is judged again and the lease counts from it,
		// capped by the majority last heard (leaseFrom) as every lease is.
		c.grantDue = true
		return
	}
	if _, err := c.reqs.GrantFrom(c.now, c.leaseFrom(c.leases[ids[0]]), ids[0], fence, uint64(c.inc)); err != nil {
		c.bugs.Report(&c.events, "grant", err)
		return
	}
	l.granted = true
	l.known = fence
	c.drain()
}

// exit ends this member's request for l: Ricart-Agrawala and the bakery
// answer every request (ticket read) they deferred, and the bakery, left
// in its doorway, the reads of its choosing; Lamport's queue sends the
// release to all.
func (c *Core) exit(l *lock) {
	old, choosing := l.stamp, l.phase == phaseDoorway
	l.stamp, l.granted, l.phase = 0, false, 0
	clear(l.got)
	clear(l.sentAt)
	l.touched = c.now
	if old == 0 {
		return
	}
	if !c.busy() {
		c.idleFrom = c.now
	}
	if c.cfg.Variant != Lamport {
		c.answerDeferred(l, true)
		if choosing {
			c.answerChoosing(l) // no longer choosing either
		}
		return
	}
	if c.holdRelease >= 0 {
		due := c.now.Add(c.holdRelease)
		if len(c.releases) == 0 || due.Before(c.releaseDue) {
			c.releaseDue = due
		}
		c.releases = append(c.releases, release{name: l.name, stamp: old})
		return
	}
	c.sendRelease(l, old)
}

// sendRelease sends Lamport's release of l's request stamped stamp to every
// other member.
func (c *Core) sendRelease(l *lock, stamp uint64) {
	for _, m := range c.others() {
		c.lend(l, m, c.send(m, wire.KindLamportRelease, wire.PermRequest{Name: l.name, Incarnation: c.inc, Stamp: stamp, Fence: l.known}, 0))
	}
}
