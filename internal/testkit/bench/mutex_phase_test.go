package bench

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestKillPhase: a recovery trial whose holder made no renewal kills it
// no sooner than waiterQueued after its grant, so the waiter, asked just
// after the grant, is queued (review of mutex-slack: about 1% of such
// trials killed the holder a few ms after the waiter's goroutine
// started); after a renewal any instant of the period is drawn.
func TestKillPhase(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := func(d time.Duration) time.Duration { return time.Duration(r.Int64N(int64(d))) }
	for _, renewals := range []int{0, 1, 2} {
		lo, hi := mutexLeaseTTL, time.Duration(0)
		for range 10000 {
			d := killPhase(renewals, n)
			lo, hi = min(lo, d), max(hi, d)
		}
		t.Logf("%d renewals: kill %v to %v after the lease last started", renewals, lo, hi)
		if hi >= mutexLeaseTTL/3 {
			t.Errorf("%d renewals: kill %v after the lease last started, past the renewal period %v", renewals, hi, mutexLeaseTTL/3)
		}
		if renewals == 0 && lo < waiterQueued {
			t.Errorf("no renewal: kill %v after the grant, before the waiter is queued (%v)", lo, waiterQueued)
		}
		if renewals > 0 && lo >= waiterQueued {
			t.Errorf("%d renewals: no kill in the period's first %v in 10000 draws", renewals, waiterQueued)
		}
	}
}
