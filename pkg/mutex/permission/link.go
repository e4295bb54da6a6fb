package permission

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/wire"
)

// A broken link between two members that both still hear the others: the
// package doc ("Failures") argues the rules; this file is their mechanism.
//
// Relays (liveness). A frame for a member this member has not heard
// directly for RelayAfter, or that says (a relayed frame with
// wire.PermRelayUnheard) it has not heard this member directly for as
// long, also goes, with the same stamp, to RelayFanout other members this
// member hears, as a wire.PermRelay; each passes it on to its target,
// which steps it as a frame of its origin. When relaying to a member
// starts, a heartbeat goes to it at once (its failure detector hears this
// member well before it would suspect it). A request sent again for want
// of an answer goes through relays whatever the link looks like (it is
// the first sign of a broken one), and so does what a member sends in
// answer to a frame that came through a relay. Relayed frames make their
// origin heard (heardAt: the failure detector), never heard directly
// (directAt: this member's majority, for its grants, leases and the
// cut-off, counts only members heard directly).
//
// Confirmation (safety). A member silent here for its timeout (the
// detector's Suspect) is not given up at once: ConfirmSlack after the
// timeout this member asks every other member (PermProbe) how long it has
// been silent to them, and gives it up (givenUp: no longer waited for,
// its answers void) only when the answers of majority-1 others, with its
// own silence, show a majority that heard nothing from it, directly or
// through a relay, over one stretch of time as long as this member's
// timeout for it, ending no earlier than the probe left. Until then it
// asks again: when that could first hold, else every RetryInterval.

// Events of the link.
const (
	// EventLinkDown: a member has sent nothing directly for SuspectAfter
	// while its frames come through relays: the link between the two is
	// broken ("member", "via"). At WARN.
	EventLinkDown = "link_down"
	// EventLinkUp: a member reported by EventLinkDown is heard directly
	// again ("member").
	EventLinkUp = "link_up"
	// EventUnconfirmed: a member silent here for its timeout is not
	// given up: others still hear it, or too few answered ("member",
	// "heard_by"). At WARN, once per silence.
	EventUnconfirmed = "member_unconfirmed"
	// EventMemberHeard: a member reported by EventUnconfirmed is heard
	// again ("member").
	EventMemberHeard = "member_heard"
)

// confirm is the confirmation under way that a silent member is down.
type confirm struct {
	stamp   uint64    // the last probe's Lamport time (0: none sent yet)
	sentAt  time.Time // when it left
	due     time.Time // when the next probe leaves
	answers map[uint32]quiet
	said    bool // EventUnconfirmed was emitted for this silence
	// atEnd: the member is given up at its lease end (tryLeaseEnd), not
	// after its timeout; farEnd: EventEndPastTimeout was emitted for this
	// silence.
	atEnd, farEnd bool
}

// quiet is one answer to a probe.
type quiet struct {
	at     time.Time     // when it came, on this member's clock
	silent time.Duration // the silence it reported, on the answerer's clock
	// covered: the answerer vouched that the member's leases end by end
	// (on this member's clock, padded).
	covered bool
	end     time.Time
}

// directSilence is how long member m has sent nothing that came directly
// (since the start if nothing ever did).
func (c *Core) directSilence(m uint32) time.Duration {
	d := c.peers[m].directAt
	if d.IsZero() {
		d = c.begun
	}
	return c.now.Sub(d)
}

// unheard says whether this member lacks member m's frames: none came
// directly for RelayAfter.
func (c *Core) unheard(m uint32) bool { return c.directSilence(m) >= c.cfg.RelayAfter() }

// viaRelay says whether frames for member m go through relays too: this
// member lacks m's frames, or m said (within RelayAfter) that it lacks
// this member's. Never for a member given up: nobody of a majority hears
// it, and one that comes back is heard through the relays it chooses.
func (c *Core) viaRelay(m uint32) bool {
	p := c.peers[m]
	if p == nil || p.down || c.det == nil {
		return false
	}
	return c.unheard(m) || !p.unheardAt.IsZero() && c.now.Sub(p.unheardAt) < c.cfg.RelayAfter()
}

