package central

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/wire"
)

// stampRing is how many of its recent stamps a member remembers the
// sending time of: a grant or renewal echoing an older one is refused.
// Stamps are taken per request, renewal and sync: about ten a second on
// an idle member, so this covers minutes.
const stampRing = 1024

type stampAt struct {
	stamp uint32
	at    time.Time
}

// follower is the client side of every member: the coordinator it
// follows, its stamps, and its pending renewals.
type follower struct {
	leader uint32 // the coordinator followed (0: none known; this member while it coordinates)
	term   uint64
	beat   uint32 // the last beat heard from it
	// beatStamp is the Lamport stamp of the frame that carried beat.
	beatStamp uint64
	tried     uint64    // the last term this member set out to coordinate
	holdMS    uint32    // what its last beat said of its hold
	holdSaid  time.Time // when that beat came (this member's clock)
	// backed is when this member last backed a coordinator: answered a
	// beat of the one it followed, or stopped coordinating itself (see
	// backedAt).
	backed time.Time
	// backedOlder is backedAt when this member began following the
	// current term: the latest instant it may have backed an older
	// coordinator, what its syncs of the term report.
	backedOlder time.Time
	// lastBeatFrom is the coordinator whose beat this member last answered
	// (this member, once it stopped coordinating); localBacked is when it
	// last answered a beat saying that the coordinator's own clients may
	// hold a lease (wire.CentralBeat.Quiet not set), of any coordinator, an
	// older build's included. prevCoord
	// and prevLocal are the two when this member began following the
	// current term: what its syncs of the term report (prevQuiet).
	lastBeatFrom, prevCoord uint32
	localBacked, prevLocal  time.Time

	stamp uint32
	// stamps holds the sending time of stamp s at s%stampRing, grown as
	// stamps are taken (they count from 1 in each run), up to stampRing:
	// a core that takes few costs little (the fuzz targets start hundreds
	// of cores a second).
	stamps   []stampAt
	renewing map[mutex.RequestID]renewal
	// listed is, per waiting request, the stamp of the last sync that
	// listed it as waiting: a grant echoing an older stamp was made before
	// the coordinator read that sync, which makes the coordinator grant
	// it anew (with a newer fence), so the older grant is refused.
	listed map[mutex.RequestID]uint32
	maxSeq uint64 // the last request made in this incarnation
	// syncOwed is the beat answered once the grants read with it are
	// entered (stepBeat); 0: none.
	syncOwed uint32
}

// renewal is a renewal that waits for the coordinator's answer.
type renewal struct {
	lease time.Duration
	next  time.Time // when it is sent (again)
	since time.Time // when it was first asked
	// unanswered is when the first of this lease's renewals still not
	// confirmed was asked (a renewal asked again keeps it), and warned
	// says that EventRenewalUnanswered was said for them: once until one
	// is confirmed.
	unanswered time.Time
	warned     bool
}

func (f *follower) init() {
	f.renewing, f.listed = map[mutex.RequestID]renewal{}, map[mutex.RequestID]uint32{}
}

func (f *follower) deadline() time.Time {
	var d time.Time
	for _, r := range f.renewing {
		if d.IsZero() || r.next.Before(d) {
			d = r.next
		}
	}
	return d
}

// nextStamp takes a stamp for a frame about to leave now.
func (c *Core) nextStamp() uint32 {
	c.fol.stamp++
	if c.fol.stamp == 0 {
		c.fol.stamp++
	}
	i := int(c.fol.stamp % stampRing)
	if i >= len(c.fol.stamps) {
		c.fol.stamps = append(c.fol.stamps, make([]stampAt, i+1-len(c.fol.stamps))...)
	}
	c.fol.stamps[i] = stampAt{stamp: c.fol.stamp, at: c.now}
	return c.fol.stamp
}

// stampAt is when this member sent the frame stamped s.
func (c *Core) stampAt(s uint32) (time.Time, bool) {
	i := int(s % stampRing)
	if i >= len(c.fol.stamps) {
		return time.Time{}, false
	}
	e := c.fol.stamps[i]
	return e.at, s != 0 && e.stamp == s
}

