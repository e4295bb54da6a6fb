package central

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/wire"
)

// beatRing is how many of its recent beats the coordinator remembers the
// sending time of: a sync echoing an older one supports nothing.
const beatRing = 64

// ckey names a request cluster-wide: its member, the member's run, and
// its number in that run.
type ckey struct {
	member uint32
	inc    uint32
	seq    uint64
}

// centry is a request in the coordinator's queue.
type centry struct {
	ckey
	lock  string
	mode  mutex.Mode
	lease time.Duration

	granted bool
	fence   uint64
	// expires is when the lease ends on the coordinator's clock, padded:
	// the member counts it from before the grant left, so it ends sooner.
	expires time.Time
	old     bool // re-announced from an older term

	// The token-asking variant: the request's stamp, when it was queued,
	// and whether it was granted without a predecessor never heard of.
	vec    clock.Vector
	queued time.Time
	// beatQueued is the number of the coordinator's latest beat when it
	// was queued: a sync answering a later one was sent after it was
	// queued, so after every request its stamp names was made (vnow's
	// word, unknownWait).
	beatQueued uint32
	// skips are the predecessors it may be granted without now (eligible),
	// said once granted (saySkips); skipsSaid the members whose skipped
	// requests were said.
	skips     []skipNote
	skipsSaid []uint32
	// grantedAt is when it was last granted: an unconfirmed grant holds
	// its dependents back until its member has been silent DeadAfter
	// since (vnow).
	grantedAt time.Time
	// confirmed: its member showed that it took the grant (a sync
	// listing it held with its fence, a renewal of it), or it is this
	// member's own, or re-announced held. Only then is it served for the
	// token-asking variant's V (vnow): a grant may still be refused where
	// it lands (a sync of its member crossed it: grants_superseded) and
	// be made anew a round trip later, after the requests that name it.
	// asked: a beat was sent to its member behind its grant
	// (confirmSoon); once per request: a grant made anew (its first
	// crossed a sync) is confirmed by the periodic beats, or two syncs in
	// flight, each answered with a grant that the next one voids, went
	// on for ever (TestOracleDiskFaults/tokenask seed 15: 76865 grants
	// voided).
	confirmed, asked bool
	// cycled: the group of requests waiting for each other it was last
	// said in (EventWaitCycle), as said.
	cycled string
}

// cqueue is one lock at the coordinator.
type cqueue struct {
	holders []*centry
	waiting []*centry
}

// peer is a member as the coordinator sees it.
type peer struct {
	inc         uint32     // its run
	life        epoch.Life // its run as its frames say, with their Lamport stamps
	stamp       uint32     // the stamp of its latest frame: grants count from it
	stampHeard  time.Time  // when the frame stamped stamp arrived
	syncedAt    uint32     // the stamp of its latest sync (a duplicate is dropped)
	heard       time.Time  // its last frame
	support     time.Time  // when the newest beat it answered was sent
	supportBeat uint32     // that beat's number
	joined      bool       // it synced in this term
	// backedOld is the latest instant, on this member's clock, at which
	// the member may have backed an older coordinator (answered its beat,
	// coordinated, or started): from its first sync of the term.
	backedOld time.Time
	entries   int
	// prev is the coordinator whose beat the member last answered before
	// this term, when its latest sync said that coordinator's own clients
	// hold no lease as far as it knows (wire.CentralSyncPrevQuiet); 0
	// otherwise.
	prev uint32
	// restarted: its latest sync said it started less than a lease ago.
	restarted bool
	// checked: its latest sync came in a frame whose configuration
	// agreement compared and matched this member's (core.Message.Checked):
	// its --lease is this one's (peerLease).
	checked bool
	// maxSeq is the latest request of its run the coordinator knows of
	// (its requests, its syncs' MaxSeq): the token-asking variant's V.
	maxSeq uint64
	// answered is the newest beat of this term a sync of it answered
	// (its echo): a sync answering a beat sent after a request was
	// queued is its word on every request of it that request names
	// (unknownWait). asked is the last beat sent on its stream for that
	// word, at askedAt (askWord).
	answered, asked uint32
	askedAt         time.Time
	// warnedLease, warnedCluster, warnedCap: EventLeaseAboveMax,
	// EventLeaseAboveCluster, EventHoldsOverCap were said of it in this
	// term.
	warnedLease, warnedCluster, warnedCap bool
	// warnedLate: EventLateHoldUnchecked was said of it in this term.
	warnedLate bool
	// overCap: holds it re-announced in this term were not kept, over
	// its cap (holdOverCap); its renewals of unknown grants are left
	// unanswered while the Hold runs instead of refused.
	overCap bool
	// capHold, capHolds: the first hold of its sync being applied not
	// kept over its cap, and how many were (sayOverCap, after the sync).
	capHold  wire.CentralSyncEntry
	capHolds int
	// droppedSeq is the earliest of its run's waiting requests dropped
	// when it fell silent (DeadAfter without a frame), at droppedAt, and
	// not listed by a sync since (0: none): the token-asking variant's V
	// stays below it for DeadAfter more (vnow, silentLapse: 2 x DeadAfter
	// of silence at least), so that a request that names it does not
	// overtake it when the member's silence was two beats lost, and its
	// next sync queues it again.
	droppedSeq uint64
	droppedAt  time.Time
	// expired are its grants whose lease ended at the coordinator, never
	// confirmed, since its last sync: the token-asking variant's V stays
	// below the earliest, as below an unconfirmed grant (vnow), until its
	// next sync says whether it still waits for it (then it is queued
	// again) or took it.
	expired []*centry
}

// parkedRenewal is a member's renewal that waits for fresher support: its
// frame's stamp, when it arrived, and the lease asked.
type parkedRenewal struct {
	stamp uint32
	heard time.Time
	lease time.Duration
}

// coord is the coordinator's state for one term: nothing of it survives
// the term (a new coordinator rebuilds it from the members' syncs).
type coord struct {
	// cyclesAt is when warnWaitCycles may look again.
	cyclesAt time.Time

	term  uint64
	base  uint64 // fences of this term are base+1, base+2, ...
	count uint64 // grants made
	// resumed is the count when this run resumed the term (0: a new term):
	// fences up to base+resumed were granted before, and members may
	// re-announce them.
	resumed uint64
	start   time.Time

	beat uint32
	// localFrom is the first beat of the current run of beats that say
	// this member's own clients may hold a lease (call them Local beats:
	// wire.CentralBeat.Quiet is not set):
	// it grants them (and renews their leases) only once a majority
	// answered one of those beats. 0: the beats say they hold none.
	localFrom uint32
	beats     [beatRing]stampAt
	beatAt    time.Time // the last beat's sending
	nextBeat  time.Time

	peers   map[uint32]*peer
	queues  map[string]*cqueue
	entries map[ckey]*centry
	waiting int
	// renewals wait for support fresh enough not to cut them (renewFresh).
	renewals map[ckey]parkedRenewal

	majorityAt  time.Time // when a majority had joined
	holdUntil   time.Time
	ready       bool
	restartSeen bool // a member (or this one) started less than a lease ago
	// frozenUntil: no lock is granted before it, the latest end of the
	// re-announced holds not kept over a member's cap (holdOverCap);
	// overCap: some were, and the Hold is waited out whole. frozenSaid is
	// the end of every grant's stop EventHoldsOverCap last said, at
	// frozenSaidAt (sayOverCap).
	frozenUntil  time.Time
	overCap      bool
	frozenSaid   time.Time
	frozenSaidAt time.Time
}

