package permission

import (
	"cmp"
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
	// holds the lock or asked first; no release message (seeds 002, 004).
	RicartAgrawala Variant = iota + 1
	// Lamport: request to all, acknowledged by all, a queue ordered by
	// (Lamport time, ID) at every member, release to all (seed 004).
	Lamport
)

func (v Variant) String() string {
	switch v {
	case RicartAgrawala:
		return "ricartagrawala"
	case Lamport:
		return "lamport"
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
	// DeadAfter is the silence after which a member is taken for dead
	// and no longer waited for. It must exceed MinDeadAfter (the longest
	// lease, padded for clock rates, plus FreshWindow, a heartbeat and
	// Margin): a member cut off with a lease stops renewing and its lease
	// ends before the others stop waiting for it. Zero: MinDeadAfter.
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
		MaxDriftPPM:       1000,
		Margin:            200 * time.Millisecond,
		MaxLocks:          4096,
		MaxQueue:          4096,
	}
}

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("permission: invalid config")

// pad is d stretched for clock rates that differ by MaxDriftPPM.
func (c *Config) pad(d time.Duration) time.Duration {
	return time.Duration(math.Ceil(float64(d) * (1 + 2*c.MaxDriftPPM*1e-6)))
}

// MinDeadAfter is the shortest DeadAfter that keeps the timing rule of the
// package doc: a member cut off from the others renews nothing after its
// last fresh majority, FreshWindow after it last heard them; its lease
// ends MaxLease later; the others last heard it up to a heartbeat before
// that; so they wait MaxLease + FreshWindow + a heartbeat, padded.
func (c *Config) MinDeadAfter() time.Duration {
	return c.pad(c.MaxLease+c.FreshWindow+c.HeartbeatInterval) + c.Margin
}

// RestartHold is how long a restarted member answers no request: any lease
// it granted before it went down has ended by then.
func (c *Config) RestartHold() time.Duration { return c.pad(c.MaxLease) + c.Margin }

func (c *Config) validate() error {
	if c.Variant != RicartAgrawala && c.Variant != Lamport {
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
	if err := mutex.FillDurations([]mutex.Duration{
		{Name: "HeartbeatInterval", Value: &c.HeartbeatInterval, Default: def.HeartbeatInterval},
		{Name: "FreshWindow", Value: &c.FreshWindow},
		{Name: "DeadAfter", Value: &c.DeadAfter},
		{Name: "RetryInterval", Value: &c.RetryInterval, Default: def.RetryInterval},
		{Name: "MaxLease", Value: &c.MaxLease, Default: def.MaxLease},
		{Name: "MinLease", Value: &c.MinLease, Default: def.MinLease},
		{Name: "Margin", Value: &c.Margin, Default: def.Margin},
	}); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.FreshWindow == 0 {
		c.FreshWindow = c.HeartbeatInterval * 3 / 2
	}
	c.MaxDriftPPM = cmp.Or(c.MaxDriftPPM, def.MaxDriftPPM)
	c.MaxLocks = cmp.Or(c.MaxLocks, def.MaxLocks)
	c.MaxQueue = cmp.Or(c.MaxQueue, def.MaxQueue)
	if err := mutex.CheckBounds(mutex.Bounds{
		MinLease: c.MinLease, MaxLease: c.MaxLease, LongLease: "a dead member is waited for longer than a lease",
		MaxDriftPPM: c.MaxDriftPPM, MaxLocks: c.MaxLocks, MaxQueue: c.MaxQueue,
	}); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.FreshWindow <= c.HeartbeatInterval {
		return fmt.Errorf("%w: FreshWindow %v must exceed HeartbeatInterval %v, or a live majority looks stale between two heartbeats", ErrConfig, c.FreshWindow, c.HeartbeatInterval)
	}
	if c.DeadAfter == 0 {
		c.DeadAfter = c.MinDeadAfter()
	}
	if c.DeadAfter < c.MinDeadAfter() {
		return fmt.Errorf("%w: DeadAfter %v is below %v (lease + fresh window + heartbeat, padded): a member cut off while it holds a lease would be given up before its lease ends", ErrConfig, c.DeadAfter, c.MinDeadAfter())
	}
	if err := mutex.CheckTimers([]mutex.Timer{
		{Name: "HeartbeatInterval", Value: c.HeartbeatInterval}, {Name: "DeadAfter", Value: c.DeadAfter},
		{Name: "RetryInterval", Value: c.RetryInterval}, {Name: "FreshWindow", Value: c.FreshWindow},
	}); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}
