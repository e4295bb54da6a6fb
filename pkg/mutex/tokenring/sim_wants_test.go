package tokenring_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/mutex/tokenring"
	"github.com/synclab/synclab/pkg/wire"
)

// TestSimServedProposerNotCarriedRound: the wants a member records from a
// prepare (the proposer waits) and from a locate carried no number, and a
// token that came within an acknowledgement timeout of hearing one kept
// it however served it was. Member 1 makes a fresh ring's token (every
// member promises: no Hold), is granted and releases at once; member 2,
// which asked meanwhile, gets the token a few milliseconds after it
// promised, is granted and releases. Nobody else wants the lock: the token
// must stay at member 2, not go round the ring back to member 1 (main's
// code sent it 4 times more at 5 members: 2, 3, 4, 5, 1, the kind of trip
// issue 15 counted).
func TestSimServedProposerNotCarriedRound(t *testing.T) {
	onSettledRings(t, func(t *testing.T, s *sim.Sim) {
		first := grantX(t, s, 1)
		if n := len(s.EventsNamed(tokenring.EventRegenerated)); n != 1 {
			t.Fatalf("want member 1 to make the ring's first token, %d made", n)
		}
		second := acquireX(t, s, 2)
		s.Run(time.Millisecond)
		releaseX(t, s, 1, first)
		if !s.RunUntil(func() bool { return grantedX(s, 2, second) }, time.Second) {
			t.Fatal("member 2 never granted")
		}
		before := s.Sent(wire.KindToken)
		releaseX(t, s, 2, second)
		s.Run(2 * time.Second)
		if passes := s.Sent(wire.KindToken) - before; passes != 0 {
			t.Errorf("the token left member 2 %d times after its release with nobody waiting (sent round the ring to member 1, served)", passes)
		}
		if _, ok := s.Core(2).(*tokenring.Core).TokenGeneration("x"); !ok {
			t.Errorf("the token is not at member 2, the last holder")
		}
	})
}
