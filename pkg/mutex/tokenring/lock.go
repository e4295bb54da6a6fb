package tokenring

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/delivery"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/quorum"
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

	// outstanding is the end of the last lease granted here that may still
	// run: a grant whose token was dropped is lost to this member, not to
	// its client, which only learns it when it renews. A proposer is told,
	// and waits it out even when everyone promised.
	outstanding time.Time

	// answeredOK is the last time this member answered OK to a check of
	// this lock (or, for an entry made since, the latest it may have: see
	// Core.confirmedFloor): a lease granted on what it confirmed ends
	// within ConfirmWindow + MaxLease of it. A promise says how much of
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

// probe is a locate, prepare, check or vouch: a quorum.Probe (asked: the
// members up when it started; answered: those that said OK; Started: what
// a confirmation dates from) with a tally of the OK answers, this member's
// own yes included, and what the other answers said.
type probe struct {
	*quorum.Probe
	op       wire.ProbeOp
	gen      uint64
	promises *quorum.Tally
	have     bool
	stale    uint64
	// known is, for a locate, the generation this member knew when it
	// started; newer, the highest newer one a member answered it had
	// promised (a rival's proposal, or a token made meanwhile).
	known, newer uint64
	// ownNewest is, for a locate, the members that answered that the
	// newest generation they know is their own and they have no token:
	// each is proposing it, or made it and passed the token on.
	ownNewest map[uint32]bool
	// confirmLeft is, for a prepare, the longest a lease may still run on
	// what a promiser confirmed before it promised (this member's own
	// included); confirmUnknown, that a promiser did not say.
	confirmLeft    time.Duration
	confirmUnknown bool
	// For a prepare, leaseUntil and confirmUntil are those answers as
	// times on this member's clock, from when each answer came (padded for
	// the clocks' rates): a new token's Hold ends at the latest, however
	// long the prepare then waits for a silent member's answer. (From the
	// end of the prepare instead, every Hold after a crash ran a locate's
	// span, 150 ms, past the promises it waits out.)
	leaseUntil, confirmUntil time.Time
	// majorityAt is when a prepare's promises first made a majority: a
	// regenerated token's Hold runs from there, so waiting for the last
	// answers (which may spare the Hold) costs nothing when they never come.
	majorityAt time.Time
}

// Acquire queues r at local time now (mutex.Algorithm). The grant arrives
// as a mutex.Granted outcome (and EventGranted) with the returned ID.
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
	if err := c.reqs.Renew(c.now, id, lease); err != nil {
		if errors.Is(err, mutex.ErrExpired) {
			l.outstanding = time.Time{}
			c.drain()
		}
		return err
	}
	if c.confirmed(l) {
		c.finishRenewal(l)
	} else if l.check == nil {
		c.startCheck(l)
	}
	return nil
}

func (c *Core) finishRenewal(l *lock) {
	if !c.reqs.Renewing(l.name) {
		return
	}
	c.reqs.ConfirmRenewals(c.now, l.name)
	l.outstanding = c.reqs.Expiry(l.name)
	c.drain()
}

// lose takes l's lock from its holder.
func (c *Core) lose(l *lock, why mutex.LossReason) {
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
	for _, o := range c.reqs.Outcomes() {
		c.outcomes = append(c.outcomes, o)
		switch o := o.(type) {
		case mutex.Granted:
			c.emit(EventGranted, fmt.Sprintf("%s granted (fence %d)", o.Lock, o.Fence),
				"request", uint64(o.ID), "lock", o.Lock, "fence", o.Fence, "lease", o.Lease, "expires", o.Expires, "generation", o.Epoch)
		case mutex.Renewed:
			c.emit(EventRenewed, "", "request", uint64(o.ID), "lock", o.Lock, "fence", o.Fence, "expires", o.Expires)
		case mutex.Lost:
			c.emit(EventLost, fmt.Sprintf("%s lost (fence %d): %s", o.Lock, o.Fence, o.Reason),
				"request", uint64(o.ID), "lock", o.Lock, "fence", o.Fence, "reason", string(o.Reason))
		case mutex.Released:
			c.emit(EventReleased, fmt.Sprintf("%s released (fence %d)", o.Lock, o.Fence), "request", uint64(o.ID), "lock", o.Lock, "fence", o.Fence)
		}
	}
}

