package maekawa_test

import (
	"testing"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/maekawa"
	"github.com/synclab/synclab/pkg/mutex/mutextest"
)

// TestOracle: Maekawa keeps the generic oracle (exclusion in real time,
// fences above every earlier grant, every waiting request granted once the
// faults stop) under every fault it claims: crashes and restarts of the
// holder or a voter, pauses past the lease, a member cut off alone, links
// that drop bursts and lossy links throughout.
func TestOracle(t *testing.T) {
	sim.Seeds(t, 20, func(t *testing.T, seed int64) {
		c := mutextest.Run(t, seed, mutextest.Config{Factory: maekawa.Factory})
		t.Log(c)
	})
}

// TestMessagesPerEntry: an uncontended entry costs 5(K-1) frames, K the
// size of the requester's cross: the notes' 3(K-1) (request, locked,
// release) and the fence's commit and its ack. Within the Factory's Cost.
func TestMessagesPerEntry(t *testing.T) {
	for _, n := range []int{4, 5, 9, 16} {
		got := mutextest.MessagesPerEntry(t, maekawa.Factory, mutex.Options{}, n)
		lo, hi := maekawa.Factory.Cost.Messages(n)
		t.Logf("maekawa, %d members: %.2f messages per entry (notes: %s = %.1f; worst here %.0f)", n, got, maekawa.Factory.Cost.Text, lo, hi)
		if got < lo || got > hi {
			t.Errorf("%d members: %.2f messages per entry, outside [%.1f, %.0f]", n, got, lo, hi)
		}
	}
}
