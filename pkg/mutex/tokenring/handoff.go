package tokenring

// The handoff: the token passed to the successor, acknowledged, and
// skipped past a successor that stays silent; the wants it serves on the
// way (doc.go, "The ring").

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/delivery"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/wire"
)

// pass sends the token to the successor.
func (c *Core) pass(l *lock, others []uint32) {
	succ := c.successor()
	for succ != 0 && c.missedBeat(succ) {
		c.skipQuiet(l, succ)
		succ = c.successor()
	}
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

// missedBeat says whether member m, a watched neighbour, missed a heartbeat:
// silent, since it was last heard, since it was watched or since this
// member's own loop last stalled (listenedFrom), for more than
// a heartbeat and a half of its own interval (or of this member's, if it
// said a shorter one or none). A member that waits for a lock is heard
// more often than that (its locates, a loss timeout apart); one that
// holds, at every renewal's check. So a quiet successor is most likely
// dead, not yet taken for down (DeadAfter): a holder that died is, when
// its lock's new token is made, a lease after its last check (about 3 s),
// and a token passed to it was lost, found out two acknowledgement
// timeouts later, and made again a Hold after that: some 3 s more for
// every waiter beyond it (TestSimNewTokenSkipsDeadHolder). Passing it by
// instead costs a live one nothing it wants: it is skipped until heard
// again, and a member that waits is heard within a loss timeout. An
// interval no longer than DeadAfter is believed (a forged longer one
// leaves the member judged as before: by the acknowledgement).
func (c *Core) missedBeat(m uint32) bool {
	since, watched := c.watching[m]
	if !watched || c.det == nil {
		return false // nobody says it beats here: judged by the acknowledgement
	}
	if v, ok := c.det.Member(m); ok && v.LastHeard.After(since) {
		since = v.LastHeard
	}
	if c.listenedFrom.After(since) {
		since = c.listenedFrom // its frames were not read during this member's own stall
	}
	beat := max(c.cfg.HeartbeatInterval, min(c.beatOf[m], c.cfg.DeadAfter))
	return c.now.Sub(since) > beat*3/2
}

// skipQuiet passes the token by member m, which missed a heartbeat (missedBeat) until it is heard.
func (c *Core) skipQuiet(l *lock, m uint32) {
	c.skipped[m] = true
	v, _ := c.det.Member(m)
	silent := c.now.Sub(v.LastHeard)
	if v.LastHeard.IsZero() {
		silent = c.now.Sub(c.begun)
	}
	c.emit(EventMemberSkipped, fmt.Sprintf("member %d silent for %v (a heartbeat missed): %s's token passes it by until it is heard", m, silent.Round(time.Millisecond), l.name),
		"member", m, "lock", l.name, "silent", silent)
	c.count("members_skipped_quiet")
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