// relaysFor picks the members a frame for member to passes through: the
// one whose relay of to's frames came last (it hears to), then the next
// members after to in ID order, each heard directly within FreshWindow and
// not given up; at most RelayFanout.
func (c *Core) relaysFor(to uint32) []uint32 {
	out := make([]uint32, 0, RelayFanout)
	usable := func(r uint32) bool {
		p := c.peers[r]
		return r != to && p != nil && !p.down && !p.directAt.IsZero() && c.now.Sub(p.directAt) <= c.cfg.FreshWindow &&
			!slices.Contains(out, r)
	}
	if r := c.peers[to].relayer; r != 0 && usable(r) {
		out = append(out, r)
	}
	ms := c.cfg.Members
	at, _ := slices.BinarySearch(ms, to)
	for i := 1; i < len(ms) && len(out) < RelayFanout; i++ {
		if r := ms[(at+i)%len(ms)]; r != c.self && usable(r) {
			out = append(out, r)
		}
	}
	return out
}

// relayCopies sends the frame just queued for to (each other member for a
// broadcast) through relays where viaRelay says so, or, for a frame sent
// again for want of an answer (forceRelay) or in answer to one that came
// through a relay (replyVia), in any case.
func (c *Core) relayCopies(to uint32, k wire.Kind, b []byte, lamport uint64) {
	if k == wire.KindPermRelay || c.det == nil {
		return
	}
	if to == core.Broadcast {
		for _, m := range c.others() {
			c.relayCopy(m, k, b, lamport, false)
		}
		return
	}
	c.relayCopy(to, k, b, lamport, c.forceRelay || to == c.replyVia)
}

func (c *Core) relayCopy(to uint32, k wire.Kind, b []byte, lamport uint64, force bool) {
	p := c.peers[to]
	if p == nil || p.down || !force && !c.viaRelay(to) {
		return
	}
	rl := wire.PermRelay{Origin: c.self, Target: to, Kind: k, Lamport: lamport, Payload: b}
	if c.unheard(to) {
		rl.Flags = wire.PermRelayUnheard
	}
	relays := c.relaysFor(to)
	if len(relays) == 0 {
		c.count("relays_none")
		return
	}
	pb, ok := c.bugs.Encode(&c.events, "perm_relay", rl, nil)
	if !ok {
		return
	}
	for _, r := range relays {
		c.msgs = append(c.msgs, core.Message{To: r, Kind: wire.KindPermRelay, Payload: pb, Lamport: lamport})
		c.count("relayed_out")
	}
}

// stepRelay takes a relay: a frame of another member for this one (step it
// as that member's), or one of the sender's own for a third member (pass
// it on). Anything else no member sends.
func (c *Core) stepRelay(m core.Message) error {
	var r wire.PermRelay
	if err := r.UnmarshalBinary(m.Payload); err != nil {
		return err
	}
	if r.Lamport > m.Lamport {
		return fmt.Errorf("%w: relayed frame stamped %d in a frame of Lamport time %d", ErrImplausible, r.Lamport, m.Lamport)
	}
	switch {
	case r.Target == c.self && r.Origin != m.From && r.Origin != c.self:
		p := c.peers[r.Origin]
		if p == nil {
			return fmt.Errorf("%w: %d, relayed by %d", core.ErrUnknownMember, r.Origin, m.From)
		}
		c.count("relayed_in")
		p.relayedAt, p.relayer = c.now, m.From
		if r.Flags&wire.PermRelayUnheard != 0 {
			p.unheardAt = c.now
		}
		c.heard(r.Origin, true, m.Time)
		c.replyVia = r.Origin // the answers go back the way it came
		defer func() { c.replyVia = 0 }()
		return c.stepFrame(core.Message{From: r.Origin, To: c.self, Kind: r.Kind, Payload: r.Payload, Lamport: r.Lamport, Time: m.Time})
	case r.Origin == m.From && r.Target != c.self:
		if c.peers[r.Target] == nil {
			return fmt.Errorf("%w: %d, asked by %d to relay to it", core.ErrUnknownMember, r.Target, m.From)
		}
		if c.det != nil && c.det.State(r.Target) == liveness.Suspect {
			// Silent here too: the frame would go nowhere (a crashed
			// member looks like a broken link until it is given up).
			c.count("relays_dropped_silent")
			return nil
		}
		// The same payload, in a frame of this member's, stamped after the
		// one it carries (the node merged that stamp before this step).
		c.msgs = append(c.msgs, core.Message{To: r.Target, Kind: wire.KindPermRelay, Payload: bytes.Clone(m.Payload), Lamport: c.lamport.Send()})
		c.count("relays_passed")
		return nil
	}
	return fmt.Errorf("%w: relay from %d of member %d's frame for %d", ErrImplausible, m.From, r.Origin, r.Target)
}

