package bully

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/internal/electcount"
	"github.com/synclab/synclab/pkg/liveness"
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

// Config configures a bully core. Every timeout is a time.Duration of the
// local clock, used as given (never rounded to a tick) and checked by
// liveness.CheckTimeout; zero fields take their defaults (DefaultLANConfig
// spells them out). This member's ID, the start time, the random source
// (retry jitter) and the persisted term come from core.Env.
type Config struct {
	// Members ranks the whole cluster, this member included. Empty: the
	// Env's members, all of priority 0 (ranked by ID).
	Members []Member

	// Heartbeat is the leader's heartbeat interval. Default 50 ms.
	Heartbeat time.Duration
	// LeaderTimeout is how long a follower waits without hearing the
	// leader before it starts an election. It must exceed Heartbeat.
	// The default, 400 ms, is eight heartbeats: seven in a row must be
	// lost before a live leader is suspected. With 5% loss at every host a
	// heartbeat is lost with p = 0.0975 and a follower suspects a live
	// leader once in ~10^7 heartbeats, once in years; the first defaults
	// (100 ms heartbeats, 450 ms) needed only four losses in a row, and
	// the benchmark saw a false election every few minutes.
	LeaderTimeout time.Duration
	// Stagger is added to LeaderTimeout once for every member ranked
	// between this node and the leader. The member just below the leader
	// therefore notices a dead leader first and, having nobody else to ask,
	// takes over at once with one COORDINATOR broadcast before the others
	// time out: bully's best case (no ELECTION, N-2 COORDINATOR deliveries)
	// becomes the common case. Default 20 ms: well above LAN delays.
	Stagger time.Duration
	// AnswerTimeout is how long a candidate waits for an ANSWER from a
	// higher-ranked member before it declares itself leader. It must cover
	// a round trip. Default 50 ms.
	AnswerTimeout time.Duration
	// CoordinatorTimeout is how long a node that got an ANSWER waits for
	// the COORDINATOR (or a heartbeat of a sitting leader) before it starts
	// over; a random 0..AnswerTimeout is added so that nodes that gave up
	// together do not retry together. It must exceed AnswerTimeout and
	// Heartbeat. Default 250 ms.
	CoordinatorTimeout time.Duration
	// Probe makes a follower ask its leader for a heartbeat instead of
	// waiting silently for the leader timeout: once the leader has been
	// silent for Heartbeat + Probe (the heartbeat it expected is missing),
	// the follower sends it a LEADER_PROBE every Probe until it hears the
	// leader again or its leader timeout passes; a live leader answers
	// each with a heartbeat to that follower alone. A false suspicion then
	// needs the missed heartbeat and every probe's round trip lost, not a
	// run of heartbeats, so LeaderTimeout can be a fraction of a
	// heartbeat above Heartbeat: with 200 ms heartbeats, a 240 ms timeout
	// and 4 ms probes a follower sends 9 probes into a heartbeat's gap,
	// and at 5% loss on every host (a round trip lost with p ~ 0.19) a
	// live leader is suspected once in ~10^7 heartbeats. A dead leader is
	// still suspected only by the timeout: a probe's silence is no
	// evidence by itself. The probes cost nothing while heartbeats
	// arrive. It must leave room for a probe (Heartbeat + Probe below
	// LeaderTimeout). 0 (DefaultLANConfig): off, bully as before; electd
	// sets it (--probe).
	Probe time.Duration
	// Sticky keeps a sitting leader: a member that hears the claim or
	// heartbeat of a leader it outranks follows it, where bully would take
	// over (a member that starts or comes back, or one that lost its own
	// leadership to a newer term). It still stands when no leader is
	// known, and of two leaders that meet the higher-ranked one stays.
	// For an election whose every change of leader costs (mutexd's
	// central coordinator waits out a lease at each takeover): a member
	// SIGKILLed and restarted by systemd two seconds later took the
	// coordination back from its successor and waited a lease from its
	// own start, 6-7 s without a grant. Default false: bully's rule.
	Sticky bool
	// HintProbe makes a follower act on a hint that its leader's port
	// closed (core.Hint: the transport saw the leader's TCP link closed
	// or reset, or a connection to it refused, as it does at once when
	// the leader's process dies): it sends the leader a LEADER_PROBE at
	// once and every HintProbe after, HintProbes in all, and gives the
	// leader up HintProbe after the last (plus its stagger) if none was
	// answered; any frame of the leader's term cancels it. A hint is no
	// evidence (anyone on the LAN can forge a reset): it costs a live
	// leader HintProbes probes and their answers, at most once per
	// LeaderTimeout per follower. It must cover a round trip of a busy
	// host; HintProbes x HintProbe is added to nothing but the failover
	// of a dead leader whose port closed. 0 (DefaultLANConfig, electd):
	// hints ignored. mutexd's central coordinator sets it (its members'
	// syncs keep their links to it open); electd sets it with Watch.
	HintProbe time.Duration
	// Watch makes a follower keep a TCP link to its leader open, so that
	// the leader's death closes it and HintProbe has a hint to act on:
	// the follower sends the leader a LEADER_WATCH over the link
	// (core.Message.Stream) when it adopts it, and again at its first
	// Step or Tick Watch after the last, so it costs no wake-up of its
	// own. It must be below the transport's idle close of a link (half
	// its IdleTimeout, 60 s by default): WatchEvery. The leader counts
	// the frame and sends nothing back. 0 (DefaultLANConfig): no watch;
	// a member whose traffic already keeps the link open (mutexd's
	// central coordinator) needs none.
	Watch time.Duration
	// Reserve makes every write of this member's term carry the term it
	// would claim next, its reservation (State), so that its claim needs
	// no write of its own when it comes: a successor's COORDINATOR leaves
	// as it decides instead of after an fsync (10-194 ms on a busy disk,
	// docs/benchmarks/2026-12-06-claim-ahead.md). The reservation rides
	// on the writes a follower makes anyway when it adopts a newer term;
	// the claim's own catch-up write follows its COORDINATOR. A restarted
	// member claims above its reservation, which it may have sent. A
	// claim no confirmed reservation covers (its write failed, or the
	// term moved since) waits for one, so that no member leads or
	// reports a term that is on no disk; without Reserve the claim is
	// written before its COORDINATOR leaves, in the same Ready, and the
	// member takes the role and reports it at once, whether that write
	// succeeds or not. It writes the state in its second format (a build
	// without it refuses it). Every daemon sets it: electd (Algorithm),
	// orderd's sequencer (order.SequencerElection), mutexd's central
	// coordinator (central.Config.BullyConfig) and timed's Berkeley
	// master (berkeley.MasterElection); default false.
	Reserve bool
}

