package bully

import "github.com/synclab/synclab/pkg/core"

var _ core.MetricsWriter = (*Core)(nil)

// Metrics exports the election's state and counters. The term is given
// as its round: a whole term (round << 32 | owner) is beyond the 2^53
// that a Prometheus float holds exactly, and the owner is the leader.
func (b *Core) Metrics(m *core.MetricSet) {
	m.Gauge("synclab_elect_term_round", "Round of the highest term seen (term = round << 32 | owner ID).", float64(TermRound(b.term)))
	b.counts.Metrics(m, electionKinds, b.lead, b.role == RoleLeader, &b.bugs)
	m.GaugeBool("synclab_elect_yielding", "1 if this node resigned and follows whoever leads, else 0.", b.yielding)
	m.Counter("synclab_elect_terms_claimed_total", "Terms this node claimed as leader.", float64(b.counts.claims))
}
