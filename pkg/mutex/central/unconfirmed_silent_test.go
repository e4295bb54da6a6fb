package central_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/wire"
)

// TestUnconfirmedGrantOfSilentMember (review-mutex4): member W's request
// for x is granted while W is cut from the coordinator (the grant never
// arrives), and W then crashes and stays down. A request of another
// member for y that names W's request waited for W to confirm a grant it
// never took: the grant's whole lease (20 s here; up to an hour), though
// W had been silent for DeadAfter long before, as a dropped waiting
// request of a silent member lapses. Now y is granted once W has been
// silent 2 x DeadAfter (the rule of a dropped waiting request:
// TestSilentPredecessorOneRule), said at WARN.
func TestUnconfirmedGrantOfSilentMember(t *testing.T) {
	const lease = 20 * time.Second
	x := newCrossingLease(t, central.TokenAskFactory, lease)
	s := x.s
	after, err := s.Core(x.waiter).(mutex.Causal).Vector()
	if err != nil {
		t.Fatal(err)
	}
	dep := x.acquire(x.holder, "y", after)
	granted := 0
	s.OnSend(func(sf sim.SentFrame) {
		if sf.From == x.co && sf.Frame.Receiver == x.waiter && sf.Frame.Kind == wire.KindCentralGrant {
			granted++
		}
	})
	s.Cut(x.co, x.waiter)
	x.release()
	if !s.RunUntil(func() bool { return granted > 0 }, time.Second) {
		t.Fatal("no grant of x to the waiter")
	}
	s.Crash(x.waiter)
	from := s.Elapsed()
	if !s.RunUntil(func() bool { return x.lookup(x.holder, dep).Granted }, 2*lease) {
		t.Fatalf("y never granted")
	}
	wait := s.Elapsed() - from
	co := s.Core(x.co).(*central.Core)
	t.Logf("y granted %v after member %d (whose grant of x was lost) crashed; counters %v", wait, x.waiter, co.Report().Counters)
	if wait > 5*time.Second {
		t.Fatalf("y waited %v for a grant its crashed predecessor never took (lease %v)", wait, lease)
	}
	if len(warned(t, s, x.co, central.EventUnknownPredecessor)) != 1 || co.Report().Counters["tokenask_unconfirmed_predecessors"] != 1 {
		t.Errorf("y granted without its predecessor's word, unsaid: %v", co.Report().Counters)
	}
}
