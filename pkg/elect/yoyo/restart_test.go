package yoyo_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/yoyo"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

// TestNeverLeadsARestoredRoundAgain: member 1 restarts from round 7-by-3
// (its state file), a round it may have led in its earlier life. Its own
// flood of that round, relayed back by neighbour 2 after a quick restart,
// names it: following it would make it lead round 7-by-3 a second time
// (one fencing token, ELECTD_TERM_RAW, for two leaderships). It starts a
// round of its own above instead. (The same as the ring's
// TestNeverLeadsARestoredTermAgain; TestSimOracle/yoyo seed 1908 saw it.)
func TestNeverLeadsARestoredRoundAgain(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := epoch.Make(7, 3)
	cfg := yoyo.DefaultLANConfig()
	cfg.Topology = []yoyo.Edge{{1, 2}, {1, 3}, {2, 3}}
	c, err := yoyo.New(core.Env{ID: 1, Members: []uint32{1, 2, 3}, Now: t0, State: elect.EncodeWord('Y', old)}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Tick(t0)
	c.Ready()
	b, err := wire.YoYoLeader{Leader: 1, Seq: 4}.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Step(core.Message{From: 2, To: 1, Kind: wire.KindYoYoLeader, Term: old, Time: t0.Add(time.Millisecond), Payload: b}); err != nil {
		t.Fatal(err)
	}
	rd := c.Ready()
	for _, m := range rd.Messages {
		if m.Kind == wire.KindYoYoLeader && m.Term <= old {
			t.Errorf("yoyo_leader of round %s to %d, a round it started from", epoch.Format(m.Term), m.To)
		}
	}
	for _, e := range rd.Events {
		if e.Name == elect.EventLeaderElected {
			t.Errorf("event %v", e)
		}
	}
	if l, r, _ := c.Leader(); l == 1 && r <= old {
		t.Fatalf("leads round %s again", epoch.Format(r))
	}
	if _, r, _ := c.Leader(); r <= old {
		t.Fatalf("still in round %s: no round of its own above it", epoch.Format(r))
	}
}
