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
// The coordinator asks the waiter's word on its stream at the lease's
// end (beats_called_expired), which a crashed member cannot answer: the
// bound, not the word, lets y go.
func TestExpiredGrantBound(t *testing.T) {
	x, dep, from := refusedGrantOfX(t)
	s := x.s
	inc := s.Core(x.waiter).(*central.Core).Incarnation()
	s.Crash(x.waiter) // the waiter is gone; frames keep coming in its name (keyless)
	granted := func() bool { return x.lookup(x.holder, dep).Granted }
	forged := x.forgeUntil(inc, granted, from+5*time.Second)
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
	// The lease's end asked the waiter's word on its stream
	// (TestExpiredGrantAsked), and nothing answered: the bound let y go.
	if n := cs["beats_called_expired"]; n != 1 {
		t.Errorf("the waiter's word asked at the lease's end %d times, want once (beats_called_expired)", n)
	}
}

// forgeUntil has a frame come to the coordinator in the (crashed)
// waiter's name, incarnation inc, every 50 ms until done or until the
// simulation's elapsed time reaches until (keyless: the forger's renewal
// of a lock it does not hold, refused, but the waiter heard); it returns
// how many.
func (x *crossing) forgeUntil(inc uint32, done func() bool, until time.Duration) int {
	s, forged := x.s, 0
	for !done() && s.Elapsed() < until {
		if s.RunUntil(done, 50*time.Millisecond) {
			break
		}
		d := s.Core(x.co).(*central.Core).Report().Detail.(central.Detail)
		ps := s.Node(x.co).Peer(x.waiter)
		if err := s.Forge(x.waiter, x.co, wire.KindCentralRenew, d.Term, ps.Stamp+1,
			wire.CentralRenew{Name: "z", Incarnation: inc, Seq: 1, Fence: 1}); err != nil && !errors.Is(err, central.ErrUnknownRequest) {
			x.t.Fatalf("forged renewal: %v", err)
		}
		forged++
	}
	return forged
}

// TestUnconfirmedGrantHeldToLeaseEnd: the case of TestExpiredGrantBound
// with a grant of x whose 3 s lease has not ended: the waiter refused it
// (a sync of its crossed it, lost), crashed, and frames keep coming in its
// name (forged, without a key), so that it is heard and never syncs. The
// grant, unconfirmed, holds y, which names x, until its lease ends at the
// coordinator and 4 x DeadAfter (1 s) more, said at WARN; it is not
// lapsed sooner for a member heard, however long the lease (up to an
// hour): while the lease runs its member may hold the grant, which the
// coordinator gives nobody else before the lease's end, and an honest
// member heard gives its word a round trip after the beat behind the
// grant, so only frames in its name without its syncs (a forger, which a
// key rules out) keep it from coming (doc.go, "A grant never
// confirmed"). A member silent 2 x DeadAfter lets go of it sooner
// (TestUnconfirmedGrantOfSilentMember).
func TestUnconfirmedGrantHeldToLeaseEnd(t *testing.T) {
	const lease = 3 * time.Second
	x, dep, from := refusedGrantOfXOn(t, crossingCluster(t, central.TokenAskFactory, 5*time.Second), lease)
	s := x.s
	inc := s.Core(x.waiter).(*central.Core).Incarnation()
	s.Crash(x.waiter)
	co := s.Core(x.co).(*central.Core)
	granted := func() bool { return x.lookup(x.holder, dep).Granted }
	ended := func() bool { return co.Report().Counters["leases_ended_unreleased"] > 0 }
	x.forgeUntil(inc, func() bool { return granted() || ended() }, from+2*lease)
	if granted() {
		t.Fatalf("y granted %v after the grant of x, its lease (%v) still running and the waiter heard (WARN: %q)",
			s.Elapsed()-from, lease, warned(t, s, x.co, central.EventUnknownPredecessor))
	}
	if !ended() {
		t.Fatal("the grant's lease never ended at the coordinator")
	}
	end := s.Elapsed()
	x.forgeUntil(inc, granted, end+5*time.Second)
	if took := s.Elapsed() - end; !granted() || took > 1100*time.Millisecond {
		t.Fatalf("y granted %v, %v after the lease's end of x, want within 4 x DeadAfter (1 s) and a beat", granted(), took)
	}
	t.Logf("the lease of x ended %v after its grant; y granted %v after that", end-from, s.Elapsed()-end)
	if w := warned(t, s, x.co, central.EventUnknownPredecessor); !strings.Contains(strings.Join(w, "\n"), "was heard since") {
		t.Errorf("the skip's WARN %q does not say member %d was heard without a sync", w, x.waiter)
	}
}
