package node

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/forge"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// trio is three nodes that broadcast heartbeats to each other, and a
// forger that sends frames in any member's name from its address.
type trio struct {
	t     *testing.T
	n     [4]*Node
	r     [4]*recorder
	now   time.Time
	seq   map[uint32]uint64 // the next sequence number to forge per member
	dsk   [4]*disk
	other map[uint32]error // last error of a real frame per receiver, from sender*10+receiver
}

func newTrio(t *testing.T) *trio {
	tr := &trio{t: t, now: t0, seq: map[uint32]uint64{}, other: map[uint32]error{}}
	for id := uint32(1); id <= 3; id++ {
		tr.boot(id, nil)
	}
	return tr
}

// boot starts (or restarts, on what it saved) node id.
func (tr *trio) boot(id uint32, mutate func(*Config)) {
	if tr.dsk[id] == nil {
		tr.dsk[id] = &disk{}
	}
	d := tr.dsk[id]
	tr.n[id], tr.r[id] = newNode(tr.t, id, func(c *Config) {
		c.Save = d.save
		c.Incarnation = d.d.Incarnation + 1
		c.Stamps = d.d.Stamps
		if mutate != nil {
			mutate(c)
		}
	})
}

// beat makes every node broadcast a heartbeat (each after the other has
// heard the last) and advances time by step. It returns the real frames
// refused, by "sender->receiver".
func (tr *trio) beat(step time.Duration) map[string]error {
	refused := map[string]error{}
	for from := uint32(1); from <= 3; from++ {
		a := tr.n[from]
		tr.r[from].rd.Messages = []core.Message{{To: core.Broadcast, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
		for _, s := range a.Ready().Sends {
			for to := uint32(1); to <= 3; to++ {
				if s.To != members[to] {
					continue
				}
				if err := tr.n[to].Receive(Inbound{From: members[from], Data: a.Finalize(s, tr.now), Time: tr.now}); err != nil {
					refused[fmt.Sprintf("%d->%d", from, to)] = err
				}
			}
		}
	}
	for id := 1; id <= 3; id++ {
		tr.n[id].Tick(tr.now)
	}
	tr.now = tr.now.Add(step)
	return refused
}

// forge sends node to a heartbeat "from" member from stamped lamport,
// with a sequence number just above from's real ones.
func (tr *trio) forge(from, to uint32, lamport uint64) error {
	tr.t.Helper()
	s := tr.seq[from]
	if real := tr.n[from].seq; s <= real {
		s = real + 64
	}
	tr.seq[from] = s + 1
	b, err := forge.Raw(wire.Header{Kind: wire.KindHeartbeat, Cluster: wire.ClusterID("lab"), Sender: from, Receiver: to,
		Seq: s, Lamport: lamport}, make([]byte, 8), nil)
	if err != nil {
		tr.t.Fatal(err)
	}
	return tr.n[to].Receive(Inbound{From: members[from], Data: b, Time: tr.now})
}

// TestTwoForgedFramesCutNobodyOff is issue 29's first attack at the node:
// two frames "from 1" to node 2, each 2^40-1 ahead of node 2's clock. On
// main both were merged (the bound was 2^40 ahead of the clock, however
// often), node 2's clock jumped by 2^41, and nodes 1 and 3 refused every
// later frame of node 2 as lamport_ahead, for as long as node 2 ran. Now
// both are refused: no member can have gone that far since node 1 was
// last heard, 100 ms earlier.
func TestTwoForgedFramesCutNobodyOff(t *testing.T) {
	tr := newTrio(t)
	for range 10 {
		if r := tr.beat(100 * time.Millisecond); len(r) > 0 {
			t.Fatalf("the cluster refuses its own frames: %v", r)
		}
	}
	clk := tr.n[2].Status().Lamport
	for range 2 {
		err := tr.forge(1, 2, tr.n[2].Status().Lamport+1<<40-1)
		if !errors.Is(err, ErrLamportAhead) {
			t.Errorf("a forged frame 2^40-1 ahead: %v, want ErrLamportAhead", err)
		}
	}
	if got := tr.n[2].Status().Lamport; got != clk {
		t.Errorf("node 2's clock %d -> %d", clk, got)
	}
	for i := range 50 {
		if r := tr.beat(100 * time.Millisecond); len(r) > 0 {
			t.Fatalf("beat %d after the attack: real frames refused: %v", i, r)
		}
	}
	if st := tr.n[2].Status(); st.Dropped["lamport_ahead"] != 2 {
		t.Errorf("node 2 counted %v, want 2 lamport_ahead", st.Dropped)
	}
}

// TestForgerAtTheBoundIsFollowed: a forger that pushes node 2's clock as
// fast as the bound allows, "from 1" every 10 ms for a minute, moves it by
// LamportBurst + LamportRate a second and no more; nodes 1 and 3, which
// judge node 2's stamps by the same rule, never refuse it (they follow);
// and node 1's real frames, refused at node 2 while the forger spends
// node 1's whole allowance, are taken again at once when it stops.
func TestForgerAtTheBoundIsFollowed(t *testing.T) {
	tr := newTrio(t)
	for range 10 {
		tr.beat(100 * time.Millisecond)
	}
	start, startAt := tr.n[2].Status().Lamport, tr.now
	lead, _, _, _ := tr.n[2].ceiling(tr.now)
	lead -= start
	forged, refusedReal := 0, 0
	for range 600 { // a minute of heartbeats
		for range 10 {
			if c, _, _, _ := tr.n[2].ceiling(tr.now); tr.forge(1, 2, c) == nil {
				forged++
			}
			// Node 2's clock is now one above: one more is beyond.
			if tr.forge(1, 2, tr.n[2].Status().Lamport+1) == nil {
				t.Fatal("a stamp above the ceiling was taken")
			}
			tr.now = tr.now.Add(10 * time.Millisecond)
		}
		r := tr.beat(0)
		for k, err := range r {
			if k != "1->2" || !errors.Is(err, ErrLamportAhead) {
				t.Fatalf("real frame %s refused: %v", k, err)
			}
			refusedReal++
		}
	}
	moved := tr.n[2].Status().Lamport - start
	// The ceiling's lead (the burst and the rate since node 1 was last
	// heard), the rate since, and the cluster's own events.
	if limit := lead + rateOver(tr.now.Sub(startAt)) + 10_000; moved > limit {
		t.Errorf("node 2's clock moved %d in %v, the bound allows %d", moved, tr.now.Sub(startAt), limit)
	}
	if moved < uint64(LamportBurst) {
		t.Errorf("node 2's clock moved only %d: the forger was not at the bound", moved)
	}
	t.Logf("forged frames taken %d, node 2's clock moved %d in %v; node 1's real frames refused at node 2 while the forger ran: %d of 600",
		forged, moved, tr.now.Sub(startAt), refusedReal)
	// The forger stops: every real frame is taken again.
	for i := range 20 {
		if r := tr.beat(100 * time.Millisecond); len(r) > 0 {
			t.Fatalf("beat %d after the forger stopped: %v", i, r)
		}
	}
}

// TestStampsAcrossRestart: a node resumes its clock above every stamp it
// sent before, judges a member that went on for a while it was down from
// that member's last stamp and when it was heard, and refuses a stamp no
// member can have reached since; a member restarted on its state is not
// refused by the others.
func TestStampsAcrossRestart(t *testing.T) {
	tr := newTrio(t)
	for range 20 {
		tr.beat(100 * time.Millisecond)
	}
	// Node 2 runs 90 s more (saves at least once a minute), then stops.
	for range 900 {
		tr.beat(100 * time.Millisecond)
	}
	sent := tr.n[2].Status().Lamport
	saved := tr.dsk[2].d.Stamps
	if saved.Floor <= sent || saved.At.IsZero() || len(saved.Peers) != 2 {
		t.Fatalf("node 2 saved %+v, its clock at %d", saved, sent)
	}
	// Nodes 1 and 3 go on for ten minutes, busily: 10^8 events.
	down := 10 * time.Minute
	tr.n[1].lamport.Advance(100_000_000)
	tr.now = tr.now.Add(down)
	tr.boot(2, nil)
	if got := tr.n[2].Status().Lamport; got < saved.Floor {
		t.Fatalf("restarted clock %d below the saved floor %d", got, saved.Floor)
	}
	if err := tr.forge(3, 2, tr.n[1].Status().Lamport+LamportBurst+rateOver(down+stampSaveEvery)); !errors.Is(err, ErrLamportAhead) {
		t.Errorf("a stamp beyond what node 3 can have reached while node 2 was down: %v", err)
	}
	for i := range 20 {
		if r := tr.beat(100 * time.Millisecond); len(r) > 0 {
			t.Fatalf("beat %d after node 2 restarted: %v", i, r)
		}
	}
	// A member restarted twice in a row on its state is still heard.
	for range 2 {
		tr.boot(3, nil)
		if r := tr.beat(100 * time.Millisecond); len(r) > 0 {
			t.Fatalf("after node 3's restart: %v", r)
		}
	}
}

// TestFirstStartTakesTheFirstFrame: a node started with nothing saved has
// no reference: it takes the first frame's stamp, however large (the
// cluster may have run for years), and judges every member from it.
func TestFirstStartTakesTheFirstFrame(t *testing.T) {
	tr := newTrio(t)
	tr.n[1].lamport.Set(1 << 50)
	tr.n[3].lamport.Set(1<<50 + 1000)
	if r := tr.beat(100 * time.Millisecond); len(r) > 0 {
		t.Fatalf("first contact refused: %v", r)
	}
	if err := tr.forge(3, 2, tr.n[2].Status().Lamport+1<<40); !errors.Is(err, ErrLamportAhead) {
		t.Errorf("after the first frame: %v", err)
	}
}

// TestVectorEntriesBounded: a vector entry beyond what any member's clock
// can have reached is refused (bad_vector), this node's own entry too.
func TestVectorEntriesBounded(t *testing.T) {
	tr := newTrio(t)
	for id := 1; id <= 3; id++ {
		tr.n[id].SetVectors(true)
	}
	for range 5 {
		if r := tr.beat(100 * time.Millisecond); len(r) > 0 {
			t.Fatal(r)
		}
	}
	ceiling, _, _, _ := tr.n[2].ceiling(tr.now)
	for _, tc := range []struct {
		id   uint32
		v    uint64
		want error
	}{
		{3, ceiling + 1, ErrBadVector},
		{2, ceiling + 1, ErrBadVector},
		{3, ceiling, nil},
	} {
		vec := tr.n[2].Vector()
		vec.Set(tc.id, tc.v)
		enc, _ := vec.AppendBinary(nil)
		s := tr.seq[1]
		if real := tr.n[1].seq; s <= real {
			s = real + 64
		}
		tr.seq[1] = s + 1
		b, err := (&wire.Frame{Header: wire.Header{Kind: wire.KindHeartbeat, Cluster: wire.ClusterID("lab"), Sender: 1, Receiver: 2,
			Seq: s, Lamport: 1}, Payload: make([]byte, 8), Vector: enc}).AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		err = tr.n[2].Receive(Inbound{From: members[1], Data: b, Time: tr.now})
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("entry %d = %d: %v, want %v", tc.id, tc.v, err, tc.want)
		}
	}
}
