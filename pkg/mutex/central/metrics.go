package central

import (
	"strconv"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex/internal/mutexcount"
)

var _ core.MetricsWriter = (*Core)(nil)

// Metrics exports the member's state and counters: who coordinates, the
// queue while this member does, and every refusal by reason.
func (c *Core) Metrics(m *core.MetricSet) {
	m.Gauge("synclab_mutex_members", "Members, this one included.", float64(len(c.members)))
	m.Gauge("synclab_mutex_central_coordinator", "The member this one follows as coordinator (0: none known).", float64(c.fol.leader))
	m.GaugeBool("synclab_mutex_central_coordinating", "1 while this member coordinates.", c.co != nil)
	held, waiting := 0, 0
	for _, name := range c.reqs.Locks() {
		if c.reqs.Held(name) {
			held++
		}
		waiting += c.reqs.Waiting(name)
	}
	m.Gauge("synclab_mutex_locks_held", "Locks granted to a client of this member now.", float64(held))
	m.Gauge("synclab_mutex_queue_length", "Requests waiting at this member, all locks.", float64(waiting))
	if k := c.co; k != nil {
		m.Gauge("synclab_mutex_central_queue_length", "Requests waiting in the coordinator's queue, all members.", float64(k.waiting))
		m.Gauge("synclab_mutex_central_locks", "Locks in the coordinator's queue.", float64(len(k.queues)))
		m.GaugeBool("synclab_mutex_central_ready", "1 once the coordinator's hold is over.", k.ready)
		m.GaugeBool("synclab_mutex_central_supported", "1 while a majority supports the coordinator.", c.supported())
		for _, id := range c.members {
			if id == c.self {
				continue
			}
			p := k.peers[id]
			m.GaugeBool("synclab_mutex_member_alive", "1 if the member synced within DeadAfter, else 0.",
				p != nil && c.now.Sub(p.heard) < c.cfg.DeadAfter, core.Label{Name: "member", Value: strconv.FormatUint(uint64(id), 10)})
		}
	}
	counters := c.allCounters()
	cnt := func(k string) float64 { return float64(counters[k]) }
	mutexcount.RequestMetrics(m, counters)
	m.Counter("synclab_mutex_central_grants_made_total", "Grants this member made as coordinator.", cnt("grants_made"))
	m.Counter("synclab_mutex_central_holds_reannounced_total", "Grants of older terms a new coordinator learnt from syncs.", cnt("holds_reannounced"))
	mutexcount.LossMetrics(m, counters, lossReasons, "Frames")
}
