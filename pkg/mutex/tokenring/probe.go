package tokenring

// The probes every repair runs (locate, prepare, check, vouch): asked,
// answered, and the promises a generation is made of (doc.go,
// "Generations, and why two holders cannot happen").

import (
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/quorum"
	"github.com/synclab/synclab/pkg/wire"
)

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
	// included).
	confirmLeft time.Duration
	// For a prepare, leaseUntil is the orphaned grants' ends the promisers
	// said, and confirms each promiser's confirm left (this member's
	// included; the zero time: it did not say, an older build), as times
	// on this member's clock from when each answer came (padded for the
	// clocks' rates): a new token's Hold ends by then, however long the
	// prepare then waits for a silent member's answer. (From the end of
	// the prepare instead, every Hold after a crash ran a locate's span,
	// 150 ms, past the promises it waits out.) Any majority of the
	// promisers meets every check an old holder passed, so the Hold needs
	// only the majority whose bounds end first (holdUntil).
	leaseUntil time.Time
	confirms   map[uint32]time.Time
	// majorityAt is when a prepare's promises first made a majority: a
	// regenerated token's Hold runs from there, so waiting for the last
	// answers (which may spare the Hold) costs nothing when they never come.
	majorityAt time.Time
}

// confirm records promiser m's bound (the zero time: unknown). An answer
// repeated (a retry's) keeps the later bound, an unknown one for good.
func (p *probe) confirm(m uint32, until time.Time) {
	if p.confirms == nil {
		p.confirms = map[uint32]time.Time{}
	}
	if prev, ok := p.confirms[m]; ok && (prev.IsZero() || until.IsZero()) {
		p.confirms[m] = time.Time{}
		return
	}
	p.confirms[m] = later(p.confirms[m], until)
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
		if confirmLeft > c.leaseReach() {
			confirmLeft = c.leaseReach()
			c.count("confirm_left_clamped")
		}
		if r.Op == wire.ProbePrepare {
			until := c.now.Add(c.pad(confirmLeft))
			if r.Flags&wire.ProbeConfirmKnown == 0 {
				until = time.Time{}
			}
			p.confirmLeft = max(p.confirmLeft, confirmLeft)
			p.confirm(from, until)
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
