package tokenring

// A lock's state at this member, its clients' calls (Acquire, Renew,
// Release), the grant, and each lock's timers (tickLock). The handoff is
// in handoff.go, the probes in probe.go, loss and repair in repair.go.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/delivery"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutexcount"
	"github.com/synclab/synclab/pkg/wire"
)

// lock is one lock's state at this member.
type lock struct {
	name     string
	promised uint64 // highest generation promised or seen (persisted)
	maxFence uint64 // highest fence this member knows of
	// granted is the highest fence this member granted in this run: the
	// ring's tokens never come back below it (stepToken).
	granted uint64
	// promisedAt is when promised last rose in this run (zero: not since
	// the start): the newest generation is at most that old here.
	// checkedGen is the newest generation whose check this member
	// confirmed in this run: that token's Hold was over.
	promisedAt time.Time
	checkedGen uint64
	checkedAt  time.Time // when this member last answered a check OK in this run

	tok *token // the token, when held here
	// handoff is the token while it is sent and not yet acknowledged: a
	// delivery.Outbox keyed (successor, hop), tried once (a successor that
	// does not acknowledge within AckTimeout is skipped, not asked again).
	handoff *delivery.Outbox[inflight]
	lastGen uint64 // the last token received: a duplicate is acknowledged, not taken
	lastHop uint64

	// wantsSeen is when each member was last heard to want the token
	// while it was not here, and the want's number: the token takes the
	// recent ones with it, less those its Served list says were served
	// (Suzuki-Kasami). A want older than the token's arrival is stale (the
	// token has been round since, and served it or learned it again): see
	// stepToken.
	wantsSeen map[uint32]seenWant
	// wantNum is the number of this member's last want (ProbeWant), 0
	// before the first: the clock's milliseconds, or one more than the
	// last if that is more, so that they increase and a restarted member's
	// wants are newer than any it made before (its clock set back instead:
	// see takeServed).
	wantNum  uint64
	wantSent bool      // a want for the queue went out
	lossAt   time.Time // when a waiting member looks for the token; zero: not waiting
	backoff  time.Time // no new locate before this (after a failed prepare)

	locate, prepare, check *probe

	// The last successful check: a majority had promised nothing newer
	// than confirmedGen when it was sent, at confirmedAt.
	confirmedGen uint64
	confirmedAt  time.Time
	// renewals is the lease each pending renewal asked for (its holder's
	// current one when it asked for none), for grantFrom.
	renewals map[mutex.RequestID]time.Duration
	// dueGrant is when the lease of request dueID would have ended had
	// the grant a frame completed been made on the frame's receive stamp;
	// dueRenewal, the same for the renewals it confirmed (zero: none),
	// and dueRenewalAt the stamp of the frame that confirmed them, from
	// member dueRenewalBy (named in lock_renewal_late). Both wait for the
	// next reading of the clock (judgeDue, finishRenewal); a renewal lost
	// there keeps its stamp to be said with (sayRenewalEnded).
	dueGrant, dueRenewal, dueRenewalAt time.Time
	dueID                              mutex.RequestID
	dueRenewalBy                       uint32

	// outstanding is the end of the last lease granted here that may still
	// run: a grant whose token was dropped is lost to this member, not to
	// its client, which only learns it when it renews. A proposer is told,
	// and waits it out even when everyone promised.
	outstanding time.Time

	// answeredOK is the last time this member answered OK to a check of
	// this lock (or, for an entry made since, the latest it may have: see
	// Core.confirmedFloor): a lease granted on what it confirmed ends
	// within MaxLease of it (grantFrom). A promise says how much of
	// that is left. A promise itself confirms nothing: no token grants on
	// its promises alone (see finishPrepare).
	answeredOK time.Time

	// vouch asks the member a token came from whether it passed exactly
	// that token (see vouching.go); passed is what this member last passed
	// on, to answer such a question.
	vouch  *probe
	passed *handoff

	// proposed is a generation this member proposed in this run and has
	// not created: a prepare that failed for want of a majority is retried
	// in the same generation rather than a new round (a member cut off
	// from the majority would otherwise burn rounds every second).
	proposed uint64
	// vowed is the generation this member last promised to a proposer in
	// this run (promised may be one it only heard of).
	vowed   uint64
	vowedAt time.Time
	// prepareAt is when a locate that found nothing proposes (a random
	// part of a probe timeout later); prepareKnown and prepareSince, what
	// it knew and when it started, for a last look for rivals.
	prepareAt    time.Time
	prepareKnown uint64
	prepareSince time.Time
	// located is when each other member's last locate was heard: a
	// member with a lower ID that looked for the token together with this
	// one proposes first (see finishLocate).
	located   map[uint32]time.Time
	exhausted bool // EventRoundsExhausted was reported

	creator uint32    // who made the entry (see table.go)
	used    time.Time // last frame or request about it
	local   bool      // a client of this member asked for it (metrics)
}

