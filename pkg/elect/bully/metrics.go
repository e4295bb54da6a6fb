package bully

import "github.com/synclab/synclab/pkg/core"

var _ core.MetricsWriter = (*Core)(nil)

// Metrics exports the election's state and counters. The term is given
// as its round: a whole term (round << 32 | owner) is beyond the 2^53
// that a Prometheus float holds exactly, and the owner is the leader.
func (b *Core) Metrics(m *core.MetricSet) {
	m.Gauge("synclab_elect_term_round", "Round of the highest term seen (term = round << 32 | owner ID).", float64(TermRound(b.term)))
	m.Gauge("synclab_elect_leader_id", "Member ID of the leader this node follows; 0 if none is known.", float64(b.lead))
	m.GaugeBool("synclab_elect_is_leader", "1 if this node leads, else 0.", b.role == RoleLeader)
	m.GaugeBool("synclab_elect_yielding", "1 if this node resigned and follows whoever leads, else 0.", b.yielding)
	m.Counter("synclab_elect_elections_started_total", "Elections this node started.", float64(b.counts.elections))
	m.Counter("synclab_elect_terms_claimed_total", "Terms this node claimed as leader.", float64(b.counts.claims))
	m.Counter("synclab_elect_leader_timeouts_total", "Leaders given up on for silence.", float64(b.counts.leaderTimeouts))
	m.Counter("synclab_elect_stale_messages_total", "Messages of an older term, ignored.", float64(b.counts.stale))
	for i, k := range electionKinds {
		kind := core.Label{Name: "kind", Value: k.String()}
		m.Counter("synclab_elect_messages_sent_total", "Election messages sent, by kind (a broadcast counts once per recipient).", float64(b.counts.sent[i]), kind)
		m.Counter("synclab_elect_messages_received_total", "Election messages accepted, by kind.", float64(b.counts.received[i]), kind)
	}
	m.Counters("synclab_elect_messages_rejected_total", "Election messages refused, by reason.", "reason", b.counts.rejected)
	m.Counters("synclab_elect_bugs_total", "Bugs of this core it survived (an encoding of its own message that failed), by kind.", "bug", b.bugs.Counts())
}