// deadline is when the coordinator next needs a Tick. causal says the
// requests carry vectors (tokenask): only then can a waiting request be
// held back by a predecessor never heard of (causalDeadline). A plain
// central queue's entries never carry one (its requests and syncs have no
// vector field, and tokenask's kinds are refused as not its own), so the
// pass over every queued entry would find nothing, at every Deadline.
func (k *coord) deadline(now time.Time, parkFor, deadAfter, beat time.Duration, causal bool) time.Time {
	d := []time.Time{k.nextBeat}
	if causal {
		d = append(d, k.causalDeadline(now, deadAfter, beat)...)
	}
	for _, r := range k.renewals {
		// Once parked that long, a renewal waits for support, which
		// comes with a frame, not a timer.
		if at := r.heard.Add(parkFor); at.After(now) {
			d = append(d, at)
		}
	}
	if !k.ready && !k.majorityAt.IsZero() {
		d = append(d, k.holdUntil)
	}
	if k.frozenUntil.After(now) {
		d = append(d, k.frozenUntil)
	}
	for _, q := range k.queues {
		for _, h := range q.holders {
			d = append(d, h.expires)
		}
	}
	return core.Earliest(d...)
}

// startCoordinating takes over as the coordinator of term: an empty queue,
// fences of the term, this member's own requests queued first, and a
// beat to call the others' syncs.
func (c *Core) startCoordinating(term uint64) {
	base, err := FenceBase(term, c.members)
	if err != nil {
		c.count("fences_exhausted")
		c.emit(EventFencesExhausted, err.Error(), "term", term)
		return
	}
	var count uint64
	switch {
	case term == c.ledTerm:
		// Led before in this run (the election wavered without a new
		// term): go on numbering where it stopped, and rebuild the queue
		// from the beats' syncs, holding again.
		count = c.ledCount
		c.count("terms_resumed")
	case term <= c.lastLed:
		// A term coordinated before a restart: its fences may have been
		// granted, and their count is lost. The election claims a new term
		// at every start, so this does not happen; if it did, grants wait
		// for the next term.
		c.count("term_led_before")
		return
	default:
		c.lastLed = term
		c.durable.Change(true)
	}
	c.ledTerm = term
	k := &coord{term: term, base: base, count: count, start: c.now, peers: map[uint32]*peer{},
		queues: map[string]*cqueue{}, entries: map[ckey]*centry{}, renewals: map[ckey]parkedRenewal{}, resumed: count,
		restartSeen: c.restarted() || count > 0}
	c.co = k
	k.peers[c.self] = &peer{inc: c.inc, joined: true, heard: c.now, backedOld: c.backedAt(), checked: true}
	c.emit(EventCoordinating, fmt.Sprintf("coordinating term %s; grants wait at most %v", epoch.Format(term), c.cfg.Hold()),
		"term", term, "hold", c.cfg.Hold())
	c.applySync(c.self, k.peers[c.self], c.syncEntries(), c.fol.maxSeq, c.ownVectors())
	c.updateHold()
	c.beatNow()
	c.grantAll()
}

// stopCoordinating drops the term's queue: another member leads now (or
// nobody). Grants made stay valid until their leases end; their renewals
// go to the new coordinator.
func (c *Core) stopCoordinating() {
	c.count("terms_ended")
	c.ledCount = c.co.count
	c.co = nil
	// A successor must not take this member's word for its own clients'
	// leases, granted by itself: the beats it answers next are someone
	// else's.
	c.fol.lastBeatFrom = c.self
	// Its grants counted on its own support until now: a coordinator it
	// joins next counts them from here.
	c.fol.backed = c.now
}

func (c *Core) beatNow() {
	k := c.co
	c.send(core.Broadcast, k.term, wire.KindCentralBeat, c.newBeat())
	k.beatAt, k.nextBeat = c.now, c.now.Add(c.cfg.BeatInterval)
}

// newBeat numbers the next beat, sent now.
func (c *Core) newBeat() wire.CentralBeat {
	k := c.co
	k.beat++
	switch {
	case !c.ownLeases():
		k.localFrom = 0
	case k.localFrom == 0:
		k.localFrom = k.beat
	}
	k.beats[k.beat%beatRing] = stampAt{stamp: k.beat, at: c.now}
	// Hold: how long before it may grant, its Hold and the stop for
	// holds not kept over a member's cap (holdOverCap) together, so that
	// its followers' status does not say "granting" while it grants
	// nothing. Before a majority joined, at least a whole Hold.
	var hold uint32
	switch at, known := c.grantsFrom(); {
	case !known:
		hold = ms(max(c.cfg.Hold(), at.Sub(c.now)))
	case !at.IsZero():
		hold = ms(at.Sub(c.now))
	}
	return wire.CentralBeat{Beat: k.beat, HoldMS: hold, Quiet: k.localFrom == 0}
}

// ownLeases says whether this member's own clients may hold a lease, or
// may soon: it has requests of its own at the coordinator (waiting or
// held; held ones include leases of older coordinators, re-announced), or
// it started less than a lease ago (its previous run's clients may hold
// one it cannot know of). Its beats then say so (Local: not Quiet).
func (c *Core) ownLeases() bool { return c.co.peers[c.self].entries > 0 || c.restarted() }

// localBacked says whether this member may grant its own clients (or
// renew their leases): a majority, itself included, answered a beat of
// the current run of Local beats within ConfirmWindow. Every member of
// that majority remembers answering it (follower.localBacked), so a
// successor that hears from all the others learns of every such lease
// (prevQuiet), without waiting a lease for this member if it dies.
func (c *Core) localBacked() bool {
	k := c.co
	if k.localFrom == 0 {
		return false
	}
	n := 0
	for id, p := range k.peers {
		if id == c.self || p.supportBeat >= k.localFrom && c.now.Sub(p.support) <= c.cfg.ConfirmWindow {
			n++
		}
	}
	return n >= c.majority
}

// callLocal has a beat that says Local sent now, if none was since the
// last that did not (a grant to this member's own clients waits for a
// majority's answer to one: a round trip, once per run of Local beats).
func (c *Core) callLocal() {
	if c.co.localFrom == 0 {
		c.count("local_beats_called")
		c.beatNow()
	}
}

// supportAt is the latest instant at which a majority (this member
// included, at now) backed this coordinator: the sending of the newest beat
// that many members answered. Zero: none yet.
func (c *Core) supportAt() time.Time {
	k := c.co
	at := make([]time.Time, 0, len(k.peers))
	for id, p := range k.peers {
		if id == c.self {
			at = append(at, c.now)
		} else if !p.support.IsZero() {
			at = append(at, p.support)
		}
	}
	if len(at) < c.majority {
		return time.Time{}
	}
	slices.SortFunc(at, func(a, b time.Time) int { return b.Compare(a) })
	return at[c.majority-1]
}

// supported says whether a majority backed this coordinator within
// ConfirmWindow: the condition of every grant and renewal, each of whose
// leases ends within MaxLease + LeaseSlack of supportAt (leaseFor).
func (c *Core) supported() bool {
	at := c.supportAt()
	return !at.IsZero() && c.now.Sub(at) <= c.cfg.ConfirmWindow
}

// callSupport sends a beat now, for a grant or renewal that waits for
// support (the last beat's answers are late or lost), unless one left a
// moment ago (an eighth of BeatInterval): at most a round trip's wait.
func (c *Core) callSupport() {
	if k := c.co; !c.supported() && c.now.Sub(k.beatAt) >= c.cfg.BeatInterval/8 {
		c.count("beats_called")
		c.beatNow()
	}
}

