package bully

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Member is one cluster member as every node's member list names it. All
// nodes must agree on the list, priorities included: the ranking is what the
// bully algorithm compares.
type Member struct {
	ID       uint32 // member ID, > 0, unique
	Priority uint32 // higher is preferred as leader; ties are broken by ID
}

// rank orders members: by priority, then by ID, higher is stronger.
func (m Member) outranks(o Member) bool {
	if m.Priority != o.Priority {
		return m.Priority > o.Priority
	}
	return m.ID > o.ID
}

// Config configures a bully core. Durations are in ticks, the driver's fixed
// Tick interval (10 ms in the daemons). Zero fields take their defaults in
// New; DefaultLANConfig spells them out.
type Config struct {
	// ID is this node's member ID. Required.
	ID uint32
	// Members is the whole cluster, this node included. Required.
	Members []Member

	// HeartbeatTicks is the leader's heartbeat interval. Default 5 (50 ms).
	HeartbeatTicks int
	// LeaderTimeoutTicks is how long a follower waits without hearing the
	// leader before it starts an election. It must exceed HeartbeatTicks.
	// The default, 40 (400 ms), is eight heartbeats: seven in a row must be
	// lost before a live leader is suspected. With 5% loss at every host a
	// heartbeat is lost with p = 0.0975 and a follower suspects a live
	// leader once in ~10^7 heartbeats, once in years; the first defaults
	// (100 ms heartbeats, 450 ms) needed only four losses in a row, and
	// the benchmark saw a false election every few minutes.
	LeaderTimeoutTicks int
	// StaggerTicks is added to LeaderTimeoutTicks once for every member
	// ranked between this node and the leader. The member just below the
	// leader therefore notices a dead leader first and, having nobody else to
	// ask, takes over at once with one COORDINATOR broadcast before the others
	// time out: bully's best case (no ELECTION, N-2 COORDINATOR deliveries)
	// becomes the common case. Default 2 (20 ms): well above LAN delays.
	StaggerTicks int
	// AnswerTimeoutTicks is how long a candidate waits for an ANSWER from a
	// higher-ranked member before it declares itself leader. It must cover a
	// round trip. Default 5 (50 ms).
	AnswerTimeoutTicks int
	// CoordinatorTimeoutTicks is how long a node that got an ANSWER waits for
	// the COORDINATOR (or a heartbeat of a sitting leader) before it starts
	// over; a random 0..AnswerTimeoutTicks is added so that nodes that gave up
	// together do not retry together. It must exceed AnswerTimeoutTicks and
	// HeartbeatTicks. Default 25 (250 ms).
	CoordinatorTimeoutTicks int

	// PersistedTerm is the term restored from the previous run's state (see
	// Restore). The node never claims a term at or below it.
	PersistedTerm uint64

	// Rand is the source of the retry jitter. Nil: a generator seeded from
	// ID, deterministic; the daemon passes a randomly seeded one, the
	// simulator a seeded one.
	Rand *rand.Rand
}

// DefaultLANConfig returns the timeouts for a LAN with a 10 ms tick: 50 ms
// heartbeats, a dead leader noticed after 400 ms and replaced at once by the
// member ranked just below it. Set ID and Members (and Rand) before use.
func DefaultLANConfig() Config {
	return Config{
		HeartbeatTicks:          5,
		LeaderTimeoutTicks:      40,
		StaggerTicks:            2,
		AnswerTimeoutTicks:      5,
		CoordinatorTimeoutTicks: 25,
	}
}

// validate fills defaults in and rejects contradictions.
func (c *Config) validate() error {
	if c.ID == 0 {
		return errors.New("bully: ID must be > 0")
	}
	if len(c.Members) == 0 {
		return errors.New("bully: empty member list")
	}
	seen := make(map[uint32]bool, len(c.Members))
	for _, m := range c.Members {
		if m.ID == 0 {
			return errors.New("bully: member ID 0 is reserved")
		}
		if seen[m.ID] {
			return fmt.Errorf("bully: member %d listed twice", m.ID)
		}
		seen[m.ID] = true
	}
	if !seen[c.ID] {
		return fmt.Errorf("bully: own ID %d is not in the member list", c.ID)
	}

	def := DefaultLANConfig()
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{
		{"HeartbeatTicks", &c.HeartbeatTicks, def.HeartbeatTicks},
		{"LeaderTimeoutTicks", &c.LeaderTimeoutTicks, def.LeaderTimeoutTicks},
		{"StaggerTicks", &c.StaggerTicks, def.StaggerTicks},
		{"AnswerTimeoutTicks", &c.AnswerTimeoutTicks, def.AnswerTimeoutTicks},
		{"CoordinatorTimeoutTicks", &c.CoordinatorTimeoutTicks, def.CoordinatorTimeoutTicks},
	} {
		if *f.v < 0 {
			return fmt.Errorf("bully: %s = %d, must be >= 0 (0: default %d)", f.name, *f.v, f.def)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if c.LeaderTimeoutTicks <= c.HeartbeatTicks {
		return fmt.Errorf("bully: LeaderTimeoutTicks (%d) must exceed HeartbeatTicks (%d), or every follower suspects a live leader between two heartbeats",
			c.LeaderTimeoutTicks, c.HeartbeatTicks)
	}
	if c.CoordinatorTimeoutTicks <= c.AnswerTimeoutTicks {
		return fmt.Errorf("bully: CoordinatorTimeoutTicks (%d) must exceed AnswerTimeoutTicks (%d): the member that answered needs that long to win its own election",
			c.CoordinatorTimeoutTicks, c.AnswerTimeoutTicks)
	}
	if c.CoordinatorTimeoutTicks <= c.HeartbeatTicks {
		return fmt.Errorf("bully: CoordinatorTimeoutTicks (%d) must exceed HeartbeatTicks (%d): a node told to wait must be able to hear a sitting leader's heartbeat",
			c.CoordinatorTimeoutTicks, c.HeartbeatTicks)
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(uint64(c.ID), 0x62756c6c79)) // "bully"
	}
	c.Members = slices.Clone(c.Members)
	return nil
}
