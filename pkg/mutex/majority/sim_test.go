package majority_test

import (
	"testing"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/mutex/majority"
)

// TestOracle: the majority quorum keeps the generic oracle (exclusion in
// real time with shared grants beside each other only, fences above every
// earlier grant, every waiting request granted once the faults stop),
// with a third of the requests shared, under every fault it claims:
// crashes and restarts (votes on disk), pauses past the lease, a member
// cut off alone, bursts of loss and lossy links throughout.
func TestOracle(t *testing.T) {
	sim.Seeds(t, 20, func(t *testing.T, seed int64) {
		c := mutextest.Run(t, seed, mutextest.Config{Factory: majority.Factory})
		t.Log(c)
	})
}

// TestMessagesPerEntry: an uncontended entry costs request, answer and
// release at the n-1 other coordinators, 3(n-1): every coordinator votes
// and records the fence the request proposed, so no commit round is
// needed (each coordinator saw the last grant's fence).
func TestMessagesPerEntry(t *testing.T) {
	for _, n := range []int{3, 5, 9} {
		got := mutextest.MessagesPerEntry(t, majority.Factory, mutex.Options{}, n)
		lo, _ := majority.Factory.Cost.Messages(n)
		m := majority.Quorum(n)
		want := float64(3 * (n - 1))
		t.Logf("majority, %d members (m=%d): %.2f messages per entry (notes' frames: %.0f; here: %.0f)", n, m, got, lo, want)
		if got != want {
			t.Errorf("%d members: %.2f messages per entry, want %.0f", n, got, want)
		}
	}
}
