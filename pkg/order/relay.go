package order

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// The relay: the textbook reliable multicast's answer to a sender that
// crashes mid-fan-out. The stream alone resends a record only from its
// sender, so a record that reached some members before its sender died
// would reach the others only when the sender is back: FIFO agreement
// breaks, and a causal message that depends on it blocks. So a receiver
// keeps every record it hands on until it knows every member holds it
// (stream.Kept, persisted with the position it was handed on at), and a
// record a member may lack is passed on by whoever holds it.
//
// Cost: nothing per multicast while nothing fails. A receiver learns that
// every member holds a record from its sender, who knows it from the
// acknowledgements and says so to every member (OrderHolding) 3/4
// RelayAfter after the first record it has not yet said it of: N-1 frames
// per sender per quiet period, and at most once per 3/4 RelayAfter under
// steady traffic, not per multicast. Only when a receiver has held a
// record for RelayAfter without hearing that (its sender crashed, or is
// cut off from some member, or the announcement was lost) does it ask
// every member that may lack it how far it holds that stream; a member
// answers with its own position, and whoever is ahead relays the records
// the other lacks (OrderRelay), at most maxBurst per answer, each answer
// asking for the next. The asking backs off from Retry to 16 x Retry, and
// stops once every member is known to hold everything the asker holds.
//
// A relayed record enters the origin's stream at the receiver exactly as
// the origin's own copy would: same numbers, same window, handed on once
// (the origin's retransmission of it later is a duplicate). The record is
// the origin's bytes, but the frame is authenticated by the cluster key,
// which every member holds: a member can relay a record the origin never
// sent, as it could forge a frame from the origin directly (see doc.go's
// trust model). What a relay can do is bounded like the origin's own
// frames: a relayed record beyond the origin's window is refused, a
// member's own stream is never taken from another, a holding beyond what
// the origin can have sent is refused, and everything refused is counted.

// relayState is the relay's volatile side, learned again after a
// restart.
type relayState struct {
	// unstable is, per origin, since when this member holds records of
	// its stream not known to be everywhere (zero: none).
	unstable map[uint32]time.Time
	known    map[uint32]map[uint32]uint64 // origin -> member -> how far it holds origin's stream
	asking   map[uint32]*relayAsk         // origins whose records this member is passing on
	answers  map[[2]uint32]bool           // (member, origin): the member is owed this member's holding

	// This member's own stream: the stability last announced, and when
	// it numbered the first record that announcement did not cover.
	announced uint64
	pending   time.Time
}

type relayAsk struct {
	due     time.Time
	backoff time.Duration
}

func (r *relayState) reset(now time.Time, members []uint32) {
	*r = relayState{unstable: map[uint32]time.Time{}, known: map[uint32]map[uint32]uint64{},
		asking: map[uint32]*relayAsk{}, answers: map[[2]uint32]bool{}}
	for _, m := range members {
		r.known[m] = map[uint32]uint64{}
	}
}

// keep adds a record of from's stream, just handed on, to the kept ones.
func (c *Core) keep(from uint32, r wire.OrderRecord) {
	b, ok := c.bugs.Encode(&c.events, "order_record", r, nil)
	if !ok {
		return
	}
	s := c.st.Stream
	s.Kept[from] = append(s.Kept[from], sentRecord{Seq: r.Seq, Payload: b})
	if c.relay.unstable[from].IsZero() {
		c.relay.unstable[from] = c.now
	}
	if n := trimKept(s, from, c.cfg.Window); n > 0 {
		c.counters["relay_kept_window"] += uint64(n)
	}
}

// trimKept drops the kept records of from's stream that every member
// holds, and all but the last window of them: a sender's stream runs at
// most Window records past its slowest member's acknowledgement, so a
// record Window behind this member's position is one every member holds
// (only the Lamport acks a sender owes can run past its window). It
// returns how many it dropped at the window, not yet known to be stable
// (counted, relay_kept_window: under steady traffic faster than Window
// records per announcement, normal).
func trimKept(s *stream, from uint32, window int) (unstable int) {
	kept := s.Kept[from]
	i := 0
	for i < len(kept) && kept[i].Seq <= s.In[from].Stable {
		i++
	}
	if n := len(kept) - i; n > window {
		unstable = n - window
		i += unstable
	}
	switch {
	case i == len(kept):
		delete(s.Kept, from)
	case i > 0:
		s.Kept[from] = kept[i:] // the next append past its capacity copies only these
	}
	return unstable
}

