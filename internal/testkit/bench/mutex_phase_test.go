package bench

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestKillPhase: a recovery trial never kills a holder that made no
// renewal sooner than waiterQueued after its grant, so the waiter, asked
// just after the grant, is queued (review of mutex-slack: about 1% of
// such trials killed the holder a few ms after the waiter's goroutine
// started); and the kill's phase stays uniform over the renewal period
// (a second review: drawing it again under waiterQueued made the
// period's first 100 ms a third less likely, the kills with the most
// lease left).
func TestKillPhase(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const draws = 30000
	period := mutexLeaseTTL / 3
	early := 0
	for range draws {
		renewals, phase := killPhase(r.IntN(3), time.Duration(r.Int64N(int64(period))))
		if renewals == 0 && phase < waiterQueued {
			t.Fatalf("no renewal: kill %v after the grant, before the waiter is queued (%v)", phase, waiterQueued)
		}
		if phase < 0 || phase >= period {
			t.Fatalf("kill %v after the lease last started, outside the renewal period %v", phase, period)
		}
		if phase < waiterQueued {
			early++
		}
	}
	want := float64(draws) * float64(waiterQueued) / float64(period)
	if got := float64(early); got < 0.9*want || got > 1.1*want {
		t.Errorf("%d kills in the period's first %v of %d draws, want about %.0f (uniform)", early, waiterQueued, draws, want)
	}
}
