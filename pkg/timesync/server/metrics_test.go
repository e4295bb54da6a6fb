package server

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

func TestMetrics(t *testing.T) {
	s := newServer(t, Config{LocalStratum: 8, RateLimit: RateLimit{Interval: time.Second, Burst: 2, KissInterval: time.Minute}})
	now := t0
	// Two answered, one kissed, two silenced; then a runt.
	for range 5 {
		s.StepDatagram(core.Datagram{Addr: clientAddr, Data: request(4, wire.ModeClient), Time: now})
		now = now.Add(time.Millisecond)
	}
	s.StepDatagram(core.Datagram{Addr: clientAddr, Data: []byte{0x23}, Time: now})
	s.Ready()
	var m core.MetricSet
	s.Metrics(&m)
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	reason := func(r string) []core.Label { return []core.Label{{Name: "reason", Value: r}} }
	for _, w := range []struct {
		name  string
		label []core.Label
		want  float64
	}{
		{"synclab_ntp_server_requests_total", nil, 5},
		{"synclab_ntp_server_replies_total", nil, 2},
		{"synclab_ntp_server_kod_total", []core.Label{{Name: "code", Value: "RATE"}}, 1},
		{"synclab_ntp_server_dropped_total", reason("rate_limited"), 2},
		{"synclab_ntp_server_dropped_total", reason("short"), 1},
		{"synclab_ntp_server_rate_limit_clients", nil, 1},
		{"synclab_ntp_server_stratum", nil, 8},
		{"synclab_ntp_server_synchronized", nil, 1},
	} {
		if got, ok := m.Value(w.name, w.label...); !ok || got != w.want {
			t.Errorf("%s%v = %v (present %v), want %v", w.name, w.label, got, ok, w.want)
		}
	}
}
