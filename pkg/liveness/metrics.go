package liveness

import (
	"strconv"

	"github.com/synclab/synclab/pkg/core"
)

var _ core.MetricsWriter = (*Core)(nil)

// Metrics exports the detector's view: how many members it believes alive,
// and per member whether it does and how often it heard from it.
func (c *Core) Metrics(m *core.MetricSet) {
	m.Gauge("synclab_liveness_members_alive", "Members believed alive, this one included.", float64(c.AliveCount()))
	m.Gauge("synclab_liveness_members", "Members in the static member list, this one included.", float64(len(c.det.peers)+1))
	m.Counter("synclab_liveness_heartbeats_sent_total", "Heartbeats this member sent (a broadcast counts once).", float64(c.sent))
	m.Counter("synclab_liveness_probes_sent_total", "Heartbeat probes this member sent to members that missed a heartbeat.", float64(c.probes))
	m.Counter("synclab_liveness_probes_answered_total", "Heartbeat probes of other members this member answered.", float64(c.answers))
	m.Counters("synclab_liveness_bugs_total", "Bugs of this core it survived (an encoding of its own message that failed), by kind.", "bug", c.bugs.Counts())
	for _, p := range c.det.Members() {
		member := core.Label{Name: "member", Value: strconv.FormatUint(uint64(p.ID), 10)}
		m.GaugeBool("synclab_liveness_member_alive", "1 if the member is believed alive, 0 if suspected or not heard yet.", p.State == Alive, member)
		m.Counter("synclab_liveness_heartbeats_received_total", "Heartbeats accepted from the member.", float64(p.Heard), member)
		m.Counter("synclab_liveness_flaps_total", "Times the member came back after being suspected.", float64(p.Flaps), member)
	}
}
