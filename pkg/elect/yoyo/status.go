package yoyo

import (
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/epoch"
)

// Detail is Yo-Yo's own part of the status.
type Detail struct {
	Heartbeat     time.Duration `json:"heartbeat_ns"`
	LeaderTimeout time.Duration `json:"leader_timeout_ns"`
	RoundTimeout  time.Duration `json:"round_timeout_ns"`
	// Neighbours are this member's neighbours in the topology; Edges the
	// orientation of each edge in the current round ("in": the
	// neighbour sends values here, "out", "pruned", "unoriented").
	Neighbours []uint32          `json:"neighbours"`
	Edges      map[uint32]string `json:"edges"`
	Topology   []Edge            `json:"topology"`
	Digest     string            `json:"topology_digest"`
	Iteration  uint32            `json:"iteration"`
	// Node is this member's place in the DAG: source, internal, sink,
	// pruned, leader, follower.
	Node string `json:"node"`
	// RoundMessages counts the election messages (hello, values, votes)
	// this member sent in the current round.
	RoundMessages uint64 `json:"round_messages"`
	// Keepalives counts the messages this member repeated while a round
	// ran (its hello, value and vote, every heartbeat, as datagrams: a
	// round's liveness and its way past a late link); Repeats those of
	// its neighbours it received and took as repeats (since start).
	Keepalives uint64 `json:"keepalives"`
	Repeats    uint64 `json:"repeats"`
}

// Status returns the Report.
func (c *Core) Status() any { return c.Report() }

func (c *Core) node() string {
	switch {
	case c.lead == c.id && c.lead != 0:
		return "leader"
	case !c.electing:
		return "follower"
	case c.outcome != "":
		return c.outcome
	case len(c.countDir(unknown)) > 0:
		return "orienting"
	}
	ins, outs := len(c.countDir(in)), len(c.countDir(out))
	switch {
	case ins == 0:
		return "source"
	case outs == 0:
		return "sink"
	}
	return "internal"
}

// Detail returns Yo-Yo's own status.
func (c *Core) Detail() Detail {
	d := Detail{Heartbeat: c.cfg.Heartbeat, LeaderTimeout: c.cfg.LeaderTimeout, RoundTimeout: c.cfg.RoundTimeout,
		Neighbours: c.nbrs, Edges: map[uint32]string{}, Topology: c.cfg.Topology, Digest: fmt.Sprintf("%08x", c.digest),
		Iteration: c.iteration, Node: c.node(), RoundMessages: c.perRound, Keepalives: c.keepalives, Repeats: c.repeats}
	for _, n := range c.nbrs {
		d.Edges[n] = c.edges[n].String()
	}
	return d
}

// phase says where the round is: the orientation phase, YO- (values going
// down) or -YO (votes going up), and in which iteration.
func (c *Core) phase() string {
	r := fmt.Sprintf("round %d.%d", epoch.Round(c.round), epoch.Owner(c.round))
	switch {
	case c.lead == c.id && c.lead != 0:
		return r + ": leading"
	case c.lead != 0:
		return fmt.Sprintf("%s: following %d", r, c.lead)
	case !c.electing:
		return "no leader yet: listening for a leader before starting a round"
	case c.outcome == "pruned":
		return r + ": pruned, waiting for the leader's flood"
	case len(c.countDir(unknown)) > 0:
		return fmt.Sprintf("%s: orientation (hello from %d of %d neighbours)", r, len(c.nbrs)-len(c.countDir(unknown)), len(c.nbrs))
	}
	ins, outs := c.countDir(in), c.countDir(out)
	node := c.node()
	switch {
	case !c.sentDown && len(ins) > 0:
		return fmt.Sprintf("%s iteration %d: %s, YO-: values from %d of %d in-edges", r, c.iteration, node, len(c.values), len(ins))
	case len(outs) > 0:
		return fmt.Sprintf("%s iteration %d: %s, -YO: votes from %d of %d out-edges (sent %d)", r, c.iteration, node, len(c.votes), len(outs), c.minValue)
	}
	return fmt.Sprintf("%s iteration %d: %s", r, c.iteration, node)
}

// Report returns this member's view (elect.Elector).
func (c *Core) Report() elect.Status {
	s := elect.Status{Algorithm: Algorithm.Name, ID: c.id, Role: c.role(), Term: c.round, Round: epoch.Round(c.round),
		Leader: c.lead, LeaderSince: c.announced.Since(), Phase: c.phase(), ChangesDropped: c.announced.Dropped(), Detail: c.Detail()}
	c.counts.Fill(&s, Kinds)
	for _, id := range c.cfg.Members {
		s.Members = append(s.Members, elect.MemberStatus{ID: id, Self: id == c.id, LastHeard: c.heard[id]})
	}
	return s
}

// Metrics exports Yo-Yo's state and counters.
func (c *Core) Metrics(m *core.MetricSet) {
	m.Gauge("synclab_elect_term_round", "Round of the current Yo-Yo round (round << 32 | starter).", float64(epoch.Round(c.round)))
	m.Gauge("synclab_elect_yoyo_iteration", "Iteration of the current round.", float64(c.iteration))
	c.counts.Metrics(m, Kinds, c.lead, c.lead == c.id && c.lead != 0, &c.bugs)
}
