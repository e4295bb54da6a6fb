package permission

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/mutex"
)

// Variant is the algorithm a Core runs.
type Variant uint8

// Variants.
const (
	// RicartAgrawala: request to all, replies deferred by the member that
	// holds the lock or asked first; no release message (the notes').
	RicartAgrawala Variant = iota + 1
	// Lamport: request to all, acknowledged by all, a queue ordered by
	// (Lamport time, ID) at every member, release to all (the notes').
	Lamport
	// Bakery: Lamport's bakery adapted to message passing, as the notes
	// do before rejecting it: each member serves its own num and
	// choosing of every lock, and a member that wants a lock reads every
	// other member's num (the doorway), then every choosing, then every
	// num against its ticket: three reads, 6(N-1) messages (bakery.go).
	Bakery
)

func (v Variant) String() string {
	switch v {
	case RicartAgrawala:
		return "ricartagrawala"
	case Lamport:
		return "lamport"
	case Bakery:
		return "bakery"
	}
	return fmt.Sprintf("variant(%d)", uint8(v))
}

// Config configures a core. Zero durations take the defaults of
// DefaultLANConfig; DeadAfter is derived from the others when zero. Times
// are durations of the member's own clock.
type Config struct {
	Variant Variant
	// ID is this member's ID; Members every member's, this one included
	// (at most MaxMembers). Required.
	ID      uint32
	Members []uint32

	// HeartbeatInterval is how often a member says it is alive (default
	// 1 s): all the traffic of an idle cluster, N-1 frames per member.
	HeartbeatInterval time.Duration
	// FreshWindow: a grant or a renewal needs a majority of the members
	// (this one included) heard within it (default 1.5 heartbeats). A
	// member cut off from the majority stops renewing within it.
	FreshWindow time.Duration
	// SuspectAfter is the silence after which a member is suspected: a
	// member that cannot hold a lock by this member's leave (it was given
	// none, or said that it asks for nothing since) is no longer waited
	// for. It must be at least MinSuspectAfter (a stall of this member's
	// own loop, which it notices after StallAfter, plus a heartbeat and
	// Margin: a member that stopped rejoins before the others suspect
	// it). Zero: MinSuspectAfter (3.2 s with 1 s heartbeats).
	SuspectAfter time.Duration
	// DeadAfter is the silence after which a member that may hold a lock
	// by this member's leave (it was answered, and has not said since that
	// its request ended) is no longer waited for. It must be at least
	// MinDeadAfter (the longest lease and a heartbeat, padded for clock
	// rates, plus Margin): a holder's lease ends at most MaxLease after it
	// last heard a majority, and the others heard it at most a heartbeat
	// before that. Zero: MinDeadAfter (3.8 s with a 3 s lease).
	DeadAfter time.Duration
	// RetryInterval is how long a waiting member goes without the answer
	// it needs from a member before it asks again (default 500 ms): it
	// repairs lost requests, replies and releases.
	RetryInterval time.Duration
	// MaxLease is the longest lease, and the default one (default 3 s).
	// A member that restarts answers nobody for this long (padded): it
	// cannot know whether its client still holds a lease it granted.
	MaxLease time.Duration
	// MinLease is the shortest lease a request may ask for (default
	// 100 ms).
	MinLease time.Duration
	// MaxDriftPPM bounds how much two members' clocks may differ in rate
	// (default 1000 ppm): leases are padded by it.
	MaxDriftPPM float64
	// Margin pads the timing rules for delays and scheduling (default
	// 200 ms).
	Margin time.Duration
	// MaxLocks bounds the locks this member keeps state for (default
	// 4096); MaxQueue the requests waiting at this member (default 4096).
	MaxLocks, MaxQueue int
	// Authenticated says that frames carry a MAC of the cluster key
	// (mutex.Options.Authenticated): a request in a member's name comes
	// from the member, and an answer about a lock it has no request of
	// open is a late copy, counted and left alone. Default false: such an
	// answer may be to a request forged in its name, and is disowned
	// (answer.go, disown).
	Authenticated bool

	// Persisted is what the previous run left in Ready.State (nil at the
	// first start).
	Persisted []byte
	// Lamport is the node's Lamport clock (core.Env.Lamport); nil: the
	// core's own.
	Lamport *clock.Lamport
}

// MaxMembers is the largest cluster: a fence keeps the requester's index
// in its low 16 bits.
const MaxMembers = 1 << 16

// DefaultLANConfig returns the defaults for a LAN. Set Variant, ID and
// Members.
func DefaultLANConfig() Config {
	return Config{
		HeartbeatInterval: time.Second,
		RetryInterval:     500 * time.Millisecond,
		MaxLease:          3 * time.Second,
		MinLease:          100 * time.Millisecond,
		MaxDriftPPM:       mutex.DefaultMaxDriftPPM,
		Margin:            200 * time.Millisecond,
		MaxLocks:          mutex.DefaultMaxLocks,
		MaxQueue:          mutex.DefaultMaxQueue,
	}
}

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("permission: invalid config")