// prevQuiet is the coordinator whose beat this member last answered before
// the current term, if it answered no beat saying that coordinator's (or
// any) own clients may hold a lease for a Hold before now, and that
// coordinator is another member; 0 otherwise. The rank of it goes in this
// member's syncs (wire.CentralSyncPrevQuiet).
func (c *Core) prevQuiet() uint32 {
	f := &c.fol
	if f.prevCoord == 0 || f.prevCoord == c.self || !f.prevLocal.IsZero() && c.now.Sub(f.prevLocal) <= c.cfg.Hold() {
		return 0
	}
	return f.prevCoord
}

// backedAt is the latest instant at which this member may have backed a
// coordinator: its last answer to a beat, the end of its own last term as
// coordinator, or its start (a previous run may have backed one until it
// died).
func (c *Core) backedAt() time.Time { return maxTime(c.fol.backed, c.begun) }

// following says whether another member coordinates, and which: the frames
// of this member's clients go there.
func (c *Core) following() bool { return c.fol.leader != 0 && c.fol.leader != c.self && c.co == nil }

// fromCoordinator checks that a coordinator's frame comes from the one
// this member follows, in its term.
func (c *Core) fromCoordinator(from uint32, term uint64) error {
	if !c.following() || from != c.fol.leader || term != c.fol.term {
		return fmt.Errorf("%w: %d in term %#x (we follow %d in %#x)", ErrNotCoordinator, from, term, c.fol.leader, c.fol.term)
	}
	return nil
}

// restarted says whether this member started less than a lease ago: a
// previous run may have held leases it cannot re-announce.
func (c *Core) restarted() bool { return c.now.Before(c.begun.Add(c.cfg.pad(c.cfg.MaxLease))) }

// entries counts this member's requests, waiting and held.
func (c *Core) entries() int {
	n := 0
	for _, name := range c.reqs.Locks() {
		ls := mutex.LockStatus{Name: name}
		c.reqs.Fill(c.now, &ls)
		n += len(ls.Holders) + len(ls.Queue)
	}
	return n
}

// Acquire queues r at local time now (mutex.Algorithm) and asks the
// coordinator for it. The grant arrives as a mutex.Granted outcome (and
// mutex.EventGranted) with the returned ID.
func (c *Core) Acquire(now time.Time, r mutex.Request) (mutex.RequestID, error) {
	c.observe(now)
	c.enterGrants()
	// What enterGrants made (a grant that came in a frame, this member's
	// own as coordinator) leaves with this call's Ready even when the call
	// is refused: kept in the table it waited for a Tick the core did not
	// ask for, and was reported with its lease over (FuzzTokenAsk).
	defer c.drain()
	most := wire.MaxSyncEntries
	if c.ta != nil {
		most = tokenAskEntries(len(c.members))
		if err := c.checkVector(r.After); err != nil {
			return 0, fmt.Errorf("%w: %w", mutex.ErrBadVector, err)
		}
		if c.fol.maxSeq+1 >= 1<<seqBits {
			return 0, fmt.Errorf("%w: this run has made 2^32 requests, the most a vector counts: restart mutexd", mutex.ErrQueueFull)
		}
	}
	if c.entries() >= most {
		return 0, fmt.Errorf("%w: %d requests at this member, waiting and held", mutex.ErrQueueFull, most)
	}
	id, err := c.reqs.Enqueue(c.now, c.self, r)
	if err != nil {
		return 0, err
	}
	c.fol.maxSeq = uint64(id)
	st, _ := c.reqs.Lookup(c.now, id)
	var vec clock.Vector
	if c.ta != nil {
		vec = c.stamp(id, r.After)
	}
	switch {
	case c.co != nil:
		c.coordRequest(c.self, c.inc, uint64(id), st.Lock, st.Mode, time.Duration(st.LeaseMS)*time.Millisecond, vec)
	case c.following():
		req := wire.CentralRequest{Name: st.Lock, Mode: wireMode(st.Mode),
			Incarnation: c.inc, Seq: uint64(id), Stamp: c.nextStamp(), LeaseMS: uint32(st.LeaseMS)}
		if c.ta != nil {
			c.send(c.fol.leader, c.fol.term, wire.KindTokenAskRequest, wire.TokenAskRequest{Vector: encodeVector(vec), CentralRequest: req})
		} else {
			c.send(c.fol.leader, c.fol.term, wire.KindCentralRequest, req)
		}
	}
	return id, nil
}

