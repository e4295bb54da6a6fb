package maekawa

import (
	"strconv"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutexcount"
)

var _ core.MetricsWriter = (*Core)(nil)

// Metrics exports the core's state and counters (the names the token ring
// uses where they mean the same; votes and retries are this core's own).
func (c *Core) Metrics(m *core.MetricSet) {
	alive := 0
	for _, id := range c.cfg.Members {
		if c.alive(id) {
			alive++
		}
	}
	m.Gauge("synclab_mutex_members", "Members, this one included.", float64(len(c.cfg.Members)))
	m.Gauge("synclab_mutex_members_alive", "Members believed alive, this one included.", float64(alive))
	held, queued := 0, 0
	for _, l := range c.reqs.Locks() {
		if c.reqs.Held(l) {
			held++
		}
		queued += c.reqs.Waiting(l)
	}
	votes, waiting := 0, 0
	for _, l := range c.votes {
		votes += len(l.grants)
		waiting += len(l.queue)
	}
	m.Gauge("synclab_mutex_locks_held", "Locks granted to a client of this member now.", float64(held))
	m.Gauge("synclab_mutex_queue_length", "Requests waiting at this member, all locks.", float64(queued))
	m.Gauge("synclab_mutex_voter_locks", "Locks in this member's voter table.", float64(len(c.votes)))
	m.Gauge("synclab_mutex_votes_given", "Votes this member has given and not got back, all locks.", float64(votes))
	m.Gauge("synclab_mutex_voter_queue_length", "Requests queued at this member's voter (Maekawa), all locks.", float64(waiting))
	cs := c.allCounters()
	mutexcount.RequestMetrics(m, cs)
	m.Counters("synclab_mutex_vote_frames_sent_total", "Vote frames sent to other members, by op.", "op", mutexcount.ByPrefix(cs, "sent_"))
	m.Counters("synclab_mutex_retries_total", "Request rounds given up and retried, by cause.", "cause", mutexcount.ByPrefix(cs, "retries_"))
	mutexcount.LossMetrics(m, cs, mutex.LossReasons, "Vote frames")
	for _, id := range c.cfg.Members {
		if id != c.self {
			m.GaugeBool("synclab_mutex_member_alive", "1 if the member is believed alive, else 0.", c.alive(id),
				core.Label{Name: "member", Value: strconv.FormatUint(uint64(id), 10)})
		}
	}
}
