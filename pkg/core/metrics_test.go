package core_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/synclab/synclab/pkg/core"
)

func TestMetricSetGroupsByName(t *testing.T) {
	var m core.MetricSet
	lbl := []core.Label{{Name: "source", Value: "a"}}
	m.Gauge("synclab_x_offset_seconds", "Offset.", 1, lbl...)
	m.Counter("synclab_x_packets_total", "Packets.", 3, lbl...)
	// Reusing the caller's slice must not change the first sample.
	lbl[0].Value = "b"
	m.Gauge("synclab_x_offset_seconds", "Offset.", 2, lbl...)
	m.Counter("synclab_x_packets_total", "Packets.", 4, lbl...)
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	fams := m.Families()
	if len(fams) != 2 || fams[0].Name != "synclab_x_offset_seconds" || fams[1].Kind != core.MetricCounter {
		t.Fatalf("families %+v", fams)
	}
	got := fmt.Sprint(fams[0].Samples)
	if want := "[{[{source a}] 1} {[{source b}] 2}]"; got != want {
		t.Errorf("samples %s, want %s", got, want)
	}
}

func TestMetricSetRefusesBadSamples(t *testing.T) {
	cases := []struct {
		add  func(m *core.MetricSet)
		want string
	}{
		{func(m *core.MetricSet) { m.Gauge("Synclab_Bad", "h", 1) }, "lower_snake_case"},
		{func(m *core.MetricSet) { m.Gauge("9lives", "h", 1) }, "lower_snake_case"},
		{func(m *core.MetricSet) { m.Gauge("synclab_x", "", 1) }, "help"},
		{func(m *core.MetricSet) { m.Gauge("synclab_x", "two\nlines", 1) }, "help"},
		{func(m *core.MetricSet) { m.Counter("synclab_x", "h", 1) }, "ends in _total"},
		{func(m *core.MetricSet) { m.Gauge("synclab_x_total", "h", 1) }, "only counters"},
		{func(m *core.MetricSet) { m.Gauge("synclab_x", "h", 1, core.Label{Name: "daemon", Value: "d"}) }, "the driver's"},
		{func(m *core.MetricSet) { m.Gauge("synclab_x", "h", 1, core.Label{Name: "__x", Value: "d"}) }, "label name"},
		{func(m *core.MetricSet) {
			m.Gauge("synclab_x", "h", 1, core.Label{Name: "a", Value: "1"}, core.Label{Name: "a", Value: "2"})
		}, "given twice"},
		{func(m *core.MetricSet) { m.Gauge("synclab_x", "h", 1); m.Gauge("synclab_x", "h", 2) }, "sample given twice"},
		{func(m *core.MetricSet) {
			m.Gauge("synclab_x", "h", 1)
			m.Gauge("synclab_x", "other", 2, core.Label{Name: "a"})
		}, "one name, one meaning"},
		{func(m *core.MetricSet) {
			m.Gauge("synclab_x", "h", 1, core.Label{Name: "a"})
			m.Gauge("synclab_x", "h", 2, core.Label{Name: "b"})
		}, "labels differ"},
	}
	for i, tc := range cases {
		var m core.MetricSet
		tc.add(&m)
		err := m.Err()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("case %d: Err() = %v, want %q", i, err, tc.want)
		}
		// The first valid sample stays; the bad one is left out.
		for _, f := range m.Families() {
			if len(f.Samples) != 1 {
				t.Errorf("case %d: %s kept %d samples", i, f.Name, len(f.Samples))
			}
		}
	}
}

func TestMetricSetErrorsBounded(t *testing.T) {
	var m core.MetricSet
	for i := 0; i < 100; i++ {
		m.Gauge("BAD", "h", float64(i))
	}
	err := m.Err()
	if err == nil || strings.Count(err.Error(), "\n") != 8 || !strings.Contains(err.Error(), "and 92 more") {
		t.Errorf("Err() = %v", err)
	}
	if len(m.Families()) != 0 {
		t.Errorf("invalid samples kept: %+v", m.Families())
	}
}

// A core exports its metrics by implementing core.MetricsWriter; the daemon
// calls it on its loop and serves the families on /metrics.
func ExampleMetricSet() {
	var m core.MetricSet
	for _, src := range []struct {
		addr   string
		offset float64
	}{{"10.0.0.1:123", 0.0012}, {"10.0.0.2:123", -0.0004}} {
		m.Gauge("synclab_ntp_source_offset_seconds", "Source offset.", src.offset, core.Label{Name: "source", Value: src.addr})
	}
	m.Counter("synclab_ntp_server_requests_total", "Requests.", 7)
	for _, f := range m.Families() {
		fmt.Println(f.Kind, f.Name, len(f.Samples))
	}
	fmt.Println(m.Err())
	// Output:
	// gauge synclab_ntp_source_offset_seconds 2
	// counter synclab_ntp_server_requests_total 1
	// <nil>
}

func TestMetricSetValue(t *testing.T) {
	var m core.MetricSet
	a := core.Label{Name: "source", Value: "a"}
	m.Gauge("synclab_x_seconds", "X.", 0.5, a)
	if v, ok := m.Value("synclab_x_seconds", a); !ok || v != 0.5 {
		t.Errorf("Value = %v, %v", v, ok)
	}
	if _, ok := m.Value("synclab_x_seconds"); ok {
		t.Error("found a sample without the label")
	}
	if _, ok := m.Value("synclab_y"); ok {
		t.Error("found a metric never given")
	}
}

func TestMetricSetHelpers(t *testing.T) {
	var m core.MetricSet
	m.GaugeBool("synclab_x_synchronized", "Synced.", true)
	m.GaugeBool("synclab_x_leader", "Leads.", false)
	m.Counters("synclab_x_dropped_total", "Dropped.", "reason", map[string]uint64{"short": 2, "bad_mac": 1})
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(m.Families())
	want := "[{synclab_x_synchronized Synced. gauge [{[] 1}]} {synclab_x_leader Leads. gauge [{[] 0}]} " +
		"{synclab_x_dropped_total Dropped. counter [{[{reason bad_mac}] 1} {[{reason short}] 2}]}]"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
