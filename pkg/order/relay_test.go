package order

import (
	"errors"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// What a member holding the key can put in the relay's frames, read as
// an attacker would: each absurd value is refused with ErrImplausible and
// counted, nothing is buffered for it, an answer is never answered (no
// ping-pong between two members), and a relayed record is handed on once
// however many copies arrive, the origin's own included.
func TestRelayRefusesAbsurdFrames(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := DefaultLANConfig()
	cfg.Window = 8
	c, err := New(core.Env{ID: 1, Members: []uint32{1, 2, 3, 4}, Now: now, Lamport: &clock.Lamport{}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Ready()
	c.Advance(true)
	frame := func(from uint32, kind wire.Kind, v interface{ AppendBinary([]byte) ([]byte, error) }) core.Message {
		b, err := v.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		return core.Message{From: from, Kind: kind, Payload: b, Time: now}
	}
	relay := func(from, origin uint32, seq uint64, msg string) core.Message {
		return frame(from, wire.KindOrderRelay, wire.OrderRelay{Origin: origin, Record: wire.OrderRecord{Seq: seq, Type: wire.OrderFIFO, Message: []byte(msg)}})
	}
	for _, tc := range []struct {
		name string
		m    core.Message
	}{
		{"relay of this member's own stream", relay(2, 1, 1, "forged")},
		{"relay of the relayer's own stream", relay(2, 2, 1, "own")},
		{"relay of a non-member's stream", relay(2, 9, 1, "stranger")},
		{"relayed record past the window", relay(2, 3, 1+uint64(cfg.Window)+1, "far")},
		{"holding of a non-member's stream", frame(2, wire.KindOrderHolding, wire.OrderHolding{Origin: 9, Upto: 1})},
		{"holding past the origin's window", frame(2, wire.KindOrderHolding, wire.OrderHolding{Origin: 3, Upto: ^uint64(0)})},
		{"holding of this member's stream past its last record", frame(2, wire.KindOrderHolding, wire.OrderHolding{Origin: 1, Upto: 5})},
	} {
		before := c.counters["rejected_implausible"]
		if err := c.Step(tc.m); !errors.Is(err, ErrImplausible) {
			t.Errorf("%s: %v, want ErrImplausible", tc.name, err)
		}
		if c.counters["rejected_implausible"] != before+1 {
			t.Errorf("%s: not counted", tc.name)
		}
	}
	if len(c.st.Stream.Kept) != 0 || len(c.st.Stream.In[3].held) != 0 || len(c.Deliveries()) != 0 {
		t.Fatalf("refused frames left state: kept %v, held %v", c.st.Stream.Kept, c.st.Stream.In[3].held)
	}

	// Member 2 relays member 3's record 1 twice, and 3's own copy comes
	// too: delivered once, kept for the relay, each relayer answered.
	for _, m := range []core.Message{relay(2, 3, 1, "m1"), relay(2, 3, 1, "m1"), frame(3, wire.KindOrderRecord, wire.OrderRecord{Seq: 1, Type: wire.OrderFIFO, Message: []byte("m1")})} {
		if err := c.Step(m); err != nil {
			t.Fatal(err)
		}
	}
	if d := c.Deliveries(); len(d) != 1 || d[0].Sender != 3 || string(d[0].Message) != "m1" {
		t.Fatalf("delivered %+v, want member 3's m1 once", d)
	}
	if k := c.st.Stream.Kept[3]; len(k) != 1 || k[0].Seq != 1 {
		t.Fatalf("kept %+v, want member 3's record 1", k)
	}
	rd := c.Ready()
	answers := 0
	for _, m := range rd.Messages {
		if m.Kind == wire.KindOrderHolding {
			var h wire.OrderHolding
			if err := h.UnmarshalBinary(m.Payload); err != nil || m.To != 2 || h.Origin != 3 || h.Upto != 1 || h.Flags != wire.OrderHoldingAnswer {
				t.Fatalf("answer %+v to %d (%v), want 3's stream held up to 1, to the relayer 2", h, m.To, err)
			}
			answers++
		}
	}
	if answers != 1 {
		t.Fatalf("%d answers to the relayer, want one", answers)
	}
	c.Advance(true)

	// An answer is not answered; a question is, once.
	if err := c.Step(frame(2, wire.KindOrderHolding, wire.OrderHolding{Origin: 3, Flags: wire.OrderHoldingAnswer, Upto: 1})); err != nil {
		t.Fatal(err)
	}
	if n := countKind(c.Ready().Messages, wire.KindOrderHolding); n != 0 {
		t.Fatalf("an answer drew %d holdings", n)
	}
	c.Advance(true)
	if err := c.Step(frame(2, wire.KindOrderHolding, wire.OrderHolding{Origin: 3, Upto: 1})); err != nil {
		t.Fatal(err)
	}
	if n := countKind(c.Ready().Messages, wire.KindOrderHolding); n != 1 {
		t.Fatalf("a question drew %d holdings, want one answer", n)
	}
	c.Advance(true)

	// Member 4 says it holds 3's record 1, as do 2 and this member: every
	// member does, so it is no longer kept.
	if c.st.Stream.In[3].Stable != 0 || len(c.st.Stream.Kept[3]) != 1 {
		t.Fatalf("stable %d, kept %v before member 4 answered", c.st.Stream.In[3].Stable, c.st.Stream.Kept)
	}
	if err := c.Step(frame(4, wire.KindOrderHolding, wire.OrderHolding{Origin: 3, Flags: wire.OrderHoldingAnswer, Upto: 1})); err != nil {
		t.Fatal(err)
	}
	if c.st.Stream.In[3].Stable != 1 || len(c.st.Stream.Kept) != 0 {
		t.Fatalf("stable %d, kept %v: want record 1 known everywhere and dropped", c.st.Stream.In[3].Stable, c.st.Stream.Kept)
	}
}

func countKind(ms []core.Message, k wire.Kind) int {
	n := 0
	for _, m := range ms {
		if m.Kind == k {
			n++
		}
	}
	return n
}
