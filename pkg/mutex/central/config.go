package central

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/mutex"
)

// Config configures a member's core. The member's ID, the members, the
// clock at start, the random source and the persisted state come from
// core.Env. Zero durations take the defaults of DefaultLANConfig. Times are
// durations of the member's own clock (the driver's monotonic reading).
type Config struct {
	// Election builds the coordinator election from the Env this core
	// hands it: this member's, with State the election's own persisted
	// state (kept inside this core's). The elected leader coordinates.
	// Nil: bully with its LAN defaults (bully.DefaultLANConfig).
	Election func(env core.Env) (elect.Elector, error)

	// ConfirmWindow is how recent the majority's support must be for the
	// coordinator to grant or renew (default 250 ms): a member supports it
	// by answering a beat, and the support dates from the beat's sending.
	// A new coordinator's wait (Hold) is ConfirmWindow + MaxLease, so
	// longer saves beats and lengthens a takeover by as much.
	ConfirmWindow time.Duration
	// BeatInterval is how often the coordinator calls for support (default
	// ConfirmWindow/3: two beats or their answers may be lost before
	// grants pause). Every member answers each with a sync: all the
	// traffic of an idle cluster besides the election's heartbeats.
	BeatInterval time.Duration
	// DeadAfter is how long the coordinator waits for a member's sync
	// before it drops the member's waiting requests (default 1 s): a
	// crashed member must not be granted a lock nobody will use. Its
	// grants are not taken back: they end with their lease.
	DeadAfter time.Duration
	// MaxLease is the longest lease a grant carries (default 3 s), and
	// the default lease. A new coordinator waits ConfirmWindow + MaxLease
	// before its first grant unless every member re-announced its grants.
	MaxLease time.Duration
	// MinLease is the shortest lease a request may ask for (default
	// 100 ms).
	MinLease time.Duration
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

// DefaultLANConfig returns the defaults for a LAN.
func DefaultLANConfig() Config {
	return Config{
		ConfirmWindow: 250 * time.Millisecond,
		DeadAfter:     time.Second,
		MaxLease:      3 * time.Second,
		MinLease:      100 * time.Millisecond,
		MaxDriftPPM:   1000,
		HoldMargin:    20 * time.Millisecond,
		MaxLocks:      4096,
		MaxQueue:      4096,
	}
}

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("central: invalid config")

func (c *Config) validate() error {
	def := DefaultLANConfig()
	if err := mutex.FillDurations([]mutex.Duration{
		{Name: "ConfirmWindow", Value: &c.ConfirmWindow, Default: def.ConfirmWindow},
		{Name: "DeadAfter", Value: &c.DeadAfter, Default: def.DeadAfter},
		{Name: "MaxLease", Value: &c.MaxLease, Default: def.MaxLease},
		{Name: "MinLease", Value: &c.MinLease, Default: def.MinLease},
		{Name: "HoldMargin", Value: &c.HoldMargin, Default: def.HoldMargin},
	}); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.BeatInterval == 0 {
		c.BeatInterval = c.ConfirmWindow / 3
	}
	if err := mutex.CheckTimers([]mutex.Timer{
		{Name: "ConfirmWindow", Value: c.ConfirmWindow}, {Name: "BeatInterval", Value: c.BeatInterval}, {Name: "DeadAfter", Value: c.DeadAfter},
	}); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c.MaxDriftPPM = cmp.Or(c.MaxDriftPPM, def.MaxDriftPPM)
	c.MaxLocks = cmp.Or(c.MaxLocks, def.MaxLocks)
	c.MaxQueue = cmp.Or(c.MaxQueue, def.MaxQueue)
	if err := mutex.CheckBounds(mutex.Bounds{
		MinLease: c.MinLease, MaxLease: c.MaxLease, LongLease: "a new coordinator waits one lease before granting",
		MaxDriftPPM: c.MaxDriftPPM, MaxLocks: c.MaxLocks, MaxQueue: c.MaxQueue,
	}); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	switch {
	case c.BeatInterval >= c.ConfirmWindow:
		return fmt.Errorf("%w: BeatInterval %v must be shorter than ConfirmWindow %v, or the support of a majority lapses between two beats", ErrConfig, c.BeatInterval, c.ConfirmWindow)
	case c.DeadAfter <= c.BeatInterval:
		return fmt.Errorf("%w: DeadAfter %v must exceed BeatInterval %v", ErrConfig, c.DeadAfter, c.BeatInterval)
	}
	return nil
}

// pad is d on one member's clock as another may measure it, plus the
// margin: d stretched by twice the drift bound.
func (c *Config) pad(d time.Duration) time.Duration {
	return time.Duration(math.Ceil(float64(d)*(1+2*c.MaxDriftPPM*1e-6))) + c.HoldMargin
}

// Hold is how long a new coordinator waits, from the moment a majority
// joined its term, before its first grant (unless every member
// re-announced its grants): every lease an older coordinator granted has
// ended by then (see the package comment).
func (c *Config) Hold() time.Duration { return c.pad(c.ConfirmWindow + c.MaxLease) }
