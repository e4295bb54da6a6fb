package permission

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/wire"
)

// EventRenewalUnacked: a bounded member's renewal waited RetryInterval
// for a majority's acknowledgement of its end ("acknowledged_by"). At
// WARN, once per renewal.
const EventRenewalUnacked = "renewal_unacknowledged"

// EventEndPastTimeout: the end of a silent member's leases that a majority
// vouches for comes, with the margin, after its timeout (DeadAfter after
// its last frame, by which every lease it may hold has ended), which no
// member of this build announces: the end is not waited for, and the
// member is waited for DeadAfter as without one. At WARN, once per
// silence.
const EventEndPastTimeout = "lease_end_past_timeout"

// Lease ends: how a waiter stops waiting for a crashed holder when its
// leases have ended, not a whole lease after the holder was last heard.
// The package doc ("Lease ends") argues the rule; this file is its
// mechanism.
//
// Announcements. A busy heartbeat is the extended wire.PermHeartbeat: it
// announces annEnd, an end by which every lease this member granted or
// renewed has ended (its leases' expiries, its restart or stall hold, and
// the end a pending renewal asks; never lower than an earlier
// announcement's), whether a request of its is waiting (Pending: a grant
// may come that the end does not cover), and whether it bounds its
// renewals (Bounded, below). Each receiver keeps the newest it took
// (peer.ann) and, when AckWanted, acknowledges it (a heartbeat to the
// announcer, Ack its Lamport time).
//
// Bounded renewals. Once a majority (this member included) acknowledged
// one of its announcements, a member is bounded for the rest of its
// incarnation: it confirms a renewal only up to ackedEnd, the highest end
// a majority acknowledged (the renewal is announced at once and waits a
// round trip). Before that (a cluster whose majority runs an older
// mutexd, which neither parses nor acknowledges an announcement) it
// renews as before and its announcements say Bounded false, which nobody
// counts on. A member never goes back from bounded to unbounded in an
// incarnation: a majority that missed the change would count on ends it
// no longer keeps.
//
// Covering. A member vouches for member m's end (covers) when the newest
// announcement of m it took is Bounded, not Pending, stamped after every
// request frame of m it took, and it is not itself cut off, rejoining, or
// unsure what m was granted without it (lentBefore). Its probe answers
// say so (the extended wire.PermProbeReply, to members that send extended
// heartbeats), with the time left to that end.

// announced is one of this member's announcements: its Lamport time and
// the end it announced.
type announced struct {
	stamp uint64
	end   time.Time
}

// heardLease is the newest announcement of a member this member took.
type heardLease struct {
	stamp            uint64    // its frame's Lamport time (0: none)
	end              time.Time // on this member's clock, padded
	bounded, pending bool
}

// maxAnnounced bounds the announcements kept for their acknowledgements:
// a busy member announces five times a heartbeat.
const maxAnnounced = 64

// leaseEnd is the latest end of any lease this member may have given and
// of any it is asked to renew: the end an announcement must cover.
func (c *Core) leaseEnd() time.Time {
	end := c.annEnd
	if c.busyUntil.After(end) {
		end = c.busyUntil
	}
	for _, name := range slices.Sorted(maps.Keys(c.locks)) {
		if e := c.reqs.Expiry(name); e.After(end) {
			end = e
		}
		if !c.reqs.Renewing(name) {
			continue
		}
		for _, id := range c.reqs.Holders(name) {
			if e := c.now.Add(c.leaseOf(id)); e.After(end) {
				end = e
			}
		}
	}
	return end
}

// leaseOf is the lease request id asked (its last renewal's).
func (c *Core) leaseOf(id mutex.RequestID) time.Duration {
	if l := c.leases[id]; l > 0 {
		return l
	}
	return c.cfg.MaxLease
}

// pending says whether a request of this member waits for its grant.
func (c *Core) pending() bool {
	for _, l := range c.locks {
		if l.stamp != 0 && !l.granted {
			return true
		}
	}
	return false
}

// renewing says whether a renewal of this member's waits.
func (c *Core) renewing() bool {
	for _, l := range c.locks {
		if c.reqs.Renewing(l.name) {
			return true
		}
	}
	return false
}

