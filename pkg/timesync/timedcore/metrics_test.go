package timedcore

import (
	"testing"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/timesync/berkeley"
)

// metricFake is a part that exports one gauge.
type metricFake struct {
	fake
	metric string
}

func (f *metricFake) Metrics(m *core.MetricSet) { m.Gauge(f.metric, "A part's gauge.", 1) }

func TestMetricsGatherEveryPart(t *testing.T) {
	live, err := liveness.New(core.Env{ID: 1, Members: []uint32{1, 2}}, liveness.Config{})
	if err != nil {
		t.Fatal(err)
	}
	bk, err := berkeley.New(core.Env{ID: 1, Members: []uint32{1, 2}}, berkeley.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		cfg    Config
		want   []string
		absent []string
	}{
		{"every part", Config{Cluster: live, Server: newServer(t), Client: &metricFake{metric: "synclab_ntp_x"}},
			[]string{"synclab_liveness_members_alive", "synclab_ntp_server_requests_total", "synclab_ntp_x"}, nil},
		{"berkeley and server", Config{Cluster: bk, Server: newServer(t)},
			[]string{"synclab_berkeley_role", "synclab_elect_is_leader", "synclab_ntp_server_requests_total"}, []string{"synclab_liveness_members_alive"}},
		{"cluster only", Config{Cluster: live},
			[]string{"synclab_liveness_members_alive"}, []string{"synclab_ntp_server_requests_total"}},
		{"parts without metrics", Config{Cluster: &fake{}, Client: &fake{}}, nil,
			[]string{"synclab_liveness_members_alive"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var m core.MetricSet
			c.Metrics(&m)
			if err := m.Err(); err != nil {
				t.Fatal(err)
			}
			names := map[string]bool{}
			for _, f := range m.Families() {
				names[f.Name] = true
			}
			for _, n := range tc.want {
				if !names[n] {
					t.Errorf("no %s in %v", n, names)
				}
			}
			for _, n := range tc.absent {
				if names[n] {
					t.Errorf("%s present", n)
				}
			}
		})
	}
}