// leaseFor is the lease to grant or renew now for one asked, to a member
// that counts it from its frame that arrived at heard: the lease asked,
// cut so that it ends, wherever it is counted, within MaxLease +
// LeaseSlack of supportAt. A newer coordinator counts every lease of this
// one from the latest instant a member of its own majority backed this
// one, which is never before supportAt (the package comment): that is the
// whole price of a takeover that does not wait for the election and a
// confirm window more.
func (c *Core) leaseFor(asked time.Duration, heard time.Time) time.Duration {
	return min(asked, c.supportAt().Add(c.cfg.MaxLease+c.cfg.LeaseSlack).Sub(heard))
}

// updateHold starts the Hold once a majority joined the term, and ends it
// when it ran out, or at once when every member joined and none started
// less than a lease ago (every lease an older coordinator granted was
// re-announced, and is in the queue).
func (c *Core) updateHold() {
	k := c.co
	if k.ready {
		return
	}
	joined := 0
	for _, p := range k.peers {
		if p.joined {
			joined++
		}
	}
	if k.majorityAt.IsZero() && joined >= c.majority {
		// Every lease an older coordinator granted ends within MaxLease +
		// LeaseSlack of an instant at which a majority backed it; that
		// majority and this one share a member, which backed it no later
		// than its backedOld. So the latest backedOld of this majority,
		// plus the padded Hold, is past every such lease (the package
		// comment).
		var from time.Time
		for _, p := range k.peers {
			if p.joined && p.backedOld.After(from) {
				from = p.backedOld
			}
		}
		k.majorityAt, k.holdUntil = c.now, from.Add(c.cfg.Hold())
	}
	// A majority of the other members bounds the wait too, without this
	// member's own backedOld, which after a restart is its start (it
	// cannot know what it answered before): any majority that backed an
	// older coordinator shares a member with any majority of the others,
	// this member aside (one of them holds at most a majority less one of
	// the others, and a majority of the others is more than the rest). So
	// the majority-th earliest backedOld among the others who joined is
	// as good a start as the latest of the first majority. Without it, a
	// coordinator SIGKILLed and back within a second, before the others
	// noticed, waited a lease from its restart (4.5 s without a grant).
	var others []time.Time
	for id, p := range k.peers {
		if id != c.self && p.joined {
			others = append(others, p.backedOld)
		}
	}
	if len(others) >= c.majority {
		slices.SortFunc(others, func(a, b time.Time) int { return a.Compare(b) })
		if until := others[c.majority-1].Add(c.cfg.Hold()); k.majorityAt.IsZero() || until.Before(k.holdUntil) {
			if k.majorityAt.IsZero() {
				k.majorityAt = c.now
			}
			k.holdUntil = until
		}
	}
	if k.majorityAt.IsZero() {
		return
	}
	why := "the older coordinators' leases have ended"
	switch {
	case !c.now.Before(k.holdUntil):
	case k.overCap:
		// Holds re-announced were not kept (holdOverCap): not every lease
		// is in the queue, so none of them may be counted on.
	case joined == len(c.members) && !k.restartSeen:
		k.holdUntil = c.now
		c.count("holds_skipped")
		why = "every member re-announced its leases"
	case c.deadCoordinatorQuiet():
		k.holdUntil = c.now
		c.count("holds_skipped_quiet")
		why = "every member but the last coordinator re-announced its leases, and its own clients held none"
	}
	if !c.now.Before(k.holdUntil) {
		k.ready = true
		c.emit(EventReady, fmt.Sprintf("term %s may grant, %v after it began: %s", epoch.Format(k.term), c.now.Sub(k.start), why),
			"term", k.term, "waited", c.now.Sub(k.start))
	}
}

// deadCoordinatorQuiet says whether every member but one joined this term,
// each saying that the beat it last answered before was that member's and
// that it answered no Local beat for a Hold since (its own clients held no
// lease). Then every lease an older coordinator may have out is known:
// each member that joined re-announced the grants it holds (and refuses
// an older term's grant from now on); the missing member's own clients
// hold none, since it grants them only on a majority's answers to Local
// beats, one of which is among those that joined, and it granted to no
// one else. (Had another coordinator granted it a lease after its beats
// were answered, a member that joined would have answered that
// coordinator's beats since, or be it: its prev is not the missing one.)
// This is the case of a coordinator SIGKILLed, or cut off, with nothing
// granted at its own host: the successor grants as soon as the others
// joined, instead of waiting out a lease from their last answer to it.
//
// A member that started less than a lease ago (this one included) may have
// had leases in its previous run that nobody can re-announce: not while its
// syncs say so (CentralSyncRestarted; the next sync after its start is a
// lease old, at the next beat, says otherwise).
func (c *Core) deadCoordinatorQuiet() bool {
	k := c.co
	if c.restarted() || k.resumed > 0 {
		return false
	}
	var missing uint32
	for _, id := range c.members {
		if p := k.peers[id]; p == nil || !p.joined {
			if missing != 0 {
				return false
			}
			missing = id
		}
	}
	if missing == 0 {
		return false
	}
	for id, p := range k.peers {
		prev := p.prev
		if id == c.self {
			prev = c.prevQuiet()
		}
		if p.joined && (prev != missing || p.restarted) {
			return false
		}
	}
	return true
}

