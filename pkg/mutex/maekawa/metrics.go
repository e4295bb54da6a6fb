package maekawa

import (
	"strconv"
	"strings"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
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
	cnt := func(k string) float64 { return float64(cs[k]) }
	m.Counter("synclab_mutex_requests_total", "Lock requests queued at this member.", cnt("requests"))
	m.Counter("synclab_mutex_grants_total", "Leases granted to clients of this member.", cnt("grants"))
	m.Counter("synclab_mutex_renewals_total", "Leases renewed.", cnt("renewals"))
	m.Counter("synclab_mutex_cancelled_total", "Waiting requests withdrawn before a grant.", cnt("cancelled"))
	sent, retries, losses, rejected := map[string]uint64{}, map[string]uint64{}, map[string]uint64{}, map[string]uint64{}
	for k, v := range cs {
		switch {
		case strings.HasPrefix(k, "sent_"):
			sent[strings.TrimPrefix(k, "sent_")] = v
		case strings.HasPrefix(k, "retries_"):
			retries[strings.TrimPrefix(k, "retries_")] = v
		case strings.HasPrefix(k, "lost_"):
			losses[strings.TrimPrefix(k, "lost_")] = v
		case strings.HasPrefix(k, "rejected_"):
			rejected[strings.TrimPrefix(k, "rejected_")] = v
		}
	}
	for _, r := range mutex.LossReasons {
		losses[string(r)] += 0
	}
	m.Counters("synclab_mutex_vote_frames_sent_total", "Vote frames sent to other members, by op.", "op", sent)
	m.Counters("synclab_mutex_retries_total", "Request rounds given up and retried, by cause.", "cause", retries)
	m.Counters("synclab_mutex_losses_total", "Leases lost before their release, by reason.", "reason", losses)
	m.Counters("synclab_mutex_frames_rejected_total", "Vote frames refused by the core, by reason.", "reason", rejected)
	for _, id := range c.cfg.Members {
		if id != c.self {
			m.GaugeBool("synclab_mutex_member_alive", "1 if the member is believed alive, else 0.", c.alive(id),
				core.Label{Name: "member", Value: strconv.FormatUint(uint64(id), 10)})
		}
	}
}