// seenWant is a want overheard: when, and its number (0: a locate's or a
// prepare's, not numbered; judged by its age). A prepare's names the
// generation proposed (madeBy): a token of that generation was made by the
// proposer, which served itself before passing it on.
type seenWant struct {
	at     time.Time
	num    uint64
	madeBy uint64
}

func newLock(name string, promised uint64, ackTimeout time.Duration) *lock {
	out, err := delivery.NewOutbox[inflight](delivery.Config{Retry: ackTimeout, Tries: 1})
	if err != nil {
		panic(fmt.Sprintf("tokenring: handoff outbox: %v", err)) // AckTimeout validated: a bug
	}
	return &lock{name: name, promised: promised, wantsSeen: map[uint32]seenWant{}, handoff: out}
}

// inFlight is the token sent and not yet acknowledged, nil if none.
func (l *lock) inFlight() *inflight {
	if l.handoff.Len() == 0 {
		return nil
	}
	return &l.handoff.Entries()[0].Msg
}

type token struct {
	gen, hop, fence uint64
	wants           map[uint32]bool
	// served is, per member, the number of its last want served
	// (wire.Token's Served): set by that member alone.
	served     map[uint32]uint64
	holdUntil  time.Time
	arrived    time.Time // when it came here
	servedHere bool      // a request was granted during this visit

	// from is the member it came from (0: created here); it is used only
	// once vouched. prevGen and prevHop are the lock's lastGen and lastHop
	// before it came, put back if it is disowned.
	from             uint32
	vouched          bool
	prevGen, prevHop uint64
}

type inflight struct {
	to       uint32
	gen, hop uint64
	wants    []uint32
	at       time.Time  // first sent
	msg      wire.Token // to send again
	late     bool       // its acknowledgement is overdue; a locate asks whether `to` is there
}

// Acquire queues r at local time now (mutex.Algorithm). The grant arrives
// as a mutex.Granted outcome (and mutex.EventGranted) with the returned ID.
func (c *Core) Acquire(now time.Time, r mutex.Request) (mutex.RequestID, error) {
	c.observe(now)
	if _, err := c.reqs.Check(c.self, r); err != nil {
		return 0, err
	}
	l, err := c.lockFor(r.Lock, c.self)
	if err != nil {
		return 0, err
	}
	l.local = true
	id, err := c.reqs.Enqueue(c.now, c.self, r)
	if err != nil {
		return 0, err
	}
	if l.tok != nil {
		c.advance(l)
	} else {
		c.want(l)
	}
	return id, nil
}

// want makes sure the members know this one waits for l's token.
func (c *Core) want(l *lock) {
	if l.lossAt.IsZero() {
		l.lossAt = c.now.Add(c.cfg.LossTimeout)
	}
	if l.wantSent {
		return
	}
	l.wantSent = true
	l.wantNum = max(l.wantNum+1, uint64(max(c.now.UnixMilli(), 0)))
	// A datagram: a want lost on a lossy link is found again by this
	// member's next locate. (Sent over the members' TCP links instead,
	// it slowed the namespace lab's contended counter past its deadline.)
	c.send(core.Broadcast, wire.KindRingProbe, wire.RingProbe{Op: wire.ProbeWant, Name: l.name, Generation: l.wantNum}, false)
}

