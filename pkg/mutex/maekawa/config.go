package maekawa

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/mutex"
)

// Config configures a voting core. Zero durations take the defaults of
// DefaultLANConfig. Times are durations on the member's own clock.
type Config struct {
	// ID is this member's ID; Members every member, this one included,
	// the same list on every member. Required.
	ID      uint32
	Members []uint32

	// Quorum selects the majority quorum of coordinators (the notes';
	// mutexd's majority, MajorityFactory) when > 0: every member is a coordinator, a
	// request asks all of them and holds with Quorum grants (it must be
	// more than half the members, or two holders could both reach it);
	// coordinators queue exclusive requests as Maekawa's voters do and
	// deny shared ones they cannot vote for now (the reader retries after
	// a randomized backoff). 0: Maekawa (the notes'): the
	// voting set is a cross of the grid (grid.go), every voter of it must
	// vote, voters queue requests by (Lamport time, ID), and Sanders'
	// inquire, relinquish and failed keep the notes' deadlock from
	// happening.
	Quorum int
	// Coordinators are the members that vote in the majority quorum
	// (default: every member); the others only request. Quorum counts
	// among them.
	Coordinators []uint32
	// VotingSets, when set, are Maekawa's voting sets by member (every
	// member has one, any two intersect), instead of the grid's crosses:
	// the notes' worked examples. No set is replaced when a member of it
	// is down: the requester waits.
	VotingSets map[uint32][]uint32
	// Textbook drops Sanders' correction (no inquire, relinquish or
	// failed): the notes' algorithm, which can deadlock. Only for the
	// scenario that shows the notes' deadlock; never in mutexd.
	Textbook bool
	// TraceFrames reports every vote frame this member sends as an
	// EventFrame, those to itself too (its voter and its requester, which
	// cost no message): for scenario scripts that show the whole protocol
	// in the order it ran.
	TraceFrames bool
	// Shared offers shared requests (the majority quorum only): a
	// coordinator votes for any number of shared requests together, never
	// beside an exclusive one, and denies new shared ones while an
	// exclusive request waits in its queue, so a stream of readers cannot
	// starve a writer.
	Shared bool
	// Forgetful: a voter that restarts has forgotten whom it voted for
	// and votes again at once. Only for the notes' P_v experiment
	// (its "forget" arm: exclusion can then be violated). By default a
	// voter that restarts also keeps its votes in memory only, but votes
	// on no lock until a whole stretched MaxLease has passed since it
	// started: any vote it gave before is over by then (doc.go).
	Forgetful bool
	// PersistVotes writes, before each locked leaves, which locks have a
	// vote outstanding (a disk write per vote): a voter that restarts then
	// holds off on those locks only. The P_v experiment's "persisted" arm,
	// the design before the restart hold; slower (an fsync on every entry).
	PersistVotes bool

	// HeartbeatInterval is how often a member says it is alive (default
	// 1.25 s); DeadAfter the silence after which it is taken for down
	// (default 3 s: no longer than a stretched MaxLease, so that a
	// crashed holder's own voter is left out of the crosses by the time
	// its votes end). Maekawa then leaves it out of the crosses it asks;
	// the majority quorum needs no detector (any Quorum answers), but a
	// voter drops the queued requests of a member taken for down. Any
	// frame from a member counts as a heartbeat. The default beats just
	// often enough that one heartbeat lost, and the next half a second
	// late, never make a live member look down: (3 s - 0.5 s) / 2.
	// Heartbeats are all an idle member sends (to every other member: 8
	// frames per node per beat, in and out, at 5 members), so they are
	// most of its idle traffic. (ConfigFor: mutexd's majority quorum beats
	// every 2 s and waits 4.5 s.)
	HeartbeatInterval time.Duration
	DeadAfter         time.Duration
	// AttemptTimeout is how long a request's round (votes, then the
	// commit of its fence) may take before the requester gives back what
	// it got and tries again (default 500 ms) when its voters answer at
	// once (a shared request); an exclusive request may wait in voters'
	// queues for a lease more, and asks the voters whose vote it lacks
	// again every AttemptTimeout meanwhile (one may have restarted).
	AttemptTimeout time.Duration
	// BackoffBase and BackoffMax bound the randomized exponential backoff
	// of a retry: uniform in [BackoffBase/2, min(BackoffMax,
	// BackoffBase<<tries)] (defaults 10 ms, 320 ms).
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// Deprecated: WriterWindow does nothing. It was how long a majority
	// coordinator denied new readers after a writer's request; writers now
	// wait in the coordinators' queues, and a queued writer is what holds
	// new readers back (Shared). A configuration that still sets it loads
	// (a negative value is refused as before), and New reports it ignored:
	// an EventConfigIgnored event, which mutexd logs, and the
	// config_ignored counter.
	WriterWindow time.Duration
	// MaxLease is the longest lease (default 3 s) and the default one;
	// MinLease the shortest a request may ask for (default 100 ms).
	MaxLease time.Duration
	MinLease time.Duration
	// MaxDriftPPM bounds how much faster or slower two members' clocks
	// run (default 1000 ppm): a voter keeps its vote for the holder's
	// lease stretched by twice it, plus Margin (default 20 ms).
	MaxDriftPPM float64
	Margin      time.Duration
	// MaxLocks bounds the locks a voter keeps (default 4096; idle ones
	// are folded into a floor fence when it is full); MaxQueue the
	// requests waiting at this member for its own clients (default 4096).
	MaxLocks int
	MaxQueue int

	// Persisted is the state the previous run left in Ready.State.
	Persisted []byte
	// Rand draws backoffs and the first attempt number. Nil: seeded from
	// ID (deterministic).
	Rand *rand.Rand
	// Lamport is the node's Lamport clock (core.Env.Lamport): a request's
	// priority is a stamp from it. Nil: the core's own.
	Lamport *clock.Lamport
}

