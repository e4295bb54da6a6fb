package mutextest_test

import (
	"testing"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/mutex/tokenring"
)

// TestTokenRing: the token ring keeps the generic oracle under every fault
// it claims to survive, on calm hosts and on harsh ones (Harsh: clocks
// 990 ppm apart, loops 5-20 ms late, frames read after a pause stamped
// before it), as the other mutex algorithms' TestOracleHarsh run theirs:
// the ring's leases are counted from its checks, which a late loop reads
// late.
func TestTokenRing(t *testing.T) {
	for _, tc := range []struct {
		hosts mutextest.Hosts
		seeds int
	}{{mutextest.Calm, 8}, {mutextest.Harsh, 4}} {
		t.Run(tc.hosts.Name, func(t *testing.T) {
			sim.Seeds(t, tc.seeds, func(t *testing.T, seed int64) {
				c := mutextest.Run(t, seed, mutextest.Config{Factory: tokenring.Factory, Hosts: tc.hosts})
				t.Log(c)
			})
		})
	}
}

// TestMessagesPerEntry: an uncontended entry on a ring costs at least the
// token's pass to the requester (the notes: 1 to unbounded).
func TestMessagesPerEntry(t *testing.T) {
	for _, n := range []int{3, 5} {
		got := mutextest.MessagesPerEntry(t, tokenring.Factory, mutex.Options{}, n)
		lo, _ := tokenring.Factory.Cost.Messages(n)
		t.Logf("token ring, %d members: %.2f messages per entry (notes: %s)", n, got, tokenring.Factory.Cost.Text)
		if got < lo {
			t.Errorf("%d members: %.2f messages per entry, below the notes' %v", n, got, lo)
		}
	}
}