// Release ends request id: a holder gives its lock back, a waiting request
// leaves the queue; the coordinator is told. A holder whose lease ended
// first lost the grant with it: ErrExpired.
func (c *Core) Release(now time.Time, id mutex.RequestID) error {
	c.observe(now)
	c.enterGrants()
	defer c.drain() // as Acquire's: also when the call is refused
	st, ok := c.reqs.Lookup(c.now, id)
	if !ok {
		return mutex.ErrUnknownRequest
	}
	_, err := c.reqs.Release(c.now, id)
	delete(c.fol.renewing, id)
	switch {
	case c.co != nil:
		c.coordRelease(c.self, c.inc, uint64(id), st.Fence)
	case c.following():
		c.send(c.fol.leader, c.fol.term, wire.KindCentralRelease, wire.CentralRelease{Name: st.Lock, Incarnation: c.inc, Seq: uint64(id), Fence: st.Fence})
	}
	return err
}

// Renew extends granted request id's lease to lease (0: its current one),
// through the coordinator: mutex.Renewed when it confirms (at once when
// this member coordinates with its majority's support), mutex.Lost when it
// refuses or the lease ends first.
func (c *Core) Renew(now time.Time, id mutex.RequestID, lease time.Duration) error {
	c.observe(now)
	c.enterGrants()
	if err := c.reqs.Renew(c.now, id, lease); err != nil {
		c.drain()
		return err
	}
	if lease == 0 {
		st, _ := c.reqs.Lookup(c.now, id)
		lease = time.Duration(st.LeaseMS) * time.Millisecond
	}
	r := renewal{lease: lease, next: c.now, since: c.now, unanswered: c.now}
	if prev, ok := c.fol.renewing[id]; ok {
		r.unanswered, r.warned = prev.unanswered, prev.warned
	}
	c.fol.renewing[id] = r
	c.sendRenewals()
	c.drain()
	return nil
}

// sendRenewals sends the renewals that are due, again every beat until
// the coordinator answers or the lease ends.
func (c *Core) sendRenewals() {
	for _, id := range slices.Sorted(maps.Keys(c.fol.renewing)) {
		r := c.fol.renewing[id]
		if c.now.Before(r.next) {
			continue
		}
		st, ok := c.reqs.Lookup(c.now, id)
		if !ok || !st.Granted {
			delete(c.fol.renewing, id)
			continue
		}
		switch {
		case c.co != nil && c.stamped:
			// Confirmed at the next reading of the clock, as the
			// coordinator's own grants are (ownDue): read in a Step, a
			// frame's stamp may be long past (the loop paused), and the
			// renewal reported with its lease over. r.next stays due.
			c.ownDue = true
			continue
		case c.co != nil:
			if c.coordRenewLocal(id, st, r.lease, r.since) {
				delete(c.fol.renewing, id)
				continue
			}
		case c.following():
			c.send(c.fol.leader, c.fol.term, wire.KindCentralRenew, wire.CentralRenew{Name: st.Lock, Incarnation: c.inc,
				Seq: uint64(id), Fence: st.Fence, Stamp: c.nextStamp(), LeaseMS: ms(r.lease)})
			c.count("renewals_sent")
		}
		if !r.warned && c.now.Sub(r.unanswered) >= c.cfg.BeatInterval {
			r.warned = true
			c.warnUnanswered(st, r)
		}
		r.next = c.now.Add(c.cfg.BeatInterval / 4)
		c.fol.renewing[id] = r
	}
}

