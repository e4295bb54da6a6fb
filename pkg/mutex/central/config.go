package central

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/mutex"
)

// Config configures a member's core. The member's ID, the members, the
// clock at start, the random source and the persisted state come from
// core.Env. Zero durations take the defaults of DefaultLANConfig. Times are
// durations of the member's own clock (the driver's monotonic reading).
type Config struct {
	// Variant is the algorithm: Coordinator (the zero value: the notes'
	// centralized algorithm, a FIFO queue per lock) or TokenAsk (the
	// notes' centralised token: requests stamped with vector clocks,
	// granted in their causal order).
	Variant Variant

	// Election builds the coordinator election from the Env this core
	// hands it: this member's, with State the election's own persisted
	// state (kept inside this core's). The elected leader coordinates.
	// Nil: bully with the timers of Config.BullyConfig (a heartbeat every
	// BeatInterval, a leader suspected after DeadAfter).
	Election func(env core.Env) (elect.Elector, error)

	// BeatInterval is how often the coordinator calls for its members'
	// support (a beat, answered by every member that follows it with a
	// sync): with the election's heartbeats, all an idle cluster sends.
	// Default: a third of MaxLease, at most 1 s (mutexd: --heartbeat, as
	// long).
	BeatInterval time.Duration
	// ConfirmWindow is how old the majority's support may be for the
	// coordinator to grant or renew on it (default 5/4 of BeatInterval: a
	// beat late by a quarter of an interval still does); older, it calls
	// for support at once and grants when a majority answered. At most
	// half of MaxLease.
	ConfirmWindow time.Duration
	// LeaseSlack: a lease granted or renewed on support of age a is cut by
	// a - LeaseSlack when that is positive, so that it ends within
	// MaxLease + LeaseSlack of the support: that is what lets a new
	// coordinator count the old one's leases from when its majority last
	// backed it (Hold). Default half of BeatInterval: a lease is cut by at
	// most ConfirmWindow - LeaseSlack (3/4 of a beat), and a takeover
	// waits at most MaxLease + LeaseSlack after the last beat answered. At
	// most ConfirmWindow.
	LeaseSlack time.Duration
	// DeadAfter is how long the coordinator waits for a member's sync
	// before it drops the member's waiting requests (default 5/2 of
	// BeatInterval: two beats or answers lost): a crashed member must not be
	// granted a lock nobody will use. Its grants are not taken back: they
	// end with their lease.
	DeadAfter time.Duration
	// HintProbe is the default election's answer to a hint that the
	// coordinator's port closed (bully.Config.HintProbe): a follower
	// whose link to its coordinator closes (the kernel closes a killed
	// daemon's sockets at once) probes it every HintProbe,
	// bully.HintProbes times, and elects a successor if none is answered,
	// instead of waiting DeadAfter of silence. Default 40 ms (a dead
	// coordinator given up 200 ms after its port closed, plus the
	// stagger); at most DeadAfter / (2 x bully.HintProbes). It changes
	// when an election starts, never what a successor waits for before
	// it grants.
	HintProbe time.Duration
	// MaxLease is the longest lease a grant carries (default 3 s), and
	// the default lease. A new coordinator waits up to MaxLease (padded)
	// before its first grant: from the latest instant at which a member of
	// its first majority backed an older coordinator, unless every member
	// re-announced its grants.
	MaxLease time.Duration
	// MinLease is the shortest lease a request may ask for (default
	// 100 ms).
	MinLease time.Duration
	// MaxPeerLease is the longest lease any member whose frames reach this
	// core may hold: the longest --lease among the members, at most
	// mutex.MaxLeaseLimit. A member's grants are bounded by its own
	// --lease (it refuses to ask for more), so a lease re-announced to a
	// new coordinator longer than this was granted to nobody: it is kept
	// for MaxPeerLease only (EventLeaseAboveCluster). Set, it bounds every
	// member: the operator says no member runs a longer --lease (a
	// simulation, a cluster without agreement whose members run different
	// leases: set their longest, or a real member's hold ends early and
	// its lock is granted inside it, two holders). Zero (mutexd): MaxLease,
	// for the members whose configuration agreement compared and found
	// equal to this member's (core.Message.Checked on the sync: their
	// --lease is this one's) and for them only; a member admitted
	// unchecked (a build without agreement, which announces nothing) may
	// run any --lease, and its re-announced hold is kept whole up to
	// mutex.MaxLeaseLimit (EventLeaseAboveMax).
	MaxPeerLease time.Duration
	// peerLeaseSet: MaxPeerLease was set, and bounds every member's
	// holds, checked or not.
	peerLeaseSet bool
	// Authenticated says that frames carry a MAC of the cluster key
	// (mutex.Options.Authenticated): nobody but a member sends in a
	// member's name. Only the warnings read it: without a key, a number
	// no member sends may be forged, and they say so.
	Authenticated bool
	// MaxDriftPPM bounds how much faster or slower than each other two
	// members' clocks may run (default 1000 ppm): the coordinator's view
	// of a lease and the Hold are padded by it.
	MaxDriftPPM float64
	// HoldMargin is added to every padded duration for rounding and
	// scheduling (default 20 ms).
	HoldMargin time.Duration
	// MaxLocks bounds the locks in the coordinator's queue (default 4096).
	MaxLocks int
	// MaxQueue bounds the requests the coordinator queues, all members
	// (default 4096; each other member at most half of it split among
	// them), and the requests waiting at this member (at most
	// wire.MaxSyncEntries: a sync lists them all).
	MaxQueue int
}