// confirmed says whether a grant or renewal may happen now: the token was
// checked with a majority recently enough.
func (c *Core) confirmed(l *lock) bool {
	return l.tok != nil && l.confirmedGen == l.tok.gen && !l.confirmedAt.IsZero() &&
		c.now.Sub(l.confirmedAt) <= c.cfg.ConfirmWindow
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
		return // Tick tries again
	}
	if !c.confirmed(l) {
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
	g, err := c.reqs.Grant(c.now, head[0], l.tok.fence+1, l.tok.gen)
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

// pass sends the token to the successor.
func (c *Core) pass(l *lock, others []uint32) {
	succ := c.successor()
	if succ == 0 {
		return // alone: keep it
	}
	wants := others
	if c.reqs.Waiting(l.name) > 0 {
		wants = append(wants, c.self) // served once this visit; wait for the next
	}
	t := l.tok
	if c.reqs.Waiting(l.name) == 0 {
		t.served[c.self] = l.wantNum // this member says it waits no more
	}
	msg := wire.Token{
		Name:       l.name,
		HoldMS:     msCeil(t.holdUntil.Sub(c.now)),
		Generation: t.gen,
		Hop:        t.hop + 1,
		Fence:      t.fence,
		Wants:      wants,
		Served:     t.servedList(),
	}
	c.send(succ, wire.KindToken, msg, true)
	l.handoff.CancelIf(c.now, func(delivery.Entry[inflight]) bool { return true }) // one token in flight per lock
	if err := l.handoff.Send(c.now, delivery.Key{To: succ, ID: t.hop + 1}, inflight{to: succ, gen: t.gen, hop: t.hop + 1, wants: wants, at: c.now, msg: msg}); err != nil {
		c.count("handoff_refused") // unbounded outbox: cannot happen
	}
	l.passed = &handoff{to: succ, gen: t.gen, fence: t.fence, holdUntil: t.holdUntil}
	l.tok = nil
	clear(l.wantsSeen)
	c.count("tokens_passed")
}

// dropToken discards l's token (a newer generation exists, or it must be
// replaced) and the grant made on it.
func (c *Core) dropToken(l *lock, newer uint64) {
	if l.tok == nil {
		return
	}
	old := l.tok.gen
	l.tok = nil
	c.lose(l, mutex.Superseded)
	if newer != old {
		c.emit(EventTokenStale, fmt.Sprintf("%s: dropped the token of generation %#x, %#x is newer", l.name, old, newer),
			"lock", l.name, "generation", old, "newer", newer)
	}
}

func (c *Core) stepToken(from uint32, t wire.Token) error {
	// A token's fences are its generation's: round<<40 | grants.
	if t.Fence>>fenceCountBits != uint64(GenerationRound(t.Generation)) {
		return fmt.Errorf("%w: fence %#x is not of generation %#x's round", ErrBadToken, t.Fence, t.Generation)
	}
	if err := c.admit(t.Name, t.Generation); err != nil {
		return err
	}
	l, err := c.lockFor(t.Name, from)
	if err != nil {
		return err
	}
	ack := wire.TokenAck{Name: t.Name, Status: wire.TokenAccepted, Generation: t.Generation, Hop: t.Hop}
	switch {
	case t.Generation < l.promised:
		ack.Status, ack.Generation = wire.TokenStale, l.promised
		c.send(from, wire.KindTokenAck, ack, true)
		c.count("tokens_refused_stale")
		return nil
	case t.Generation == l.lastGen && t.Hop <= l.lastHop,
		// One token per generation: while this member holds it, another
		// copy is a duplicate whatever its hop.
		l.tok != nil && l.tok.gen == t.Generation:
		c.send(from, wire.KindTokenAck, ack, true)
		c.count("tokens_duplicate")
		return nil
	case t.Fence < l.granted:
		// Fences only grow along the ring (a newer generation is of a
		// newer round), so a token below a fence this member granted is
		// not the ring's: one of a newer generation of the same round
		// (two generations of one round are never both made), or of the
		// same generation numbered back, from a member gone wrong. Taken,
		// it would drop the real token and number grants below ones
		// already made (issue 29's FuzzTokenRing finding).
		return fmt.Errorf("%w: fence %#x of generation %#x is below %#x, which this member granted", ErrBadToken, t.Fence, t.Generation, l.granted)
	}
	if l.tok != nil && l.tok.gen < t.Generation {
		c.dropToken(l, t.Generation)
	}
	c.raise(l, t.Generation)
	c.send(from, wire.KindTokenAck, ack, true)
	hold := time.Duration(t.HoldMS) * time.Millisecond
	if hold > c.hold {
		// No member carries a hold longer than a whole one.
		hold = c.hold
		c.count("holds_clamped")
	}
	tok := &token{gen: t.Generation, hop: t.Hop, fence: t.Fence, wants: map[uint32]bool{}, served: map[uint32]uint64{},
		holdUntil: c.now.Add(hold), arrived: c.now, from: from, prevGen: l.lastGen, prevHop: l.lastHop}
	l.lastGen, l.lastHop = t.Generation, t.Hop
	l.tok = tok
	for _, w := range t.Wants {
		if c.member(w) && w != c.self {
			tok.wants[w] = true
		}
	}
	c.takeServed(l, t.Served)
	l.maxFence = max(l.maxFence, t.Fence)
	// The wants the token says were served are dropped, however recent:
	// keeping them would send it round the whole ring to members that no
	// longer wait (issue 15: N+1 passes per handoff). A numbered want it
	// has not served stands, however old (within fresh): the sender may
	// never have heard it (a lossy link), and dropping it let this member
	// serve its own client three times in a row while three others
	// waited, their wants known here, for their locates. An unnumbered
	// one (a locate's, a prepare's) heard before the token could have
	// left its sender is in its wants, or was served on its way here. A
	// prepare's is served by any token of the generation it proposed,
	// however recent: only the proposer made that token, and it served
	// itself first (issue 15's round trip again: a fresh ring's first
	// holder, its prepare promised a moment before the token came, had the
	// token sent round the ring back to it, served).
	for m, w := range l.wantsSeen {
		if w.num == 0 && w.at.Before(c.now.Add(-c.cfg.AckTimeout)) || tok.servedWant(m, w.num) || w.madeBy != 0 && w.madeBy == t.Generation {
			delete(l.wantsSeen, m)
		}
	}
	l.wantSent, l.lossAt, l.prepareAt = false, time.Time{}, time.Time{}
	l.locate = nil // found it
	l.check = nil  // any check in progress was of an earlier visit
	l.passed = nil // this member has not passed this visit's token yet
	c.count("tokens_received")
	if c.cfg.TrustSenders {
		tok.vouched = true
	} else {
		c.startVouch(l)
	}
	c.advance(l)
	return nil
}

// member says whether id is in the ring.
func (c *Core) member(id uint32) bool {
	_, ok := slices.BinarySearch(c.cfg.Members, id)
	return ok
}

func (c *Core) stepAck(from uint32, a wire.TokenAck) error {
	l, ok := c.locks[a.Name]
	f := (*inflight)(nil)
	if ok {
		f = l.inFlight()
	}
	if f == nil || f.to != from || f.gen != a.Generation && a.Status == wire.TokenAccepted || f.hop != a.Hop {
		return ErrStaleAck
	}
	if a.Status == wire.TokenStale {
		if err := c.admit(l.name, a.Generation); err != nil {
			return err
		}
	}
	l.handoff.Ack(c.now, delivery.Key{To: f.to, ID: f.hop})
	if l.passed != nil && a.Status == wire.TokenAccepted {
		l.passed.acked = c.now
	}
	if a.Status == wire.TokenStale {
		// The successor promised a newer generation: this token is dead,
		// and whoever waits for the lock waits for the newer one.
		c.raise(l, a.Generation)
		c.count("tokens_refused_by_successor")
		c.emit(EventTokenStale, fmt.Sprintf("%s: the token of generation %#x was refused, %#x is newer", l.name, f.gen, a.Generation),
			"lock", l.name, "generation", f.gen, "newer", a.Generation)
		if c.reqs.Waiting(l.name) > 0 {
			l.wantSent = false
			c.want(l)
		}
		return nil
	}
	c.count("tokens_acked")
	// The token is at the successor: whatever a locate of ours (for this
	// late acknowledgement, say) has heard so far, nothing is lost.
	l.locate, l.prepareAt = nil, time.Time{}
	if c.reqs.Waiting(l.name) > 0 {
		// Served once this visit: the token comes back, no want needed;
		// but if it gets lost on the way, look for it.
		l.lossAt = c.now.Add(c.cfg.LossTimeout)
	}
	return nil
}

func (c *Core) stepProbe(from uint32, p wire.RingProbe) error {
	if p.Op == wire.ProbePrepare || p.Op == wire.ProbeCheck {
		if err := c.admit(p.Name, p.Generation); err != nil {
			return err
		}
	}
	l, known := c.locks[p.Name]
	if !known && p.Op == wire.ProbePrepare {
		// A promise must be kept: the one probe that makes an entry.
		var err error
		if l, err = c.lockFor(p.Name, from); err != nil {
			return err
		}
	} else if !known {
		c.stepProbeUnknown(from, p)
		return nil
	}
	l.used = c.now
	reply := wire.RingProbeReply{Op: p.Op, Name: p.Name, Status: wire.ProbeOK, Nonce: p.Nonce, Generation: l.promised, Fence: l.maxFence}
	switch p.Op {
	case wire.ProbeWant:
		c.wantedByNumbered(l, from, p.Generation)
		return nil
	case wire.ProbeLocate:
		if l.located == nil {
			l.located = map[uint32]time.Time{}
		}
		l.located[from] = c.now
		// A member that waits looks for the token every loss timeout: the
		// holder adds it to the token's wants. So does a member whose
		// handoff was late; that one, the member the token came from, put
		// its own want in the token if it had one.
		if c.has(l, &reply) {
			// (Only just after the token came: later, that member's
			// locate is a want like any other's.)
			if l.tok == nil || l.tok.from != from || c.now.Sub(l.tok.arrived) > c.cfg.AckTimeout+c.locateSpan() {
				c.wantedBy(l, from)
			}
		} else {
			// What this member confirmed lately tells the locator whether
			// a token was alive a moment ago, when the holder's own answer
			// is lost.
			reply.Flags |= wire.ProbeConfirmKnown
			reply.ConfirmLeftMS = msCeil(c.confirmLeft(l))
		}
	case wire.ProbePrepare:
		switch {
		case c.has(l, &reply):
			c.wantedBy(l, from)
		case p.Generation == l.promised && l.vowed == p.Generation && GenerationOwner(p.Generation) == from:
			// The proposer asks again (a retry, or a prepare it repeats
			// after no majority): the same promise. Only one made here: a
			// generation merely heard of (a stale answer) is not promised.
			c.promise(l, from, p, &reply)
		case GenerationRound(p.Generation) <= GenerationRound(l.promised):
			// A promise is only ever to a higher round: two generations of
			// one round (rivals that proposed at once) could otherwise both
			// be made, their fences of one range. The later rival learns
			// the round it must beat.
			reply.Status = wire.ProbeStale
		default:
			c.promise(l, from, p, &reply)
		}
	case wire.ProbeCheck:
		switch {
		case p.Generation < l.promised:
			reply.Status = wire.ProbeStale
		case l.tok != nil && l.tok.vouched && l.tok.gen == p.Generation:
			// This member holds that very generation's token: the
			// checker's is a second copy, forged or duplicated.
			c.has(l, &reply)
			c.count("checks_duplicate_token")
		default:
			c.raise(l, p.Generation)
			reply.Generation = l.promised
			l.answeredOK, l.checkedAt = c.now, c.now
			l.checkedGen = max(l.checkedGen, p.Generation)
		}
	case wire.ProbeVouch:
		c.answerVouch(from, l, p, &reply)
	}
	c.send(from, wire.KindRingProbeReply, reply, false)
	return nil
}

// promise answers member from's prepare p with a promise: no token of an
// older generation is taken, checked or created here from now on.
// Persisted before the reply.
func (c *Core) promise(l *lock, from uint32, p wire.RingProbe, reply *wire.RingProbeReply) {
	c.raise(l, p.Generation)
	l.vowed, l.vowedAt = p.Generation, c.now
	reply.Generation = l.promised
	reply.LeaseLeftMS = msCeil(l.outstanding.Sub(c.now))
	reply.Flags |= wire.ProbeConfirmKnown
	reply.ConfirmLeftMS = msCeil(c.confirmLeft(l))
	l.wantsSeen[from] = seenWant{at: c.now, madeBy: p.Generation}
	if l.prepare != nil && l.prepare.gen < l.promised {
		c.abortPrepare(l, "outbid")
	}
	if c.reqs.Waiting(l.name) > 0 {
		// The proposer is about to hold the token: it must know this
		// member waits (a want sent before it had the lock in its table
		// was not kept).
		c.send(from, wire.KindRingProbe, wire.RingProbe{Op: wire.ProbeWant, Name: l.name}, false)
	}
}

// stepProbeUnknown answers a probe about a lock missing from the table as
// the floor says, and makes no entry: nothing is here, and nothing newer
// than the floor was promised.
func (c *Core) stepProbeUnknown(from uint32, p wire.RingProbe) {
	reply := wire.RingProbeReply{Op: p.Op, Name: p.Name, Status: wire.ProbeOK, Nonce: p.Nonce, Generation: c.floor}
	switch p.Op {
	case wire.ProbeWant:
		return // whoever holds the token takes the want; it is not here
	case wire.ProbeCheck:
		if p.Generation < c.floor {
			reply.Status = wire.ProbeStale
		} else {
			c.confirmedFloor = c.now
		}
	case wire.ProbeVouch:
		reply.Status = wire.ProbeHave // this member passed no such token
	}
	c.count("probes_unknown_lock")
	c.send(from, wire.KindRingProbeReply, reply, false)
}

// has fills a have reply if the token is here or just left.
func (c *Core) has(l *lock, r *wire.RingProbeReply) bool {
	switch {
	case l.tok != nil:
		r.Status, r.Generation = wire.ProbeHave, l.tok.gen
		if c.reqs.Held(l.name) {
			r.Flags = wire.ProbeHeld
			r.LeaseLeftMS = msCeil(c.reqs.Expiry(l.name).Sub(c.now))
		}
		return true
	case l.inFlight() != nil:
		r.Status, r.Generation = wire.ProbeHave, l.inFlight().gen
		return true
	case l.passed != nil && !l.passed.acked.IsZero() && c.now.Sub(l.passed.acked) < c.locateSpan():
		// Passed on and acknowledged just now: a locate that asked the
		// successor a moment ago heard "no token" there, and must not
		// hear it here too while the token was between the two.
		r.Status, r.Generation = wire.ProbeHave, l.passed.gen
		return true
	}
	return false
}

// locateSpan is the longest a locate runs: its tries' timeouts.
func (c *Core) locateSpan() time.Duration {
	return time.Duration(c.cfg.ProbeTries) * c.cfg.ProbeTimeout
}

// wantedBy records that member m waits for l's token (a locate or a
// prepare says so: not numbered).
func (c *Core) wantedBy(l *lock, m uint32) { c.wantedByNumbered(l, m, 0) }

// wantedByNumbered records member m's want number num (0: not numbered).
// One the token here says was served is late (a datagram that took its
// time, or a copy): it is dropped.
func (c *Core) wantedByNumbered(l *lock, m uint32, num uint64) {
	if l.tok != nil {
		if l.tok.servedWant(m, num) {
			c.count("wants_served_already")
			return
		}
		l.tok.wants[m] = true
		c.advance(l)
		return
	}
	if prev, ok := l.wantsSeen[m]; ok && prev.num > num && num != 0 {
		num = prev.num // a late copy of an older want: the newer one stands
	}
	l.wantsSeen[m] = seenWant{at: c.now, num: num}
}

func (c *Core) stepReply(from uint32, r wire.RingProbeReply) error {
	l, ok := c.locks[r.Name]
	if !ok {
		return ErrStaleAck
	}
	var p *probe
	switch r.Op {
	case wire.ProbeLocate:
		p = l.locate
	case wire.ProbePrepare:
		p = l.prepare
	case wire.ProbeCheck:
		p = l.check
	case wire.ProbeVouch:
		p = l.vouch
	}
	if p == nil || p.Nonce != r.Nonce || p.Answered(from) || r.Op == wire.ProbeVouch && !p.Asked(from) {
		c.count("replies_late")
		return nil
	}
	if r.Op == wire.ProbeVouch {
		c.stepVouchReply(l, p, from, r)
		return nil
	}
	if r.Status == wire.ProbeStale {
		if err := c.admit(l.name, r.Generation); err != nil {
			return err
		}
	}
	// Only fences of generations this member has promised mean anything
	// here (status and metrics): a reply cannot make up a later one.
	if r.Fence>>fenceCountBits <= uint64(GenerationRound(max(l.promised, r.Generation))) {
		l.maxFence = max(l.maxFence, r.Fence)
	}
	switch r.Status {
	case wire.ProbeHave:
		p.have = true
		if r.Flags&wire.ProbeHeld != 0 {
			c.orphanLease(p, r)
		}
	case wire.ProbeStale:
		p.stale = max(p.stale, r.Generation)
		c.raise(l, r.Generation)
	case wire.ProbeOK:
		// No member confirms for longer than a lease and a confirm window:
		// more is a lie, taken for that much (a prepare waits no longer
		// than its Hold anyway, a locate backs off no longer).
		confirmLeft := time.Duration(r.ConfirmLeftMS) * time.Millisecond
		if confirmLeft > c.confirmWindow() {
			confirmLeft = c.confirmWindow()
			c.count("confirm_left_clamped")
		}
		if r.Op == wire.ProbePrepare {
			if r.Flags&wire.ProbeConfirmKnown == 0 {
				p.confirmUnknown = true
			}
			p.confirmLeft = max(p.confirmLeft, confirmLeft)
			p.confirmUntil = later(p.confirmUntil, c.now.Add(c.pad(confirmLeft)))
		}
		if r.Op == wire.ProbeLocate && r.Flags&wire.ProbeConfirmKnown != 0 {
			p.confirmLeft = max(p.confirmLeft, confirmLeft)
		}
		if r.Op == wire.ProbeLocate && r.Generation != 0 && GenerationOwner(r.Generation) == from {
			if p.ownNewest == nil {
				p.ownNewest = map[uint32]bool{}
			}
			p.ownNewest[from] = true
		}
		if r.Op == wire.ProbeLocate && r.Generation > p.known {
			if err := c.admit(l.name, r.Generation); err != nil {
				return err
			}
			p.newer = max(p.newer, r.Generation)
		}
		if r.Op != wire.ProbeCheck || p.Count() == 0 {
			// How late the others' loops run: an answer's delay is
			// mostly the waits of the loops it passed through (a round
			// trip on a LAN is well under a millisecond). An answer to
			// a try sent again after a loss counts the probe timeouts
			// before it too: on a lossy link the waits below grow by up
			// to a locate's span, and the lock waits a little longer.
			c.noteLate(c.now.Sub(p.Started))
		}
		p.Answer(from, r.Nonce)
		p.promises.Vote(from, true)
		c.orphanLease(p, r)
		if p.majorityAt.IsZero() && p.won() {
			p.majorityAt = c.now
		}
	}
	switch r.Op {
	case wire.ProbeLocate:
		if p.have || p.Count() == len(c.cfg.Members)-1 {
			c.finishLocate(l)
		}
	case wire.ProbePrepare:
		// A token found is waited out with the promises: see finishPrepare.
		if p.have && p.won() || p.stale != 0 || p.Count() == len(c.cfg.Members)-1 {
			c.finishPrepare(l)
		}
	case wire.ProbeCheck:
		if r.Status == wire.ProbeHave && l.tok != nil && r.Generation == l.tok.gen {
			// Another member holds a token of this very generation: one
			// of the two is a copy. Neither can tell which, so this one
			// is not used; the lock is regenerated if need be.
			c.count("tokens_duplicate_generation")
			c.disown(l, from)
			return nil
		}
		c.stepCheckReply(l, p)
	}
	return nil
}

// startProbe makes probe op of generation gen, asking asked (tries: how
// often the silent ones are asked in all); this member's own promise is its
// first yes. The caller sends the question.
func (c *Core) startProbe(op wire.ProbeOp, gen uint64, asked []uint32, tries int) *probe {
	qp, err := quorum.Start(c.now, quorum.ProbeConfig{Timeout: c.cfg.ProbeTimeout, Tries: tries}, c.nextNonce(), asked)
	if err != nil {
		panic(fmt.Sprintf("tokenring: probe config: %v", err)) // validated in Config.validate: a bug
	}
	p := &probe{Probe: qp, op: op, gen: gen, promises: quorum.NewTally(c.voters)}
	p.promises.Vote(c.self, true)
	return p
}

func (c *Core) newProbe(l *lock, op wire.ProbeOp, gen uint64) *probe {
	var asked []uint32
	for _, m := range c.cfg.Members {
		if m != c.self && !c.down(m) {
			asked = append(asked, m)
		}
	}
	tries := c.cfg.ProbeTries
	switch op {
	case wire.ProbeCheck:
		tries = 1 // a check is fresh or useless: it is not asked again, a new one is made
	}
	p := c.startProbe(op, gen, asked, tries)
	c.send(core.Broadcast, wire.KindRingProbe, wire.RingProbe{Op: op, Name: l.name, Nonce: p.Nonce, Generation: gen}, false)
	c.count("probes_" + op.String())
	return p
}

// tickProbe asks p's silent members again when its timeout has passed and
// tries are left; it reports whether p is over.
func (c *Core) tickProbe(l *lock, p *probe) bool {
	again, over := p.Tick(c.now, func(m uint32) bool { return !c.down(m) })
	for _, m := range again {
		c.send(m, wire.KindRingProbe, wire.RingProbe{Op: p.op, Name: l.name, Nonce: p.Nonce, Generation: p.gen}, false)
	}
	if len(again) > 0 {
		c.count("probes_retried")
	}
	return over
}

// won says whether p's OK answers and this member make a majority.
func (p *probe) won() bool { return p.promises.Result() == quorum.Won }

// startLocate asks whether anyone has l's token.
func (c *Core) startLocate(l *lock) {
	if l.locate != nil || l.prepare != nil {
		return
	}
	l.locate = c.newProbe(l, wire.ProbeLocate, 0)
	l.locate.known = l.promised
	if len(c.cfg.Members) == 1 {
		c.finishLocate(l)
	}
}

func (c *Core) finishLocate(l *lock) {
	p := l.locate
	l.locate = nil
	if f := l.inFlight(); f != nil && f.late && !p.have {
		// The successor is there and has not got the token yet (it is on
		// its way), or has not answered yet: the handoff's next timeout
		// decides.
		c.count("handoffs_slow")
		return
	}
	if p.have {
		// Someone has it and now counts us as waiting. Look again after
		// a loss timeout even if its lease runs longer: if that member
		// dies, the sooner we notice, the sooner a new token can grant.
		c.count("locate_found")
		if c.reqs.Waiting(l.name) > 0 {
			l.lossAt = c.now.Add(c.cfg.LossTimeout)
		}
		return
	}
	if max(p.confirmLeft, c.checkedLeft(l)) > c.confirmWindow()-(c.cfg.ConfirmWindow+c.cfg.MaxLease)/3 {
		// Nobody said it has the token, but a member (this one too)
		// confirmed a check within a third of a lease (mutexd lock renews
		// every third): a token is alive, its holder's answers lost (a
		// lossy link, this member's or the holder's) or late (a busy
		// host). A prepare now would doom it. Look again later; once a dead holder's last check is that
		// old, its replacement is made, and waits no longer than it would
		// have (until its last check's leases end).
		c.count("locate_confirmed_lately")
		if c.reqs.Waiting(l.name) > 0 {
			l.lossAt = c.now.Add(c.cfg.LossTimeout)
		}
		return
	}
	if p.Count()+1 < c.majority {
		// Too few answers to say anything: this member's own links may be
		// the slow or lossy ones, and its prepare would doom a live token
		// it did not hear of (issue 15's lossy member). Look again later.
		c.count("locates_inconclusive")
		c.backOff(l)
		return
	}
	if c.rival(l, p.known, max(p.newer, l.promised), p.Started) {
		return
	}
	if c.waitingOutHold(l, p) {
		c.count("locate_token_in_hold")
		if c.reqs.Waiting(l.name) > 0 {
			l.lossAt = c.now.Add(c.cfg.LossTimeout)
		}
		return
	}
	// Waiting members that lost the token together look for it together:
	// the first to propose should be alone, or rivals of one round split
	// the promises and all start again. A random part of a probe timeout
	// is many round trips on a LAN.
	if len(c.cfg.Members) == 1 {
		c.startPrepare(l) // nobody to collide with
		return
	}
	l.prepareAt = c.now.Add(time.Duration(c.cfg.Rand.Int64N(int64(c.cfg.ProbeTimeout) + 1)))
	if lower, ok := c.lowerLocator(l, p.Started); ok {
		// Two waiting members that lost the token together looked for it
		// together (their clients asked at once; a dead maker's Hold kept
		// them looking in step), and a random part of a probe timeout
		// still lets their prepares cross now and then: each refuses the
		// other's, both give up, and the promises they got are a
		// confirmation that the next token waits out, a whole Hold later
		// (issue 15's trial: a fresh ring's first holder killed, two
		// members asking at once, 6.3 s without a grant, 1 seed in 50).
		// The member with the lower ID proposes; this one waits until
		// that member's locate is over and its prepare has had a probe
		// timeout to start and one more to arrive. By then it is here
		// (and this member, having promised, backs off as from any
		// rival), or that member did not propose after all. (A fixed
		// wait instead could land on the other's prepare when its locate
		// began later.)
		// On a busy host every loop runs late, the lower member's too:
		// each try of its locate ends, and its prepare leaves, as late as
		// this member's own loop ran lately (lateTries). A wait of the
		// wall clock alone ran out before that prepare came (issue 15's
		// lab trial at load 13: 8.13 s without a grant).
		l.prepareAt = later(l.prepareAt, lower.Add(c.locateSpan()+2*c.cfg.ProbeTimeout+c.lateTries()))
		c.count("prepares_deferred")
	}
	l.prepareKnown, l.prepareSince = p.known, p.Started
}

// checkedLeft is confirmLeft for the last check this member answered in
// this run (not its start's presumption: a member just started knows of no
// live holder).
func (c *Core) checkedLeft(l *lock) time.Duration {
	if l.checkedAt.IsZero() {
		return 0
	}
	return max(l.checkedAt.Add(c.confirmWindow()).Sub(c.now), 0)
}

// lateTries is how much later than its timeouts say a locate and the
// prepare after it may run on a busy host: each of their timeouts (the
// locate's tries, the prepare's start) as late as this member's own loop
// ran lately.
func (c *Core) lateTries() time.Duration {
	return time.Duration(c.cfg.ProbeTries+1) * c.lateness()
}

// lowerLocator returns when the last member with a lower ID than this
// one, not known down, began a locate of l's token that may have run
// with this member's (started at started: since then, or less than a
// locate's span before); ok false if none did.
func (c *Core) lowerLocator(l *lock, started time.Time) (at time.Time, ok bool) {
	for m, t := range l.located {
		if m < c.self && !c.down(m) && !t.Before(started.Add(-c.locateSpan()-c.lateTries())) && t.After(at) {
			at, ok = t, true
		}
	}
	return at, ok
}

// rival says whether a rival may be making l's token, and if so backs off:
// a generation newer than known (what this member knew when it started
// looking at since) was promised meanwhile, or this member promised one
// to another member while a prepare of it may still have run.
func (c *Core) rival(l *lock, known, newer uint64, since time.Time) bool {
	// A prepare lasts up to its tries' timeouts: one this member promised
	// that may have run while the locate's answers were given.
	// (On a busy host its tries' timeouts ran late: lateTries.)
	vowed := l.vowed != 0 && GenerationOwner(l.vowed) != c.self &&
		l.vowedAt.After(since.Add(-time.Duration(c.cfg.ProbeTries+1)*c.cfg.ProbeTimeout-c.lateTries()))
	if newer > known || vowed {
		// Nobody said it has the token, but a generation newer than the
		// one this member knew was promised meanwhile, or this member
		// promised one to another just now: a rival is making the token,
		// or has just made it (its answer to this locate may have left
		// before). Proposing above it now would doom that token at its
		// first check, and cost the lock a second Hold (issue 15: the
		// first regenerated token after a fault was dropped this way 8
		// times in 8). Look again once its prepare is over.
		c.raise(l, newer)
		c.count("locate_rival")
		c.backOff(l)
		return true
	}
	return false
}

// waitingOutHold says whether the newest generation's token may still be
// waiting out its Hold at the member that made it, which did not answer
// locate p, or answered that it had no token while its generation was the
// newest it knew: its prepare was still running (on a busy host it runs
// for many probe timeouts), and it may have made the token since. A new token checks nothing and moves nowhere during its Hold,
// so the sign of a live holder that finishLocate trusts (a member that
// confirmed a check lately) is missing by design, and three lost answers
// of the maker (a lossy link, its own or this member's) look like a lost
// token: issue 15's lossy ring regenerated this way, dooming a token a
// moment before its first grant and resetting everyone's wait to a new
// Hold. So this member looks again while that Hold may outlast the next
// look and a locate and a prepare after it (a live maker grants at its
// end), and proposes in time to be ready when it is over (a dead maker's
// ring then waits no longer than its token would have). Not once the maker answered, is taken for down, or
// the token is known to have left it or granted (its Hold is over: from
// then on it checks, and the usual signs apply), nor when this member
// learned of the generation a Hold ago or more. A holder that was granting
// when it went silent checked its token with this member (or granted a
// fence this member knows of): its replacement is proposed as before.
func (c *Core) waitingOutHold(l *lock, p *probe) bool {
	g := l.promised
	maker := GenerationOwner(g)
	switch {
	case g == 0 || maker == c.self || !p.Asked(maker) || p.Answered(maker) && !p.ownNewest[maker]:
		return false
	case l.lastGen == g || l.checkedGen >= g || l.maxFence > uint64(GenerationRound(g))<<fenceCountBits:
		return false
	case l.promisedAt.IsZero() || c.now.Sub(l.promisedAt) >= c.hold:
		return false
	}
	// The maker's Hold began when its promises made a majority: not
	// before this member heard of its generation, if it promised it;
	// later than that otherwise (a Hold from then is longer: looking a
	// little longer is the cost).
	left := l.promisedAt.Add(c.hold).Sub(c.now)
	return left > c.cfg.LossTimeout+2*c.locateSpan()+c.cfg.ProbeTimeout
}

// tickPrepareAt starts the prepare a locate that found nothing scheduled,
// unless the token came, or a rival showed up, meanwhile.
func (c *Core) tickPrepareAt(l *lock) {
	if l.prepareAt.IsZero() || c.now.Before(l.prepareAt) {
		return
	}
	l.prepareAt = time.Time{}
	if l.tok != nil || l.handoff.Len() > 0 || l.locate != nil || l.prepare != nil || c.reqs.Waiting(l.name) == 0 {
		return
	}
	if c.rival(l, l.prepareKnown, l.promised, l.prepareSince) {
		return
	}
	c.startPrepare(l)
}

// heardSince says whether member m was heard after t.
func (c *Core) heardSince(m uint32, t time.Time) bool {
	v, ok := c.det.Member(m)
	return ok && v.LastHeard.After(t)
}

// skipHandoff gives up the token passed to f.to, which did not acknowledge
// it and is skipped until heard again; the waiting members' wants stay
// here for the next token.
func (c *Core) skipHandoff(l *lock, f inflight) {
	l.handoff.CancelIf(c.now, func(delivery.Entry[inflight]) bool { return true })
	if !c.skipped[f.to] {
		c.skipped[f.to] = true
		c.emit(EventMemberSkipped, fmt.Sprintf("member %d did not acknowledge %s's token: skipped", f.to, l.name), "member", f.to, "lock", l.name)
	}
	for _, w := range f.wants {
		if w != c.self {
			l.wantsSeen[w] = seenWant{at: c.now}
		}
	}
	c.count("acks_missed")
}

// startPrepare proposes a new generation of l's token.
func (c *Core) startPrepare(l *lock) {
	gen := l.proposed
	if gen == 0 || gen != l.promised {
		next, err := c.limit.NextRound(l.promised, c.self)
		if err != nil {
			c.count("rounds_exhausted")
			if !l.exhausted {
				l.exhausted = true
				c.emit(EventRoundsExhausted, fmt.Sprintf("%s: no generation left to create: %v", l.name, err), "lock", l.name, "err", err.Error())
			}
			return
		}
		gen = next
	}
	l.proposed = gen
	c.raise(l, gen)
	l.prepare = c.newProbe(l, wire.ProbePrepare, gen)
	l.prepare.confirmLeft = c.confirmLeft(l) // this member is a promiser too
	l.prepare.confirmUntil = c.now.Add(c.pad(l.prepare.confirmLeft))
	if c.majority == 1 {
		l.prepare.majorityAt = c.now
	}
	if len(c.cfg.Members) == 1 {
		c.finishPrepare(l)
	}
}

func (c *Core) abortPrepare(l *lock, why string) {
	l.prepare = nil
	if why == "outbid" {
		l.proposed = 0 // promised elsewhere: only a higher round can win now
	}
	c.count("prepare_" + why)
	c.backOff(l)
}

// backOff delays this member's next search for l's token by a random part
// of a loss timeout, so that rivals do not collide again.
func (c *Core) backOff(l *lock) {
	l.backoff = c.now.Add(c.cfg.LossTimeout/2 + time.Duration(c.cfg.Rand.Int64N(int64(c.cfg.LossTimeout/2)+1)))
	if c.reqs.Waiting(l.name) > 0 {
		l.lossAt = l.backoff
	}
}

func (c *Core) finishPrepare(l *lock) {
	p := l.prepare
	switch {
	case p.have && !p.won():
		l.prepare = nil
		c.count("prepare_found_token")
		if c.reqs.Waiting(l.name) > 0 {
			l.lossAt = c.now.Add(c.cfg.LossTimeout)
		}
		return
	case p.stale != 0:
		c.abortPrepare(l, "outbid")
		return
	case !p.won():
		c.abortPrepare(l, "no_majority")
		return
	}
	if p.have {
		// A member has a token of an older generation, but a majority
		// promised this one: that token cannot pass a check any more.
		// Making this one now is what keeps the lock alive; waiting it out
		// is what keeps it safe (the Hold below, that member not having
		// promised).
		c.count("regenerations_over_old_token")
	}
	l.prepare = nil
	l.proposed = 0 // created: never again
	l.passed = nil
	holdUntil := c.holdUntil(p, l.outstanding)
	hold := max(holdUntil.Sub(c.now), 0)
	l.tok = &token{gen: p.gen, fence: uint64(GenerationRound(p.gen)) << fenceCountBits,
		wants: map[uint32]bool{}, served: map[uint32]uint64{}, holdUntil: holdUntil, vouched: true}
	for m, w := range l.wantsSeen {
		if c.fresh(w.at) {
			l.tok.wants[m] = true
		}
	}
	delete(l.tok.wants, c.self)
	clear(l.wantsSeen)
	l.lastGen, l.lastHop = p.gen, 0
	// The promises are not a check: the first grant waits for one. A
	// promise is a Paxos phase-1 answer, and like one it commits nothing:
	// were it a confirmation a lease could be granted on, every member
	// that promised a prepare which then failed (two that crossed: each
	// is refused by the other's promisers) would have to report it to the
	// next proposer, and the next token would wait a whole Hold for
	// leases nobody granted (issue 15's loaded lab host: 8.13 s without a
	// grant). One round trip after the Hold costs far less.
	l.wantSent, l.lossAt = false, time.Time{}
	c.count("regenerations")
	c.emit(EventRegenerated, fmt.Sprintf("%s: new token, generation %#x, first grant in %v", l.name, p.gen, hold),
		"lock", l.name, "generation", p.gen, "hold", hold, "promises", p.Count()+1)
	c.advance(l)
}

// startCheck asks a majority whether l's token is still the newest.
func (c *Core) startCheck(l *lock) {
	if l.tok == nil {
		return
	}
	l.check = c.newProbe(l, wire.ProbeCheck, l.tok.gen)
	c.stepCheckReply(l, l.check) // a ring of one is its own majority
}

func (c *Core) stepCheckReply(l *lock, p *probe) {
	if p.stale != 0 {
		l.check = nil
		if l.tok != nil && l.tok.gen < p.stale {
			c.count("check_failed")
			if c.reqs.Renewing(l.name) {
				c.lose(l, mutex.RenewRefused)
			}
			c.dropToken(l, p.stale)
			if c.reqs.Waiting(l.name) > 0 {
				l.wantSent = false
				c.want(l)
			}
		}
		return
	}
	if !p.won() || l.tok == nil || l.tok.gen != p.gen {
		return
	}
	l.check = nil
	l.confirmedGen, l.confirmedAt = p.gen, p.Started
	c.finishRenewal(l)
	c.advance(l)
}

// tickLock runs l's timers.
func (c *Core) tickLock(l *lock) {
	now := c.now
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

// maxServedAhead is how far beyond this member's clock a served want
// number (another member's clock, in ms) may be: more than lab clocks are
// apart, even unsynchronized.
const maxServedAhead = time.Hour

// servedWant says whether the token says member m's want number num was
// served (an unnumbered want, 0, never is).
func (t *token) servedWant(m uint32, num uint64) bool {
	n, ok := t.served[m]
	return num != 0 && ok && num <= n
}

// servedList is the token's Served list for the wire, by member.
func (t *token) servedList() []wire.WantServed {
	out := make([]wire.WantServed, 0, len(t.served))
	for m, n := range t.served {
		out = append(out, wire.WantServed{Member: m, Want: n})
	}
	slices.SortFunc(out, func(a, b wire.WantServed) int { return cmp.Compare(a.Member, b.Member) })
	return out
}

// takeServed reads a token's Served list into l's token. Only members of
// the ring are kept, the lower number of a member listed twice (a want
// taken for served is lost to the ring until the member's locate), and no
// number beyond this member's clock by more than maxServedAhead (want
// numbers are their member's clock in ms: one beyond is forged, or of a
// clock far off; without it, that member's wants are judged by their age
// alone, as before the token carried the list). Only a member itself
// numbers its wants: an entry for this member beyond the last want it
// sent is forged, or from before a restart with a clock set back; this
// member's own number replaces it, so that its wants count again. Another
// member's entry forged within bounds costs that member at most a loss
// timeout, once: its locate is a want that no served number drops, and
// once the token is there, its own number replaces the entry.
func (c *Core) takeServed(l *lock, served []wire.WantServed) {
	t := l.tok
	limit := uint64(max(c.now.Add(maxServedAhead).UnixMilli(), 0))
	for _, s := range served {
		if !c.member(s.Member) {
			c.count("token_served_not_member")
			continue
		}
		if s.Want > limit && s.Member != c.self {
			c.count("token_served_absurd")
			continue
		}
		if n, ok := t.served[s.Member]; ok {
			c.count("token_served_twice")
			t.served[s.Member] = min(n, s.Want)
			continue
		}
		t.served[s.Member] = s.Want
	}
	if n, ok := t.served[c.self]; ok && n > l.wantNum {
		if l.wantNum != 0 {
			// (Before this member's first want since it started, or since
			// its entry was reclaimed, a number from before is no news.)
			c.count("token_served_ahead")
		}
		t.served[c.self] = l.wantNum
	}
	if c.reqs.Waiting(l.name) == 0 {
		t.served[c.self] = l.wantNum // this member waits for nothing: whatever it wanted was served
	}
}

// orphanLease notes in p the lease that reply r says may still run (a
// live holder's, or one granted on a token since dropped), from now. No
// lease runs longer than MaxLease, so more is a lie (a member gone wrong,
// a frame forged without a key), taken for MaxLease and counted: one
// reply of 49 days used to make the new token's maker hold it that long.
func (c *Core) orphanLease(p *probe, r wire.RingProbeReply) {
	d := time.Duration(r.LeaseLeftMS) * time.Millisecond
	if d > c.cfg.MaxLease {
		c.count("lease_left_clamped")
		d = c.cfg.MaxLease
	}
	if d > 0 {
		p.leaseUntil = later(p.leaseUntil, c.now.Add(c.pad(d)))
	}
}
