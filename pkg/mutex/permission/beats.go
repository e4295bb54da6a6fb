package permission

import (
	"fmt"
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
	stamp   uint64 // its Lamport time (asked only)
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
	var credit time.Duration
	for j := i - 1; j >= 0; j-- {
		span += c.beats[j].due.Sub(c.beats[j].at)
		if span > c.cfg.HeartbeatInterval {
			break
		}
		// beats[j+1] left late by its time less the due time beats[j]
		// set (never less than zero: an early beat, a request, is no
		// credit).
		late := max(c.beats[j+1].at.Sub(c.beats[j].due), 0)
		credit = min(credit+min(late, c.lateCredit()), c.lateCreditMax())
		bound = core.Earliest(bound, c.beats[j].at.Add(span+credit))
	}
	return core.Earliest(r, bound.Add(c.inFlight())), true
}

// lateCredit is how much of each beat's lateness countFor forgives, and
// lateCreditMax how much in all across the beats one term spans: a tenth
// and a quarter of Margin (20 and 50 ms with the defaults). A loop late
// by up to lateCredit on every beat (a loaded host: tens of
// milliseconds) then counts frames at their stamps, as one on time does;
// without the credit every term summed the lateness of each beat it
// spans, and such a loop lost up to five times its lateness less
// inFlight (a review: 50 ms at 20 ms late) of every lease it granted or
// renewed. What is forgiven is a lateness the others may not have
// heard, so a frame may count up to lateCreditMax later than the
// argument's bound: inFlight and it take half the Margin (the package
// doc, "Links").
func (c *Core) lateCredit() time.Duration    { return c.cfg.Margin / 10 }
func (c *Core) lateCreditMax() time.Duration { return c.cfg.Margin / 4 }

// maxAsked is how many of its asks this member keeps for the
// acknowledgements: an ask leaves every HeartbeatInterval less a busy
// heartbeat, and more often while a renewal waits (five a heartbeat).
const maxAsked = 32

// askDue says whether this member's heartbeat to all asks the others to
// acknowledge it: the first at least a heartbeat less a busy one after
// the last ask (every idle heartbeat; every fourth busy one), so that a
// member that acknowledges keeps counting (ackCap) from one ask to the
// next.
func (c *Core) askDue() bool {
	return c.ackAsked.IsZero() || c.now.Sub(c.ackAsked) >= c.cfg.HeartbeatInterval-c.cfg.BusyHeartbeat()
}

// askBy is when the next heartbeat to all must leave at the latest (zero:
// whenever): a heartbeat after the last ask, which a request (a beat that
// asks for no acknowledgement) may otherwise move past.
func (c *Core) askBy() time.Time {
	if c.ackAsked.IsZero() {
		return time.Time{}
	}
	return c.ackAsked.Add(c.cfg.HeartbeatInterval)
}

// ackCap caps at, the instant a direct frame of member p counts for, at a
// heartbeat and inFlight after the last of this member's asks p
// acknowledged, once p acknowledges any (a member of an older build
// never does, and its frames count as countFor says). p heard this
// member then, so the others of a majority M that p is in last heard it
// at F no earlier: the frame counts by F + HeartbeatInterval + inFlight
// whatever beats of this member's were lost before, idle ones included
// (the package doc, "Links").
func (c *Core) ackCap(p *peer, at time.Time) time.Time {
	if p.ackedAt.IsZero() {
		return at
	}
	return core.Earliest(at, p.ackedAt.Add(c.cfg.HeartbeatInterval+c.inFlight()))
}

