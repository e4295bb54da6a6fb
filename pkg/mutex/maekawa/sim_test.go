package maekawa_test

import (
	"testing"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/mutex/maekawa"
)

// TestOracle: Maekawa keeps the generic oracle (exclusion in real time,
// fences above every earlier grant, every waiting request granted once the
// faults stop) under every fault it claims: crashes and restarts of the
// holder or a voter, pauses past the lease, a member cut off alone, links
// that drop bursts and lossy links throughout.
//
// Over the seeds, grants take each of the three ways to their fence
// (decide): at once on a fence every voter recorded as it voted, with a
// commit at the voters that recorded less (after a restart's new era,
// votes given again after a relinquish), and with a commit everywhere
// (votes that waited long in queues): the oracle checks all three.
func TestOracle(t *testing.T) {
	var ways EntryWays
	sim.Seeds(t, 20, func(t *testing.T, seed int64) {
		c := mutextest.Run(t, seed, mutextest.Config{Factory: maekawa.Factory})
		ways.Add(c)
		t.Log(c)
	})
	ways.Check(t)
}

// EntryWays tallies how the grants of simulated runs got their fence.
type EntryWays struct{ Direct, Partial, Commit uint64 }

// Add counts the grants of c's members (those since their last restart).
func (w *EntryWays) Add(c *mutextest.Cluster) {
	for _, id := range c.IDs() {
		if core, ok := c.Sim().Core(id).(*maekawa.Core); ok {
			st := core.Stats()
			w.Direct += st.Direct
			w.Partial += st.Partial
			w.Commit += st.Entries - st.Direct - st.Partial
		}
	}
}

// Check fails unless every way was taken.
func (w EntryWays) Check(t *testing.T) {
	t.Helper()
	t.Logf("grants: %d on the recorded fence at once, %d after a commit where a voter recorded less, %d after a commit everywhere", w.Direct, w.Partial, w.Commit)
	if w.Direct == 0 || w.Partial == 0 || w.Commit == 0 {
		t.Errorf("a way to a fence never taken: %+v", w)
	}
}

// TestMessagesPerEntry: an uncontended entry costs 3(K-1) frames, K the
// size of the requester's cross (request, locked, release: the notes'
// count), when every voter recorded the proposed fence as it voted; 2
// more for each voter that recorded less (the commit and its ack). The
// simulated members' clocks are up to 1 s apart, but every member proposes
// from the fastest live clock it hears (clusterClock), so each proposal is
// current: the count is 3(K-1) averaged over the members, exactly (before
// this design 8.00, 9.20, 14.67 and 21.00 at 4, 5, 9 and 16 members;
// with each member's own clock, 6.00, 7.20, 13.33 and 20.00), and within
// the Factory's Cost.
func TestMessagesPerEntry(t *testing.T) {
	for _, n := range []int{4, 5, 9, 16} {
		got := mutextest.MessagesPerEntry(t, maekawa.Factory, mutex.Options{}, n)
		lo, hi := maekawa.Factory.Cost.Messages(n)
		var ids []uint32
		for i := 1; i <= n; i++ {
			ids = append(ids, uint32(i))
		}
		grid, direct := maekawa.NewGrid(ids), 0.0
		for _, id := range ids {
			direct += 3 * float64(len(grid.VotingSet(id))-1) / float64(n)
		}
		t.Logf("maekawa, %d members: %.2f messages per entry (3(K-1), K each member's cross: %.2f; notes: %s = %.1f; worst here %.0f)",
			n, got, direct, maekawa.Factory.Cost.Text, lo, hi)
		if got < lo || got > hi {
			t.Errorf("%d members: %.2f messages per entry, outside [%.1f, %.0f]", n, got, lo, hi)
		}
		if got > direct+0.005 {
			t.Errorf("%d members: %.2f messages per entry, above 3(K-1) = %.2f: proposals went stale", n, got, direct)
		}
	}
}