// silence is how long member m has been silent here, by any path, as the
// failure detector counts it (a stall of this member's own shortens it).
func (c *Core) silence(m uint32) time.Duration {
	if c.det == nil || m == c.self {
		return 0
	}
	return max(c.now.Sub(c.det.QuietSince(m)), 0)
}

// silenceAgo is how long since member m was last heard by any path (since
// the start if never).
func (c *Core) silenceAgo(m uint32) time.Duration {
	h := c.peers[m].heardAt
	if h.IsZero() {
		h = c.begun
	}
	return c.now.Sub(h)
}

// silent says whether member m has been silent here for its timeout but
// is not given up.
func (c *Core) silent(m uint32) bool {
	return c.det != nil && !c.givenUp(m) && c.det.State(m) == liveness.Suspect
}

// stepProbe answers a probe: how long the member it names has been silent
// here.
func (c *Core) stepProbe(m core.Message) error {
	var q wire.PermProbe
	if err := q.UnmarshalBinary(m.Payload); err != nil {
		return err
	}
	switch {
	case q.Member == m.From:
		return fmt.Errorf("%w: member %d asks whether it is silent", ErrImplausible, m.From)
	case q.Member != c.self && c.peers[q.Member] == nil:
		return fmt.Errorf("%w: %d, in a probe from %d", core.ErrUnknownMember, q.Member, m.From)
	}
	c.count("probes_answered")
	r := wire.PermProbeReply{Member: q.Member, SilentMS: uint32(min(c.silence(q.Member).Milliseconds(), 1<<32-1)), Probe: m.Lamport}
	if c.peers[m.From].v2 {
		// It reads the extended answer: say what this member knows of
		// the silent member's lease end (lease.go).
		r.Ext = true
		if end, ok := c.covers(q.Member); ok {
			r.Covered, r.EndMS = true, ceilMS(end.Sub(c.now))
		}
	}
	c.send(m.From, wire.KindPermProbeReply, r, 0)
	return nil
}

// stepProbeReply takes an answer to a probe of this member's.
func (c *Core) stepProbeReply(m core.Message) error {
	var r wire.PermProbeReply
	if err := r.UnmarshalBinary(m.Payload); err != nil {
		return err
	}
	switch {
	case r.Probe >= m.Lamport:
		return fmt.Errorf("%w: answer to probe %d in a frame of Lamport time %d", ErrImplausible, r.Probe, m.Lamport)
	case r.Member == m.From:
		return fmt.Errorf("%w: member %d reports on its own silence", ErrImplausible, m.From)
	}
	p := c.peers[r.Member]
	if p == nil || p.confirm == nil || p.confirm.stamp != r.Probe {
		c.count("probe_replies_stale")
		return nil
	}
	q := quiet{at: c.now, silent: time.Duration(r.SilentMS) * time.Millisecond, covered: r.Covered}
	if r.Covered {
		q.end = c.endAfter(r.EndMS)
	}
	p.confirm.answers[m.From] = q
	c.tryConfirm(r.Member)
	return nil
}