// Release ends request id: a holder gives its lock back, a waiting request
// leaves the queue. A holder whose lease ended first (the member was
// paused, say) lost the grant with it: ErrExpired.
func (c *Core) Release(now time.Time, id mutex.RequestID) error {
	c.observe(now)
	st, ok := c.reqs.Lookup(c.now, id)
	if !ok {
		return mutex.ErrUnknownRequest
	}
	l := c.locks[st.Lock]
	if st.Granted {
		c.sayRenewalEnded(l)
	}
	_, err := c.reqs.Release(c.now, id)
	if st.Granted {
		l.outstanding = time.Time{}
		c.drain()
		c.advance(l)
		return err
	}
	if c.reqs.Waiting(l.name) == 0 {
		l.lossAt, l.wantSent = time.Time{}, false
	}
	return err
}

// Renew extends the lease of granted request id to lease (0: its current
// one) from now. The outcome is mutex.Renewed or mutex.Lost; it is
// immediate when a check of the token is fresh, else it follows one.
func (c *Core) Renew(now time.Time, id mutex.RequestID, lease time.Duration) error {
	c.observe(now)
	st, ok := c.reqs.Lookup(c.now, id)
	if !ok {
		return mutex.ErrUnknownRequest
	}
	l := c.locks[st.Lock]
	// Whether a renewal begins is the table's word, not l.renewals': a
	// holder that released or lost the lock before the reading its
	// renewal waited for left its entry there, and with it the stamp of
	// its check's answers, which dated the next holder's renewal before
	// its own grant (a renewal made on answers that came after its lease).
	begins := !c.reqs.Renewing(l.name)
	c.sayRenewalEnded(l) // one pending whose lease ended before this call
	if err := c.reqs.Renew(c.now, id, lease); err != nil {
		if errors.Is(err, mutex.ErrExpired) {
			l.outstanding = time.Time{}
			c.drain()
		}
		return err
	}
	if lease == 0 {
		lease = time.Duration(st.LeaseMS) * time.Millisecond
	}
	if begins {
		// Nothing of an earlier renewal's frames counts for it.
		clear(l.renewals)
		l.dueRenewal, l.dueRenewalAt = time.Time{}, time.Time{}
	}
	if l.renewals == nil {
		l.renewals = map[mutex.RequestID]time.Duration{}
	}
	l.renewals[id] = lease
	if c.confirmed(l) {
		c.finishRenewal(l)
	} else if l.check == nil {
		c.startCheck(l)
	}
	return nil
}