// warnUnanswered says, once per lease until a renewal of it is
// confirmed, that a renewal has waited a beat for its confirmation: the
// coordinator did not answer (the link to it broke, it is paused, or it
// lost its majority), or this member coordinates a new term and may not
// renew a grant of an older one before its hold ends. The lease runs on
// as it was and ends unless an answer comes.
func (c *Core) warnUnanswered(st mutex.RequestStatus, r renewal) {
	c.count("renewals_unanswered")
	left := time.Duration(st.LeaseLeftMS) * time.Millisecond
	var why string
	disk := c.writes.withholding(c.now, r.unanswered)
	switch {
	case disk != "":
		why = disk
	case c.co != nil && c.co.ready:
		why = "this member coordinates and has no majority's support: the links to the others may be broken (mutexd status --cluster, run on this host, shows which members answer it)"
	case c.co != nil:
		why = fmt.Sprintf("this member coordinates a new term and waits out the older coordinator's leases (%v more) before it may renew a grant of an older term",
			max(time.Duration(0), c.co.holdUntil.Sub(c.now)).Round(time.Millisecond))
		if c.co.majorityAt.IsZero() {
			why = "this member coordinates a new term, which a majority has not joined yet, and may not renew a grant of an older term before its hold ends"
		}
	case c.following() && c.fol.holdMS > 0 && c.now.Before(c.fol.holdSaid.Add(time.Duration(c.fol.holdMS)*time.Millisecond)):
		why = fmt.Sprintf("coordinator %d coordinates a new term and grants nothing for about %v more, its last beat said: while it waits out the older coordinator's leases it renews no grant of an older term "+
			"(if its log says central_holds_over_cap, that wait may be over, and the link to it broken instead: mutexd status --cluster, run on this host, shows which members answer it)",
			c.fol.leader, c.fol.holdSaid.Add(time.Duration(c.fol.holdMS)*time.Millisecond).Sub(c.now).Round(time.Millisecond))
	case c.following():
		why = fmt.Sprintf("no coordinator confirmed it (this member follows %d): the link to it may be broken (mutexd status --cluster, run on this host, shows which members answer it), or it is paused or cut off from a majority", c.fol.leader)
	default:
		why = "no coordinator is known (an election is under way)"
	}
	c.events = append(c.events, core.Event{Name: EventRenewalUnanswered, Warn: true,
		Msg: fmt.Sprintf("renewal of %s (fence %d) unconfirmed for %v: %s; the lease ends in %v unless one is confirmed",
			st.Lock, st.Fence, c.now.Sub(r.unanswered).Round(time.Millisecond), why, left),
		Args: []any{"lock", st.Lock, "fence", st.Fence, "request", uint64(st.ID), "coordinator", c.fol.leader, "lease_left", left}})
}

// renewalsUnanswered counts this member's renewals unconfirmed for a beat
// or more (status).
func (c *Core) renewalsUnanswered() int {
	n := 0
	for _, r := range c.fol.renewing {
		if c.now.Sub(r.unanswered) >= c.cfg.BeatInterval {
			n++
		}
	}
	return n
}

func (c *Core) tickFollower() { c.sendRenewals() }

// syncEntries lists this member's requests as a sync does: per lock
// (sorted), the holders, then the waiting ones in queue order. A lease
// that has run out is left out (it is being lost).
func (c *Core) syncEntries() []wire.CentralSyncEntry {
	var out []wire.CentralSyncEntry
	for _, name := range c.reqs.Locks() {
		ls := mutex.LockStatus{Name: name}
		c.reqs.Fill(c.now, &ls)
		for _, h := range ls.Holders {
			end, _ := c.reqs.Expires(h.ID)
			// Left rounds up: a lease with a microsecond left still runs, and
			// a holder left out of a sync is taken for released.
			if left := ms(end.Sub(c.now)); left > 0 {
				out = append(out, wire.CentralSyncEntry{Name: name, Mode: wireMode(h.Mode), Held: true,
					LeaseMS: uint32(h.LeaseMS), LeftMS: left, Seq: uint64(h.ID), Fence: h.Fence})
			}
		}
		for _, w := range ls.Queue {
			out = append(out, wire.CentralSyncEntry{Name: name, Mode: wireMode(w.Mode), LeaseMS: uint32(w.LeaseMS), Seq: uint64(w.ID)})
		}
	}
	return out
}

