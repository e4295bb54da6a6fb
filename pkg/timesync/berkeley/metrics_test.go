package berkeley_test

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/timesync/berkeley"
)

// TestMetrics runs three members for a few rounds and checks that every
// member's metrics are valid and say what its status says: the master its
// last round, per worker; a worker its last correction.
func TestMetrics(t *testing.T) {
	s := sim.New(sim.Config{Seed: 7, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond}})
	g := newGroup(t, s, 3, nil, rand.New(rand.NewPCG(7, 4)))
	g.worst(10 * time.Second)
	masters := 0
	for _, id := range g.ids {
		c := s.Core(id).(*berkeley.Core)
		var m core.MetricSet
		c.Metrics(&m)
		if err := m.Err(); err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
		st := c.Report()
		value := func(name string, labels ...core.Label) float64 {
			t.Helper()
			v, ok := m.Value(name, labels...)
			if !ok {
				t.Fatalf("node %d (%s): no %s%v", id, st.Role, name, labels)
			}
			return v
		}
		if value("synclab_berkeley_role", core.Label{Name: "role", Value: st.Role}) != 1 {
			t.Errorf("node %d: role %s not set", id, st.Role)
		}
		if got := value("synclab_berkeley_master_id"); got != float64(st.Master) || st.Master != 3 {
			t.Errorf("node %d: master %v, status %d, want 3", id, got, st.Master)
		}
		if got := value("synclab_berkeley_term_round"); got != float64(bully.TermRound(st.Term)) {
			t.Errorf("node %d: term round %v, term %#x", id, got, st.Term)
		}
		if value("synclab_berkeley_error_bound_seconds") <= 0 || value("synclab_berkeley_synchronized") != 1 {
			t.Errorf("node %d: no error bound after 10 s of rounds", id)
		}
		value("synclab_berkeley_frequency_ppm")
		value("synclab_elect_is_leader")
		if st.Role != "master" {
			if _, ok := m.Value("synclab_berkeley_round"); ok {
				t.Errorf("worker %d exports a round", id)
			}
			if got := value("synclab_berkeley_last_correction_seconds"); got != float64(st.LastAdjust.CorrectionNS)/1e9 {
				t.Errorf("worker %d: last correction %v, status %+v", id, got, st.LastAdjust)
			}
			continue
		}
		masters++
		r := st.LastRound
		if value("synclab_berkeley_round") != float64(r.Round) || value("synclab_berkeley_round_clocks") != 3 {
			t.Errorf("master: round metrics disagree with %+v", r)
		}
		if got := value("synclab_berkeley_events_total", core.Label{Name: "event", Value: "rounds"}); got != float64(st.Counters["rounds"]) || got < 5 {
			t.Errorf("master: %v rounds counted, status %d", got, st.Counters["rounds"])
		}
		for _, w := range r.Members {
			lbl := core.Label{Name: "member", Value: strconv.FormatUint(uint64(w.ID), 10)}
			if value("synclab_berkeley_member_rtt_seconds", lbl) != float64(w.RTTNS)/1e9 ||
				value("synclab_berkeley_member_correction_seconds", lbl) != float64(w.CorrectionNS)/1e9 ||
				value("synclab_berkeley_member_excluded", lbl) != 0 {
				t.Errorf("master: member %d metrics disagree with %+v", w.ID, w)
			}
		}
	}
	if masters != 1 {
		t.Errorf("%d masters", masters)
	}
}