// Variant is the algorithm a Core runs.
type Variant uint8

// Variants.
const (
	// Coordinator is the notes' centralized algorithm: one elected
	// coordinator grants each lock to its queue's head (mutexd
	// --algorithm central).
	Coordinator Variant = iota
	// TokenAsk is the notes' centralised token ("token-asking"): the
	// coordinator keeps each lock's token and the pending requests, each
	// stamped with its member's vector clock, and hands the token only to
	// a request whose causal predecessors have all been served (mutexd
	// --algorithm tokenask; tokenask.go).
	TokenAsk
)

func (v Variant) String() string {
	switch v {
	case Coordinator:
		return Name
	case TokenAsk:
		return TokenAskName
	}
	return fmt.Sprintf("variant(%d)", uint8(v))
}

// DefaultLANConfig returns the defaults for a LAN.
func DefaultLANConfig() Config {
	return Config{
		MaxLease:    3 * time.Second,
		MinLease:    100 * time.Millisecond,
		MaxDriftPPM: mutex.DefaultMaxDriftPPM,
		HoldMargin:  20 * time.Millisecond,
		MaxLocks:    mutex.DefaultMaxLocks,
		MaxQueue:    mutex.DefaultMaxQueue,
	}
}

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("central: invalid config")

func (c *Config) validate() error {
	if c.Variant != Coordinator && c.Variant != TokenAsk {
		return fmt.Errorf("%w: variant %v", ErrConfig, c.Variant)
	}
	def := DefaultLANConfig()
	if err := liveness.FillDurations(
		liveness.Duration{Name: "MaxLease", Value: &c.MaxLease, Default: def.MaxLease},
		liveness.Duration{Name: "MinLease", Value: &c.MinLease, Default: def.MinLease},
		liveness.Duration{Name: "HoldMargin", Value: &c.HoldMargin, Default: def.HoldMargin},
	); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := liveness.FillDurations(
		liveness.Duration{Name: "BeatInterval", Value: &c.BeatInterval, Default: DefaultBeat(c.MaxLease)},
		liveness.Duration{Name: "ConfirmWindow", Value: &c.ConfirmWindow},
		liveness.Duration{Name: "DeadAfter", Value: &c.DeadAfter},
		liveness.Duration{Name: "LeaseSlack", Value: &c.LeaseSlack},
		liveness.Duration{Name: "HintProbe", Value: &c.HintProbe},
	); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.ConfirmWindow == 0 {
		c.ConfirmWindow = c.BeatInterval * 5 / 4
	}
	if c.DeadAfter == 0 {
		c.DeadAfter = c.BeatInterval * 5 / 2
	}
	if c.LeaseSlack == 0 {
		c.LeaseSlack = c.BeatInterval / 2
	}
	if c.HintProbe == 0 {
		c.HintProbe = min(DefaultHintProbe, c.DeadAfter/(2*bully.HintProbes))
	}
	if err := liveness.CheckTimers(
		liveness.Duration{Name: "ConfirmWindow", Value: &c.ConfirmWindow}, liveness.Duration{Name: "BeatInterval", Value: &c.BeatInterval}, liveness.Duration{Name: "DeadAfter", Value: &c.DeadAfter},
	); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c.peerLeaseSet = c.MaxPeerLease != 0
	if c.MaxPeerLease == 0 {
		c.MaxPeerLease = c.MaxLease
	}
	if c.MaxPeerLease < c.MaxLease || c.MaxPeerLease > mutex.MaxLeaseLimit {
		return fmt.Errorf("%w: MaxPeerLease %v: want MaxLease %v to %v (the longest lease of any member, this one included)",
			ErrConfig, c.MaxPeerLease, c.MaxLease, mutex.MaxLeaseLimit)
	}
	mutex.FillLimits(&c.MaxDriftPPM, &c.MaxLocks, &c.MaxQueue)
	if err := mutex.CheckBounds(mutex.Bounds{
		MinLease: c.MinLease, MaxLease: c.MaxLease, LongLease: "a new coordinator waits one lease before granting",
		MaxDriftPPM: c.MaxDriftPPM, MaxLocks: c.MaxLocks, MaxQueue: c.MaxQueue,
	}); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	switch {
	case c.BeatInterval >= c.ConfirmWindow:
		return fmt.Errorf("%w: BeatInterval %v must be shorter than ConfirmWindow %v, or the support of a majority lapses between two beats", ErrConfig, c.BeatInterval, c.ConfirmWindow)
	case c.LeaseSlack > c.ConfirmWindow:
		return fmt.Errorf("%w: LeaseSlack %v must be at most ConfirmWindow %v (a longer slack only lengthens a takeover)", ErrConfig, c.LeaseSlack, c.ConfirmWindow)
	case c.ConfirmWindow > c.MaxLease/2:
		return fmt.Errorf("%w: ConfirmWindow %v must be at most half of MaxLease %v: a lease is cut by the age of the support it is granted on", ErrConfig, c.ConfirmWindow, c.MaxLease)
	case c.DeadAfter <= c.BeatInterval:
		return fmt.Errorf("%w: DeadAfter %v must exceed BeatInterval %v", ErrConfig, c.DeadAfter, c.BeatInterval)
	case c.HintProbe < 0 || c.HintProbe > c.DeadAfter/(2*bully.HintProbes):
		return fmt.Errorf("%w: HintProbe %v must be positive and at most DeadAfter / %d (%v): a hint is meant to give a dead coordinator up sooner than DeadAfter", ErrConfig, c.HintProbe, 2*bully.HintProbes, c.DeadAfter/(2*bully.HintProbes))
	}
	return nil
}

