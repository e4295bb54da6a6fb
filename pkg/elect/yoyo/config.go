package yoyo

import (
	"fmt"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/internal/electcount"
	"github.com/synclab/synclab/pkg/liveness"
)

// Config configures a Yo-Yo core; zero durations take DefaultLANConfig's.
type Config struct {
	// Members are every member's IDs (empty: the Env's).
	Members []uint32
	// Topology is the connected graph the members elect over; members
	// talk to their neighbours only. Empty: the complete graph.
	Topology []Edge
	// Heartbeat is how often the leader floods its heartbeat. Default
	// 100 ms.
	Heartbeat time.Duration
	// LeaderTimeout is the silence of the leader's flood after which a
	// member starts a new round. Default 400 ms.
	LeaderTimeout time.Duration
	// RoundTimeout is how long a round may run without a leader before a
	// member starts another (a message lost with a connection, a member
	// that died mid-round). Default 2 s.
	RoundTimeout time.Duration
	// Stagger is added to LeaderTimeout once for every member below this
	// one (the leader aside): the smallest live member, which wins, starts
	// the round, and its hellos reach the others before they time out.
	// Without it every member starts a round of its own at the same
	// instant, and each newer round makes the members that took part in
	// an older one start over: up to N rounds' hellos. Default 20 ms: well
	// above LAN delays.
	Stagger time.Duration
}

// DefaultLANConfig returns the durations for a LAN.
func DefaultLANConfig() Config {
	return Config{Heartbeat: 100 * time.Millisecond, LeaderTimeout: 400 * time.Millisecond, RoundTimeout: 2 * time.Second, Stagger: 20 * time.Millisecond}
}

// FromOptions maps the operator's options: Heartbeat, LeaderTimeout, and
// Topology.
func FromOptions(members []uint32, o elect.Options) Config {
	c := DefaultLANConfig()
	c.Members = members
	if o.Heartbeat != 0 {
		c.Heartbeat = o.Heartbeat
	}
	if o.LeaderTimeout != 0 {
		c.LeaderTimeout = o.LeaderTimeout
		c.RoundTimeout = max(c.RoundTimeout, 4*o.LeaderTimeout)
	}
	for _, e := range o.Topology {
		c.Topology = append(c.Topology, Edge(e))
	}
	return c
}

func (c *Config) validate(self uint32, members []uint32) (map[uint32][]uint32, error) {
	if len(c.Members) == 0 {
		c.Members = members
	}
	c.Members = slices.Clone(c.Members)
	slices.Sort(c.Members)
	if err := liveness.CheckMembers(self, c.Members); err != nil {
		return nil, fmt.Errorf("yoyo: %w", err)
	}
	if len(c.Topology) == 0 {
		c.Topology = Complete(c.Members)
	}
	nb, err := neighbours(c.Members, c.Topology)
	if err != nil {
		return nil, fmt.Errorf("yoyo: %w", err)
	}
	def := DefaultLANConfig()
	if err := electcount.Durations("yoyo",
		liveness.Duration{Name: "Heartbeat", Value: &c.Heartbeat, Default: def.Heartbeat},
		liveness.Duration{Name: "LeaderTimeout", Value: &c.LeaderTimeout, Default: def.LeaderTimeout},
		liveness.Duration{Name: "RoundTimeout", Value: &c.RoundTimeout, Default: def.RoundTimeout},
		liveness.Duration{Name: "Stagger", Value: &c.Stagger, Default: def.Stagger}); err != nil {
		return nil, err
	}
	if c.LeaderTimeout <= c.Heartbeat {
		return nil, fmt.Errorf("yoyo: LeaderTimeout (%v) must exceed Heartbeat (%v)", c.LeaderTimeout, c.Heartbeat)
	}
	if c.RoundTimeout <= c.LeaderTimeout {
		return nil, fmt.Errorf("yoyo: RoundTimeout (%v) must exceed LeaderTimeout (%v)", c.RoundTimeout, c.LeaderTimeout)
	}
	return nb, nil
}