// finishRenewal renews the pending renewals of l's holder on the check
// passed at confirmedAt: each lease from then is bounded as a grant's is
// (grantFrom).
//
// In a Step, whose now is a frame's receive stamp, the renewals wait for
// the next reading of the clock (tryGrant says why; tickLock renews them
// there if the check is still fresh, and judgeDue counts those refused).
// At that reading the lease to renew is judged at the frame's stamp
// (dueRenewalAt), not at the reading: a loop that read the check's answers
// after the old lease's end, the answers in time, renews it as it would
// have on time, when the renewed lease still runs past the reading. That
// is safe: the check is still within its window at the reading (tickLock
// renews only then), so the token has not left this member and no newer
// one can have been granted on, and the renewed lease is counted from the
// reading and capped at MaxLease after the check (grantFrom), the same
// lease a renewal asked for at the reading on that check would get. The
// lock was free by the table between the old lease's end and the reading,
// but nothing else could take it: the token stayed here.
func (c *Core) finishRenewal(l *lock) {
	if !c.reqs.Renewing(l.name) {
		clear(l.renewals)
		l.dueRenewal, l.dueRenewalAt = time.Time{}, time.Time{}
		return
	}
	if c.stamped {
		if l.dueRenewalAt.IsZero() {
			l.dueRenewalAt, l.dueRenewalBy = c.now, c.from
		}
		for _, id := range c.reqs.Holders(l.name) {
			lease := c.renewalLease(l, id)
			if end := c.grantFrom(l, lease).Add(lease); l.dueRenewal.IsZero() || end.Before(l.dueRenewal) {
				l.dueRenewal = end
			}
		}
		c.grantDue = true
		return
	}
	at, by := c.now, uint32(0)
	if !l.dueRenewalAt.IsZero() && l.dueRenewalAt.Before(at) {
		at, by = l.dueRenewalAt, l.dueRenewalBy
	}
	l.dueRenewal, l.dueRenewalAt = time.Time{}, time.Time{}
	for _, id := range c.reqs.Holders(l.name) {
		from := c.grantFrom(l, l.renewals[id])
		if lease := c.renewalLease(l, id); !from.Add(lease).After(c.now) {
			// Its lease would be over at the reading: grantFrom's cap
			// makes that impossible on a check within the window, but a
			// renewal reported over is never made.
			c.late.ReportRenewal(c.now, c.counters, &c.events, c.renewalLate(l, id, c.now.Sub(from.Add(lease)), at, by))
			continue
		}
		if end, ok := c.reqs.Expires(id); ok && !at.Before(end) {
			// Its answers came after the lease it renews had ended (the
			// check still fresh at the reading): the table takes it as
			// expired below, and the administrator learns why here
			// (lost as lock_lost expired alone, it said nothing of the
			// link or the member that answered late).
			c.late.ReportRenewal(c.now, c.counters, &c.events, c.renewalLate(l, id, c.now.Sub(end), at, by))
		}
		c.reqs.ConfirmRenewal(at, from, id)
	}
	clear(l.renewals)
	l.outstanding = c.reqs.Expiry(l.name)
	c.drain()
}

// renewalLease is the lease holder id's pending renewal of l asks for:
// the one it named, else the one it holds.
func (c *Core) renewalLease(l *lock, id mutex.RequestID) time.Duration {
	if lease := l.renewals[id]; lease > 0 {
		return lease
	}
	st, _ := c.reqs.Lookup(c.now, id)
	return time.Duration(st.LeaseMS) * time.Millisecond
}

// checkAhead is how long before a new token's Hold ends its first check
// is sent: two probe timeouts, at most half the confirm window (the check
// must still be fresh when the Hold ends, and the first lease is shorter
// by as much as the check is older than the grant).
func (c *Core) checkAhead() time.Duration {
	return min(2*c.cfg.ProbeTimeout, c.cfg.confirmFor()/2)
}

// grantFrom is when a lease granted or renewed now on l's last passed
// check is counted from: now, unless the lease would then end more than
// MaxLease after the check was sent, and then so much earlier that it
// ends there. That bound is what lets a regenerated token wait only
// MaxLease (padded) from the last check its promisers answered, not a
// confirm window more (holdUntil): the check was sent before each of them
// answered it. Only a lease longer than MaxLease less the check's age is
// shortened (the default lease is MaxLease: by the check's age, under a
// millisecond when the grant or renewal waited for its check, at most
// confirmFor when it came on a recent one). The lease's length is taken
// at a whole millisecond above (the table's status has milliseconds), so
// the bound errs a fraction of one early. A lease of unknown length (0:
// a renewal not recorded) counts from the check.
func (c *Core) grantFrom(l *lock, lease time.Duration) time.Time {
	if lease <= 0 {
		return l.confirmedAt
	}
	from := l.confirmedAt.Add(c.cfg.MaxLease - lease.Truncate(time.Millisecond) - time.Millisecond)
	if from.After(c.now) {
		from = c.now
	}
	return later(l.confirmedAt, from)
}

// lose takes l's lock from its holder.
func (c *Core) lose(l *lock, why mutex.LossReason) {
	clear(l.renewals)
	if c.reqs.Lose(l.name, why) == 0 {
		return
	}
	if why == mutex.Expired {
		l.outstanding = time.Time{}
	}
	c.drain()
}

