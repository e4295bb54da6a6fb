package timedcore

import "github.com/synclab/synclab/pkg/core"

var _ core.MetricsWriter = (*Core)(nil)

// Metrics gathers the metrics of every part that exports some: the parts
// use distinct names (synclab_liveness_*, synclab_ntp_server_*,
// synclab_ntp_*), so they add up without clashing; synclab_time_* sum
// them up (Sync).
func (c *Core) Metrics(m *core.MetricSet) {
	syncMetrics(m, c.Status().(Status).Sync)
	for _, p := range c.parts {
		if mw, ok := p.(core.MetricsWriter); ok {
			mw.Metrics(m)
		}
	}
}