func (c *Core) tickCoord() {
	k := c.co
	if !c.now.Before(k.nextBeat) {
		c.beatNow()
	}
	for _, name := range slices.Sorted(maps.Keys(k.queues)) {
		for _, h := range slices.Clone(k.queues[name].holders) {
			if !c.now.Before(h.expires) {
				c.count("leases_ended_unreleased")
				c.remove(h)
				if p := k.peers[h.member]; c.ta != nil && !h.confirmed && h.member != c.self && p != nil && h.inc == p.inc {
					// Taken and over, or refused where it landed and still
					// waited for: only the member's sync says which (vnow),
					// asked for once more if it holds a request back
					// (confirmSoon).
					h.asked = false
					p.expired = append(c.pruneExpired(p), h)
				}
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(k.peers)) {
		p := k.peers[id]
		if id == c.self || c.now.Sub(maxTime(p.heard, k.start)) < c.cfg.DeadAfter {
			continue
		}
		for _, e := range c.entriesOf(id) {
			if !e.granted {
				c.count("dropped_silent")
				c.remove(e)
				if e.inc == p.inc && (p.droppedSeq == 0 || e.seq < p.droppedSeq) {
					p.droppedSeq, p.droppedAt = e.seq, c.now
				}
			}
		}
	}
	c.updateHold()
	c.grantAll()
	c.confirmParked()
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// entriesOf returns member's requests at the coordinator, in queue order
// per lock (deterministic).
func (c *Core) entriesOf(member uint32) []*centry {
	var out []*centry
	k := c.co
	for _, name := range slices.Sorted(maps.Keys(k.queues)) {
		q := k.queues[name]
		for _, e := range append(slices.Clone(q.holders), q.waiting...) {
			if e.member == member {
				out = append(out, e)
			}
		}
	}
	return out
}

func (c *Core) grantAll() {
	if c.ta != nil {
		c.grantEligible()
		return
	}
	for _, name := range slices.Sorted(maps.Keys(c.co.queues)) {
		c.grantQueue(name, nil)
	}
}

// grantable returns the waiting requests the queue's rules allow to be
// granted now, in queue order: the head alone when it is exclusive and
// the lock is free; the leading run of shared requests when the lock is
// free or held shared in this term. A shared request behind a waiting
// exclusive one waits: a writer is never starved by a stream of readers.
// Readers re-announced from an older term are not joined: their fence is
// of that term, below any this coordinator can give, and readers together
// share one fence (sharedFence). With ok (the token-asking variant), only
// the requests it allows are considered, the others as if not there yet.
func grantable(q *cqueue, ok func(*centry) bool) []*centry {
	waiting := q.waiting
	if ok != nil {
		waiting = slices.DeleteFunc(slices.Clone(waiting), func(e *centry) bool { return !ok(e) })
	}
	if len(waiting) == 0 {
		return nil
	}
	if waiting[0].mode == mutex.Exclusive {
		if len(q.holders) > 0 {
			return nil
		}
		return waiting[:1]
	}
	for _, h := range q.holders {
		if h.mode == mutex.Exclusive || h.old {
			return nil
		}
	}
	n := 0
	for n < len(waiting) && waiting[n].mode == mutex.Shared {
		n++
	}
	return slices.Clone(waiting[:n])
}

// sharedFence is the fence of the readers that hold q together with
// reader e (0 when none does): a reader granted while others of this term
// hold the lock takes theirs. Readers together share one fence, because a
// resource keeps only the highest fence it has seen and refuses a lower
// one: two readers with fences f1 < f2 could not both use it once the
// second had (and a reader's grant may arrive after another reader of its
// batch already used the resource and released). The next writer's fence
// is above it, so a reader that outlived its lease is still refused once
// the writer has used the resource.
func sharedFence(q *cqueue, e *centry) uint64 {
	if e.mode != mutex.Shared {
		return 0
	}
	for _, h := range q.holders {
		if h != e && h.granted && h.mode == mutex.Shared && !h.old {
			return h.fence
		}
	}
	return 0
}

// grantLock grants what lock's queue allows after a change to it; in the
// token-asking variant, what every queue allows (a request of another
// lock may wait for one of this lock's).
func (c *Core) grantLock(name string) {
	if c.ta != nil {
		c.grantEligible()
		return
	}
	c.grantQueue(name, nil)
}

// grantQueue grants what lock's queue allows (among the requests ok
// allows, if not nil), if the coordinator may grant: its hold is over and
// a majority supports it.
func (c *Core) grantQueue(name string, ok func(*centry) bool) {
	k := c.co
	q := k.queues[name]
	if q == nil || !k.ready || c.now.Before(k.frozenUntil) {
		return
	}
	if !c.supported() {
		if len(grantable(q, ok)) > 0 {
			c.callSupport()
		}
		return
	}
	g := grantable(q, ok)
	own := func(e *centry) bool { return e.member == c.self }
	if c.stamped && slices.ContainsFunc(g, own) {
		// This member's own grant waits for a reading of the clock (its
		// lease counts from the grant, and the loop may run this frame
		// long after its stamp); the others' go now.
		c.ownDue = true
		g = slices.DeleteFunc(slices.Clone(g), own)
	}
	if slices.ContainsFunc(g, own) && !c.localBacked() {
		c.callLocal()
		return
	}
	for _, e := range g {
		q.waiting = slices.DeleteFunc(q.waiting, func(x *centry) bool { return x == e })
		k.waiting--
		q.holders = append(q.holders, e)
		e.granted = true
		if !c.sendGrant(e) {
			return
		}
		c.saySkips(e)
	}
}

// sendGrant gives holder e its fence (a new one, or the fence of the
// readers it joins) and its lease from now, and sends it the grant (or
// grants this member's own request); false when the term has no fence
// left (the coordinator resigns, e is dropped).
func (c *Core) sendGrant(e *centry) bool {
	k := c.co
	fence := sharedFence(k.queues[e.lock], e)
	if fence == 0 {
		if k.count+1 >= 1<<fenceCountBits {
			c.count("fences_exhausted")
			c.emit(EventFencesExhausted, fmt.Sprintf("term %s has granted every fence it can; resigning", epoch.Format(k.term)), "term", k.term)
			c.remove(e)
			if err := c.el.Resign(c.now); err != nil {
				c.count("resign_failed")
			}
			return false
		}
		k.count++
		fence = k.base + k.count
	}
	heard := c.now
	if e.member != c.self {
		heard = k.peers[e.member].stampHeard
	}
	lease := c.leaseFor(e.lease, heard)
	e.fence, e.expires, e.grantedAt = fence, c.now.Add(c.cfg.pad(lease)), c.now
	e.confirmed = e.member == c.self
	c.count("grants_made")
	if lease < e.lease {
		c.count("leases_cut")
	}
	if e.member == c.self {
		if _, err := c.reqs.GrantFrom(c.now, c.now.Add(lease-e.lease), mutex.RequestID(e.seq), e.fence, k.term); err != nil {
			c.count("grants_returned")
			c.remove(e)
		}
		return true
	}
	c.send(e.member, k.term, wire.KindCentralGrant, wire.CentralGrant{Name: e.lock, Mode: wireMode(e.mode),
		Incarnation: e.inc, Seq: e.seq, Fence: e.fence, Echo: k.peers[e.member].stamp, LeaseMS: msDown(lease)})
	return true
}

// remove takes e out of the coordinator's queue.
func (c *Core) remove(e *centry) {
	k := c.co
	if _, ok := k.entries[e.ckey]; !ok {
		return
	}
	delete(k.entries, e.ckey)
	delete(k.renewals, e.ckey)
	q := k.queues[e.lock]
	if e.granted {
		q.holders = slices.DeleteFunc(q.holders, func(x *centry) bool { return x == e })
	} else {
		q.waiting = slices.DeleteFunc(q.waiting, func(x *centry) bool { return x == e })
		k.waiting--
	}
	if p := k.peers[e.member]; p != nil {
		p.entries--
	}
	if len(q.holders) == 0 && len(q.waiting) == 0 {
		delete(k.queues, e.lock)
	}
}

// share is how many requests one other member may have at the
// coordinator: half the queue split among the others, so that no member
// can fill it alone.
func (c *Core) share() int { return max(1, c.cfg.MaxQueue/2/max(1, len(c.members)-1)) }

// admit checks that the coordinator has room for one more request of
// member on lock.
func (c *Core) admit(member uint32, lock string) bool {
	k := c.co
	switch {
	case k.waiting >= c.cfg.MaxQueue,
		member != c.self && k.peers[member].entries >= c.share(),
		k.queues[lock] == nil && len(k.queues) >= c.cfg.MaxLocks:
		c.count("refused_queue_full")
		return false
	}
	return true
}

func (c *Core) add(e *centry) {
	k := c.co
	q := k.queues[e.lock]
	if q == nil {
		q = &cqueue{}
		k.queues[e.lock] = q
	}
	if e.granted {
		q.holders = append(q.holders, e)
	} else {
		q.waiting = append(q.waiting, e)
		k.waiting++
	}
	k.entries[e.ckey] = e
	k.peers[e.member].entries++
}

// coordRequest queues a request (this member's own, or a member's from a
// request or a sync) with its stamp (the token-asking variant) and grants
// what can be granted.
func (c *Core) coordRequest(member, inc uint32, seq uint64, lock string, mode mutex.Mode, lease time.Duration, vec clock.Vector) {
	k := c.co
	key := ckey{member, inc, seq}
	if k.entries[key] != nil {
		return // a request also listed in a sync, or a duplicate
	}
	if !c.admit(member, lock) {
		c.refuse(key, lock, wire.RefuseQueueFull)
		return
	}
	c.add(&centry{ckey: key, lock: lock, mode: mode, lease: lease, vec: vec, queued: c.now, beatQueued: k.beat})
	c.grantLock(lock)
}

func (c *Core) refuse(key ckey, lock string, why wire.CentralRefuseReason) {
	if key.member == c.self {
		reason := Refused
		if why == wire.RefuseNotHeld {
			reason = mutex.RenewRefused
		}
		c.reqs.Revoke(mutex.RequestID(key.seq), reason)
		return
	}
	c.send(key.member, c.co.term, wire.KindCentralRefuse, wire.CentralRefuse{Name: lock, Reason: why, Incarnation: key.inc, Seq: key.seq})
}

// coordRelease ends a request: a holder's release, or a waiting one
// withdrawn.
func (c *Core) coordRelease(member, inc uint32, seq uint64, fence uint64) error {
	e := c.co.entries[ckey{member, inc, seq}]
	if e == nil {
		return fmt.Errorf("%w: %d of member %d", ErrUnknownRequest, seq, member)
	}
	if e.granted && e.fence != fence {
		return fmt.Errorf("%w: release with fence %d, granted %d", ErrBadFence, fence, e.fence)
	}
	c.count("releases")
	c.remove(e)
	c.grantLock(e.lock)
	return nil
}

// renewFresh says whether a renewal of lease, asked in a frame that
// arrived at heard (parked since then), is confirmed now: with support,
// and either not cut by its age or parked long enough (an eighth of a
// beat: the beat called for it was not answered in time, and a cut lease
// is better than none). Otherwise it calls for support: a holder renewing
// gets its whole lease for a round trip, and its renewals replace the
// periodic beats (each resets the beat's timer).
func (c *Core) renewFresh(lease time.Duration, heard time.Time) bool {
	if c.supported() && (c.leaseFor(lease, heard) >= lease || c.now.Sub(heard) >= c.parkFor()) {
		return true
	}
	c.beatSoon()
	return false
}

// beatSoon sends a beat now, for a renewal that waits for fresher support
// or for a member's sync, unless one left a moment ago (parkFor).
func (c *Core) beatSoon() {
	if c.now.Sub(c.co.beatAt) >= c.parkFor() {
		c.count("beats_called")
		c.beatNow()
	}
}

// parkFor is how long a renewal waits for fresher support.
func (c *Core) parkFor() time.Duration { return c.cfg.BeatInterval / 8 }

// confirmParked confirms the parked renewals that may be now, and has the
// own clients' renewals tried again.
func (c *Core) confirmParked() {
	k := c.co
	if k == nil {
		return
	}
	for _, key := range slices.SortedFunc(maps.Keys(k.renewals), func(a, b ckey) int {
		return cmp.Or(cmp.Compare(a.member, b.member), cmp.Compare(a.seq, b.seq))
	}) {
		r := k.renewals[key]
		if e := k.entries[key]; e != nil && (c.oldInHold(e) || !c.now.Before(e.expires)) {
			continue // (an ended lease: the tick removes its entry)
		}
		if !c.supported() || c.leaseFor(r.lease, r.heard) < r.lease && c.now.Sub(r.heard) < c.parkFor() {
			continue
		}
		delete(k.renewals, key)
		if e := k.entries[key]; e != nil && e.granted {
			c.confirmRenewal(e, r)
		}
	}
	for id, r := range c.fol.renewing {
		r.next = c.now
		c.fol.renewing[id] = r
	}
	c.sendRenewals()
}

// confirmRenewal extends holder e's lease as renewal r asked, cut as
// leaseFor says, and tells its member.
func (c *Core) confirmRenewal(e *centry, r parkedRenewal) {
	cut := c.leaseFor(r.lease, r.heard)
	e.lease, e.expires = r.lease, maxTime(e.expires, c.now.Add(c.cfg.pad(cut)))
	c.count("renewals_confirmed")
	if cut < r.lease {
		c.count("leases_cut")
	}
	c.send(e.member, c.co.term, wire.KindCentralRenewed, wire.CentralGrant{Name: e.lock, Mode: wireMode(e.mode),
		Incarnation: e.inc, Seq: e.seq, Fence: e.fence, Echo: r.stamp, LeaseMS: msDown(cut)})
}

// oldInHold says whether e is a grant of an older term (re-announced) and
// this coordinator is still in its Hold: then its lease must not be
// extended. The coordinator that granted it may still be supported (its
// majority's answers are up to ConfirmWindow old; the holder's link to it
// may be all that broke), and once the lease ends by its count it grants
// the lock to someone else, knowing nothing of a renewal here. Once the
// Hold is over, that coordinator can grant no more (the package comment),
// and every lease it granted has ended or, when every member joined this
// term (or all but it, its own clients quiet), is known here and is no
// longer its to give. The holder's member keeps asking; its lease runs
// on as it was.
func (c *Core) oldInHold(e *centry) bool { return e.old && !c.co.ready }

// coordRenewLocal confirms a renewal of this member's own client, first
// tried at since, when renewFresh allows; false: not yet.
func (c *Core) coordRenewLocal(id mutex.RequestID, st mutex.RequestStatus, lease time.Duration, since time.Time) bool {
	e := c.co.entries[ckey{c.self, c.inc, uint64(id)}]
	if e == nil || !e.granted || e.fence != st.Fence {
		c.reqs.Revoke(id, mutex.RenewRefused)
		return true
	}
	if c.oldInHold(e) {
		c.count("renewals_held")
		return false
	}
	if !c.localBacked() {
		c.callLocal()
		c.count("renewals_parked")
		return false
	}
	if !c.renewFresh(lease, since) {
		c.count("renewals_parked")
		return false
	}
	// Counted from when the client asked, as a member counts from its
	// renewal's sending: the cut holds wherever the lease is counted.
	cut := c.leaseFor(lease, since)
	e.lease, e.expires = lease, maxTime(e.expires, c.now.Add(c.cfg.pad(cut)))
	c.reqs.ConfirmRenewal(c.now, since.Add(cut-lease), id)
	return true
}

// peerFrame checks a member's frame to the coordinator of term, stamped at
// (its Lamport time): the term is ours, the member's incarnation not older
// than one already seen unless stamped after every frame of it (epoch.Life:
// that one was forged), and notes its stamp. A new incarnation drops the
// other run's waiting requests: the member will never use them.
func (c *Core) peerFrame(from uint32, term, at uint64, inc uint32, stamp uint32) (*peer, error) {
	k := c.co
	if k == nil || term != k.term || from == c.self {
		return nil, fmt.Errorf("%w: frame of term %#x from %d", ErrNotCoordinator, term, from)
	}
	if !slices.Contains(c.members, from) {
		return nil, fmt.Errorf("%w: %d is not a member", ErrNotCoordinator, from)
	}
	p := k.peers[from]
	if p == nil {
		p = &peer{}
		k.peers[from] = p
	}
	if inc == 0 {
		return nil, fmt.Errorf("%w: 0 of member %d", ErrStaleIncarnation, from)
	}
	switch p.life.Judge(uint64(inc), at) {
	case epoch.Stale:
		return nil, fmt.Errorf("%w: %d of member %d, which runs %d", ErrStaleIncarnation, inc, from, p.inc)
	case epoch.Back:
		c.count("incarnations_undone")
		fallthrough
	case epoch.Newer:
		if p.inc != 0 {
			for _, e := range c.entriesOf(from) {
				if !e.granted {
					c.count("dropped_incarnation")
					c.remove(e)
				}
			}
		}
		p.inc, p.stamp, p.syncedAt, p.maxSeq, p.droppedSeq, p.expired = inc, 0, 0, 0, 0, nil
	}
	p.life.See(uint64(inc), at)
	p.heard = c.now
	if stamp != 0 {
		// The latest, not the largest: a member's frames arrive in order
		// (TCP), and one forged frame with a huge stamp must not make every
		// later grant echo a stamp the member never sent (it would refuse
		// them all); the member's next frame sets it right.
		p.stamp, p.stampHeard = stamp, c.now
	}
	return p, nil
}

// leaseAboveMax says, once per member and term at WARN, that member p
// re-announced w, a grant of an older coordinator whose lease (lease,
// the longer of its lease and what is left of it) exceeds this
// coordinator's MaxLease: members configured with different --lease. The
// hold is kept until its lease ends as its member counts it; what is
// still open is a lease of that length never re-announced (its member cut
// off), which this coordinator's Hold, counted with its own MaxLease,
// does not cover: hence the WARN.
func (c *Core) leaseAboveMax(member uint32, p *peer, w wire.CentralSyncEntry, lease time.Duration) {
	c.count("holds_lease_above_max")
	cause := "members configured with different --lease"
	if !p.checked && !c.cfg.peerLeaseSet {
		// Kept whole up to mutex.MaxLeaseLimit only because nothing
		// bounds what the member may hold (peerLease).
		cause = fmt.Sprintf("member %d is admitted unchecked (it announces no configuration: an older build, or a cluster without configuration agreement), so its --lease may differ from this member's; upgrade it", member)
		if !c.cfg.Authenticated {
			cause += fmt.Sprintf(", and set a key (--key-file on every member): without one, anyone on the LAN can send such a hold in member %d's name and keep the lock from everyone for up to %v", member, mutex.MaxLeaseLimit)
		}
	}
	c.warnOnce(&p.warnedLease, EventLeaseAboveMax, fmt.Sprintf("member %d re-announced %s (fence %d) held for %v, granted by an older coordinator: longer than this member's (member %d) longest lease, %v (--lease): "+
		"%s; the hold is kept until its lease ends and renewed for at most %v, but a takeover waits only this member's lease "+
		"for the leases nobody re-announces: give every member the same --lease (and --heartbeat)",
		member, w.Name, w.Fence, lease, c.self, c.cfg.MaxLease, cause, c.cfg.MaxLease),
		"member", member, "lock", w.Name, "lease", lease, "max", c.cfg.MaxLease)
}

// warnOnce says msg at WARN as event name unless *said, which it sets:
// once per member and term (said is a flag of the term's peer).
func (c *Core) warnOnce(said *bool, name, msg string, args ...any) {
	if *said {
		return
	}
	*said = true
	c.events = append(c.events, core.Event{Name: name, Warn: true, Msg: msg, Args: args})
}

// holdOverCap takes hold w, re-announced by member p while its entries
// at the coordinator, every incarnation's together, reach its cap: its
// share and one sync's entries. A real member re-announces at most one
// sync's holds per incarnation, and its incarnation changes only at a
// restart; without a key, a forger naming a new incarnation in each sync
// added a sync's holds again and again (a review: 20,480 locks from 40
// syncs), since a new incarnation drops only the older one's waiting
// requests (their grants run on with their clients). The hold is not
// kept, and not dropped either: refused so (a cap counted per member,
// reverted), a forger's syncs that came first filled the count, the real
// member's hold was left out and its lock granted inside its lease (two
// holders). Instead no lock at all is granted before the hold would end
// (frozenUntil: its lease, at most peerLease), nor before the whole
// Hold has run (updateHold skips it no more): by then every lease of an
// older coordinator has ended (the package comment: Takeover), so the
// real hold, if it was one, ends before anyone else is granted its lock,
// as it would in any takeover some member's sync missed. The table stays
// within the cap; what a forger costs is grants for one lease (up to
// mutex.MaxLeaseLimit in an unchecked member's name). Said after the
// sync (sayOverCap), with the stop's real end.
func (c *Core) holdOverCap(member uint32, p *peer, w wire.CentralSyncEntry, left time.Duration) {
	k := c.co
	c.count("sync_holds_over_cap")
	if until := c.now.Add(c.cfg.pad(left)); until.After(k.frozenUntil) {
		k.frozenUntil = until
	}
	k.overCap, p.overCap = true, true
	if p.capHolds == 0 {
		p.capHold = w
	}
	p.capHolds++
}

// grantsFrom is when this coordinator may grant again, and whether it
// knows it yet: the end of its Hold (known once a majority joined) and
// of the stop for holds not kept (frozenUntil), whichever is later; the
// zero time when it grants now.
func (c *Core) grantsFrom() (at time.Time, known bool) {
	k := c.co
	known = true
	if !k.ready {
		at = k.holdUntil
		if k.majorityAt.IsZero() {
			at, known = k.start.Add(c.cfg.Hold()), false
		}
	}
	if k.frozenUntil.After(at) {
		at = k.frozenUntil
	}
	if !at.After(c.now) {
		return time.Time{}, true
	}
	return at, known
}

// clockText writes instant t of this member's clock for a log line or
// status: UTC, to the millisecond.
func clockText(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// sayOverCap says at WARN, after a sync of member p some of whose holds
// holdOverCap did not keep, how long this coordinator grants nothing:
// until the longest hold not kept (of any member) would end, and not
// before its Hold has run whole. Once per member and term, and again,
// at most once a second, when a later hold moves that end further than
// was said (the first WARN understated the stop: it named the end of
// the first hold not kept, which others outlasted).
func (c *Core) sayOverCap(member uint32, p *peer) {
	k := c.co
	w, n := p.capHold, p.capHolds
	p.capHolds = 0
	at, known := c.grantsFrom()
	if p.warnedCap && (!at.After(k.frozenSaid) || c.now.Sub(k.frozenSaidAt) < time.Second) {
		return
	}
	p.warnedCap, k.frozenSaid, k.frozenSaidAt = true, at, c.now
	until := fmt.Sprintf("%s (%v from now)", clockText(at), at.Sub(c.now).Round(time.Millisecond))
	if !known {
		until = fmt.Sprintf("%s at the earliest (%v from now: a majority has not joined its term yet, and its hold counts from then)",
			clockText(at), at.Sub(c.now).Round(time.Millisecond))
	}
	c.events = append(c.events, core.Event{Name: EventHoldsOverCap, Warn: true,
		Msg: fmt.Sprintf("member %d re-announced more holds, across its incarnations (the latest %d), than a member can have here (%d: its share of the queue and one sync's): %s (fence %d) and %d more of this sync are not kept, "+
			"so this coordinator (member %d) grants no lock at all until %s: until the longest hold not kept would end (it may be real: a member's sync lost and forged ones kept) and its whole hold has run (skipped no more in this term); "+
			"a later one that outlasts it is said again. %s",
			member, p.inc, c.share()+wire.MaxSyncEntries, w.Name, w.Fence, n-1, c.self, until, c.forgedCause(member)),
		Args: []any{"member", member, "lock", w.Name, "holds", p.entries, "until", at}})
}

// peerLease is the longest lease member p may hold as this coordinator
// knows it: MaxPeerLease when the operator set it for every member, or
// when p's configuration was compared with this member's and matched
// (its --lease is this one's); else mutex.MaxLeaseLimit, the longest any
// build grants.
func (c *Core) peerLease(p *peer) time.Duration {
	if c.cfg.peerLeaseSet || p.checked {
		return c.cfg.MaxPeerLease
	}
	return mutex.MaxLeaseLimit
}

// leaseAboveCluster says, once per member and term at WARN, that member p
// re-announced w with a lease (lease: the longer of its lease and what is
// left of it) longer than it may hold (bound: peerLease): kept for that
// long only.
func (c *Core) leaseAboveCluster(member uint32, p *peer, w wire.CentralSyncEntry, lease, bound time.Duration) {
	c.count("holds_lease_above_cluster")
	why := fmt.Sprintf("longer than any member's --lease (%v, Config.MaxPeerLease)", bound)
	if p.checked && member != c.self {
		why = fmt.Sprintf("longer than member %d's --lease (%v: configuration agreement found its configuration equal to this member's)", member, bound)
	}
	c.warnOnce(&p.warnedCluster, EventLeaseAboveCluster, fmt.Sprintf("member %d re-announced %s (fence %d) held for %v, %s: a member asks for no lease that long; "+
		"this coordinator (member %d) keeps it for %v only. %s",
		member, w.Name, w.Fence, lease, why, c.self, bound, c.aboveCause(member, p)),
		"member", member, "lock", w.Name, "lease", lease, "max", bound)
}

// aboveCause says what may have sent member p's hold longer than its
// --lease: forgedCause, except that with a key a member whose
// configuration was compared is no older build.
func (c *Core) aboveCause(member uint32, p *peer) string {
	if c.cfg.Authenticated && p.checked {
		return fmt.Sprintf("The cluster has a key and member %d's configuration was compared, so member %d sent it: a bug to report (with both members' logs)", member, member)
	}
	return c.forgedCause(member)
}

// forgedCause says what may have sent a number no member of this build
// sends in member's name.
func (c *Core) forgedCause(member uint32) string {
	if !c.cfg.Authenticated {
		return fmt.Sprintf("It came in member %d's name, and without a key, anyone on the LAN can send this; set a key (--key-file on every member)", member)
	}
	return fmt.Sprintf("The cluster has a key, so member %d sent it: a build without configuration agreement (status says it is followed unchecked: upgrade it), or a bug to report", member)
}

// checkLease reads a lease from the wire (0: the longest).
func (c *Core) checkLease(leaseMS uint32) (time.Duration, error) {
	lease := time.Duration(leaseMS) * time.Millisecond
	if leaseMS == 0 {
		lease = c.cfg.MaxLease
	}
	if lease < c.cfg.MinLease || lease > c.cfg.MaxLease {
		return 0, fmt.Errorf("%w: %v, want %v to %v", ErrBadLease, lease, c.cfg.MinLease, c.cfg.MaxLease)
	}
	return lease, nil
}

func (c *Core) stepRequest(from uint32, term, at uint64, r wire.CentralRequest, vec clock.Vector) error {
	p, err := c.peerFrame(from, term, at, r.Incarnation, r.Stamp)
	if err != nil {
		return err
	}
	p.maxSeq = max(p.maxSeq, r.Seq)
	lease, err := c.checkLease(r.LeaseMS)
	if err != nil {
		c.refuse(ckey{from, p.inc, r.Seq}, r.Name, wire.RefuseBadRequest)
		return err
	}
	c.coordRequest(from, p.inc, r.Seq, r.Name, modeOf(r.Mode), lease, vec)
	return nil
}

func (c *Core) stepRelease(from uint32, term, at uint64, r wire.CentralRelease) error {
	if _, err := c.peerFrame(from, term, at, r.Incarnation, 0); err != nil {
		return err
	}
	return c.coordRelease(from, r.Incarnation, r.Seq, r.Fence)
}

func (c *Core) stepRenew(from uint32, term, at uint64, r wire.CentralRenew) error {
	p, err := c.peerFrame(from, term, at, r.Incarnation, r.Stamp)
	if err != nil {
		return err
	}
	key := ckey{from, p.inc, r.Seq}
	e := c.co.entries[key]
	if e == nil && p.overCap && !c.co.ready {
		// Perhaps a hold re-announced over the member's cap (holdOverCap),
		// not kept: refused, the member would drop a lease no other can
		// be granted inside (the lock waits out the Hold). It ends by its
		// own count, as every older term's lease does during the Hold.
		c.count("renewals_over_cap")
		return nil
	}
	if (e == nil || !e.granted) && !p.joined {
		// The member's sync of this term, which re-announces what it
		// holds, has not arrived: it may have been withheld (its write
		// failed; the renewal's Ready wrote) or lost with a broken link.
		// Refused, the member would drop a lease its client still holds
		// and stop re-announcing it, and a later coordinator that heard
		// every member re-announce would grant the lock inside it. So no
		// answer: the beat called now brings the sync, and the member asks
		// again (the package comment: Takeover).
		c.count("renewals_before_sync")
		c.beatSoon()
		return nil
	}
	if e == nil || !e.granted || e.fence != r.Fence || e.lock != r.Name {
		c.refuse(key, r.Name, wire.RefuseNotHeld)
		return fmt.Errorf("%w: renewal of %d (fence %d)", ErrUnknownRequest, r.Seq, r.Fence)
	}
	lease, err := c.checkLease(r.LeaseMS)
	if err != nil && r.LeaseMS > ms(c.cfg.MaxLease) && r.LeaseMS <= uint32(mutex.MaxLeaseLimit/time.Millisecond) {
		// A member configured with a longer --lease than this
		// coordinator's (a grant of an older coordinator, kept until it
		// ends: leaseAboveMax): renewed for this one's longest, which
		// the member takes as a cut lease. Unanswered, its lease ended.
		lease, err = c.cfg.MaxLease, nil
		c.count("renewals_capped")
	}
	if err != nil {
		return err
	}
	e.confirmed = true // its member holds it
	parked := parkedRenewal{stamp: r.Stamp, heard: c.now, lease: lease}
	if c.oldInHold(e) {
		// Confirmed when the Hold ends, if the lease lasts till then
		// (confirmParked); else it ends, and the member learns it.
		c.count("renewals_held")
		c.co.renewals[key] = parked
		return nil
	}
	if !c.renewFresh(lease, c.now) {
		// Answered when a majority backs this coordinator afresh
		// (confirmParked); a newer renewal of the member replaces it.
		c.count("renewals_parked")
		c.co.renewals[key] = parked
		return nil
	}
	delete(c.co.renewals, key)
	c.confirmRenewal(e, parked)
	return nil
}

func (c *Core) stepSync(from uint32, term, at uint64, checked bool, s wire.CentralSync, vecs map[uint64]clock.Vector) error {
	p, err := c.peerFrame(from, term, at, s.Incarnation, s.Stamp)
	if err != nil {
		return err
	}
	if s.Stamp == p.syncedAt {
		return fmt.Errorf("%w: stamp %d again", ErrStale, s.Stamp)
	}
	p.syncedAt = s.Stamp
	k := c.co
	if b := k.beats[s.Echo%beatRing]; s.Echo != 0 && b.stamp == s.Echo {
		if b.at.After(p.support) {
			p.support, p.supportBeat = b.at, s.Echo
		}
		p.answered = max(p.answered, s.Echo)
	}
	p.prev, p.restarted, p.checked = 0, s.Flags&wire.CentralSyncRestarted != 0, checked
	if s.Flags&wire.CentralSyncPrevQuiet != 0 && int(s.Prev) < len(c.members) {
		p.prev = c.members[s.Prev]
	}
	if !p.joined {
		p.joined = true
		// The member answers only the coordinator it follows, so it backed
		// none older since it sent this sync; its age is shrunk for the
		// clocks' rates, so the instant is never taken as earlier than it
		// was (the sync arrived after it was sent: later is safe).
		p.backedOld = c.now.Add(-c.cfg.shrink(time.Duration(s.SupportAgeMS) * time.Millisecond))
		if s.Flags&wire.CentralSyncRestarted != 0 {
			k.restartSeen = true
		}
	}
	c.applySync(from, p, s.Entries, s.MaxSeq, vecs)
	c.updateHold()
	c.grantAll()
	c.confirmParked()
	return nil
}

// applySync reconciles the queue with a member's whole view of its
// requests: a waiting request the queue lacks is queued (a lost request,
// or one made under an older coordinator); one the queue granted is
// granted again (the grant was lost); a grant of an older term is
// installed as a holder until its lease ends, while the hold lasts (after
// it, every such lease has ended); a request of the member up to maxSeq
// that it no longer lists is gone (a lost release), one above maxSeq was
// never made (forged in its name). vecs are the waiting requests' stamps
// (the token-asking variant).
func (c *Core) applySync(member uint32, p *peer, entries []wire.CentralSyncEntry, maxSeq uint64, vecs map[uint64]clock.Vector) {
	k := c.co
	// The member's own word: a request above it was forged in its name.
	// What it lists waiting is queued again below: nothing dropped for
	// its silence holds V back any more.
	p.maxSeq, p.droppedSeq, p.expired = maxSeq, 0, nil
	listed := map[uint64]bool{}
	for _, w := range entries {
		listed[w.Seq] = true
	}
	// First what the member no longer has, and what it never made: a
	// request above its last one (it sends requests after the sync that
	// announced the last one, on the same ordered link) was forged in its
	// name, and must not keep its share of the queue.
	for _, e := range c.entriesOf(member) {
		switch {
		case e.inc != p.inc:
		case e.seq > maxSeq:
			c.count("sync_forged_request")
			c.remove(e)
		case !listed[e.seq]:
			c.count("sync_gone")
			c.remove(e)
		}
	}
	for _, w := range entries {
		key := ckey{member, p.inc, w.Seq}
		lease, err := c.checkLease(w.LeaseMS)
		if err != nil && w.Held && w.LeaseMS <= uint32(mutex.MaxLeaseLimit/time.Millisecond) {
			// A lease an older coordinator granted, longer than this one's
			// MaxLease (members configured apart): read as its member
			// counts it (the case w.Held below), never dropped.
			lease, err = time.Duration(w.LeaseMS)*time.Millisecond, nil
		}
		if err != nil {
			c.count("sync_bad_lease")
			if !w.Held && k.entries[key] == nil {
				// Never queued: refused as a request asking it is, or the
				// member would list it, waiting, for ever.
				c.refuse(key, w.Name, wire.RefuseBadRequest)
			}
			continue
		}
		x := k.entries[key]
		if x != nil && x.lock != w.Name {
			c.count("sync_inconsistent")
			continue
		}
		switch {
		case !w.Held && x == nil:
			c.coordRequest(member, p.inc, w.Seq, w.Name, modeOf(w.Mode), lease, vecs[w.Seq])
		case !w.Held && x.granted && !x.old:
			// The grant had not arrived when the member sent this sync:
			// lost, or still on its way. The member refuses it now (its
			// echo predates this sync), so it is granted anew, with a
			// newer fence (a reader: its readers' fence): an older fence
			// never arrives after a newer one ended.
			if !c.supported() {
				// A grant needs support (its lease is cut to it): the
				// member lists the request again in its next sync.
				c.callSupport()
				continue
			}
			c.count("grants_renewed_by_sync")
			c.sendGrant(x)
		case w.Held && x != nil && x.granted && x.fence == w.Fence:
			x.confirmed = true
		case w.Held && w.Fence > k.base+k.resumed:
			c.count("sync_forged_hold") // a fence of this term it was not granted
		case w.Held && k.ready:
			// An older term's lease, re-announced after this coordinator's
			// wait for such leases ended: over by now where the member's
			// --lease is this one's (a sync built just before it ended,
			// late on the way). An unchecked member's may be longer (an
			// older build on a longer --lease: docs/mutexd.md), and its
			// lock granted inside it. Not taken (the lock may be held
			// already); said, since two may hold it. Where the member's
			// sync comes only after its lease ended (refused meanwhile for
			// its admission window, up to 3 s: TestMixedBuilds at
			// -sim.seeds=200, tokenask calm seed 130, harsh seed 123),
			// nothing here can see it.
			c.count("sync_late_hold")
			if !p.checked && w.LeftMS > 0 {
				c.warnOnce(&p.warnedLate, EventLateHoldUnchecked, fmt.Sprintf("member %d re-announced %s (fence %d) as held for %v more after this member (member %d) had waited out the leases of the coordinators before it (its --lease, %v): "+
					"member %d is admitted unchecked (it announces no configuration: an older build), so its --lease may be longer than this member's, and the lock may have been granted to another member inside its lease: "+
					"give every member the same --lease, and upgrade member %d",
					member, w.Name, w.Fence, time.Duration(w.LeftMS)*time.Millisecond, c.self, c.cfg.MaxLease, member, member),
					"member", member, "lock", w.Name, "left", time.Duration(w.LeftMS)*time.Millisecond)
			}
		case w.Held:
			left := time.Duration(w.LeftMS) * time.Millisecond
			if left > max(lease, c.cfg.MaxLease) {
				c.count("sync_bad_lease")
				continue
			}
			switch long, bound := max(lease, left), c.peerLease(p); {
			case long > bound:
				// Longer than the member's --lease can be: no coordinator
				// granted it (a member asks at most its own). Kept for the
				// longest the member may hold, not refused, and that long
				// a forged one costs the lock (it used to hold it for up
				// to mutex.MaxLeaseLimit, an hour). Only where that bound
				// is known: a member admitted unchecked (no agreement)
				// may run a longer --lease than this one, and its hold,
				// cut, ended early (two holders: TestUncheckedLongerLease).
				c.leaseAboveCluster(member, p, w, long, bound)
				lease, left = min(lease, bound), min(left, bound)
			case long > c.cfg.MaxLease:
				// Kept all the same, until its lease ends as its member
				// counts it: dropped, the lock counted as free, another
				// member was granted it inside the lease and the holder's
				// renewal refused (TestReannouncedHoldLongerLease).
				c.leaseAboveMax(member, p, w, long)
			}
			switch {
			case x != nil:
				c.remove(x)
			case member != c.self && p.entries >= c.share()+wire.MaxSyncEntries:
				c.holdOverCap(member, p, w, left)
				continue
			case !c.admit(member, w.Name):
				// Taken all the same: a lease the member holds, which an
				// older coordinator granted. Left out, the lock would count
				// as free once the member joined (the hold skipped), and
				// its next renewal be refused as not held: two holders (a
				// review: its share filled by its own waiting requests,
				// listed first, or the queue by the new coordinator's
				// client). Up to the member's cap (holdOverCap), and only
				// while the term's hold runs (k.ready).
				c.count("holds_reannounced_over_limit")
			}
			c.count("holds_reannounced")
			c.add(&centry{ckey: key, lock: w.Name, mode: modeOf(w.Mode), lease: lease, granted: true, fence: w.Fence,
				expires: c.now.Add(c.cfg.pad(left)), old: true, confirmed: true})
		}
	}
	if p.capHolds > 0 {
		c.sayOverCap(member, p)
	}
}