// drain moves the table's outcomes to the core's, each reported as an
// event too (for logs and hooks), in the order they happened.
func (c *Core) drain() {
	mutexcount.Drain(c.reqs, &c.outcomes, &c.events, mutexcount.Grants{Epoch: "generation"}, nil)
}

// confirmed says whether a grant or renewal may happen now: the token was
// checked with a majority recently enough.
func (c *Core) confirmed(l *lock) bool {
	return l.tok != nil && l.confirmedGen == l.tok.gen && !l.confirmedAt.IsZero() &&
		c.now.Sub(l.confirmedAt) <= c.cfg.confirmFor()
}

// others returns the members other than this one that wait for l's token
// and may be passed it.
func (c *Core) others(l *lock) []uint32 {
	set := map[uint32]bool{}
	for m, w := range l.wantsSeen {
		if c.fresh(w.at) && !(l.tok != nil && l.tok.servedWant(m, w.num)) {
			set[m] = true
		}
	}
	if l.tok != nil {
		maps.Copy(set, l.tok.wants)
	}
	var out []uint32
	for m := range set {
		if m != c.self && c.up(m) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// fresh says whether a want heard at at may still stand: a member that
// waits without the token looks for it (locate) every loss timeout, and
// whoever holds the token then takes its want again.
func (c *Core) fresh(at time.Time) bool {
	return !at.Before(c.now.Add(-2*c.cfg.LossTimeout - time.Duration(c.cfg.ProbeTries)*c.cfg.ProbeTimeout))
}

// advance decides what the token held here does next: grant, pass on, or
// stay.
func (c *Core) advance(l *lock) {
	if l.tok == nil || c.reqs.Held(l.name) || !l.tok.vouched {
		return
	}
	others := c.others(l)
	if c.reqs.Waiting(l.name) > 0 && !(l.tok.servedHere && len(others) > 0) {
		c.tryGrant(l)
		return
	}
	if len(others) > 0 {
		c.pass(l, others)
	}
}

// tryGrant grants the head of the queue if the token may grant now.
func (c *Core) tryGrant(l *lock) {
	if c.now.Before(l.tok.holdUntil) {
		// The first grant's check goes out a little before the Hold ends
		// (checkAhead), so that its round trip, long on a busy host, is
		// not added to the recovery. Checking early is safe: the Hold
		// alone keeps the old leases apart, and a check says only that
		// no majority had promised a newer generation when it was sent,
		// from which the lease is counted (grantFrom).
		if !c.now.Before(l.tok.holdUntil.Add(-c.checkAhead())) && !c.confirmed(l) && l.check == nil {
			c.startCheck(l)
		}
		return // Tick tries again
	}
	if !c.confirmed(l) {
		c.judgeDue(l)
		if l.check == nil {
			c.startCheck(l)
		}
		return
	}
	if l.tok.fence&(1<<fenceCountBits-1) == 1<<fenceCountBits-1 {
		// A trillion grants in one generation: take a new one rather
		// than let the fence wrap into the next round's.
		c.count("fence_exhausted")
		c.dropToken(l, l.tok.gen)
		c.want(l)
		return
	}
	head := c.reqs.Grantable(l.name) // the head: the ring offers no shared mode
	st, _ := c.reqs.Lookup(c.now, head[0])
	lease := time.Duration(st.LeaseMS) * time.Millisecond
	from := c.grantFrom(l, lease)
	if c.stamped {
		// The token's arrival, its check's last answer or its vouch
		// completed the grant, but now is that frame's receive stamp: a
		// loop that read it late (a process paused with the frame in its
		// kernel, a host too busy to run it) would report a grant whose
		// lease, counted from the check, had ended before the report.
		// The grant is made at the next reading of the clock (the Tick
		// Deadline asks for at once, or a client's call), where every
		// condition above is judged again: a check too old by then is
		// made again (judgeDue counts the grant refused), and the token
		// stays here meanwhile, its fence unused.
		l.dueID, l.dueGrant = head[0], from.Add(lease)
		c.grantDue = true
		return
	}
	l.dueID, l.dueGrant = 0, time.Time{}
	g, err := c.reqs.GrantFrom(c.now, from, head[0], l.tok.fence+1, l.tok.gen)
	if err != nil {
		c.count("grants_refused_by_table") // advance checked that the head may go: a bug, counted
		return
	}
	l.tok.fence = g.Fence
	l.granted = max(l.granted, g.Fence)
	l.tok.servedHere = true
	l.tok.served[c.self] = l.wantNum // every want this member sent is served, or in the token's wants when it passes
	l.maxFence = max(l.maxFence, l.tok.fence)
	l.outstanding = g.Expires
	if c.reqs.Waiting(l.name) == 0 {
		l.lossAt, l.wantSent = time.Time{}, false
	}
	c.drain()
}

// judgeDue judges, at a reading of the clock, the grant and the renewals
// a frame completed (tryGrant, finishRenewal) that the token cannot make
// now: its check is too old by the clock. One whose lease, counted on the
// frame's stamp, had ended by now is a grant the loop read late, refused
// (grants_late, mutex.EventGrantLate at WARN at most once a minute); the
// token stays and checks again. One read a little late, its lease not
// over, is checked again without a word, as any grant on an old check. A
// renewal whose lease is over by now is lost at this reading, and said
// there with its answers' stamp (sayRenewalEnded: the stamp is kept for
// it); one whose lease still runs is checked again, as a renewal asked
// now (its answers' stamp forgotten: the new check's date it).
func (c *Core) judgeDue(l *lock) {
	if l.dueGrant.IsZero() && l.dueRenewal.IsZero() || c.stamped || c.confirmed(l) {
		return
	}
	if end, id := l.dueGrant, l.dueID; !end.IsZero() {
		l.dueID, l.dueGrant = 0, time.Time{}
		if st, ok := c.reqs.Lookup(c.now, id); ok && !st.Granted && l.tok != nil && !c.now.Before(end) {
			c.late.Report(c.now, c.counters, &c.events, mutex.EventGrantLate, l.name, id, c.now.Sub(end),
				"the token stays at this member, which checks it again and grants on that check if it is still the newest, else waits for the newer token")
		}
	}
	if !l.dueRenewal.IsZero() {
		if c.reqs.Renewing(l.name) && !c.now.Before(c.reqs.Expiry(l.name)) {
			// Expired at this reading (tickLock), and said there once,
			// with this stamp. (Said here too, it was said twice; and a
			// renewal whose own lease alone was over by now, the old one
			// still running, was said refused and then made on the next
			// check.)
			l.dueRenewal = time.Time{}
			return
		}
		l.dueRenewal, l.dueRenewalAt = time.Time{}, time.Time{}
	}
}

// sayRenewalEnded says (renewals_late, mutex.EventRenewalLate) that the
// pending renewal of l's holder is lost: the lease it renews has ended by
// now, unrenewed. Called before every expiry of l's leases (a reading, a
// client's call), so that no lease ends with a renewal pending without a
// word of why (it ended as lock_lost expired alone, the administrator
// left to guess). The stamp of the answers that completed its check, if
// one did (dueRenewalAt), says whether they came in time and the loop
// read them late (loop_late) or came after the end (answers_late); with
// none, its check's answers had not come by the end (answers_late, naming
// the members still silent).
func (c *Core) sayRenewalEnded(l *lock) {
	if !c.reqs.Renewing(l.name) {
		return
	}
	for _, id := range c.reqs.Holders(l.name) {
		end, ok := c.reqs.Expires(id)
		if !ok || c.now.Before(end) {
			continue
		}
		r := c.renewalLate(l, id, c.now.Sub(end), l.dueRenewalAt, l.dueRenewalBy)
		if l.dueRenewalAt.IsZero() {
			r.Unanswered, r.By = true, nil
			if l.check != nil {
				r.By = l.check.Silent()
			}
		}
		c.late.ReportRenewal(c.now, c.counters, &c.events, r)
	}
	l.dueRenewal, l.dueRenewalAt = time.Time{}, time.Time{}
}

// renewalLate describes holder id's renewal of l refused at the reading,
// late past its lease's end, its check's answers completed at answered
// by member by (0: at a reading, no member known): they came in time if
// before the end of the lease it was to renew.
func (c *Core) renewalLate(l *lock, id mutex.RequestID, late time.Duration, answered time.Time, by uint32) mutexcount.RenewalLate {
	r := mutexcount.RenewalLate{Lock: l.name, ID: id, Late: late, Answered: answered, End: c.reqs.Expiry(l.name), EndOf: "the lease it renews"}
	if by != 0 {
		r.By = []uint32{by}
	}
	return r
}

// tickLock runs l's timers.
func (c *Core) tickLock(l *lock) {
	now := c.now
	c.judgeDue(l)
	if l.tok == nil {
		l.dueID, l.dueGrant, l.dueRenewal, l.dueRenewalAt = 0, time.Time{}, time.Time{}, time.Time{}
	}
	if !c.reqs.Renewing(l.name) {
		// Its holder released or lost the lock before this reading:
		// kept, the stamp would date the next holder's renewal.
		l.dueRenewal, l.dueRenewalAt = time.Time{}, time.Time{}
	}
	if l.tok != nil && c.reqs.Renewing(l.name) && c.confirmed(l) {
		// Confirmed in a Step, made at this reading: before the lease's
		// expiry, as the check's answers came before it (finishRenewal).
		c.finishRenewal(l)
	}
	c.sayRenewalEnded(l)
	if c.reqs.ExpireLock(now, l.name) {
		l.outstanding = time.Time{}
		c.drain()
		c.advance(l)
	}
	if _, unacked := l.handoff.Tick(now); len(unacked) > 0 {
		// The successor did not acknowledge: it may be dead, or slow (a
		// lossy link: TCP resends the token, or the ack, after its own
		// timeout), or have restarted and lost the frame. A slow member
		// must not be skipped: the token is on its way, and a new one
		// made meanwhile dooms it and costs the lock a Hold (issue 15:
		// the lossy member's predecessor regenerated 4 times in 1.3 s and
		// served its own client 5 times in a row). So unless it is known
		// down, or has been waited for DeadAfter, the token stays in
		// flight (sent again, for a member that restarted) while a locate
		// asks whether the successor is there. It is skipped at the next
		// timeout if nothing was heard from it since the token left.
		f := unacked[0].Msg
		if now.Sub(f.at) < c.cfg.DeadAfter && !c.down(f.to) && (!f.late || c.heardSince(f.to, f.at)) {
			f.late = true
			c.send(f.to, wire.KindToken, f.msg, true)
			if err := l.handoff.Send(now, delivery.Key{To: f.to, ID: f.hop}, f); err != nil {
				c.count("handoff_refused")
			}
			c.count("acks_late")
			c.startLocate(l)
		} else {
			c.skipHandoff(l, f)
			c.startLocate(l)
		}
	}
	if p := l.locate; p != nil && c.tickProbe(l, p) {
		c.finishLocate(l)
	}
	c.tickPrepareAt(l)
	if p := l.prepare; p != nil && c.tickProbe(l, p) {
		c.finishPrepare(l)
	}
	if p := l.check; p != nil && c.tickProbe(l, p) {
		l.check = nil
		c.count("checks_timed_out")
	}
	if p := l.vouch; p != nil && c.tickProbe(l, p) {
		c.vouchUnanswered(l)
	}
	if l.tok != nil {
		if l.check == nil && c.reqs.Renewing(l.name) {
			c.startCheck(l)
		}
		c.advance(l)
	}
	if l.tok == nil && l.handoff.Len() == 0 && c.reqs.Waiting(l.name) > 0 && !l.lossAt.IsZero() && !now.Before(l.lossAt) &&
		l.locate == nil && l.prepare == nil && l.prepareAt.IsZero() && !now.Before(l.backoff) {
		c.count("losses_suspected")
		c.startLocate(l)
	}
}
