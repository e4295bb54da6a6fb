package tokenring_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/tokenring"
	"github.com/synclab/synclab/pkg/wire"
)

// TestSimTokenCarriesWants: the token's Wants list is how a want heard by
// one holder reaches the next when the want's own broadcast to that next
// holder was lost, and the bypass bound (doc.go, "The ring") rests on it.
// Member 1 holds the lock; member 3 asks, and its want datagram to member
// 2 alone is lost (the link 3 -> 2 cut for that one send, not long enough
// to take 3 for down); member 2 asks. Member 1 releases and passes the
// token to 2 with the wants of 2 and 3. Member 2 is granted and releases,
// and its client asks again at once: 2 knows of 3's want only from the
// token, and must pass the token to 3 before serving itself again, well
// before 3's first locate (a loss timeout after it asked) would tell 2.
// Both ends of the path count: the member passing the token puts the
// wants it knows into it (pass), and the member receiving it serves them
// (stepToken, others).
func TestSimTokenCarriesWants(t *testing.T) {
	onSettledRings(t, func(t *testing.T, s *sim.Sim) {
		first := grantX(t, s, 1)
		s.Cut(3, 2)
		asked := s.Elapsed()
		third := acquireX(t, s, 3) // its want reaches 1, 4 and 5, not 2
		s.Heal()
		s.Run(time.Millisecond)
		second := acquireX(t, s, 2)
		s.Run(time.Millisecond)
		releaseX(t, s, 1, first)
		if !s.RunUntil(func() bool { return grantedX(s, 2, second) }, 100*time.Millisecond) {
			t.Fatal("member 2 never granted")
		}
		decided := s.Elapsed() // 2 passes the token on, or keeps it, at its release
		releaseX(t, s, 2, second)
		again := acquireX(t, s, 2)
		s.RunUntil(func() bool { return grantedX(s, 3, third) || grantedX(s, 2, again) }, 100*time.Millisecond)
		// The setup: 2 had heard nothing from 3 since 3 asked (its want
		// was cut, and it had not located yet) when it decided, so only
		// the token told 2 that 3 waits.
		cut := false
		for _, e := range s.Trace() {
			if e.At < asked || e.At > decided || e.Kind != wire.KindRingProbe || e.From != 3 || e.To != 2 {
				continue
			}
			switch e.Fate {
			case sim.FateCut:
				cut = true
			case sim.FateDelivered:
				t.Fatalf("a ring probe of member 3 reached member 2 at %v (3 asked at %v, 2 decided at %v): the want did not have to travel in the token", e.At, asked, decided)
			}
		}
		if !cut {
			t.Fatalf("member 3's want to member 2 was not cut")
		}
		if s.Elapsed()-asked >= tokenring.DefaultLANConfig().LossTimeout {
			t.Fatalf("the scenario ran past member 3's first locate (%v after it asked)", s.Elapsed()-asked)
		}
		if grantedX(s, 2, again) || !grantedX(s, 3, third) {
			_, here := s.Core(2).(*tokenring.Core).TokenGeneration("x")
			t.Errorf("member 2 served its own client again (%v) while member 3 waited, its want in the token 1 passed to 2 (3 granted: %v, the token still at 2: %v)",
				grantedX(s, 2, again), grantedX(s, 3, third), here)
		}
	})
}

// onSettledRings runs f on a settled ring of five (settledRingOfFive)
// trusting senders, as a keyed cluster does, and vouching for tokens.
func onSettledRings(t *testing.T, f func(t *testing.T, s *sim.Sim)) {
	for _, trust := range []bool{true, false} {
		t.Run(fmt.Sprintf("trust=%v", trust), func(t *testing.T) { f(t, settledRingOfFive(t, trust)) })
	}
}

// grantX: a client of member id asks for lock x and holds it within 2 s,
// or the test ends.
func grantX(t *testing.T, s *sim.Sim, id uint32) mutex.RequestID {
	t.Helper()
	req := acquireX(t, s, id)
	if !s.RunUntil(func() bool { return grantedX(s, id, req) }, 2*time.Second) {
		t.Fatalf("member %d never granted", id)
	}
	return req
}