// keptRecord returns the kept record seq of from's stream.
func (s *stream) keptRecord(from uint32, seq uint64) ([]byte, bool) {
	kept := s.Kept[from]
	if len(kept) == 0 || seq < kept[0].Seq || seq > kept[len(kept)-1].Seq {
		return nil, false
	}
	r := kept[seq-kept[0].Seq]
	return r.Payload, r.Seq == seq
}

// learnStable raises what this member knows every member holds of
// origin's stream, to at most what it holds itself.
func (c *Core) learnStable(origin uint32, stable uint64) {
	in := c.st.Stream.In[origin]
	stable = min(stable, in.Next)
	if stable <= in.Stable {
		return
	}
	in.Stable = stable
	trimKept(c.st.Stream, origin, c.cfg.Window)
	if in.Stable >= in.Next {
		delete(c.relay.asking, origin)
		delete(c.relay.unstable, origin)
	} else if _, asking := c.relay.asking[origin]; !asking {
		// The rest is younger than what just became stable: its sender
		// announces it in its turn.
		c.relay.unstable[origin] = c.now
	}
	c.durable.Change(false)
}

// learnHolding records that member m holds origin's stream up to upto,
// and what that tells about every member.
func (c *Core) learnHolding(origin, m uint32, upto uint64) {
	k := c.relay.known[origin]
	k[m] = max(k[m], upto)
	stable := c.st.Stream.In[origin].Next
	for _, p := range c.peers {
		if p != origin {
			stable = min(stable, k[p])
		}
	}
	c.learnStable(origin, stable)
}

// holding is this member's OrderHolding of origin's stream.
func (c *Core) holding(origin uint32, flags uint8) wire.OrderHolding {
	s := c.st.Stream
	if origin == c.id {
		return wire.OrderHolding{Origin: c.id, Flags: flags, Upto: s.Seq, Stable: s.minSettled()}
	}
	in := s.In[origin]
	return wire.OrderHolding{Origin: origin, Flags: flags, Upto: in.Next, Stable: min(in.Stable, in.Next)}
}

func (c *Core) sendHolding(to, origin uint32, flags uint8) {
	if b, ok := c.bugs.Encode(&c.events, "order_holding", c.holding(origin, flags), nil); ok {
		c.msgs = append(c.msgs, core.Message{To: to, Kind: wire.KindOrderHolding, Payload: b})
	}
}

func (c *Core) stepHolding(m core.Message) error {
	var h wire.OrderHolding
	if err := h.UnmarshalBinary(m.Payload); err != nil {
		return err
	}
	if _, ok := c.pos[h.Origin]; !ok {
		return fmt.Errorf("%w: holding of member %d's stream, not a member", ErrImplausible, h.Origin)
	}
	answer := h.Flags&wire.OrderHoldingAnswer != 0
	if h.Origin == c.id {
		// How far a member holds this member's stream: an
		// acknowledgement, answered with what every member holds.
		if err := c.acked(m.From, h.Upto, m.Lamport); err != nil {
			return err
		}
		if !answer {
			c.relay.answers[[2]uint32{m.From, c.id}] = true
		}
		return nil
	}
	in := c.st.Stream.In[h.Origin]
	if h.Upto > in.Next+uint64(c.cfg.Window) {
		return fmt.Errorf("%w: member %d holds %d records of member %d's stream, more than %d past the %d handed on here",
			ErrImplausible, m.From, h.Upto, h.Origin, c.cfg.Window, in.Next)
	}
	c.learnHolding(h.Origin, m.From, h.Upto)
	c.learnStable(h.Origin, h.Stable)
	if h.Origin == m.From {
		// The origin's own word; it resends what this member lacks.
		// Without a key it is answered: the origin asks how far this
		// member holds its stream (stream.go, "Acknowledgements without
		// a key").
		if c.cfg.Unkeyed && !answer {
			c.relay.answers[[2]uint32{m.From, h.Origin}] = true
		}
		return nil
	}
	if in.Next > h.Upto {
		c.relayTo(m.From, h.Origin, h.Upto)
	}
	if !answer {
		c.relay.answers[[2]uint32{m.From, h.Origin}] = true
	}
	return nil
}