// confirmTick starts and repeats the confirmation of every member silent
// here for its timeout, and drops it for any heard again or given up.
func (c *Core) confirmTick() {
	for _, m := range c.others() {
		p := c.peers[m]
		suspect := c.det.State(m) == liveness.Suspect
		if p.down || !suspect && !c.earlyConfirm(m) {
			p.confirm = nil
			continue
		}
		if p.confirm == nil {
			wait := c.det.Timeout(m)
			if !suspect {
				wait = c.cfg.SuspectAfter
			}
			p.confirm = &confirm{due: c.det.QuietSince(m).Add(wait + c.cfg.ConfirmSlack())}
		}
		if !c.now.Before(p.confirm.due) {
			c.probe(m)
		}
	}
}

// probe asks every member but m how long m has been silent to it.
func (c *Core) probe(m uint32) {
	cf := c.peers[m].confirm
	need := c.majority - 1
	if len(c.cfg.Members)-2 < need {
		// Two members: nobody else can confirm, and no grant could be
		// made without m anyway.
		if !cf.said {
			cf.said = true
			c.warn(EventUnconfirmed, fmt.Sprintf("member %d has been silent here for %v; with %d members no other member can confirm that it is down: still waited for",
				m, c.silence(m).Round(time.Millisecond), len(c.cfg.Members)), "member", m, "heard_by", []uint32{})
		}
		cf.due = c.now.Add(c.cfg.SuspectAfter)
		return
	}
	if cf.stamp != 0 && len(cf.answers) < need && !cf.said && c.det.State(m) == liveness.Suspect {
		cf.said = true
		c.warn(EventUnconfirmed, fmt.Sprintf("member %d has been silent here for %v, but only %d of the %d other members needed to confirm that it is down answered (are they running an older mutexd, or cut off?): still waited for",
			m, c.silence(m).Round(time.Millisecond), len(cf.answers), need), "member", m, "heard_by", []uint32{})
	}
	cf.stamp, cf.sentAt, cf.due = c.lamport.Send(), c.now, c.now.Add(c.cfg.RetryInterval)
	cf.answers = map[uint32]quiet{}
	c.count("probes_sent")
	for _, o := range c.others() {
		if o != m {
			c.send(o, wire.KindPermProbe, wire.PermProbe{Member: m}, cf.stamp)
		}
	}
}

// tryConfirm gives member m up if the answers to the last probe, with this
// member's own silence, show a majority silent from m over one stretch of
// this member's timeout for it, ending no earlier than the probe left (an
// answer came after it). Each answer's silence began at the latest when
// the answer came less the silence it reports (stretched for clock rates):
// the stretch runs from the latest of those beginnings (and of this
// member's own) to the probe. Otherwise it says when that could hold, and
// once, that others still hear m.
func (c *Core) tryConfirm(m uint32) {
	cf := c.peers[m].confirm
	timeout := c.det.Timeout(m)
	type begin struct {
		id uint32
		at time.Time
	}
	begins := make([]begin, 0, len(cf.answers))
	for id, q := range cf.answers {
		begins = append(begins, begin{id, q.at.Add(-c.cfg.unpad(q.silent))})
	}
	slices.SortFunc(begins, func(a, b begin) int {
		if d := a.at.Compare(b.at); d != 0 {
			return d
		}
		return cmp.Compare(a.id, b.id)
	})
	need := c.majority - 1
	if len(begins) >= need {
		from := c.det.QuietSince(m)
		by := make([]uint32, 0, need)
		for _, b := range begins[:need] {
			if b.at.After(from) {
				from = b.at
			}
			by = append(by, b.id)
		}
		if cf.sentAt.Sub(from) >= timeout {
			slices.Sort(by)
			c.giveUp(m, by)
			return
		}
		cf.due = from.Add(timeout + c.cfg.ConfirmSlack())
	}
	if timeout > c.cfg.SuspectAfter && c.tryLeaseEnd(m) {
		return
	}
	if c.det.State(m) != liveness.Suspect {
		return // asked before its timeout (lease.go): no verdict yet on who hears it
	}
	if cf.said {
		return
	}
	hearing, last := c.hearing(m)
	if len(hearing) == 0 {
		return
	}
	cf.said = true
	c.warn(EventUnconfirmed, fmt.Sprintf("member %d has been silent here for %v, but members %v heard it within the last %v: not given up, still waited for (the link between members %d and %d is probably broken; frames to it go through relays)",
		m, c.silence(m).Round(time.Millisecond), hearing, last, c.self, m), "member", m, "heard_by", hearing)
}

