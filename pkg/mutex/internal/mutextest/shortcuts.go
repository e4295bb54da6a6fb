package mutextest

import (
	"math/rand/v2"
	"time"
)

// Short one-way cuts (Config.ShortCuts): the loss that hits stream
// frames. A member's frames to the coordinator (requests, syncs,
// releases, renewals) and the coordinator's to it (grants, renewals'
// answers, refusals) travel on TCP streams, which the simulated links
// never lose (sim.LinkConfig): only a reset does, a crash or a cut. The
// Loss fault cuts a holder and another member both ways and is a fault:
// the causal oracle excuses any overtaking of their requests across it,
// so an algorithm's rules for a lost sync or grant (central's
// unconfirmed grants, its predecessors never heard of or dropped for a
// silence) ran unchecked. A short cut is a loss, not a fault: one
// direction of one link, 20 to 400 ms (a few beats of 100 ms: the
// coordinator's DeadAfter is 250 ms, so some of them outlast it, and a
// few its 2 x DeadAfter), its stream reset (what was on its way is lost)
// and its datagrams lost meanwhile; the oracle excuses nothing across it
// but what the algorithm reports (Config.CausalSkipEvent, no sooner than
// Config.CausalSkipAfter).
type shortCut struct {
	from, to uint32
	until    time.Duration
}

// shortCutGap is the mean time between two short cuts.
const shortCutGap = 300 * time.Millisecond

// shortCuts, at each millisecond of an active Run, ends the short cut
// that is over and may start one: one end the Target (the coordinator)
// when there is one, the other a random running member, the direction
// drawn. None while a fault cuts links (Fault: a partition, the Loss
// fault), which its Heal would end, nor when not active (the quiet end
// is lossless: every waiting request must be granted there).
func (c *Cluster) shortCuts(active bool) {
	if !c.cfg.ShortCuts {
		return
	}
	if c.cutRng == nil {
		c.cutRng = rand.New(rand.NewPCG(uint64(c.s.Seed()), 17))
	}
	now := c.s.Elapsed()
	if sc := c.cut; sc != nil && (now >= sc.until || !active || c.faultCuts) {
		c.endShortCut()
	}
	if !active || c.faultCuts || c.cut != nil || c.cutRng.Int64N(int64(shortCutGap/time.Millisecond)) != 0 {
		return
	}
	a := c.Other()
	if c.cfg.Target != nil {
		if id := c.cfg.Target(c.s); id != 0 && c.s.Running(id) {
			a = id
		}
	}
	b := c.ids[c.cutRng.IntN(len(c.ids))]
	if a == b || !c.s.Running(b) {
		return
	}
	if c.cutRng.IntN(2) == 0 {
		a, b = b, a
	}
	c.cut = &shortCut{from: a, to: b, until: now + time.Duration(20+c.cutRng.IntN(381))*time.Millisecond}
	c.ShortCutsMade++
	c.s.Cut(a, b)
}

// endShortCut ends the short cut under way, if any: no fault cuts a link
// while one lasts (faultCuts), so healing every link heals it alone.
func (c *Cluster) endShortCut() {
	if c.cut == nil {
		return
	}
	c.cut = nil
	c.s.Heal()
}

// faultCutting says a fault is about to cut links (begin) or has healed
// them: the short cut under way ends first, and none starts meanwhile.
func (c *Cluster) faultCutting(begin bool) {
	if begin {
		c.endShortCut()
	}
	c.faultCuts = begin
}