// WatchEvery is the Watch electd sets with HintProbe (FromOptions): a
// third of the 60 s after which the transport closes an idle link, so
// that a watch or two lost to a follower's stall does not let it close.
const WatchEvery = 20 * time.Second

// DefaultLANConfig returns the timeouts for a LAN: 50 ms heartbeats, a dead
// leader noticed after 400 ms and replaced at once by the member ranked
// just below it.
func DefaultLANConfig() Config {
	return Config{
		Heartbeat:          50 * time.Millisecond,
		LeaderTimeout:      400 * time.Millisecond,
		Stagger:            20 * time.Millisecond,
		AnswerTimeout:      50 * time.Millisecond,
		CoordinatorTimeout: 250 * time.Millisecond,
	}
}

// FromOptions is the configuration for the operator's elect.Options: the
// timeouts it sets, the others in their default proportions to the
// heartbeat and answer timeout (the coordinator timeout twice the longer of
// the two plus an answer timeout, the stagger half an answer timeout), and
// the members ranked by its priorities.
func FromOptions(members []uint32, o elect.Options) Config {
	c := DefaultLANConfig()
	if o.Heartbeat != 0 {
		c.Heartbeat = o.Heartbeat
	}
	if o.LeaderTimeout != 0 {
		c.LeaderTimeout = o.LeaderTimeout
	}
	if o.AnswerTimeout != 0 {
		c.AnswerTimeout = o.AnswerTimeout
	}
	c.Probe = o.Probe
	c.HintProbe = o.HintProbe
	if o.HintProbe != 0 {
		c.Watch = WatchEvery
	}
	if o.Heartbeat != 0 || o.AnswerTimeout != 0 {
		c.CoordinatorTimeout = max(c.AnswerTimeout, c.Heartbeat)*2 + c.AnswerTimeout
		c.Stagger = max(liveness.MinTimeout, c.AnswerTimeout/2)
	}
	for _, id := range members {
		c.Members = append(c.Members, Member{ID: id, Priority: o.Priorities[id]})
	}
	return c
}

