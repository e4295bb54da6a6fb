package node

import (
	"errors"
	"testing"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

func decodeSends(t *testing.T, sends []Send) []wire.Frame {
	t.Helper()
	fs := make([]wire.Frame, len(sends))
	for i, s := range sends {
		if err := fs[i].UnmarshalBinary(s.Data); err != nil {
			t.Fatal(err)
		}
	}
	return fs
}

// TestOneStampPerSend: a broadcast over unicast fan-out is one logical
// send: its frames carry one Lamport time, as its multicast frame would;
// a core's own stamp (taken from the node's clock) is used as is, one
// ahead of the clock is replaced and counted; a Local report carries the
// stamp.
func TestOneStampPerSend(t *testing.T) {
	lamport := new(clock.Lamport)
	a, ra := newNode(t, 1, func(c *Config) { c.Lamport = lamport })
	ra.rd.Messages = []core.Message{
		{To: core.Broadcast, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)},
		{To: core.Broadcast, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)},
	}
	fs := decodeSends(t, a.Ready().Sends)
	if len(fs) != 4 || fs[0].Lamport != 1 || fs[1].Lamport != 1 || fs[2].Lamport != 2 || fs[3].Lamport != 2 {
		t.Fatalf("stamps of two broadcasts to two members: %d %d %d %d, want 1 1 2 2", fs[0].Lamport, fs[1].Lamport, fs[2].Lamport, fs[3].Lamport)
	}

	own := lamport.Send() // the core's own stamp, from the clock it was given (core.Env.Lamport)
	ra.rd.Messages = []core.Message{
		{To: core.Broadcast, Kind: wire.KindHeartbeat, Payload: make([]byte, 8), Lamport: own, Report: true},
		{To: 2, Kind: wire.KindHeartbeat, Payload: make([]byte, 8), Lamport: own + 100},
	}
	sends := a.Ready().Sends
	fs = decodeSends(t, sends)
	if fs[0].Lamport != own || fs[1].Lamport != own {
		t.Errorf("the core's own stamp %d: frames carry %d and %d", own, fs[0].Lamport, fs[1].Lamport)
	}
	if fs[2].Lamport != own+1 || a.Status().OwnStampsAhead != 1 {
		t.Errorf("a stamp ahead of the clock: sent %d (want a fresh %d), counted %d", fs[2].Lamport, own+1, a.Status().OwnStampsAhead)
	}
	if err := a.FrameSent(sends[0], t0, t0); err != nil {
		t.Fatal(err)
	}
	if got := ra.steps[len(ra.steps)-1]; !got.Local || got.Lamport != own {
		t.Errorf("the report of the core's send: %+v, want Local with Lamport %d", got, own)
	}
}

// TestVectors: vectors are carried only when on; switched on while
// running, the frames carry the node's vector clock and the receiver's core
// sees it, merged into its own; a core can read its own send's vector from
// the report; absurd vectors are refused and counted.
func TestVectors(t *testing.T) {
	a, ra := newNode(t, 1, nil)
	b, rb := newNode(t, 2, nil)
	ra.rd.Messages = []core.Message{{To: 2, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
	if errs := deliver(t, a, b, t0); errs[0] != nil || rb.steps[0].Vector.Len() != 0 {
		t.Fatalf("vectors off: %v, vector %v", errs, rb.steps[0].Vector)
	}

	a.SetVectors(true)
	b.SetVectors(true)
	ra.rd.Messages = []core.Message{{To: 2, Kind: wire.KindHeartbeat, Payload: make([]byte, 8), Report: true}}
	sends := a.Ready().Sends
	if err := a.FrameSent(sends[0], t0, t0); err != nil {
		t.Fatal(err)
	}
	sent := ra.steps[len(ra.steps)-1].Vector
	if sent.String() != "{1:1}" {
		t.Errorf("own send's vector %v, want {1:1}", sent)
	}
	if err := b.Receive(Inbound{From: members[1], Data: a.Finalize(sends[0], t0), Time: t0}); err != nil {
		t.Fatal(err)
	}
	got := rb.steps[len(rb.steps)-1].Vector
	if clock.Compare(got, sent) != clock.Equal {
		t.Errorf("receiver's core got %v, want the sender's %v", got, sent)
	}
	if v := b.Vector().String(); v != "{1:1 2:1}" {
		t.Errorf("receiver's clock %v, want {1:1 2:1}", v)
	}

	// Switched off: frames are the old ones again.
	a.SetVectors(false)
	ra.rd.Messages = []core.Message{{To: 2, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
	if fs := decodeSends(t, a.Ready().Sends); fs[0].Vector != nil || fs[0].Flags&wire.FlagVector != 0 {
		t.Errorf("vectors off, yet the frame carries %v", fs[0].Vector)
	}

	// A vector naming a non-member, or too far ahead, is refused.
	for name, v := range map[string]clock.Vector{
		"non-member": clock.VectorOf(map[uint32]uint64{1: 5, 9: 1}),
		"far ahead":  clock.VectorOf(map[uint32]uint64{1: 2*LamportBurst + 10}),
	} {
		c, rc := newNode(t, 1, nil)
		c.SetVectors(true)
		rc.rd.Messages = []core.Message{{To: 2, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
		s := c.Ready().Sends[0]
		var f wire.Frame
		if err := f.UnmarshalBinary(s.Data); err != nil {
			t.Fatal(err)
		}
		f.Vector, _ = v.AppendBinary(nil)
		f.Seq = wire.Seq(1, 0, 100)
		data, err := f.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Receive(Inbound{From: members[1], Data: data, Time: t0}); !errors.Is(err, ErrBadVector) {
			t.Errorf("%s: %v, want ErrBadVector", name, err)
		}
	}
	if n := b.Status().Dropped["bad_vector"]; n != 2 {
		t.Errorf("bad_vector counted %d, want 2", n)
	}
}

type vectorCore struct{ recorder }

func (vectorCore) UsesVectors() bool { return true }

func TestVectorUserKeepsVectorsOn(t *testing.T) {
	n, err := New(Config{ID: 1, Members: members, Cluster: "lab", Incarnation: 1}, &vectorCore{})
	if err != nil {
		t.Fatal(err)
	}
	n.SetVectors(false)
	if !n.Vectors() {
		t.Fatal("a core that uses vectors lost them")
	}
}