// announce fills hb's announcement (the extended form).
func (c *Core) announce(hb *wire.PermHeartbeat) {
	c.annEnd = c.leaseEnd()
	hb.Ext, hb.Bounded, hb.Pending = true, c.bounded, c.pending()
	hb.EndMS = ceilMS(c.annEnd.Sub(c.now))
	// A renewal asks in every variant: it waits for a majority heard
	// since (renewFrom), which an answer brings in a round trip, not at
	// the others' next idle heartbeat. An unbounded Ricart-Agrawala or
	// bakery member's busy heartbeat asks once a heartbeat (only they
	// become bounded), and every heartbeat to all asks once askDue says
	// so, for the acknowledgement a peer's count needs (ackCap).
	unbounded := !c.bounded && hb.Busy && c.now.Sub(c.busyAsked) >= c.cfg.HeartbeatInterval
	hb.AckWanted = c.renewing() || c.cfg.Variant != Lamport && unbounded || c.askDue()
}

// ceilMS is d in whole milliseconds, rounded up (a negative d: an end
// that passed, said no earlier than it was), saturated.
func ceilMS(d time.Duration) int32 {
	ms := d / time.Millisecond
	if d > ms*time.Millisecond {
		ms++
	}
	return int32(max(min(ms, 1<<31-1), -1<<31))
}

// endAfter is the end a frame received now says is ms after it was sent
// (negative: that long before), on this member's clock, stretched for
// clock rates so that it is never earlier than the end the sender meant.
func (c *Core) endAfter(ms int32) time.Time {
	if ms >= 0 {
		return c.now.Add(c.cfg.pad(time.Duration(ms) * time.Millisecond))
	}
	return c.now.Add(-c.cfg.unpad(time.Duration(-int64(ms)) * time.Millisecond))
}

// sendBeat sends this member's heartbeat to member to (core.Broadcast:
// to all), noting an announcement for its acknowledgements. An idle
// heartbeat is the extended form too, for every member but those taken
// for a build older than it (peer.old: they refuse it, and take the
// 5-byte form, which asks for nothing), so that it asks for the
// acknowledgement its count needs (ackCap); one frame to all when every
// member reads the same form. A member not heard yet gets the extended
// form (the package doc, "Links", says why).
func (c *Core) sendBeat(to uint32) {
	hb := c.heartbeat()
	ext := hb
	if !hb.Ext {
		c.announce(&ext)
	}
	if to == core.Broadcast && !hb.Ext {
		c.shortCopies(hb)
	}
	stamp := c.lamport.Send()
	if ext.AckWanted {
		if to == core.Broadcast {
			c.ackAsked = c.now
			if hb.Busy {
				c.busyAsked = c.now
			}
		}
		c.asked = append(c.asked, beat{at: c.now, stamp: stamp})
		if len(c.asked) > maxAsked {
			c.asked = slices.Delete(c.asked, 0, len(c.asked)-maxAsked)
		}
	}
	c.anns = append(c.anns, announced{stamp: stamp, end: c.annEnd})
	if len(c.anns) > maxAnnounced {
		c.anns = slices.Delete(c.anns, 0, len(c.anns)-maxAnnounced)
	}
	// short: the members this heartbeat goes to in the 5-byte form
	// (idle, taken for older, and no probe due: olderProbe).
	short := func(m uint32) bool {
		p := c.peers[m]
		if hb.Ext || !p.old {
			return false
		}
		if c.olderProbe(p) {
			p.shortSent = 0
			return false
		}
		p.shortSent++
		return true
	}
	switch {
	case to != core.Broadcast:
		if short(to) {
			c.send(to, wire.KindPermHeartbeat, hb, stamp)
		} else {
			c.send(to, wire.KindPermHeartbeat, ext, stamp)
		}
	case hb.Ext || c.olds() == 0:
		c.send(to, wire.KindPermHeartbeat, ext, stamp)
	default:
		var shorts, exts []uint32
		for _, m := range c.others() {
			if short(m) {
				shorts = append(shorts, m)
			} else {
				exts = append(exts, m)
			}
		}
		for _, f := range []struct {
			to []uint32
			hb wire.PermHeartbeat
		}{{shorts, hb}, {exts, ext}} {
			if len(f.to) == len(c.cfg.Members)-1 {
				c.send(core.Broadcast, wire.KindPermHeartbeat, f.hb, stamp)
				continue
			}
			for _, m := range f.to {
				c.send(m, wire.KindPermHeartbeat, f.hb, stamp)
			}
		}
	}
	if to == core.Broadcast {
		switch {
		case hb.Busy:
			c.idleTail = 0
		case c.saidBusy:
			c.idleTail = BusyBeatsCovered - 1
		case c.idleTail > 0:
			c.idleTail--
		}
		c.saidBusy = hb.Busy
		c.beaten()
	}
}