// validate fills defaults in and rejects contradictions; self is this
// member's ID and members the Env's list.
func (c *Config) validate(self uint32, members []uint32) error {
	if self == 0 {
		return errors.New("bully: ID must be > 0")
	}
	if len(c.Members) == 0 {
		for _, id := range members {
			c.Members = append(c.Members, Member{ID: id})
		}
	}
	ranked := make([]uint32, len(c.Members))
	for i, m := range c.Members {
		ranked[i] = m.ID
	}
	if err := electcount.Roster("bully", "ranked", self, ranked, members); err != nil {
		return err
	}
	def := DefaultLANConfig()
	if err := electcount.Durations("bully",
		liveness.Duration{Name: "Heartbeat", Value: &c.Heartbeat, Default: def.Heartbeat},
		liveness.Duration{Name: "LeaderTimeout", Value: &c.LeaderTimeout, Default: def.LeaderTimeout},
		liveness.Duration{Name: "Stagger", Value: &c.Stagger, Default: def.Stagger},
		liveness.Duration{Name: "AnswerTimeout", Value: &c.AnswerTimeout, Default: def.AnswerTimeout},
		liveness.Duration{Name: "CoordinatorTimeout", Value: &c.CoordinatorTimeout, Default: def.CoordinatorTimeout}); err != nil {
		return err
	}
	if c.LeaderTimeout <= c.Heartbeat {
		return fmt.Errorf("bully: LeaderTimeout (%v) must exceed Heartbeat (%v), or every follower suspects a live leader between two heartbeats",
			c.LeaderTimeout, c.Heartbeat)
	}
	if c.CoordinatorTimeout <= c.AnswerTimeout {
		return fmt.Errorf("bully: CoordinatorTimeout (%v) must exceed AnswerTimeout (%v): the member that answered needs that long to win its own election",
			c.CoordinatorTimeout, c.AnswerTimeout)
	}
	if c.CoordinatorTimeout <= c.Heartbeat {
		return fmt.Errorf("bully: CoordinatorTimeout (%v) must exceed Heartbeat (%v): a node told to wait must be able to hear a sitting leader's heartbeat",
			c.CoordinatorTimeout, c.Heartbeat)
	}
	if c.Probe != 0 {
		if err := liveness.CheckTimeout("bully: Probe", c.Probe); err != nil {
			return err
		}
		if c.Heartbeat+c.Probe >= c.LeaderTimeout {
			return fmt.Errorf("bully: Heartbeat (%v) + Probe (%v) must be below LeaderTimeout (%v): a follower probes a silent leader only between the heartbeat it missed and its leader timeout (0 turns probing off)",
				c.Heartbeat, c.Probe, c.LeaderTimeout)
		}
	}
	if c.HintProbe != 0 {
		if err := CheckHintProbe(c.HintProbe, c.LeaderTimeout); err != nil {
			return fmt.Errorf("bully: HintProbe: %w", err)
		}
	}
	if c.Watch != 0 {
		if err := liveness.CheckTimeout("bully: Watch", c.Watch); err != nil {
			return err
		}
	}
	c.Members = slices.Clone(c.Members)
	return nil
}

// CheckHintProbe refuses a HintProbe (non-zero) that no election can use:
// below liveness.MinTimeout, or HintProbes of it not below the leader
// timeout, which would decide first anyway. For the daemons' flags too.
func CheckHintProbe(d, leaderTimeout time.Duration) error {
	if err := liveness.CheckTimeout("hint probe", d); err != nil {
		return err
	}
	if HintProbes*d >= leaderTimeout {
		return fmt.Errorf("%v x %d probes must be below the leader timeout (%v): a hint is meant to give a dead leader up sooner than its timeout (0 ignores hints)",
			d, HintProbes, leaderTimeout)
	}
	return nil
}