// relayTo passes on to member to the kept records of origin's stream
// after upto, at most maxBurst of them: its answer asks for the next.
func (c *Core) relayTo(to, origin uint32, upto uint64) {
	s := c.st.Stream
	for seq := upto + 1; seq <= s.In[origin].Next && seq <= upto+maxBurst; seq++ {
		b, ok := s.keptRecord(origin, seq)
		if !ok {
			continue // known held everywhere (trimmed): not this member's to give
		}
		var r wire.OrderRecord
		if err := r.UnmarshalBinary(b); err != nil {
			c.bugs.Report(&c.events, "kept_record", err)
			return
		}
		if p, ok := c.bugs.Encode(&c.events, "order_relay", wire.OrderRelay{Origin: origin, Record: r}, nil); ok {
			c.msgs = append(c.msgs, core.Message{To: to, Kind: wire.KindOrderRelay, Payload: p})
			c.count("relayed_records")
		}
	}
}

func (c *Core) stepRelay(m core.Message) error {
	var rl wire.OrderRelay
	if err := rl.UnmarshalBinary(m.Payload); err != nil {
		return err
	}
	switch _, ok := c.pos[rl.Origin]; {
	case !ok:
		return fmt.Errorf("%w: relayed record of %d, not a member", ErrImplausible, rl.Origin)
	case rl.Origin == c.id:
		return fmt.Errorf("%w: member %d relays this member's own record %d", ErrImplausible, m.From, rl.Record.Seq)
	case rl.Origin == m.From:
		return fmt.Errorf("%w: member %d relays its own record %d", ErrImplausible, m.From, rl.Record.Seq)
	}
	if err := c.acceptRecord(rl.Origin, rl.Record, m.From, m.Lamport); err != nil {
		return err
	}
	c.count("relayed_in")
	c.learnHolding(rl.Origin, m.From, rl.Record.Seq)
	c.relay.answers[[2]uint32{m.From, rl.Origin}] = true
	return nil
}

// announceDue is when this member next says how far every member holds
// its stream: 3/4 RelayAfter after the first record not yet announced,
// so that a receiver hears of it before it would start relaying
// (RelayAfter after it kept the record), and at most once per 3/4
// RelayAfter however many records it multicast meanwhile. Zero: nothing
// to say.
func (c *Core) announceDue() time.Time {
	if c.st.Stream.minSettled() <= c.relay.announced {
		return time.Time{}
	}
	return c.relay.pending.Add(c.cfg.RelayAfter * 3 / 4)
}

// relayTick announces this member's stream's stability when due, and
// asks about the streams of which this member has held records not
// known to be everywhere for RelayAfter.
func (c *Core) relayTick(now time.Time) {
	r := &c.relay
	s := c.st.Stream
	if r.pending.IsZero() && s.Seq > r.announced {
		r.pending = now // restored from disk: the others may not know
	}
	if due := c.announceDue(); !due.IsZero() {
		if now.Before(due) {
			c.wake(due)
		} else {
			r.announced = s.minSettled()
			r.pending = time.Time{}
			if r.announced < s.Seq {
				r.pending = now
			}
			for _, p := range c.peers {
				c.sendHolding(p, c.id, 0)
			}
			c.count("stability_announced")
		}
	}
	for _, origin := range c.peers {
		in := s.In[origin]
		if in.Next <= in.Stable {
			delete(r.asking, origin)
			delete(r.unstable, origin)
			continue
		}
		a := r.asking[origin]
		if a == nil {
			if r.unstable[origin].IsZero() {
				r.unstable[origin] = now // restored from disk
			}
			if at := r.unstable[origin].Add(c.cfg.RelayAfter); now.Before(at) {
				c.wake(at)
				continue
			}
			a = &relayAsk{due: now, backoff: c.cfg.Retry}
			r.asking[origin] = a
			c.count("relay_started")
		}
		if !now.Before(a.due) {
			for _, m := range c.members {
				if m != c.id && r.known[origin][m] < in.Next {
					c.sendHolding(m, origin, 0)
					c.count("relay_asks")
				}
			}
			a.due = now.Add(a.backoff)
			a.backoff = min(2*a.backoff, 16*c.cfg.Retry)
		}
		c.wake(a.due)
	}
}

// flushAnswers sends the holdings owed, in a fixed order.
func (c *Core) flushAnswers() {
	if len(c.relay.answers) == 0 {
		return
	}
	keys := make([][2]uint32, 0, len(c.relay.answers))
	for k := range c.relay.answers {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]uint32) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
	for _, k := range keys {
		c.sendHolding(k[0], k[1], wire.OrderHoldingAnswer)
	}
	clear(c.relay.answers)
}