// olderBuild notes that member m sent a heartbeat of a build that
// predates the extended form (a busy 5-byte one or a wire.KindHeartbeat:
// stepFrame; an idle 5-byte one marks nothing): its probes get the short
// answers, this member's idle heartbeats go to it in the 5-byte form
// (but the first after the mark and every olderProbeEvery-th since:
// olderProbe), and
// it acknowledges nothing, so its frames are no longer capped by its
// acknowledgements (a member downgraded) but by this member's beats
// alone (countFor). An extended frame of it undoes this
// (takeAnnouncement). A busy 5-byte heartbeat of a member that
// acknowledged in its current incarnation marks nothing (stepFrame,
// ackedThisRun).
//
// The first time (and again after an extended frame undid it, at most
// once every olderSayEvery) it is said (EventOlderBuild): at INFO, a
// rolling upgrade being normal, or at WARN when the members taken for
// older are a majority of the others, so that every majority needs one of
// them and a renewal waits for their heartbeats. why says what was heard.
func (c *Core) olderBuild(m uint32, why string) {
	p := c.peers[m]
	was := p.old
	p.v2, p.old, p.ackedAt = false, true, time.Time{}
	if was {
		return
	}
	// The next idle heartbeat to it goes extended (olderProbe): a member
	// of this build marked by a forged frame answers it, and so is
	// unmarked within a heartbeat.
	p.shortSent = olderProbeEvery - 1
	olds := c.olders()
	// The INFO at most once per member every olderSayEvery, the WARN at
	// most once every olderSayEvery in all: without a key, forged 5-byte
	// and extended frames in turn marked and unmarked a member as fast as
	// they came (review-perm6: 200 WARN lines in a second). The WARN is
	// not held back by its member's INFO: a member rolled back within
	// olderSayEvery that makes the majority is said (review-last).
	majority := c.olderMajority()
	recent := func(t time.Time) bool { return !t.IsZero() && c.now.Sub(t) < olderSayEvery }
	if majority && recent(c.olderWarned) || !majority && recent(p.olderSaid) {
		c.count("older_build_unsaid")
		return
	}
	p.olderSaid = c.now
	if majority {
		c.olderWarned = c.now
		c.warn(EventOlderBuild, fmt.Sprintf("member %d is taken for a mutexd older than this one (it sent %s), and members %v, %d of the %d others, now are: "+
			"every majority needs one of them, and they acknowledge nothing, so this member's renewals wait for their next heartbeat "+
			"(up to --heartbeat %v, longer when one is lost: a lease under three heartbeats may run out); this member's heartbeats go to them short, "+
			"and their frames count by this member's heartbeats alone. Upgrade members %v (docs/mutexd.md, Upgrades)",
			m, why, olds, len(olds), len(c.cfg.Members)-1, c.cfg.HeartbeatInterval, olds), "member", m, "older", olds)
		return
	}
	c.emit(EventOlderBuild, fmt.Sprintf("member %d is taken for a mutexd older than this one (it sent %s): this member's heartbeats go to it short, "+
		"and its frames count by this member's heartbeats alone (members taken for older: %v); normal during a rolling upgrade: finish it",
		m, why, olds), "member", m, "older", olds)
}

// olderProbeEvery: every how many idle heartbeats one goes to a member
// taken for older in the extended form anyway (olderProbe).
const olderProbeEvery = 8

// olderProbe says whether this member's idle heartbeat to all goes to p,
// taken for older, in the extended form anyway: the first after p was
// marked and every olderProbeEvery-th since, once the idle tail is over.
// Without a key, anyone on the LAN can forge a busy 5-byte heartbeat; a
// forged one each way between two idle members of this build made each
// take the other for older, and idle, neither sent an extended frame
// again: their frames counted by beats alone (no acknowledgement cap),
// for good. An extended frame undoes the mark (takeAnnouncement), and a
// member of this build acknowledges it (an extended frame back), so the
// mark lasts a heartbeat or so. A member of an older build refuses it, a
// sign of life only: it then spends no leave of this member's, which the
// idle tail's 5-byte heartbeats spent before (none is sent during it),
// and stays marked, as it sends no extended frame.
func (c *Core) olderProbe(p *peer) bool {
	return p.shortSent >= olderProbeEvery-1 && c.idleTail == 0 && !c.saidBusy
}

// EventOlderBuild: a member is taken for a build older than the extended
// heartbeat ("member"; "older": all members so taken): at INFO, or at
// WARN when they are a majority of the others (olderMajority).
const EventOlderBuild = "member_older_build"

// olderSayEvery is how often EventOlderBuild is said at most, per member
// (and at WARN, in all).
const olderSayEvery = 10 * time.Minute

// olders are the members taken for a build older than the extended form
// (peer.old), in order.
func (c *Core) olders() []uint32 {
	var out []uint32
	for _, m := range c.others() {
		if c.peers[m].old {
			out = append(out, m)
		}
	}
	return out
}

// olderMajority says whether the members taken for older are a majority
// of the others: too few are left for a majority without one of them.
func (c *Core) olderMajority() bool {
	return c.olds() > len(c.cfg.Members)-c.majority
}

// olds is how many members run a build older than the extended form.
func (c *Core) olds() int {
	n := 0
	for _, p := range c.peers {
		if p.old {
			n++
		}
	}
	return n
}

// ackedThisRun says whether member m acknowledged one of this member's
// heartbeats in the incarnation its frames last named: it runs a build
// with the extended form, and a build changes only with a restart, so a
// busy 5-byte heartbeat in its name is forged (keyless) or corrupt and
// marks nothing (review-perm7: marking on one turned the acknowledgement
// cap off, with one forged frame per member name, for as long as this
// member's own frames were lost). Only that path asks: a plain heartbeat
// frame (a build before perm_heartbeat) still marks, so that a member
// downgraded that far and idle, naming no new incarnation in a request,
// is said and counted by beats (review-mine2). The incarnation is the one
// its requests and replies name: without a key a forged request naming a
// new one first lets the mark through again (docs/security.md).
func (c *Core) ackedThisRun(m uint32) bool {
	p := c.peers[m]
	return !p.ackedAt.IsZero() && p.ackedInc == p.life.Inc
}
