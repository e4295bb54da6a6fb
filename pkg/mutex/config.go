package mutex

import (
	"cmp"
	"fmt"
	"math"
	"time"
)

// The checks every algorithm's Config.validate shares (its durations:
// liveness.FillDurations and CheckTimers). Each returns an error that
// names the field, its value and the bound it broke, without a package
// prefix: the caller wraps it in its own ErrConfig.

// MaxLeaseLimit is the longest lease any algorithm grants: a lease is also
// what a new holder, coordinator or restarted member waits out, so a longer
// one would stall the cluster that long after a failure.
const MaxLeaseLimit = time.Hour

// MaxDriftLimit bounds Config.MaxDriftPPM (exclusive): 10% is no clock, and
// every padding by twice the drift would double a wait.
const MaxDriftLimit = 1e5

// The defaults of the limits every lease-granting Config has: clocks
// whose rates differ by at most 0.1%, and state for 4096 locks and 4096
// waiting requests per member.
const (
	DefaultMaxDriftPPM = 1000
	DefaultMaxLocks    = 4096
	DefaultMaxQueue    = 4096
)

// FillLimits sets each of a Config's limits left zero to its default.
func FillLimits(maxDriftPPM *float64, maxLocks, maxQueue *int) {
	*maxDriftPPM = cmp.Or(*maxDriftPPM, DefaultMaxDriftPPM)
	*maxLocks = cmp.Or(*maxLocks, DefaultMaxLocks)
	*maxQueue = cmp.Or(*maxQueue, DefaultMaxQueue)
}

// Bounds are the bounds a lease-granting Config shares, once its defaults
// are filled in, for CheckBounds.
type Bounds struct {
	MinLease, MaxLease time.Duration
	// LongLease is what a lease above MaxLeaseLimit would cost in this
	// algorithm (the error's reason; empty: none given).
	LongLease   string
	MaxDriftPPM float64
	MaxLocks    int
	// LocksCap bounds MaxLocks where a wire field counts locks (0: no
	// bound but positive).
	LocksCap int
	MaxQueue int
}

// CheckBounds checks, in this order: the drift bound (0 <= ppm <
// MaxDriftLimit, not NaN), MinLease <= MaxLease <= MaxLeaseLimit, and
// MaxLocks and MaxQueue positive (MaxLocks at most LocksCap if set).
func CheckBounds(l Bounds) error {
	switch {
	case math.IsNaN(l.MaxDriftPPM) || l.MaxDriftPPM < 0 || l.MaxDriftPPM >= MaxDriftLimit:
		return fmt.Errorf("MaxDriftPPM %g: want 0 <= ppm < %g", l.MaxDriftPPM, float64(MaxDriftLimit))
	case l.MinLease > l.MaxLease:
		return fmt.Errorf("MinLease %v exceeds MaxLease %v", l.MinLease, l.MaxLease)
	case l.MaxLease > MaxLeaseLimit && l.LongLease != "":
		return fmt.Errorf("MaxLease %v: at most %v (%s)", l.MaxLease, MaxLeaseLimit, l.LongLease)
	case l.MaxLease > MaxLeaseLimit:
		return fmt.Errorf("MaxLease %v: at most %v", l.MaxLease, MaxLeaseLimit)
	case l.MaxLocks < 1 || (l.LocksCap > 0 && l.MaxLocks > l.LocksCap):
		if l.LocksCap > 0 {
			return fmt.Errorf("MaxLocks %d: want 1..%d", l.MaxLocks, l.LocksCap)
		}
		return fmt.Errorf("MaxLocks %d must be positive", l.MaxLocks)
	case l.MaxQueue < 1:
		return fmt.Errorf("MaxQueue %d must be positive", l.MaxQueue)
	}
	return nil
}
