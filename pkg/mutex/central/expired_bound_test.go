package central_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/wire"
)

// TestExpiredGrantBound (review-central): as
// TestExpiredGrantHoldsDependents, the waiter refuses a grant of x (its
// sync saying so lost), whose 300 ms lease then ends at the coordinator
// unconfirmed; then the waiter crashes and frames keep coming in its name
// (forged, without a key), so that it is heard and never syncs. The
// expired grant held y, which names x, for as long as the forger went on
// (5 s and counting); now it lapses 2 x silentLapse (4 x DeadAfter, 1 s)
// after that lease's end, said at WARN as a member heard without a sync.
func TestExpiredGrantBound(t *testing.T) {
	x, dep, from := refusedGrantOfX(t)
	s := x.s
	inc := s.Core(x.waiter).(*central.Core).Incarnation()
	s.Crash(x.waiter) // the waiter is gone; frames keep coming in its name (keyless)
	granted := func() bool { return x.lookup(x.holder, dep).Granted }
	const activity = 5 * time.Second
	forged := 0
	for !granted() && s.Elapsed()-from < activity {
		s.RunUntil(granted, 50*time.Millisecond)
		if granted() {
			break
		}
		d := s.Core(x.co).(*central.Core).Report().Detail.(central.Detail)
		ps := s.Node(x.co).Peer(x.waiter)
		if err := s.Forge(x.waiter, x.co, wire.KindCentralRenew, d.Term, ps.Stamp+1,
			wire.CentralRenew{Name: "z", Incarnation: inc, Seq: 1, Fence: 1}); err != nil && !errors.Is(err, central.ErrUnknownRequest) {
			t.Fatalf("forged renewal: %v", err)
		}
		forged++
	}
	t.Logf("%d forged frames", forged)
	cs := s.Core(x.co).(*central.Core).Report().Counters
	t.Logf("after %v: y granted %v; coordinator leases_ended_unreleased=%d; WARN %q", s.Elapsed()-from, granted(), cs["leases_ended_unreleased"],
		warned(t, s, x.co, central.EventUnknownPredecessor))
	// The lease (300 ms, padded) and 4 x DeadAfter (1 s), a beat of lag.
	if took := s.Elapsed() - from; !granted() || took > 1500*time.Millisecond {
		t.Fatalf("y granted %v, %v after the grant of x, want within its 300 ms lease and 4 x DeadAfter (1 s)", granted(), took)
	}
	if w := warned(t, s, x.co, central.EventUnknownPredecessor); !strings.Contains(strings.Join(w, "\n"), "was heard since") {
		t.Errorf("the skip's WARN %q does not say member %d was heard without a sync", w, x.waiter)
	}
}