// pad is d stretched for clock rates that differ by MaxDriftPPM.
func (c *Config) pad(d time.Duration) time.Duration {
	return time.Duration(math.Ceil(float64(d) * (1 + 2*c.MaxDriftPPM*1e-6)))
}

// unpad is d shrunk for clock rates that differ by MaxDriftPPM: a duration
// another member measured on its clock is at least this long on this
// member's.
func (c *Config) unpad(d time.Duration) time.Duration {
	return time.Duration(math.Floor(float64(d) * (1 - 2*c.MaxDriftPPM*1e-6)))
}

// RelayAfter is how long a member goes without a frame received directly
// from another before it also sends its frames for that member through
// relays (RelayFanout other members it hears): 1.5 heartbeats, a heartbeat
// and a half of silence on a link that works only when a heartbeat is lost
// (the relayed copies then only add redundancy). A member that has not
// heard this one directly for as long (its relayed frames say so) is
// relayed to as well; a request sent again for want of an answer, and an
// answer to a frame that came through a relay, always go both ways.
func (c *Config) RelayAfter() time.Duration { return c.HeartbeatInterval * 3 / 2 }

// RelayFanout is how many members a frame for a member that is not heard
// directly passes through: two, so that one lost copy (or a relay that
// cannot reach the target either) does not lose the frame.
const RelayFanout = 2

// ConfirmSlack is how long after its own timeout for a silent member a
// member asks the others whether they heard it (PermProbe): the answers are
// measured from the probe, so a probe sent the instant the asker's own
// silence reached the timeout would find the others, who last heard the
// member a network delay later, a hair short of it. A twentieth of Margin
// (10 ms with the defaults): one probe round usually decides.
func (c *Config) ConfirmSlack() time.Duration { return max(c.Margin/20, time.Millisecond) }

// MinDeadAfter is the shortest DeadAfter that keeps the timing rule of the
// package doc: a holder's lease, granted or renewed, ends at most MaxLease
// after the last instant it heard a majority (the lease is capped there);
// a holder is busy, and beats every BusyHeartbeat until it crashes, stops
// or is cut off, so a member that last heard it at h, having missed at
// most BusyBeatsCovered-1 of its last heartbeats, knows every lease it
// holds has ended by h + MaxLease + BusyBeatsCovered busy heartbeats,
// padded: 3.8 s with a 3 s lease and 1 s heartbeats.
func (c *Config) MinDeadAfter() time.Duration {
	return c.pad(c.MaxLease+BusyBeatsCovered*c.BusyHeartbeat()) + c.Margin
}

// BusyHeartbeat is the heartbeat interval of a member that holds or asks
// for a lock (or whose lease of an earlier life may still run): a fifth
// of HeartbeatInterval, so that the others, who must wait out its lease
// from when they last heard it, are never more than that behind. Idle
// members beat every HeartbeatInterval.
func (c *Config) BusyHeartbeat() time.Duration { return max(c.HeartbeatInterval/5, time.Millisecond) }

// IdleNotice is how long after its last request ended a member that said it
// was busy says that it no longer is (a heartbeat, Busy false), unless it
// asks again first: a client that takes the lock again at once (the usual
// loop of acquire, work, release) costs no heartbeat round per entry, and a
// member that crashes within IdleNotice of its release is waited for
// DeadAfter instead of SuspectAfter. A tenth of BusyHeartbeat: 20 ms with 1 s
// heartbeats.
func (c *Config) IdleNotice() time.Duration { return c.BusyHeartbeat() / 10 }

// ReleaseHold is how long Lamport's release to all, once the client has
// its answer, waits for the same member's next request for the lock, to
// travel with it in one frame (wire.KindLamportRequeue): a client that
// takes the lock again at once (acquire, work, release, in a loop) costs
// N-1 frames per entry for the release and the request, not 2(N-1), and
// every other member wakes once for both. A quarter of IdleNotice: 5 ms
// with 1 s heartbeats, and the release leaves before the idle notice.
// Holding it back delays no entry: a member holds it only while no other
// member's request for the lock is in its queue, and any frame it takes
// (another member's request among them, whose acknowledgement is stamped
// after the release) makes it leave first.
func (c *Config) ReleaseHold() time.Duration { return c.IdleNotice() / 4 }

// BusyBeatsCovered is how many busy heartbeats DeadAfter covers: the last
// ones of a holder may be lost, all but one, and its lease still ends
// before it is given up.
const BusyBeatsCovered = 3

