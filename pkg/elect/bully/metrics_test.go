package bully

import (
	"testing"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

func TestMetrics(t *testing.T) {
	n := newNetwork(t, ids(3), nil)
	n.deliver()
	n.settle(3, 100)
	n.crash(3)
	n.settle(2, 200)
	for _, id := range []uint32{1, 2} {
		b := n.nodes[id]
		var m core.MetricSet
		b.Metrics(&m)
		if err := m.Err(); err != nil {
			t.Fatal(err)
		}
		v := b.Report()
		isLeader := 0.0
		if id == 2 {
			isLeader = 1
		}
		kind := func(k wire.Kind) core.Label { return core.Label{Name: "kind", Value: k.String()} }
		for _, w := range []struct {
			name  string
			label []core.Label
			want  float64
		}{
			{"synclab_elect_leader_id", nil, 2},
			{"synclab_elect_is_leader", nil, isLeader},
			{"synclab_elect_term_round", nil, float64(v.Round)},
			{"synclab_elect_elections_started_total", nil, float64(v.ElectionsStarted)},
			{"synclab_elect_terms_claimed_total", nil, float64(b.Detail().TermsClaimed)},
			{"synclab_elect_leader_timeouts_total", nil, float64(v.LeaderTimeouts)},
			{"synclab_elect_messages_sent_total", []core.Label{kind(wire.KindCoordinator)}, float64(v.Sent["coordinator"])},
			{"synclab_elect_messages_received_total", []core.Label{kind(wire.KindElection)}, float64(v.Received["election"])},
		} {
			if got, ok := m.Value(w.name, w.label...); !ok || got != w.want {
				t.Errorf("node %d: %s%v = %v (present %v), want %v", id, w.name, w.label, got, ok, w.want)
			}
		}
		// The scenario must have moved the counters the test compares.
		if v.ElectionsStarted == 0 || id == 2 && (b.Detail().TermsClaimed == 0 || v.Round == 0) {
			t.Errorf("node %d: no election after the crash: %+v", id, v)
		}
	}
}
