package tokenring

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/mutex"
)

// Config configures a token ring core. Zero durations take the defaults of
// DefaultLANConfig. Times are durations of the member's own clock (the
// driver's monotonic reading), not ticks: a lease is a duration a client
// asks for, and the safety argument is about durations.
type Config struct {
	// ID is this member's ID; Members is the whole ring, this member
	// included, the same list on every member. Required.
	ID      uint32
	Members []uint32

	// HeartbeatInterval is how often a member tells the members watching
	// it (its two neighbours) that it is alive (default 1 s): all the
	// traffic of an idle ring, 2N frames per interval.
	HeartbeatInterval time.Duration
	// DeadAfter is the silence after which a member is taken for down and
	// skipped when the token is passed (default 3.5 heartbeats).
	DeadAfter time.Duration
	// AckTimeout is how long a sender waits for a token's acknowledgement
	// before it skips the successor and looks for the token (default
	// 200 ms).
	AckTimeout time.Duration
	// LossTimeout is how long a member with a waiting request goes
	// without the token before it looks for it, and regenerates it if
	// nobody has it (default 500 ms).
	LossTimeout time.Duration
	// ProbeTimeout is how long the answers to a locate, prepare or check
	// are collected (default 50 ms; they come back within a millisecond
	// on a LAN).
	ProbeTimeout time.Duration
	// ProbeTries is how many times a locate or prepare is sent to the
	// live members that have not answered (default 3): one lost answer
	// must not make a live token look lost (a new generation dooms it)
	// or cost a regenerated one its full Hold.
	ProbeTries int
	// ConfirmWindow is how recent a majority check must be for a grant or
	// a renewal (default 250 ms; at most half of MaxLease counts). Every
	// lease granted or renewed on a check ends within MaxLease of the
	// check's sending: one granted on a check d old is shorter than asked
	// by up to d (only a lease longer than MaxLease-d is). Longer saves
	// checks under load, and shortens such leases; it does not lengthen
	// a regenerated token's Hold.
	ConfirmWindow time.Duration
	// MaxLease is the longest lease a grant carries (default 3 s), and
	// the default lease. A regenerated token waits this long (padded)
	// from the last check its promisers answered before its first grant,
	// so recovery from a lost token takes about MaxLease from the old
	// holder's last renewal.
	MaxLease time.Duration
	// MinLease is the shortest lease a request may ask for (default
	// 100 ms): a shorter one could not even be renewed in time.
	MinLease time.Duration
	// MaxDriftPPM bounds how much faster or slower than each other two
	// members' clocks may run (default 1000 ppm, twice the kernel's
	// tolerance): the Hold is padded by it.
	MaxDriftPPM float64
	// HoldMargin is added to the Hold for rounding and scheduling
	// (default 20 ms).
	HoldMargin time.Duration
	// MaxLocks bounds the lock table (default 4096): names are chosen by
	// clients and members, and each costs memory and state.
	MaxLocks int
	// MaxQueue bounds the requests waiting at this member (default 4096).
	MaxQueue int
	// TrustSenders skips vouching (vouching.go): a received token is used
	// on the majority check alone, without first asking the member it
	// came from. Set it only when frames are authenticated (a cluster
	// key): then a token in a member's name can come only from a holder of
	// the key, and vouching would cost every handoff a round trip and two
	// frames for no protection the MAC does not already give against
	// outsiders. Default false: vouch.
	TrustSenders bool

	// Persisted is the state the previous run left in Ready.State (nil
	// at the first start).
	Persisted []byte
	// Rand jitters retries. Nil: seeded from ID (deterministic).
	Rand *rand.Rand
}

// DefaultLANConfig returns the defaults for a LAN. Set ID and Members.
func DefaultLANConfig() Config {
	return Config{
		HeartbeatInterval: time.Second,
		DeadAfter:         3500 * time.Millisecond,
		AckTimeout:        200 * time.Millisecond,
		LossTimeout:       500 * time.Millisecond,
		ProbeTimeout:      50 * time.Millisecond,
		ProbeTries:        3,
		ConfirmWindow:     250 * time.Millisecond,
		MaxLease:          3 * time.Second,
		MinLease:          100 * time.Millisecond,
		MaxDriftPPM:       mutex.DefaultMaxDriftPPM,
		HoldMargin:        20 * time.Millisecond,
		MaxLocks:          mutex.DefaultMaxLocks,
		MaxQueue:          mutex.DefaultMaxQueue,
	}
}

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("tokenring: invalid config")