// StallAfter is the gap between two calls of the core (it asks for a Tick
// at least every heartbeat) after which a member takes its own loop for
// stopped: the others may have suspected it meanwhile, so it gives up what
// it held and rejoins.
func (c *Config) StallAfter() time.Duration { return 2 * c.HeartbeatInterval }

// MinSuspectAfter is the shortest SuspectAfter: a member given up by the
// others was silent to a majority for it, so its own loop stalled for
// StallAfter or more (it noticed, and rejoined before it answers or asks
// again), or it heard no majority for SuspectAfter less a heartbeat and
// Margin (it took itself for cut off, and rejoins). Silence at one member
// alone (a broken link) gives nobody up: the package doc, "Links".
func (c *Config) MinSuspectAfter() time.Duration {
	return c.StallAfter() + c.HeartbeatInterval + c.Margin
}

// RestartHold is how long a restarted member answers no request: any lease
// it granted before it went down has ended by then.
func (c *Config) RestartHold() time.Duration { return c.pad(c.MaxLease) + c.Margin }

func (c *Config) validate() error {
	if c.Variant != RicartAgrawala && c.Variant != Lamport && c.Variant != Bakery {
		return fmt.Errorf("%w: variant %v", ErrConfig, c.Variant)
	}
	if err := liveness.CheckMembers(c.ID, c.Members); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if len(c.Members) > MaxMembers {
		return fmt.Errorf("%w: %d members, at most %d", ErrConfig, len(c.Members), MaxMembers)
	}
	c.Members = slices.Clone(c.Members)
	slices.Sort(c.Members)
	def := DefaultLANConfig()
	if err := liveness.FillDurations(
		liveness.Duration{Name: "HeartbeatInterval", Value: &c.HeartbeatInterval, Default: def.HeartbeatInterval},
		liveness.Duration{Name: "FreshWindow", Value: &c.FreshWindow},
		liveness.Duration{Name: "SuspectAfter", Value: &c.SuspectAfter},
		liveness.Duration{Name: "DeadAfter", Value: &c.DeadAfter},
		liveness.Duration{Name: "RetryInterval", Value: &c.RetryInterval, Default: def.RetryInterval},
		liveness.Duration{Name: "MaxLease", Value: &c.MaxLease, Default: def.MaxLease},
		liveness.Duration{Name: "MinLease", Value: &c.MinLease, Default: def.MinLease},
		liveness.Duration{Name: "Margin", Value: &c.Margin, Default: def.Margin},
	); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.FreshWindow == 0 {
		c.FreshWindow = c.HeartbeatInterval * 3 / 2
	}
	mutex.FillLimits(&c.MaxDriftPPM, &c.MaxLocks, &c.MaxQueue)
	if err := mutex.CheckBounds(mutex.Bounds{
		MinLease: c.MinLease, MaxLease: c.MaxLease, LongLease: "a dead member is waited for longer than a lease",
		MaxDriftPPM: c.MaxDriftPPM, MaxLocks: c.MaxLocks, MaxQueue: c.MaxQueue,
	}); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.FreshWindow <= c.HeartbeatInterval {
		return fmt.Errorf("%w: FreshWindow %v must exceed HeartbeatInterval %v, or a live majority looks stale between two heartbeats", ErrConfig, c.FreshWindow, c.HeartbeatInterval)
	}
	if c.SuspectAfter == 0 {
		c.SuspectAfter = c.MinSuspectAfter()
	}
	if c.SuspectAfter < c.MinSuspectAfter() {
		return fmt.Errorf("%w: SuspectAfter %v is below %v (two heartbeats of stall, a heartbeat and the margin): a member could be suspected before it notices that it stopped", ErrConfig, c.SuspectAfter, c.MinSuspectAfter())
	}
	if c.DeadAfter == 0 {
		c.DeadAfter = max(c.MinDeadAfter(), c.SuspectAfter)
	}
	if c.DeadAfter < c.MinDeadAfter() || c.DeadAfter < c.SuspectAfter {
		return fmt.Errorf("%w: DeadAfter %v is below %v (lease + heartbeat, padded) or SuspectAfter %v: a member cut off while it holds a lease would be given up before its lease ends", ErrConfig, c.DeadAfter, c.MinDeadAfter(), c.SuspectAfter)
	}
	if err := liveness.CheckTimers(
		liveness.Duration{Name: "HeartbeatInterval", Value: &c.HeartbeatInterval}, liveness.Duration{Name: "SuspectAfter", Value: &c.SuspectAfter},
		liveness.Duration{Name: "DeadAfter", Value: &c.DeadAfter}, liveness.Duration{Name: "RetryInterval", Value: &c.RetryInterval},
		liveness.Duration{Name: "FreshWindow", Value: &c.FreshWindow},
	); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}
