package maekawa_test

import (
	"testing"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/mutex/maekawa"
)

// TestMajorityOracle: the majority quorum keeps the generic oracle (exclusion in
// real time with shared grants beside each other only, fences above every
// earlier grant, every waiting request granted once the faults stop),
// with a third of the requests shared, under every fault it claims:
// crashes and restarts (votes on disk), pauses past the lease, a member
// cut off alone, bursts of loss and lossy links throughout.
func TestMajorityOracle(t *testing.T) {
	sim.Seeds(t, 20, func(t *testing.T, seed int64) {
		c := mutextest.Run(t, seed, mutextest.Config{Factory: maekawa.MajorityFactory})
		t.Log(c)
	})
}

// TestMajorityMessagesPerEntry: an uncontended entry costs request, answer and
// release at the n-1 other coordinators, 3(n-1): every coordinator votes
// and records the fence the request proposed, so no commit round is
// needed (each coordinator saw the last grant's fence).
func TestMajorityMessagesPerEntry(t *testing.T) {
	for _, n := range []int{3, 5, 9} {
		got := mutextest.MessagesPerEntry(t, maekawa.MajorityFactory, mutex.Options{}, n)
		lo, _ := maekawa.MajorityFactory.Cost.Messages(n)
		m := maekawa.MajorityQuorum(n)
		want := float64(3 * (n - 1))
		t.Logf("majority, %d members (m=%d): %.2f messages per entry (notes' frames: %.0f; here: %.0f)", n, m, got, lo, want)
		if got != want {
			t.Errorf("%d members: %.2f messages per entry, want %.0f", n, got, want)
		}
	}
}
