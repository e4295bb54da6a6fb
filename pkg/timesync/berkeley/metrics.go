package berkeley

import (
	"strconv"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
)

var _ core.MetricsWriter = (*Core)(nil)

// roles are the values of Status.Role, in the order the role metric lists
// them: one sample per role, 1 for the current one, so a dashboard can
// count masters across the group with a plain sum.
var roles = [...]string{"master", "worker", "candidate"}

// Metrics exports what `timed status` shows of Berkeley mode, as of the
// last tick or frame: the role and term, this member's discipline, the
// master's last round (one series per worker), a worker's last
// correction, the core's counters, and the embedded election's own
// metrics (synclab_elect_*). Values not known yet (an error bound before
// the first correction, a round before the first one) are left out rather
// than reported as 0.
func (c *Core) Metrics(m *core.MetricSet) {
	st := c.Report()
	for _, r := range roles {
		m.GaugeBool("synclab_berkeley_role", "1 for this member's role (master, worker, candidate), 0 for the others.", st.Role == r, core.Label{Name: "role", Value: r})
	}
	m.Gauge("synclab_berkeley_master_id", "Member ID of the master of the term this member knows; 0 if none is known.", float64(st.Master))
	// A whole term (round << 32 | owner) is beyond what a Prometheus float
	// holds exactly; the owner is the master.
	m.Gauge("synclab_berkeley_term_round", "Round of the term this member knows (term = round << 32 | master ID).", float64(epoch.Round(st.Term)))
	m.GaugeBool("synclab_berkeley_synchronized", "1 once a correction was applied to this member's clock, else 0.", st.Synchronized)
	if st.ErrorBoundNS > 0 {
		m.Gauge("synclab_berkeley_error_bound_seconds", "Bound on this clock's error relative to the group's time (not to any external reference).", ns(st.ErrorBoundNS))
	}
	m.Gauge("synclab_berkeley_frequency_ppm", "Frequency correction of this member's discipline, in ppm.", st.FrequencyPPM)
	if a := st.LastAdjust; a != nil {
		m.Gauge("synclab_berkeley_last_correction_seconds", "Last correction this member received as a worker.", ns(a.CorrectionNS))
		m.Gauge("synclab_berkeley_last_correction_error_seconds", "Error the master gave with the last correction received.", ns(a.ErrorNS))
	}
	if r := st.LastRound; r != nil {
		c.roundMetrics(m, r)
	}
	m.Counters("synclab_berkeley_events_total", "The core's counters: rounds, readings, polls answered, adjustments applied, resent and unacknowledged, exclusions, frames refused by reason.", "event", st.Counters)
	if mw, ok := c.elect.Elector.(core.MetricsWriter); ok {
		mw.Metrics(m)
	}
}

// roundMetrics describes the master's last round.
func (c *Core) roundMetrics(m *core.MetricSet, r *RoundReport) {
	m.Gauge("synclab_berkeley_round", "Number of the master's last round within its term.", float64(r.Round))
	m.Gauge("synclab_berkeley_round_clocks", "Clocks read in the last round: the master's and every usable reading.", float64(r.Clocks))
	m.GaugeBool("synclab_berkeley_round_skipped", "1 if the last round corrected nobody (fewer than half the members' clocks read), else 0.", r.Skipped != "")
	if r.Skipped == "" {
		m.Gauge("synclab_berkeley_round_agreeing", "Clocks in the largest set that agree within the threshold, the master's included.", float64(r.Agreeing))
		m.Gauge("synclab_berkeley_round_averaged", "Clocks averaged: the agreeing ones but the f highest and lowest (1 when the median was taken).", float64(r.Averaged))
		m.Gauge("synclab_berkeley_round_spread_seconds", "Spread of the averaged clocks in the last round.", ns(r.SpreadNS))
		m.Gauge("synclab_berkeley_round_steer_seconds", "Rate pull added to every correction of the last round.", ns(r.SteerNS))
		m.Gauge("synclab_berkeley_round_master_correction_seconds", "Correction the master applied to itself in the last round.", ns(r.MasterCorrectionNS))
	}
	for _, w := range r.Members {
		lbl := core.Label{Name: "member", Value: strconv.FormatUint(uint64(w.ID), 10)}
		m.GaugeBool("synclab_berkeley_member_answered", "1 if the worker's reading arrived in the last round, else 0.", w.Answered, lbl)
		// Why is set for every exclusion; Excluded is left false for a
		// worker without a reading.
		m.GaugeBool("synclab_berkeley_member_excluded", "1 if the worker's clock was left out of the last round's average (no reading, round trip too long, or disagreeing), else 0.", w.Excluded || w.Why != "", lbl)
		if !w.Answered {
			continue
		}
		m.Gauge("synclab_berkeley_member_rtt_seconds", "Round trip of the worker's reading in the last round.", ns(w.RTTNS), lbl)
		m.Gauge("synclab_berkeley_member_offset_seconds", "Worker's clock minus the master's in the last round.", ns(w.OffsetNS), lbl)
		if r.Skipped == "" {
			m.Gauge("synclab_berkeley_member_correction_seconds", "Correction sent to the worker in the last round.", ns(w.CorrectionNS), lbl)
			m.GaugeBool("synclab_berkeley_member_acked", "1 once the worker acknowledged the last round's correction, else 0.", w.Acked, lbl)
		}
	}
}

func ns(v int64) float64 { return float64(v) / 1e9 }