// shortCopies sends idle heartbeat hb (the 5-byte form, sent and stamped
// just before the extended one about to go) also to every member that
// gets the extended form and sent an idle 5-byte heartbeat since its
// last extended frame
// (peer.shortIdle): during the idle tail, and every olderProbeEvery-th
// idle heartbeat after. Such a member may be of a build older than the
// extended form, idle, and not taken for older (an idle 5-byte heartbeat
// marks nothing: marking for it turned the acknowledgement cap off for
// members of this build, review-perm6); it refuses the extended form, a
// sign of life only, and took no idle heartbeat of this member's, so it
// waited DeadAfter, not SuspectAfter, for the leaves it gave it, after
// this member crashed, and kept any request of this member's that ended
// without its word (lost, or forged), until it was heard busy once. The
// copy spends them, as the extended idle heartbeat does for a member of
// this build, which takes the copy as one more idle heartbeat (marking
// nothing, and the extended one after it, which still asks it for an
// acknowledgement, undoes peer.shortIdle there, as does its stamp when
// the copy comes after it: members of this build do not send each
// other copies for them, TestForgedShortIdleCopiesDie).
func (c *Core) shortCopies(hb wire.PermHeartbeat) {
	tail := c.saidBusy || c.idleTail > 0
	for _, m := range c.others() {
		p := c.peers[m]
		if p.old || !p.shortIdle {
			continue
		}
		if !tail && p.shortCopies < olderProbeEvery-1 {
			p.shortCopies++
			continue
		}
		p.shortCopies = 0
		c.count("short_idle_copies")
		c.send(m, wire.KindPermHeartbeat, hb, 0)
	}
}

// takeAnnouncement keeps member m's announcement in its extended heartbeat
// stamped at, and acknowledges it if asked.
func (c *Core) takeAnnouncement(m uint32, at uint64, h wire.PermHeartbeat) {
	p := c.peers[m]
	p.v2, p.old, p.shortIdle = true, false, false
	if at > p.ann.stamp {
		p.ann = heardLease{stamp: at, end: c.endAfter(h.EndMS), bounded: h.Bounded, pending: h.Pending}
	}
	if h.AckWanted {
		c.count("announcements_acked")
		hb := c.heartbeat()
		if !hb.Ext {
			c.announce(&hb)
		}
		hb.AckWanted, hb.Ack = false, at
		c.send(m, wire.KindPermHeartbeat, hb, 0)
	}
}

// stepAck takes member m's acknowledgement of this member's announcement
// stamped ack, in a frame stamped at: one this member did not make (or no
// longer keeps) counts for nothing.
func (c *Core) stepAck(m uint32, at, ack uint64) error {
	if ack >= at {
		return fmt.Errorf("%w: acknowledgement of %d in a frame of Lamport time %d", ErrImplausible, ack, at)
	}
	p := c.peers[m]
	if i := slices.IndexFunc(c.asked, func(b beat) bool { return b.stamp == ack }); i >= 0 && c.asked[i].at.After(p.ackedAt) {
		p.ackedAt, p.ackedInc = c.asked[i].at, p.life.Inc
	}
	if ack <= p.acked || !slices.ContainsFunc(c.anns, func(a announced) bool { return a.stamp == ack }) {
		c.count("acks_stale")
		return nil
	}
	p.acked = ack
	acked := make([]uint64, 0, len(c.peers))
	for _, q := range c.peers {
		acked = append(acked, q.acked)
	}
	slices.SortFunc(acked, func(a, b uint64) int { return cmpDesc(a, b) })
	need := c.majority - 1
	if need <= 0 || acked[need-1] == 0 {
		return nil
	}
	upto := acked[need-1] // a majority took an announcement stamped upto or later
	kept := c.anns[:0]
	for _, a := range c.anns {
		if a.stamp <= upto {
			if a.end.After(c.ackedEnd) {
				c.ackedEnd = a.end
			}
			continue
		}
		kept = append(kept, a)
	}
	c.anns = kept
	if !c.bounded && c.cfg.Variant != Lamport {
		c.bounded = true
		c.count("leases_bounded")
		if c.busy() {
			// Say so at once: until the others take a bounded
			// announcement, they vouch for none of this member's leases.
			c.sendBeat(core.Broadcast)
		}
	}
	c.confirmRenewals()
	return nil
}

