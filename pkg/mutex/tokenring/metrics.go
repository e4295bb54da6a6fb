package tokenring

import (
	"maps"
	"slices"
	"strconv"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutexcount"
)

var _ core.MetricsWriter = (*Core)(nil)

// maxFenceSeries bounds the per-lock fence series.
const maxFenceSeries = 256

// Metrics exports the ring's state and counters. Per-lock samples are
// only for locks this member's own clients use, at most maxFenceSeries; a
// fence is exported as a float, exact below 2^53 (round 8192), which a lab
// reaches after thousands of regenerations.
func (c *Core) Metrics(m *core.MetricSet) {
	alive := 0
	skipped := 0
	for _, id := range c.cfg.Members {
		if id == c.self || !c.down(id) {
			alive++
		}
		if c.skipped[id] {
			skipped++
		}
	}
	m.Gauge("synclab_mutex_members", "Ring members, this one included.", float64(len(c.cfg.Members)))
	m.Gauge("synclab_mutex_members_alive", "Ring members believed alive, this one included.", float64(alive))
	m.Gauge("synclab_mutex_members_skipped", "Members the token passes by until they are heard again: one failed to acknowledge a token, or missed a heartbeat.", float64(skipped))

	held, tokens, queued := 0, 0, 0
	for _, l := range c.locks {
		if c.reqs.Held(l.name) {
			held++
		}
		if l.tok != nil {
			tokens++
		}
		queued += c.reqs.Waiting(l.name)
	}
	m.Gauge("synclab_mutex_locks", "Locks in this member's table.", float64(len(c.locks)))
	m.Gauge("synclab_mutex_locks_held", "Locks granted to a client of this member now.", float64(held))
	m.Gauge("synclab_mutex_tokens_here", "Tokens this member holds now.", float64(tokens))
	m.Gauge("synclab_mutex_queue_length", "Requests waiting at this member, all locks.", float64(queued))
	// One series per lock this member's clients use, at most
	// maxFenceSeries: names in frames from other members never make a
	// series, so nobody on the network can grow the scrape.
	n := 0
	for _, name := range slices.Sorted(maps.Keys(c.locks)) {
		if l := c.locks[name]; l.local && n < maxFenceSeries {
			m.Gauge("synclab_mutex_fence", "Highest fence this member knows of, per lock its clients use.", float64(l.maxFence),
				core.Label{Name: "lock", Value: name})
			n++
		}
	}

	counters := c.allCounters()
	cnt := func(k string) float64 { return float64(counters[k]) }
	mutexcount.RequestMetrics(m, counters)
	m.Counter("synclab_mutex_tokens_passed_total", "Tokens sent to the successor (handoffs).", cnt("tokens_passed"))
	m.Counter("synclab_mutex_tokens_received_total", "Tokens taken from the predecessor.", cnt("tokens_received"))
	m.Counter("synclab_mutex_regenerations_total", "Tokens this member created anew after a loss.", cnt("regenerations"))
	m.Counter("synclab_mutex_skips_total", "Token passes not acknowledged in time: the successor was skipped.", cnt("acks_missed"))
	m.Counter("synclab_mutex_tokens_disowned_total", "Tokens dropped before use: the member they came from did not vouch for them.", cnt("tokens_disowned"))
	m.Counter("synclab_mutex_locks_reclaimed_total", "Idle lock table entries reclaimed (their promises kept in the floor).", cnt("locks_reclaimed"))
	m.Gauge("synclab_mutex_floor_round", "Round of the table's floor: the generation promised for every lock not in the table.", float64(GenerationRound(c.floor)))
	mutexcount.LossMetrics(m, counters, mutex.LossReasons, "Ring frames")
	for _, id := range c.cfg.Members {
		if id == c.self {
			continue
		}
		member := core.Label{Name: "member", Value: strconv.FormatUint(uint64(id), 10)}
		m.GaugeBool("synclab_mutex_member_alive", "1 if the member is believed alive, else 0.", !c.down(id), member)
	}
}
