package ring_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/internal/electtest"
	"github.com/synclab/synclab/pkg/elect/ring"
	"github.com/synclab/synclab/pkg/wire"
)

// TestSimForgedHopNumber is issue 29's ring attack: one election hop "from
// 1" to its successor 2, numbered 2^63 (what a host on the LAN can send a
// cluster without a key), stamped a thousand ahead of member 2's Lamport
// clock. On main member 2's duplicate filter then took every real hop of
// member 1 for too old, acknowledged and dropped it, for as long as
// member 2 ran: once the leader (4) died, no election through member 1
// ever reached member 2, and none completed. Now member 1's first hop
// stamped after the forged one (one round trip: member 2's acks carry the
// stamp) starts member 2's window again, and 3 is elected.
func TestSimForgedHopNumber(t *testing.T) {
	eachVariant(t, 5, func(t *testing.T, alg elect.Algorithm, seed int64) {
		s := sim.New(sim.Config{Seed: seed})
		c := electtest.New(t, s, alg, []uint32{1, 2, 3, 4}, elect.Options{})
		c.Converge(3 * time.Second)
		_, term, _ := c.Elector(2).Leader()
		stamp := s.Node(2).Status().Lamport + 1000
		if err := s.Forge(1, 2, wire.KindRingElection, term, stamp, forgedHop(alg)); err != nil {
			t.Fatalf("the forged hop was refused: %v", err)
		}
		c.Run(time.Second)
		s.Crash(4)
		start := s.Elapsed()
		if !s.RunUntil(func() bool { c.Check(); return c.Agreed(3) }, 10*time.Second) {
			t.Fatalf("no leader within 10 s of the leader's death after a forged hop number: %s (member 2: %+v)", c.Views(), c.Elector(2).(*ring.Core).Detail())
		}
		t.Logf("3 elected %v after 4 died; member 2 undid %d forged hop numbers", s.Elapsed()-start, c.Elector(2).(*ring.Core).Detail().HopsUndone)
	})
}

// forgedHop is an election hop of 1 numbered 2^63 that alg's members take.
func forgedHop(alg elect.Algorithm) wire.RingElection {
	e := wire.RingElection{Seq: 1 << 63, Origin: 1, Candidate: 1}
	switch alg.Name {
	case ring.IDListAlgorithm.Name, ring.FredricksonLynchAlgorithm.Name:
		e.Candidate, e.IDs = 0, []uint32{1}
	case ring.FranklinAlgorithm.Name:
		e.Round = 1
	}
	return e
}