// sendSync tells the coordinator followed everything this member has,
// answering beat echo (0: joining its term).
func (c *Core) sendSync(echo uint32) {
	if !c.following() {
		return
	}
	s := wire.CentralSync{Incarnation: c.inc, Echo: echo, MaxSeq: c.fol.maxSeq, Entries: c.syncEntries(),
		SupportAgeMS: msDown(c.now.Sub(maxTime(c.fol.backedOlder, c.begun)))}
	if c.restarted() {
		s.Flags |= wire.CentralSyncRestarted
	}
	if prev := c.prevQuiet(); prev != 0 {
		rank, _ := slices.BinarySearch(c.members, prev)
		s.Flags |= wire.CentralSyncPrevQuiet
		s.Prev = uint8(rank)
	}
	s.Stamp = c.nextStamp()
	for _, e := range s.Entries {
		if !e.Held {
			c.fol.listed[mutex.RequestID(e.Seq)] = s.Stamp
		}
	}
	if c.ta != nil {
		c.send(c.fol.leader, c.fol.term, wire.KindTokenAskSync, wire.TokenAskSync{Vectors: c.syncVectors(s.Entries), CentralSync: s})
		return
	}
	c.send(c.fol.leader, c.fol.term, wire.KindCentralSync, s)
}

// stepBeat answers the coordinator's beat, in a frame stamped at (its
// Lamport time), with a sync: the support it needs to grant, and the
// requests it may have missed.
//
// A beat numbered at or below the last one answered is a duplicate or a
// late one: the newer was answered. Unless it is stamped after the frame
// of the last one: the coordinator numbers and stamps its beats in the
// same order, so that one was never its own (without a key, anyone can
// send a beat in its name). One forged beat numbered 2^32-1 used to make
// this member answer no real beat of the term again: the coordinator,
// its support gone, granted nothing until the term changed.
func (c *Core) stepBeat(from uint32, term, at uint64, b wire.CentralBeat) error {
	if err := c.fromCoordinator(from, term); err != nil {
		return err
	}
	if b.Beat <= c.fol.beat {
		if b.Beat == c.fol.beat || at <= c.fol.beatStamp {
			return nil // reordered or duplicated: the newer one was answered
		}
		c.count("beats_undone")
	}
	c.fol.beat, c.fol.beatStamp, c.fol.holdMS, c.fol.holdSaid = b.Beat, at, b.HoldMS, c.now
	// Backing it from now: a coordinator this member joins later counts
	// this one's leases from here.
	c.fol.backed = c.now
	c.fol.lastBeatFrom = from
	if !b.Quiet {
		c.fol.localBacked = c.now
	}
	if c.stamped && len(c.entering) > 0 {
		// A grant read before this beat waits for the clock's reading
		// (enter), where it is taken, or refused if its lease ran out
		// meanwhile. The sync is sent then, saying which: sent now, it
		// listed the request as waiting, which voided the grant
		// (grants_superseded) and had it made anew a sync later, after
		// the requests that name it (TestOracleHarsh/tokenask seed 37:
		// 52 ms; TestGrantReadWithBeat); listed held, the grant could
		// still be refused at the reading (seed 193).
		c.fol.syncOwed = b.Beat
		return nil
	}
	c.sendSync(b.Beat)
	return nil
}

