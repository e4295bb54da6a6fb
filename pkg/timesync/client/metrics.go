package client

import (
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/ntp"
)

var _ core.MetricsWriter = (*Client)(nil)

// Metrics exports what `timed status` shows, as of the last tick: the
// discipline (offset, error bound, frequency) and one series per source
// (reach, the clock filter's estimate, whether selection uses it).
// Offsets are reference minus local, as in Status. Values that are not
// known yet (an offset before the first update, a source's estimate before
// its first sample) are left out rather than reported as 0.
func (c *Client) Metrics(m *core.MetricSet) {
	st := c.Report()
	m.GaugeBool("synclab_ntp_synchronized", "1 if the clock is synchronised to a source, else 0.", st.Synchronized)
	if off, ok := c.servo.Offset(c.now); ok {
		m.Gauge("synclab_ntp_offset_seconds", "Estimated offset, reference minus local (positive: the local clock is behind).", off.Seconds())
		m.Gauge("synclab_ntp_error_bound_seconds", "Bound on the local clock's error: true time is within this of the local clock's.", ns(st.ErrorBoundNS))
	}
	m.Gauge("synclab_ntp_frequency_ppm", "Frequency correction of the discipline, in ppm.", st.FrequencyPPM)
	m.Gauge("synclab_ntp_frequency_error_ppm", "Worst-case error of the frequency correction, in ppm.", st.FrequencyErrorPPM)
	m.Gauge("synclab_ntp_stratum", "Stratum of the system (16: unsynchronised).", float64(st.Stratum))
	m.Gauge("synclab_ntp_root_delay_seconds", "Round-trip delay to the primary reference.", ns(st.RootDelayNS))
	m.Gauge("synclab_ntp_root_dispersion_seconds", "Dispersion accumulated up to the primary reference.", ns(st.RootDispersionNS))
	if c.hasSel && c.selErr == nil {
		m.Gauge("synclab_ntp_system_jitter_seconds", "Jitter of the offsets of the sources combined.", ns(st.SystemJitterNS))
	}
	m.Counters("synclab_ntp_client_events_total", "The client's counters: polls sent, replies accepted and refused by reason, clock updates...", "event", st.Counters)
	// Report lists the sources in c.srcs's order.
	for i, ss := range st.Sources {
		s := c.srcs[i]
		lbl := []core.Label{{Name: "source", Value: ss.Address}, {Name: "mode", Value: ss.Mode}}
		m.Gauge("synclab_ntp_source_reach", "Reach register: one bit per recent poll, 1 if answered (255: the last 8).", float64(s.poller.Reach()), lbl...)
		m.Gauge("synclab_ntp_source_poll_interval_seconds", "Interval between polls of the source.", (time.Second << max(ss.Poll, 0)).Seconds(), lbl...)
		m.Gauge("synclab_ntp_source_stratum", "Stratum the source advertised in its last answer (0: none yet).", float64(ss.Stratum), lbl...)
		if _, ok := s.filter.Estimate(); ok {
			m.Gauge("synclab_ntp_source_offset_seconds", "Clock filter's offset of the source, reference minus local.", ns(ss.OffsetNS), lbl...)
			m.Gauge("synclab_ntp_source_delay_seconds", "Clock filter's round-trip delay to the source.", ns(ss.DelayNS), lbl...)
			m.Gauge("synclab_ntp_source_dispersion_seconds", "Clock filter's dispersion of the source.", ns(ss.DispersionNS), lbl...)
			m.Gauge("synclab_ntp_source_jitter_seconds", "Clock filter's jitter of the source.", ns(ss.JitterNS), lbl...)
		}
		sysPeer := ss.Verdict == ntp.VerdictSysPeer.String()
		m.GaugeBool("synclab_ntp_source_selected", "1 if the last selection combined the source into the system offset, else 0.", sysPeer || ss.Verdict == ntp.VerdictCombined.String(), lbl...)
		m.GaugeBool("synclab_ntp_source_sys_peer", "1 if the clock follows this source (the system peer), else 0.", sysPeer, lbl...)
		m.Counter("synclab_ntp_source_packets_received_total", "Packets received from the source.", float64(ss.Received), lbl...)
		m.Counter("synclab_ntp_source_samples_accepted_total", "Answers of the source that gave a sample.", float64(ss.Accepted), lbl...)
	}
}

func ns(v int64) float64 { return float64(v) / 1e9 }
