package ring_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/internal/electtest"
	"github.com/synclab/synclab/pkg/elect/ring"
	"github.com/synclab/synclab/pkg/wire"
)

// TestStatusAndMetrics: after a failover the status names the algorithm,
// the leader, the ring and its live neighbours (the dead leader skipped),
// the last election with the messages this member sent for it, and marshals
// to JSON; the metrics carry the same figures.
func TestStatusAndMetrics(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1})
	c := electtest.New(t, s, ring.FredricksonLynchAlgorithm, []uint32{1, 2, 3, 4, 5}, elect.Options{})
	c.Converge(3 * time.Second)
	s.Crash(5)
	c.Converge(3 * time.Second)
	r4 := s.Core(4).(*ring.Core)
	v := r4.Report()
	d := r4.Detail()
	if v.Algorithm != "fredrickson-lynch" || v.Role != elect.RoleLeader || v.Leader != 4 || v.Phase != "leading" {
		t.Errorf("status %+v", v)
	}
	if d.Successor != 1 || d.Predecessor != 3 || len(d.Skipped) != 1 || d.Skipped[0] != 5 {
		t.Errorf("4's neighbours %d and %d, skipped %v: want 1, 3 and [5]", d.Successor, d.Predecessor, d.Skipped)
	}
	// 4 started the failover's election: it sent the list and the
	// announcement, one hop each.
	if e := v.LastElection; e == nil || e.Leader != 4 || e.Sent != 2 || e.Decided.IsZero() {
		t.Errorf("last election %+v", e)
	}
	b, err := json.Marshal(v)
	if err != nil || !strings.Contains(string(b), `"variant":"fredrickson-lynch"`) || !strings.Contains(string(b), `"role":"leader"`) {
		t.Errorf("json %s (%v)", b, err)
	}
	var m core.MetricSet
	r4.Metrics(&m)
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	kind := core.Label{Name: "kind", Value: wire.KindRingCoordinator.String()}
	for _, w := range []struct {
		name  string
		label []core.Label
		want  float64
	}{
		{"synclab_elect_leader_id", nil, 4},
		{"synclab_elect_is_leader", nil, 1},
		{"synclab_elect_terms_claimed_total", nil, float64(d.Decided)},
		{"synclab_elect_messages_sent_total", []core.Label{kind}, float64(v.Sent["ring_coordinator"])},
	} {
		if got, ok := m.Value(w.name, w.label...); !ok || got != w.want {
			t.Errorf("%s%v = %v (present %v), want %v", w.name, w.label, got, ok, w.want)
		}
	}
	if d.Decided == 0 || v.Sent["ring_coordinator"] == 0 {
		t.Errorf("no election counted: %+v", d)
	}
}

// TestFranklinPhase: while Franklin runs, a member's phase names its round
// and whether it is active or relaying.
func TestFranklinPhase(t *testing.T) {
	cfg := ring.DefaultLANConfig()
	cfg.Variant = ring.Franklin
	c, err := ring.New(core.Env{ID: 2, Members: []uint32{1, 2, 3}, Now: t0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Tick(t0)
	c.Tick(t0.Add(time.Second)) // the startup window passes: it runs
	if p := c.Report().Phase; p != "round 1 (active)" {
		t.Fatalf("phase %q", p)
	}
	// 3 beats it from the left: 2 relays from now on.
	m := core.Message{From: 1, Kind: wire.KindRingElection, Time: t0.Add(time.Second),
		Payload: payload(t, wire.RingElection{Seq: 1, Origin: 3, Candidate: 3, Round: 1})}
	if err := c.Step(m); err != nil {
		t.Fatal(err)
	}
	m.From, m.Payload = 3, payload(t, wire.RingElection{Seq: 1, Origin: 1, Candidate: 1, Round: 1, Flags: wire.RingCounterclockwise})
	if err := c.Step(m); err != nil {
		t.Fatal(err)
	}
	if p := c.Report().Phase; p != "round 1 (passive: relaying)" {
		t.Fatalf("phase %q", p)
	}
}