func (c *Config) validate() error {
	if err := liveness.CheckMembers(c.ID, c.Members); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c.Members = slices.Clone(c.Members)
	slices.Sort(c.Members)
	def := DefaultLANConfig()
	if err := liveness.FillDurations(
		liveness.Duration{Name: "HeartbeatInterval", Value: &c.HeartbeatInterval, Default: def.HeartbeatInterval},
		liveness.Duration{Name: "DeadAfter", Value: &c.DeadAfter, Default: def.DeadAfter},
		liveness.Duration{Name: "AckTimeout", Value: &c.AckTimeout, Default: def.AckTimeout},
		liveness.Duration{Name: "LossTimeout", Value: &c.LossTimeout, Default: def.LossTimeout},
		liveness.Duration{Name: "ProbeTimeout", Value: &c.ProbeTimeout, Default: def.ProbeTimeout},
		liveness.Duration{Name: "ConfirmWindow", Value: &c.ConfirmWindow, Default: def.ConfirmWindow},
		liveness.Duration{Name: "MaxLease", Value: &c.MaxLease, Default: def.MaxLease},
		liveness.Duration{Name: "MinLease", Value: &c.MinLease, Default: def.MinLease},
		liveness.Duration{Name: "HoldMargin", Value: &c.HoldMargin, Default: def.HoldMargin},
	); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	// The protocol's timers: the one validation every core's timeouts get.
	if err := liveness.CheckTimers(
		liveness.Duration{Name: "HeartbeatInterval", Value: &c.HeartbeatInterval}, liveness.Duration{Name: "DeadAfter", Value: &c.DeadAfter},
		liveness.Duration{Name: "AckTimeout", Value: &c.AckTimeout}, liveness.Duration{Name: "LossTimeout", Value: &c.LossTimeout},
		liveness.Duration{Name: "ProbeTimeout", Value: &c.ProbeTimeout},
	); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	mutex.FillLimits(&c.MaxDriftPPM, &c.MaxLocks, &c.MaxQueue)
	c.ProbeTries = cmp.Or(c.ProbeTries, def.ProbeTries)
	if err := mutex.CheckBounds(mutex.Bounds{
		MinLease: c.MinLease, MaxLease: c.MaxLease, LongLease: "a lost token waits one lease before it is replaced",
		MaxDriftPPM: c.MaxDriftPPM, MaxLocks: c.MaxLocks, LocksCap: 65535, MaxQueue: c.MaxQueue,
	}); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	switch {
	case c.DeadAfter <= c.HeartbeatInterval:
		return fmt.Errorf("%w: DeadAfter %v must exceed HeartbeatInterval %v, or live members are taken for dead between two heartbeats", ErrConfig, c.DeadAfter, c.HeartbeatInterval)
	case c.ProbeTimeout >= c.LossTimeout:
		return fmt.Errorf("%w: ProbeTimeout %v must be shorter than LossTimeout %v", ErrConfig, c.ProbeTimeout, c.LossTimeout)
	case c.ProbeTimeout >= c.ConfirmWindow:
		return fmt.Errorf("%w: ProbeTimeout %v must be shorter than ConfirmWindow %v: a check must be able to complete while it is still fresh", ErrConfig, c.ProbeTimeout, c.ConfirmWindow)
	case c.ProbeTries < 1:
		return fmt.Errorf("%w: ProbeTries %d must be at least 1", ErrConfig, c.ProbeTries)
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(uint64(c.ID), 0x746f6b656e)) // "token"
	}
	return nil
}

// Hold is how long a regenerated token waits before its first grant, unless
// every member promised: every lease granted on an older token has run out
// by then (see the package comment). A lease ends within MaxLease of the
// check it was granted on, and that check was sent before the promises
// made a majority: MaxLease, padded for the clocks' rates.
func (c *Config) Hold() time.Duration {
	return time.Duration(math.Ceil(float64(c.MaxLease)*(1+2*c.MaxDriftPPM*1e-6))) + c.HoldMargin
}

// confirmFor is how long a passed check may be granted or renewed on:
// ConfirmWindow, at most half of MaxLease (a lease counted from the check
// must still have half a lease to run when it is granted).
func (c *Config) confirmFor() time.Duration { return min(c.ConfirmWindow, c.MaxLease/2) }

// leaseReach is MaxLease as another member's clock may measure it: the
// longest a lease granted on a check may run after that check's answer.
func (c *Config) leaseReach() time.Duration {
	return time.Duration(math.Ceil(float64(c.MaxLease) * (1 + 2*c.MaxDriftPPM*1e-6)))
}

// liveCheckAge is how recent a check a locate takes for a live holder's
// (finishLocate): it finds no token lost while some member confirmed a
// check within it. It is counted with the window a holder really renews
// on (confirmFor, at most half the lease), so it is at most half the
// lease and always shorter than leaseReach: with the raw ConfirmWindow a
// window past twice the lease made every check, however old, count as
// recent, and no token was ever made (--lease 1s --confirm-window 2100ms
// never granted; ConfigFor refused such flags instead).
func (c *Config) liveCheckAge() time.Duration { return (c.confirmFor() + c.MaxLease) / 3 }
