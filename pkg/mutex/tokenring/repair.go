package tokenring

// Loss and repair: a token looked for (locate), a new generation
// proposed and made (prepare), a holder's token checked with a majority
// (check) (doc.go, "Loss and repair").

import (
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/wire"
)

// locateSpan is the longest a locate runs: its tries' timeouts.
func (c *Core) locateSpan() time.Duration {
	return time.Duration(c.cfg.ProbeTries) * c.cfg.ProbeTimeout
}

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
	if max(p.confirmLeft, c.checkedLeft(l)) > c.leaseReach()-c.cfg.liveCheckAge() {
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
	return max(l.checkedAt.Add(c.leaseReach()).Sub(c.now), 0)
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
	l.prepare.confirm(c.self, c.now.Add(c.pad(l.prepare.confirmLeft)))
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
	c.wantsKnown(l)
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

// wantsKnown puts into l's token, just made here, the wants this member
// knows: those it heard (wantsSeen), and the members it heard look for
// the token (located). A member locates only while it waits (or while a
// token it passed is unacknowledged: one pass to it, which it passes on);
// a locate heard where the token is not was not kept as a want, and a
// waiter whose want datagrams to the maker were lost (the one sent when
// it asked, the one it sends the proposer when it promises) was served a
// loss timeout late, at its next locate, the maker serving itself again
// meanwhile (TestSimRepairedTokenCarriesWants). Both are judged as the
// wants a token carries: members only, never this one, none older than
// a want may be (fresh: a member that still waits locates again within
// it); one forged in a member's name (a ring without a key) costs one
// pass, as a forged want does. (No served number applies: the token is
// new, and an old token's are lost with it.)
func (c *Core) wantsKnown(l *lock) {
	for m, w := range l.wantsSeen {
		if c.fresh(w.at) && c.member(m) {
			l.tok.wants[m] = true
		}
	}
	for m, at := range l.located {
		if c.fresh(at) && c.member(m) {
			l.tok.wants[m] = true
		}
	}
	delete(l.tok.wants, c.self)
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