// checkRenewals warns, once per renewal, when a bounded member's renewal
// has waited RetryInterval for a majority's acknowledgement of its end:
// its lease is lost at its end unless they answer.
func (c *Core) checkRenewals() {
	if !c.bounded || !c.renewing() {
		c.renewSince, c.renewWarned = time.Time{}, false
		return
	}
	if c.renewSince.IsZero() {
		c.renewSince = c.now
	}
	if c.renewWarned || c.now.Sub(c.renewSince) < c.cfg.RetryInterval {
		return
	}
	c.renewWarned = true
	var by []uint32
	for _, m := range c.others() {
		if len(c.anns) > 0 && c.peers[m].acked >= c.anns[0].stamp {
			by = append(by, m)
		}
	}
	c.count("renewals_unacknowledged")
	c.warn(EventRenewalUnacked, fmt.Sprintf("a renewal has waited %v for a majority (%d of %d members) to acknowledge this member's lease end; only members %v did: "+
		"are members down, cut off, or running a mutexd older than this one (which cannot acknowledge)? The lease is lost at its end unless a majority answers; "+
		"in a cluster being downgraded, restart this member (it then renews as before until a majority acknowledges again)",
		c.now.Sub(c.renewSince).Round(time.Millisecond), c.majority, len(c.cfg.Members), by), "acknowledged_by", by)
}

func cmpDesc(a, b uint64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// renewFrom is when a renewal of request id confirmed now is counted
// from (leaseFrom), and whether it may be confirmed now: not before this
// member has heard a majority since the renewal was asked, and a bounded
// member renews no further than ackedEnd, and waits while that would not
// extend the lease.
//
// The wait for a majority heard since the asking is what makes a renewal
// count from its asking, as a client counts it: leaseFrom ends a lease
// MaxLease after the majority last heard, and confirmed at once on a
// majority heard up to FreshWindow ago (the others' idle heartbeats are a
// HeartbeatInterval apart), a renewal was cut by as much, and one asked
// within that age of the last majority did not move the lease's end at
// all: `mutexd lock` lost Lamport's 1.5 s leases at 1 s heartbeats with
// every frame instant (cmd/mutexd's lease floor counted them from the
// asking). Waiting is always safe: the lease is still capped by leaseFrom.
func (c *Core) renewFrom(id mutex.RequestID) (time.Time, bool) {
	if asked, ok := c.renewAsked[id]; ok && c.majorityHeard().Before(asked) {
		return time.Time{}, false
	}
	lease := c.leaseOf(id)
	from := c.leaseFrom(lease)
	if !c.bounded || !from.Add(lease).After(c.ackedEnd) {
		return from, true
	}
	if exp, ok := c.reqs.Expires(id); ok && !c.ackedEnd.After(exp) {
		return time.Time{}, false
	}
	return c.ackedEnd.Add(-lease), true
}

// covers says whether this member vouches that every lease member m may
// hold ends by the returned time (on this member's clock): see the file's
// doc. Never in Lamport's queue, where a member may enter on a frame of
// another that never took its request.
func (c *Core) covers(m uint32) (time.Time, bool) {
	p := c.peers[m]
	if p == nil || c.cfg.Variant == Lamport || c.cutOff || p.lentBefore != 0 || c.rejoining() {
		return time.Time{}, false
	}
	a := p.ann
	if a.stamp == 0 || !a.bounded || a.pending || a.stamp <= p.lastReq {
		return time.Time{}, false
	}
	return a.end, true
}

// tookRequest notes a request frame of member m stamped at: a lease may
// follow that no announcement of m taken so far covers.
func (c *Core) tookRequest(m uint32, at uint64) {
	if p := c.peers[m]; p != nil && at > p.lastReq {
		p.lastReq = at
	}
}

// earlyConfirm says whether member m, which may hold by this member's
// leave (waited for DeadAfter), may be asked about before DeadAfter: this
// member vouches for its lease end and has been silent from it for
// SuspectAfter.
func (c *Core) earlyConfirm(m uint32) bool {
	p := c.peers[m]
	if p.down || p.lent == 0 || len(c.cfg.Members) < 3 || c.silence(m) < c.cfg.SuspectAfter {
		return false
	}
	_, ok := c.covers(m)
	return ok
}

// earlyDeadline is when earlyConfirm could first hold for some member.
func (c *Core) earlyDeadline() time.Time {
	var d time.Time
	for _, m := range c.others() {
		p := c.peers[m]
		if p.down || p.lent == 0 || p.confirm != nil || len(c.cfg.Members) < 3 {
			continue
		}
		if _, ok := c.covers(m); ok {
			d = core.Earliest(d, c.det.QuietSince(m).Add(c.cfg.SuspectAfter+c.cfg.ConfirmSlack()))
		}
	}
	return d
}
