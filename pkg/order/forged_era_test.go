package order

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/wire"
)

// TestSimForgedEraUndone: one submission "from" member 2 to the sequencer
// in a far submission era (what a host can send an --insecure cluster,
// spoofing member 2's address). On main the sequencer numbered it, and
// took every real submission of member 2 after it (a lower era) for
// numbered already: none was ever delivered, through member 2's
// restarts and every new sequencer, and member 2's sends waiting when the
// forged entry was delivered were taken for delivered. Now member 2's
// first submission stamped after the forged one brings its eras back
// (eras_undone), its waiting sends are not taken for delivered
// (forged_own_entries), and every send of it is delivered everywhere.
func TestSimForgedEraUndone(t *testing.T) {
	sim.SoakSeeds(t, 5, 50, func(t *testing.T, seed int64) {
		l := newSnapshotLab(t, seed)
		s, victim := l.s, l.sender
		era := l.core(victim).st.Log.Era
		stamp := s.Node(l.seqID).Status().Lamport + 1000
		if err := s.Forge(victim, l.seqID, wire.KindOrderSubmit, 0, stamp, wire.OrderSubmit{SID: (era+1000)<<32 | 1, Message: []byte("deposit 1")}); err != nil {
			t.Fatalf("the forged submission was refused: %v", err)
		}
		for range 3 {
			l.deposit(victim)
		}
		if !s.RunUntil(func() bool { return l.same() && len(l.core(victim).st.Log.Submits) == 0 }, 5*time.Second) {
			t.Fatalf("member %d's sends after a forged submission: %d waiting, applied %d here, %d at the sequencer (%v)", victim,
				len(l.core(victim).st.Log.Submits), l.core(victim).st.Log.Applied, l.core(l.seqID).st.Log.Applied, l.core(l.seqID).counters)
		}
		delivered := 0
		for _, d := range l.core(l.victim).History(0) {
			if d.Sender == victim && d.SID>>32 == era {
				delivered++
			}
		}
		if delivered != 4 { // the first deposit and the three after the attack
			t.Errorf("%d of member %d's deposits delivered at member %d, want 4", delivered, victim, l.victim)
		}
		t.Logf("sequencer: eras_undone %d; member %d: forged_own_entries %d", l.core(l.seqID).counters["eras_undone"], victim, l.core(victim).counters["forged_own_entries"])
	})
}
