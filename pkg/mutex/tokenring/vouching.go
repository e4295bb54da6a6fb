package tokenring

import (
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/wire"
)

// Vouching. A token says which member it comes from, and a member that can
// forge one frame in another's name (anyone on the LAN of a cluster run
// without a key, or a member gone wrong) could otherwise hand a waiting
// member a copy of a live token: same generation, a fence just below the
// one the real holder granted, no hold. Its check would pass (the
// generation is the newest) and it would grant a second lease with the very
// fence of the first: the one thing fences exist to rule out.
//
// So a member does nothing with a token it received, neither grant nor
// pass, until the member it came from vouches for it (RingProbe, vouch): an
// OK with the same generation and fence, given only if that member passed
// exactly this token to this one as its last handoff and holds no token of
// the generation itself, once per handoff. The reply also carries the hold
// that was left, so a copy cannot shorten a regenerated token's wait.
// Anything else disowns the token: it is dropped before any use, and the
// lock's last-seen generation and hop are put back as they were, so that a
// forged hop cannot make the real token look like a duplicate.
//
// A member that does not answer within the probe's tries (it crashed right
// after passing, or runs a build without vouching) does not block the lock:
// the token is then used on the majority check alone, as before. The cost is
// one probe and one reply per handoff, which the handoff's latency hides.

// handoff is the last token this member passed on, to answer a vouch.
type handoff struct {
	to        uint32
	gen       uint64
	fence     uint64
	holdUntil time.Time
	nonce     uint32    // the vouch it answered, 0 before: one handoff, one vouch (retries share a nonce)
	acked     time.Time // when the successor acknowledged it (zero: not yet)
}

// startVouch asks the member l's token came from to vouch for it.
func (c *Core) startVouch(l *lock) {
	t := l.tok
	p := c.startProbe(wire.ProbeVouch, t.gen, []uint32{t.from}, c.cfg.ProbeTries)
	l.vouch = p
	c.send(t.from, wire.KindRingProbe, wire.RingProbe{Op: wire.ProbeVouch, Name: l.name, Nonce: p.Nonce, Generation: t.gen}, false)
	c.count("vouches_asked")
}

// answerVouch fills the reply to member from's vouch p: OK for exactly the
// token this member last passed it, Have for anything else.
func (c *Core) answerVouch(from uint32, l *lock, p wire.RingProbe, r *wire.RingProbeReply) {
	h := l.passed
	if h == nil || h.to != from || h.gen != p.Generation || l.tok != nil || h.nonce != 0 && h.nonce != p.Nonce {
		r.Status = wire.ProbeHave
		c.count("vouches_refused")
		return
	}
	h.nonce = p.Nonce
	r.Status, r.Generation, r.Fence = wire.ProbeOK, h.gen, h.fence
	r.LeaseLeftMS = msCeil(h.holdUntil.Sub(c.now))
	c.count("vouches_given")
}

// stepVouchReply takes the answer to vouch p of the member l's token came
// from.
func (c *Core) stepVouchReply(l *lock, p *probe, from uint32, r wire.RingProbeReply) {
	t := l.tok
	l.vouch = nil
	if t == nil || t.vouched || t.from != from || t.gen != p.gen {
		c.count("replies_late")
		return
	}
	if r.Status != wire.ProbeOK || r.Generation != t.gen || r.Fence != t.fence {
		c.count("tokens_disowned")
		c.disown(l, from)
		return
	}
	// The hold the sender had left, from now: a copy that claimed less
	// waits as long as the real token would have.
	if hold := min(time.Duration(r.LeaseLeftMS)*time.Millisecond, c.hold); c.now.Add(hold).After(t.holdUntil) {
		t.holdUntil = c.now.Add(hold)
	}
	t.vouched = true
	c.count("tokens_vouched")
	c.advance(l)
}

// vouchUnanswered uses l's token although its sender never answered: it
// may have crashed since, or run a build that does not vouch.
func (c *Core) vouchUnanswered(l *lock) {
	l.vouch = nil
	if l.tok == nil || l.tok.vouched {
		return
	}
	l.tok.vouched = true
	c.count("vouches_unanswered")
	c.advance(l)
}

// disown drops l's token before any use: it is a copy (its sender did not
// vouch for it, or another member holds the same generation).
func (c *Core) disown(l *lock, from uint32) {
	t := l.tok
	if t == nil || c.reqs.Held(l.name) && t.vouched {
		// A token that has granted is not dropped on another's word: its
		// checks decide (the other copy is the one refused).
		return
	}
	l.tok, l.vouch, l.check = nil, nil, nil
	if l.lastGen == t.gen && l.lastHop == t.hop {
		l.lastGen, l.lastHop = t.prevGen, t.prevHop
	}
	c.emit(EventTokenDisowned, fmt.Sprintf("%s: dropped a token of generation %#x from %d: not the one it passed", l.name, t.gen, from),
		"lock", l.name, "generation", t.gen, "from", from)
	if c.reqs.Waiting(l.name) > 0 {
		l.wantSent = false
		c.want(l)
	}
}