// DefaultLANConfig returns the defaults for a LAN. Set ID and Members.
func DefaultLANConfig() Config {
	return Config{
		HeartbeatInterval: 1250 * time.Millisecond,
		DeadAfter:         3000 * time.Millisecond,
		AttemptTimeout:    500 * time.Millisecond,
		BackoffBase:       10 * time.Millisecond,
		BackoffMax:        320 * time.Millisecond,
		MaxLease:          3 * time.Second,
		MinLease:          100 * time.Millisecond,
		MaxDriftPPM:       mutex.DefaultMaxDriftPPM,
		Margin:            20 * time.Millisecond,
		MaxLocks:          mutex.DefaultMaxLocks,
		MaxQueue:          mutex.DefaultMaxQueue,
	}
}

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("maekawa: invalid config")

func (c *Config) validate() error {
	if err := liveness.CheckMembers(c.ID, c.Members); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if len(c.Members) > 4096 {
		return fmt.Errorf("%w: %d members: at most 4096", ErrConfig, len(c.Members))
	}
	c.Members = slices.Sorted(slices.Values(c.Members))
	if len(c.Coordinators) == 0 {
		c.Coordinators = c.Members
	} else if c.Quorum == 0 {
		return fmt.Errorf("%w: Coordinators are for the majority quorum (Quorum > 0)", ErrConfig)
	}
	c.Coordinators = slices.Compact(slices.Sorted(slices.Values(c.Coordinators)))
	for _, m := range c.Coordinators {
		if _, ok := slices.BinarySearch(c.Members, m); !ok {
			return fmt.Errorf("%w: coordinator %d is not a member", ErrConfig, m)
		}
	}
	if n := len(c.Coordinators); c.Quorum != 0 && (2*c.Quorum <= n || c.Quorum > n) {
		return fmt.Errorf("%w: Quorum %d of %d coordinators: want more than half, at most all (m > n/2)", ErrConfig, c.Quorum, n)
	}
	if c.VotingSets != nil {
		if c.Quorum != 0 {
			return fmt.Errorf("%w: VotingSets are Maekawa's (Quorum 0)", ErrConfig)
		}
		sets := map[uint32][]uint32{}
		for _, m := range c.Members {
			set := slices.Compact(slices.Sorted(slices.Values(c.VotingSets[m])))
			if len(set) == 0 {
				return fmt.Errorf("%w: member %d has no voting set", ErrConfig, m)
			}
			for _, v := range set {
				if _, ok := slices.BinarySearch(c.Members, v); !ok {
					return fmt.Errorf("%w: voting set of %d names %d, not a member", ErrConfig, m, v)
				}
			}
			sets[m] = set
		}
		for a, sa := range sets {
			for b, sb := range sets {
				if !slices.ContainsFunc(sa, func(v uint32) bool { _, ok := slices.BinarySearch(sb, v); return ok }) {
					return fmt.Errorf("%w: the voting sets of %d and %d do not intersect: two requests could both hold", ErrConfig, a, b)
				}
			}
		}
		c.VotingSets = sets
	}
	if c.Forgetful && c.PersistVotes {
		return fmt.Errorf("%w: Forgetful and PersistVotes: a voter either forgets its votes or writes them", ErrConfig)
	}
	if c.Shared && c.Quorum == 0 {
		return fmt.Errorf("%w: shared requests are offered by the majority quorum only", ErrConfig)
	}
	def := DefaultLANConfig()
	if err := liveness.FillDurations(
		liveness.Duration{Name: "HeartbeatInterval", Value: &c.HeartbeatInterval, Default: def.HeartbeatInterval},
		liveness.Duration{Name: "DeadAfter", Value: &c.DeadAfter, Default: def.DeadAfter},
		liveness.Duration{Name: "AttemptTimeout", Value: &c.AttemptTimeout, Default: def.AttemptTimeout},
		liveness.Duration{Name: "BackoffBase", Value: &c.BackoffBase, Default: def.BackoffBase},
		liveness.Duration{Name: "BackoffMax", Value: &c.BackoffMax, Default: def.BackoffMax},
		liveness.Duration{Name: "MaxLease", Value: &c.MaxLease, Default: def.MaxLease},
		liveness.Duration{Name: "MinLease", Value: &c.MinLease, Default: def.MinLease},
		liveness.Duration{Name: "Margin", Value: &c.Margin, Default: def.Margin},
		liveness.Duration{Name: "WriterWindow", Value: &c.WriterWindow},
	); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := liveness.CheckTimers(
		liveness.Duration{Name: "HeartbeatInterval", Value: &c.HeartbeatInterval}, liveness.Duration{Name: "DeadAfter", Value: &c.DeadAfter},
		liveness.Duration{Name: "AttemptTimeout", Value: &c.AttemptTimeout}, liveness.Duration{Name: "BackoffBase", Value: &c.BackoffBase}, liveness.Duration{Name: "BackoffMax", Value: &c.BackoffMax},
	); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	mutex.FillLimits(&c.MaxDriftPPM, &c.MaxLocks, &c.MaxQueue)
	if err := mutex.CheckBounds(mutex.Bounds{
		MinLease: c.MinLease, MaxLease: c.MaxLease, LongLease: "a voter keeps its vote, and a restarted voter waits, that long",
		MaxDriftPPM: c.MaxDriftPPM, MaxLocks: c.MaxLocks, LocksCap: 65535, MaxQueue: c.MaxQueue,
	}); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	switch {
	case c.DeadAfter <= c.HeartbeatInterval:
		return fmt.Errorf("%w: DeadAfter %v must exceed HeartbeatInterval %v", ErrConfig, c.DeadAfter, c.HeartbeatInterval)
	case c.BackoffMax < c.BackoffBase:
		return fmt.Errorf("%w: BackoffMax %v is below BackoffBase %v", ErrConfig, c.BackoffMax, c.BackoffBase)
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(uint64(c.ID), 0x6d61656b)) // "maek"
	}
	if c.Lamport == nil {
		c.Lamport = new(clock.Lamport)
	}
	return nil
}

// stretch is how long a voter keeps a vote committed for a lease of d, on
// its own clock: the holder counts d on its clock from before the voter
// heard of it, and the clocks' rates differ by at most MaxDriftPPM.
func (c *Config) stretch(d time.Duration) time.Duration {
	return time.Duration(math.Ceil(float64(d)*(1+2*c.MaxDriftPPM*1e-6))) + c.Margin
}
