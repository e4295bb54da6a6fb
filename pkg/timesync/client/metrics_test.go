package client_test

import (
	"math"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/client"
)

func TestMetrics(t *testing.T) {
	b := newBench(t, nil)
	var before core.MetricSet
	b.c.Metrics(&before)
	if err := before.Err(); err != nil {
		t.Fatal(err)
	}
	// Nothing known yet is left out, not reported as 0.
	for _, name := range []string{"synclab_ntp_offset_seconds", "synclab_ntp_error_bound_seconds", "synclab_ntp_source_offset_seconds"} {
		for _, f := range before.Families() {
			if f.Name == name {
				t.Errorf("%s reported before any measurement: %+v", name, f.Samples)
			}
		}
	}

	const off = 3 * time.Millisecond
	for range client.DefaultMinSamples {
		if err := b.answer(b.nextRequest(srvAddr), off, 100*time.Microsecond, nil); err != nil {
			t.Fatal(err)
		}
	}
	b.tick(10 * time.Millisecond)
	var m core.MetricSet
	b.c.Metrics(&m)
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	st := b.c.Report()
	src := []core.Label{{Name: "source", Value: srvAddr.String()}, {Name: "mode", Value: "server"}}
	get := func(name string, labels ...core.Label) float64 {
		t.Helper()
		v, ok := m.Value(name, labels...)
		if !ok {
			t.Errorf("no %s%v", name, labels)
		}
		return v
	}
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if get("synclab_ntp_synchronized") != 1 || get("synclab_ntp_stratum") != 2 {
		t.Errorf("synchronised %v, stratum %v", get("synclab_ntp_synchronized"), get("synclab_ntp_stratum"))
	}
	if o := get("synclab_ntp_offset_seconds"); math.Abs(o-off.Seconds()) > 50e-6 {
		t.Errorf("offset %v s, want about %v", o, off)
	}
	near("error bound", get("synclab_ntp_error_bound_seconds"), float64(st.ErrorBoundNS)/1e9)
	near("frequency", get("synclab_ntp_frequency_ppm"), st.FrequencyPPM)
	near("source offset", get("synclab_ntp_source_offset_seconds", src...), float64(st.Sources[0].OffsetNS)/1e9)
	near("source delay", get("synclab_ntp_source_delay_seconds", src...), float64(st.Sources[0].DelayNS)/1e9)
	near("source jitter", get("synclab_ntp_source_jitter_seconds", src...), float64(st.Sources[0].JitterNS)/1e9)
	get("synclab_ntp_source_dispersion_seconds", src...)
	// Reach "37" (octal): the last five polls answered.
	if r := get("synclab_ntp_source_reach", src...); r != 0o37 {
		t.Errorf("reach %v, want %d", r, 0o37)
	}
	if get("synclab_ntp_source_selected", src...) != 1 || get("synclab_ntp_source_sys_peer", src...) != 1 {
		t.Error("the only source, the system peer, is not reported selected")
	}
	if get("synclab_ntp_source_samples_accepted_total", src...) != float64(client.DefaultMinSamples) {
		t.Errorf("accepted %v, want %d", get("synclab_ntp_source_samples_accepted_total", src...), client.DefaultMinSamples)
	}
	if get("synclab_ntp_client_events_total", core.Label{Name: "event", Value: "accepted"}) != float64(client.DefaultMinSamples) {
		t.Error("the client's counters are not exported")
	}
}