// tryLeaseEnd is tryConfirm's rule for a member m that may hold by this
// member's leave, before its timeout (lease.go, and the package doc,
// "Lease ends"): answers of majority-1 others that vouch for m's lease
// end, with this member's own, showing a majority silent from m over one
// stretch of SuspectAfter ending no earlier than the probe left, give m up
// if the probe left once the latest end they vouch for, and the margin,
// had passed. Answers to an earlier probe only set when to ask again: a
// member that vouched for an end may hear m afterwards and acknowledge a
// renewal past it (a lease longer than SuspectAfter), which only its
// answer to a later probe shows. An end vouched for that passes m's
// timeout (DeadAfter from its last frame, which every lease m may hold
// ends within) is not waited for: m is waited for as without one (a huge
// end, sent in a member's name, would otherwise hold the lock for weeks).
// It says whether it decided (m given up, or asked about again later).
func (c *Core) tryLeaseEnd(m uint32) bool {
	cf := c.peers[m].confirm
	own, ok := c.covers(m)
	need := c.majority - 1
	if !ok || need <= 0 {
		return false
	}
	type vouch struct {
		id       uint32
		from, to time.Time
	}
	vs := make([]vouch, 0, len(cf.answers))
	for id, q := range cf.answers {
		if q.covered {
			vs = append(vs, vouch{id, q.at.Add(-c.cfg.unpad(q.silent)), q.end})
		}
	}
	if len(vs) < need {
		return false
	}
	slices.SortFunc(vs, func(a, b vouch) int {
		if d := a.from.Compare(b.from); d != 0 {
			return d
		}
		return int(a.id) - int(b.id)
	})
	from, end := c.det.QuietSince(m), own
	by := make([]uint32, 0, need)
	for _, v := range vs[:need] {
		if v.from.After(from) {
			from = v.from
		}
		if v.to.After(end) {
			end = v.to
		}
		by = append(by, v.id)
	}
	if cf.sentAt.Sub(from) < c.cfg.SuspectAfter {
		cf.due = core.Earliest(cf.due, from.Add(c.cfg.SuspectAfter+c.cfg.ConfirmSlack()))
		return false
	}
	at := end.Add(c.cfg.Margin)
	if timeout := c.det.QuietSince(m).Add(c.det.Timeout(m)); at.After(timeout) {
		c.count("lease_ends_past_timeout")
		if !cf.farEnd {
			cf.farEnd = true
			slices.Sort(by)
			c.warn(EventEndPastTimeout, fmt.Sprintf("member %d, silent here for %v, announced that its leases end in %v (members %v and this one vouch for it), "+
				"%v after its timeout (%v from its last frame), by which every lease it may hold has ended: that end is not waited for, and member %d is waited for its timeout as without it. "+
				"No mutexd of this build announces such an end (the members agree on --lease): it was forged in member %d's name (does the cluster run without a key?), or it is a bug to report",
				m, c.silence(m).Round(time.Millisecond), end.Sub(c.now).Round(time.Millisecond), by, at.Sub(timeout).Round(time.Millisecond),
				c.det.Timeout(m), m, m), "member", m, "vouched_by", by)
		}
		return false
	}
	if cf.sentAt.Before(at) {
		c.count("lease_end_waits")
		cf.due = at // ask again then
		return true
	}
	slices.Sort(by)
	cf.atEnd = true
	c.giveUp(m, by)
	return true
}

// hearing returns the members whose answer to the last probe about member
// m says they heard it more recently than this member's timeout for it,
// and the longest silence among those answers.
func (c *Core) hearing(m uint32) (ids []uint32, last time.Duration) {
	cf := c.peers[m].confirm
	if cf == nil {
		return nil, 0
	}
	for _, id := range slices.Sorted(maps.Keys(cf.answers)) {
		if q := cf.answers[id]; c.cfg.unpad(q.silent) < c.det.Timeout(m) {
			ids = append(ids, id)
			last = max(last, q.silent)
		}
	}
	return ids, last
}

