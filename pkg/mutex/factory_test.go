package mutex

import (
	"testing"
	"time"
)

// TestOptionsLeases: a set Lease or MinLease replaces the Config's, an
// unset one keeps it.
func TestOptionsLeases(t *testing.T) {
	for _, tc := range []struct {
		opt              Options
		wantMax, wantMin time.Duration
	}{
		{Options{}, 3 * time.Second, 100 * time.Millisecond},
		{Options{Lease: time.Second}, time.Second, 100 * time.Millisecond},
		{Options{MinLease: time.Millisecond}, 3 * time.Second, time.Millisecond},
		{Options{Lease: 5 * time.Second, MinLease: time.Second}, 5 * time.Second, time.Second},
	} {
		maxLease, minLease := 3*time.Second, 100*time.Millisecond
		tc.opt.Leases(&maxLease, &minLease)
		if maxLease != tc.wantMax || minLease != tc.wantMin {
			t.Errorf("%+v: %v, %v, want %v, %v", tc.opt, maxLease, minLease, tc.wantMax, tc.wantMin)
		}
	}
}
