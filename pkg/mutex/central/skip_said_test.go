package central_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
)

// skipCluster is a 3-member tokenask cluster of 20 s leases whose
// coordinator's own client holds y; the holder then holds x, the waiter
// waits for x, and after is the waiter's vector then.
func skipCluster(t *testing.T) (x *crossing, coY mutex.RequestID, coVec, after clock.Vector) {
	x = crossingCluster(t, central.TokenAskFactory, 20*time.Second)
	coY = x.acquire(x.co, "y", clock.Vector{})
	x.s.Run(500 * time.Millisecond)
	if !x.lookup(x.co, coY).Granted {
		t.Fatalf("coordinator %d not granted y", x.co)
	}
	var err error
	if coVec, err = x.s.Core(x.co).(mutex.Causal).Vector(); err != nil {
		t.Fatal(err)
	}
	x.held = x.acquire(x.holder, "x", clock.Vector{})
	if !x.lookup(x.holder, x.held).Granted {
		t.Fatalf("member %d not granted x", x.holder)
	}
	x.waits = x.acquire(x.waiter, "x", clock.Vector{})
	if after, err = x.s.Core(x.waiter).(mutex.Causal).Vector(); err != nil {
		t.Fatal(err)
	}
	return x, coY, coVec, after
}

func (x *crossing) releaseAt(id uint32, req mutex.RequestID) {
	x.s.Do(id, func(c core.Core) {
		if err := c.(mutex.Algorithm).Release(x.s.Clock(id).Now(), req); err != nil {
			x.t.Fatal(err)
		}
	})
}

// TestSkipSaidOnlyWhenGranted (review-mutex5): the WARN that a request
// was granted without its predecessor's word was said when the request
// became eligible, also one still behind another holder of its lock: the
// holder's request for y names the waiter's x, whose grant is lost while
// the waiter is cut off for 2 s, and y is held by the coordinator's own
// client meanwhile; healed, the waiter takes x, y is released and granted
// after it, in order. Said (and counted) for a grant that never skipped
// anything; now said only with the grant that skips.
func TestSkipSaidOnlyWhenGranted(t *testing.T) {
	x, coY, _, after := skipCluster(t)
	s := x.s
	dep := x.acquire(x.holder, "y", after) // waits behind the coordinator's y
	s.Cut(x.co, x.waiter)
	x.release() // x's grant to the waiter is lost
	s.Run(2 * time.Second)
	s.Heal()
	if !s.RunUntil(func() bool { return x.lookup(x.waiter, x.waits).Granted }, 5*time.Second) {
		t.Fatalf("the waiter never granted x after the heal")
	}
	if x.lookup(x.holder, dep).Granted {
		t.Fatalf("y granted before x was")
	}
	x.releaseAt(x.co, coY)
	if !s.RunUntil(func() bool { return x.lookup(x.holder, dep).Granted }, 5*time.Second) {
		t.Fatalf("y never granted")
	}
	co := s.Core(x.co).(*central.Core)
	if warns := warned(t, s, x.co, central.EventUnknownPredecessor); len(warns) > 0 || co.Report().Counters["tokenask_unconfirmed_predecessors"] > 0 {
		t.Errorf("y was granted after its predecessor, but the coordinator said it skipped it: %q (counters %v)", warns, co.Report().Counters)
	}
}

// TestEverySkippedPredecessorSaid (review-mutex5): one flag per request
// said only its first skipped predecessor: y names the waiter's x (whose
// grant is lost, the waiter cut off) and a request of the coordinator's
// never made (a vector passed by hand); y was granted without both, and
// the second went unsaid. Each skipped member is said now.
func TestEverySkippedPredecessorSaid(t *testing.T) {
	x, coY, coVec, after := skipCluster(t)
	s := x.s
	s.Cut(x.co, x.waiter)
	x.release() // x's grant to the waiter is lost
	s.Run(150 * time.Millisecond)
	after.Set(x.co, coVec.Get(x.co)+50) // a request the coordinator never made
	dep := x.acquire(x.holder, "y", after)
	s.Run(2 * time.Second)
	x.releaseAt(x.co, coY)
	if !s.RunUntil(func() bool { return x.lookup(x.holder, dep).Granted }, 5*time.Second) {
		t.Fatalf("y never granted")
	}
	c := s.Core(x.co).(*central.Core).Report().Counters
	warns := warned(t, s, x.co, central.EventUnknownPredecessor)
	if c["tokenask_unknown_predecessors"] != 1 || c["tokenask_unconfirmed_predecessors"] != 1 || len(warns) != 2 {
		t.Errorf("y granted without the waiter's x and the coordinator's request %s never made: want each said once, got %q (counters %v)", central.StampText(after.Get(x.co)), warns, c)
	}
}