// relayedRecently says whether member m's frames came through a relay
// within FreshWindow.
func (c *Core) relayedRecently(m uint32) bool {
	p := c.peers[m]
	return !p.relayedAt.IsZero() && c.now.Sub(p.relayedAt) <= c.cfg.FreshWindow
}

// giveUp stops waiting for member m, on the confirmation of members by:
// whatever it held by this member's leave has ended, and it has rejoined
// or stopped before it asks or answers again, so the answers it gave are
// void.
func (c *Core) giveUp(m uint32, by []uint32) {
	p := c.peers[m]
	atEnd := p.confirm != nil && p.confirm.atEnd
	p.down, p.confirm = true, nil
	c.count("members_given_up")
	if atEnd {
		c.count("members_given_up_at_lease_end")
		c.emit(liveness.EventMemberDown, fmt.Sprintf("member %d is down: silent here for %v, members %v confirm a silence as long, and every lease it may hold ended by the end it announced; no longer waited for",
			m, c.silence(m).Round(time.Millisecond), by), "member", m, "confirmed_by", by)
	} else {
		c.emit(liveness.EventMemberDown, fmt.Sprintf("member %d is down: silent here for %v, and members %v confirm a silence as long; no longer waited for",
			m, c.silence(m).Round(time.Millisecond), by), "member", m, "confirmed_by", by)
	}
	for _, l := range c.locks {
		delete(l.got, m)
		c.unlend(l, m)
	}
	c.unlendBefore(m)
	for _, name := range slices.Sorted(maps.Keys(c.locks)) {
		c.advance(c.locks[name]) // a request that waited only for m
	}
}

// heardAgain takes member m back: heard after a silence as long as its
// timeout. One given up is up again, and is asked again at once.
func (c *Core) heardAgain(m uint32) {
	p := c.peers[m]
	cf := p.confirm
	p.confirm = nil
	switch {
	case p.down:
		p.down = false
		c.emit(liveness.EventMemberUp, fmt.Sprintf("member %d is up", m), "member", m)
	case cf != nil && cf.said:
		c.emit(EventMemberHeard, fmt.Sprintf("member %d is heard again (it was never given up)", m), "member", m)
	}
	for _, l := range c.locks {
		if l.stamp != 0 && !l.granted {
			delete(l.sentAt, m) // ask it at once
		}
	}
}

// checkLinks sends a heartbeat through relays to a member as relaying to it
// starts, and reports a broken link (a member heard only through relays
// for SuspectAfter) once, and its repair.
func (c *Core) checkLinks() {
	for _, m := range c.others() {
		p := c.peers[m]
		if relay := c.viaRelay(m); relay != p.relaying {
			p.relaying = relay
			if relay {
				c.count("relays_started")
				c.sendBeat(m)
			}
		}
		switch direct := c.directSilence(m); {
		case !p.linkDown && direct >= c.cfg.SuspectAfter && c.relayedRecently(m):
			p.linkDown = true
			c.count("links_down")
			c.warn(EventLinkDown, fmt.Sprintf("no frame from member %d has come directly for %v, but its frames come through member %d: the link between members %d and %d is broken (a firewall rule, a cable, a switch port?); frames to it go through members %v until it works again",
				m, direct.Round(time.Millisecond), p.relayer, c.self, m, c.relaysFor(m)), "member", m, "via", p.relayer)
		case p.linkDown && direct < c.cfg.RelayAfter():
			p.linkDown = false
			c.emit(EventLinkUp, fmt.Sprintf("member %d is heard directly again: the link works", m), "member", m)
		}
	}
}

// warn emits an event the daemon logs at WARN.
func (c *Core) warn(name, msg string, args ...any) {
	c.events = append(c.events, core.Event{Name: name, Msg: msg, Args: args, Warn: true})
}