// stepGrant takes a grant (or a renewal's confirmation) from the
// coordinator followed. Its lease counts from when this member sent the
// frame it echoes; its fence must be of the coordinator's term, its lease
// the one asked for.
func (c *Core) stepGrant(from uint32, term uint64, g wire.CentralGrant, renewal bool) error {
	if err := c.fromCoordinator(from, term); err != nil {
		return err
	}
	if g.Incarnation != c.inc {
		return fmt.Errorf("%w: grant for incarnation %d, this is %d", ErrStaleIncarnation, g.Incarnation, c.inc)
	}
	at, ok := c.stampAt(g.Echo)
	if !ok {
		return fmt.Errorf("%w: %d", ErrBadEcho, g.Echo)
	}
	lease := time.Duration(g.LeaseMS) * time.Millisecond
	id := mutex.RequestID(g.Seq)
	st, ok := c.reqs.Lookup(c.now, id)
	if !ok || st.Lock != g.Name || st.Mode != modeOf(g.Mode) {
		if !renewal && !ok && g.Seq <= c.fol.maxSeq {
			// A grant of a request this member no longer has (released
			// while the grant was on its way): give it back at once.
			c.send(c.fol.leader, c.fol.term, wire.KindCentralRelease, wire.CentralRelease{Name: g.Name, Incarnation: c.inc, Seq: g.Seq, Fence: g.Fence})
		}
		return fmt.Errorf("%w: %d (%s)", ErrUnknownRequest, g.Seq, g.Name)
	}
	if renewal {
		pending, ok := c.fol.renewing[id]
		switch {
		case !st.Granted || st.Fence != g.Fence:
			return fmt.Errorf("%w: renewal of fence %d, the grant's is %d", ErrBadFence, g.Fence, st.Fence)
		case !ok:
			c.count("renewed_duplicate")
			return nil
		case lease <= 0 || lease > pending.lease:
			return fmt.Errorf("%w: renewed for %v, asked %v", ErrBadLease, lease, pending.lease)
		}
		delete(c.fol.renewing, id)
		// A lease cut by the coordinator (its support's age) ends lease
		// after the echoed stamp: counted from that much before it.
		// Confirmed at a reading of the clock, as a grant is (enter).
		e := entering{id: id, lock: g.Name, fence: g.Fence, term: term, echo: g.Echo, from: at.Add(lease - pending.lease), renewal: true}
		if c.stamped {
			c.entering = append(c.entering, e)
			return nil
		}
		c.enter(e)
		return nil
	}
	base, err := FenceBase(term, c.members)
	if err != nil || g.Fence <= base || g.Fence-base >= 1<<fenceCountBits {
		return fmt.Errorf("%w: fence %d in term %#x", ErrBadFence, g.Fence, term)
	}
	if st.Granted {
		if st.Fence == g.Fence {
			c.count("grants_duplicate")
			return nil
		}
		return fmt.Errorf("%w: second grant of %d (fence %d, holds %d)", ErrBadFence, g.Seq, g.Fence, st.Fence)
	}
	if g.Echo < c.fol.listed[id] {
		// Made before the coordinator read a sync that listed the request
		// as waiting: the coordinator has granted it anew since (or will).
		c.count("grants_superseded")
		return nil
	}
	asked := time.Duration(st.LeaseMS) * time.Millisecond
	if lease <= 0 || lease > asked {
		return fmt.Errorf("%w: granted for %v, asked %v", ErrBadLease, lease, asked)
	}
	if !c.now.Before(at.Add(lease)) {
		// Its lease ran out on the way (this member was paused, say): the
		// coordinator has let it go; the request waits on, and the next
		// sync queues it again.
		c.count("grants_expired_on_arrival")
		return nil
	}
	e := entering{id: id, lock: g.Name, fence: g.Fence, term: term, echo: g.Echo, from: at.Add(lease - asked), end: at.Add(lease)}
	if c.stamped {
		c.entering = append(c.entering, e)
		return nil
	}
	c.enter(e)
	return nil
}