// pad is d on one member's clock as another may measure it, plus the
// margin: d stretched by twice the drift bound.
func (c *Config) pad(d time.Duration) time.Duration {
	return time.Duration(math.Ceil(float64(d)*(1+2*c.MaxDriftPPM*1e-6))) + c.HoldMargin
}

// Hold is the longest a new coordinator waits, from the moment a majority
// joined its term, before its first grant (unless every member
// re-announced its grants): MaxLease + LeaseSlack, padded, counted from
// the latest instant a member of that majority backed an older
// coordinator (at most that moment); every lease an older coordinator
// granted has ended by then (see the package comment).
func (c *Config) Hold() time.Duration { return c.pad(c.MaxLease + c.LeaseSlack) }

// DefaultHintProbe is Config.HintProbe's default.
const DefaultHintProbe = 40 * time.Millisecond

// DefaultBeat is the default BeatInterval for a cluster's longest lease:
// a third of it, at most 1 s (about 1 KB/s of idle traffic per member at
// five members, with the election's heartbeats).
func DefaultBeat(maxLease time.Duration) time.Duration { return min(time.Second, maxLease/3) }

// shrink is a duration measured on another member's clock as this one
// may at least measure it, less the margin: d shortened by twice the drift
// bound. A support age reported by a member is shrunk before it is
// subtracted, so the instant it names is never taken as earlier than it
// may have been.
func (c *Config) shrink(d time.Duration) time.Duration {
	return max(time.Duration(math.Floor(float64(d)*(1-2*c.MaxDriftPPM*1e-6)))-c.HoldMargin, 0)
}

// BullyConfig is the default election's timers for this configuration:
// bully with a leader heartbeat every BeatInterval and a leader suspected
// after DeadAfter of silence (two heartbeats lost), its other timeouts
// bully's LAN defaults in proportion (bully.FromOptions). A coordinator
// SIGKILLed is replaced within DeadAfter and a few LAN round trips, which
// ends before the old leases do (the Hold) as long as DeadAfter is below
// MaxLease.
//
// The election is sticky (bully.Config.Sticky): a member that starts or
// comes back follows a sitting coordinator it outranks instead of taking
// over, since every change of coordinator costs a wait; one restarted by
// systemd two seconds after a SIGKILL took the coordination back from
// its successor and waited a lease from its own start (6-7 s without a
// grant, issue 29).
func (c *Config) BullyConfig(members []uint32) bully.Config {
	b := bully.FromOptions(members, elect.Options{Heartbeat: c.BeatInterval, LeaderTimeout: c.DeadAfter})
	b.Sticky = true
	b.HintProbe = c.HintProbe
	b.Reserve = true
	return b
}
