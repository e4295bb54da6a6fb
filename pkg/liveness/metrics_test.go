package liveness

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
)

func TestMetrics(t *testing.T) {
	c := newCore(t, 1, []uint32{1, 2, 3}, Config{Heartbeat: 20 * time.Millisecond, SuspectAfter: 50 * time.Millisecond})
	// Member 2 is heard, then suspected, then heard again (one flap);
	// member 3 never.
	now := t0
	if err := c.Step(heartbeat(t, 2, 2, now)); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		c.Tick(now)
		now = now.Add(10 * time.Millisecond)
	}
	if err := c.Step(heartbeat(t, 2, 2, now)); err != nil {
		t.Fatal(err)
	}
	var m core.MetricSet
	c.Metrics(&m)
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	member := func(id string) core.Label { return core.Label{Name: "member", Value: id} }
	for _, w := range []struct {
		name  string
		label []core.Label
		want  float64
	}{
		{"synclab_liveness_members_alive", nil, 2},
		{"synclab_liveness_members", nil, 3},
		{"synclab_liveness_heartbeats_sent_total", nil, 3},
		{"synclab_liveness_member_alive", []core.Label{member("2")}, 1},
		{"synclab_liveness_member_alive", []core.Label{member("3")}, 0},
		{"synclab_liveness_heartbeats_received_total", []core.Label{member("2")}, 2},
		{"synclab_liveness_flaps_total", []core.Label{member("2")}, 1},
		{"synclab_liveness_flaps_total", []core.Label{member("3")}, 0},
		{"synclab_liveness_probes_sent_total", nil, 0},
		{"synclab_liveness_probes_answered_total", nil, 0},
	} {
		if got, ok := m.Value(w.name, w.label...); !ok || got != w.want {
			t.Errorf("%s%v = %v (present %v), want %v", w.name, w.label, got, ok, w.want)
		}
	}
}

// The probes' counters: a QuietLANConfig member that probed a silent
// member and answered another's probe.
func TestMetricsProbes(t *testing.T) {
	c := newCore(t, 1, []uint32{1, 2, 3}, QuietLANConfig())
	if err := c.Step(heartbeat(t, 2, 2, t0)); err != nil {
		t.Fatal(err)
	}
	m := probeMsg(t, 3, t0.Add(time.Millisecond))
	if err := c.Step(m); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{0, 311 * time.Millisecond, 321 * time.Millisecond} {
		c.Tick(t0.Add(at))
	}
	var ms core.MetricSet
	c.Metrics(&ms)
	for name, want := range map[string]float64{"synclab_liveness_probes_sent_total": 4, "synclab_liveness_probes_answered_total": 1} {
		if got, ok := ms.Value(name); !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
}
