package node

import (
	"errors"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/forge"
	"github.com/synclab/synclab/pkg/wire"
)

// TestRestartTellsMembersAtOnce is issue 29's third item at the node: a
// node that restarts with keys refuses its members' frames of the epochs it
// saved, and on main each member learned of it only from the refusal of its
// first frame after the restart, which was lost (for bully, possibly an
// ELECTION or an ANSWER). Now the restarted node tells each member at its
// first Tick, before any of their frames comes: the member moves to a new
// series, and its very first frame after the restart is accepted.
func TestRestartTellsMembersAtOnce(t *testing.T) {
	var dsk disk
	p := newPair(t, true, func(c *Config) { c.Save = dsk.save })
	for range 3 {
		p.mustAccept("before the restart", p.send())
	}
	p.b, p.rb = newNode(t, 2, func(c *Config) {
		c.Keys, c.Save, c.Epochs, c.Incarnation = []wire.Key{testKey}, dsk.save, dsk.d.Epochs, 2
	})
	p.now = p.now.Add(10 * time.Millisecond)
	p.b.Tick(p.now)
	told := 0
	for _, s := range p.b.Ready().Sends {
		if s.Kind != wire.KindEpochRefused || s.To != members[1] {
			continue
		}
		told++
		if err := p.a.Receive(Inbound{From: members[2], Data: p.b.Finalize(s, p.now), Time: p.now}); err != nil {
			t.Fatalf("node 1 refused node 2's notice: %v", err)
		}
	}
	if told != 1 {
		t.Fatalf("node 2 sent %d notices to node 1 at its first tick, want 1", told)
	}
	p.mustAccept("node 1's first frame after node 2's restart", p.send())
	if n := p.b.Status().Dropped["pre_restart"]; n != 0 {
		t.Errorf("pre_restart %d", n)
	}
	if st := p.b.Status(); st.RestartNotices != 1 {
		t.Errorf("restart_notices %d, want 1", st.RestartNotices)
	}
	// Heard in its new series: no more notices, however long node 2 runs.
	for range 5 {
		p.now = p.now.Add(refusalInterval)
		p.b.Tick(p.now)
		for _, s := range p.b.Ready().Sends {
			if s.Kind == wire.KindEpochRefused {
				t.Fatalf("a notice to a member heard since: %+v", s)
			}
		}
	}
}

// TestRestartNoticesBounded: to a member that stays silent (down, or its
// notices lost), a restarted node sends restartNotices notices,
// refusalInterval apart, and then no more; NextTick wakes it for them.
func TestRestartNoticesBounded(t *testing.T) {
	var dsk disk
	p := newPair(t, true, func(c *Config) { c.Save = dsk.save })
	p.mustAccept("before the restart", p.send())
	b, _ := newNode(t, 2, func(c *Config) {
		c.Keys, c.Save, c.Epochs, c.Incarnation = []wire.Key{testKey}, dsk.save, dsk.d.Epochs, 2
	})
	now, sent := p.now, 0
	for range 50 {
		b.Tick(now)
		for _, s := range b.Ready().Sends {
			if s.Kind == wire.KindEpochRefused {
				sent++
			}
		}
		now = now.Add(50 * time.Millisecond)
	}
	if sent != restartNotices {
		t.Errorf("%d notices in 2.5 s to a silent member, want %d", sent, restartNotices)
	}
	// A node without keys, or without saved epochs, sends none.
	for _, mutate := range []func(*Config){
		func(c *Config) { c.Epochs = dsk.d.Epochs },
		func(c *Config) { c.Keys = []wire.Key{testKey} },
	} {
		n, _ := newNode(t, 2, mutate)
		n.Tick(now)
		if s := n.Ready().Sends; len(s) != 0 {
			t.Errorf("%d sends at the first tick", len(s))
		}
	}
}

// TestUnkeyedRefusalsMoveNothing: without keys nothing is refused as of a
// saved epoch, so a KindEpochRefused can only be forged; on main each one
// naming the node's current epoch moved it to a new series, and every 255
// a new incarnation, written to disk: 2^24 x 255 frames (12 hours of a
// forger's flood) ended the node's incarnations for good. Now they are
// refused and counted (unkeyed_refusal) and the node stays where it is.
func TestUnkeyedRefusalsMoveNothing(t *testing.T) {
	var dsk disk
	a, _ := newNode(t, 1, func(c *Config) { c.Save = dsk.save })
	now := t0
	for i := range 2*wire.MaxSeries + 10 {
		epoch := wire.SeqEpoch(a.seq)
		b, err := forge.Frame(wire.Header{Kind: wire.KindEpochRefused, Cluster: wire.ClusterID("lab"), Sender: 2, Receiver: 1,
			Seq: wire.Seq(1, 0, uint32(i+1)), Lamport: uint64(i + 1)}, wire.EpochRefused{Epoch: epoch}, nil)
		if err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Millisecond)
		if err := a.Receive(Inbound{From: members[2], Data: b, Time: now}); !errors.Is(err, ErrUnkeyedRefusal) && i == 0 {
			t.Errorf("forged refusal %d: %v, want %v", i, err, ErrUnkeyedRefusal)
		}
	}
	st := a.Status()
	if st.Incarnation != 1 || st.Series != 0 || st.NewSeries != 0 || dsk.saves != 0 {
		t.Errorf("after %d forged refusals: incarnation %d, series %d, new series %d, %d saves", 2*wire.MaxSeries+10,
			st.Incarnation, st.Series, st.NewSeries, dsk.saves)
	}
	if n := st.Dropped["unkeyed_refusal"]; n != 2*wire.MaxSeries+10 {
		t.Errorf("unkeyed_refusal %d", n)
	}
}