// entering is a grant from the coordinator followed, taken in Step and
// reported at the next reading of the clock (enterGrants): its lease
// counts from from and ends at end, on this member's clock.
type entering struct {
	id          mutex.RequestID
	lock        string
	fence, term uint64
	echo        uint32 // the stamp of the frame it answers
	from, end   time.Time
	// renewal: the confirmation of a renewal, its lease counted from
	// from; the table refuses it, the lease lost, if that lease or the
	// one it renews has ended by the reading (ConfirmRenewal).
	renewal bool
}

// enterGrants runs, at a reading of the clock, what Step left for one:
// the grants that came in frames, and this member's own grants as
// coordinator (ownDue).
func (c *Core) enterGrants() {
	es := c.entering
	c.entering = nil
	for _, e := range es {
		c.enter(e)
	}
	if b := c.fol.syncOwed; b != 0 {
		c.fol.syncOwed = 0
		c.sendSync(b)
	}
	if c.ownDue {
		c.ownDue = false
		if c.co != nil {
			c.grantAll()
		}
	}
}

// enter reports grant e, now being a reading of the clock, if its lease
// has time left; one read after its lease ended is not (the next Tick
// would end it at once: a client told it holds the lock with no time
// left): the coordinator lets it go at its end, and the request waits on
// for the next sync to ask for it again, as one whose lease ran out on
// the way. The lease is never lengthened for the lateness.
func (c *Core) enter(e entering) {
	if e.renewal {
		c.reqs.ConfirmRenewal(c.now, e.from, e.id)
		return
	}
	st, ok := c.reqs.Lookup(c.now, e.id)
	if !ok || st.Lock != e.lock || st.Granted {
		return // ended, or granted by a copy of the frame, meanwhile
	}
	if e.echo < c.fol.listed[e.id] {
		// A sync sent while it waited here listed the request as waiting:
		// the coordinator grants it anew, and this grant is void (stepGrant).
		c.count("grants_superseded")
		return
	}
	if !c.now.Before(e.end) {
		c.late.Report(c.now, c.counters, &c.events, mutex.EventGrantLate, e.lock, e.id, c.now.Sub(e.end), "it waits on, and this member's next sync asks the coordinator for it again")
		return
	}
	delete(c.fol.listed, e.id)
	if _, err := c.reqs.GrantFrom(c.now, e.from, e.id, e.fence, e.term); err != nil {
		// The coordinator's order crossed this member's own (a takeover
		// re-queued requests): give the grant back; the request waits on.
		c.count("grants_returned")
		c.send(c.fol.leader, c.fol.term, wire.KindCentralRelease, wire.CentralRelease{Name: e.lock, Incarnation: c.inc, Seq: uint64(e.id), Fence: e.fence})
	}
}

// stepRefuse ends a request the coordinator refused.
func (c *Core) stepRefuse(from uint32, term uint64, r wire.CentralRefuse) error {
	if err := c.fromCoordinator(from, term); err != nil {
		return err
	}
	if r.Incarnation != c.inc {
		return fmt.Errorf("%w: refusal for incarnation %d, this is %d", ErrStaleIncarnation, r.Incarnation, c.inc)
	}
	id := mutex.RequestID(r.Seq)
	st, ok := c.reqs.Lookup(c.now, id)
	if !ok || st.Lock != r.Name {
		return fmt.Errorf("%w: %d (%s)", ErrUnknownRequest, r.Seq, r.Name)
	}
	switch {
	case r.Reason == wire.RefuseNotHeld && st.Granted:
		c.reqs.Revoke(id, mutex.RenewRefused)
	case r.Reason != wire.RefuseNotHeld && !st.Granted:
		c.reqs.Refuse(id, Refused)
	}
	return nil
}

func wireMode(m mutex.Mode) wire.CentralMode {
	if m == mutex.Shared {
		return wire.CentralShared
	}
	return wire.CentralExclusive
}

func modeOf(m wire.CentralMode) mutex.Mode {
	if m == wire.CentralShared {
		return mutex.Shared
	}
	return mutex.Exclusive
}
