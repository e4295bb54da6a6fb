package central_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/wire"
)

// TestDelayedPredecessorWaitedFor (review-askrule, causal order): member
// 1's request for w is sent on a stream whose segment is lost and sent
// again 400 ms later (DeadAfter 250 ms, 100 ms beats); member 1 is up,
// and the coordinator heard it a beat before. The holder's y, naming w,
// reaches the coordinator first. A predecessor never heard of held y
// DeadAfter from its queueing, however recently member 1 was heard: y
// was granted 250 ms after, before w, said at WARN but overtaken all the
// same. Now it waits for member 1's word or 2 x DeadAfter of its silence
// (member 1's later frames queue behind w on its stream, so it is silent
// while w is delayed): w arrives 400 ms after, is granted first, and y
// after it, with no WARN.
func TestDelayedPredecessorWaitedFor(t *testing.T) {
	x := crossingCluster(t, central.TokenAskFactory, time.Second)
	s := x.s
	s.SetLink(x.waiter, x.co, sim.LinkConfig{Delay: time.Millisecond, Retransmit: 1, RetransmitDelay: 400 * time.Millisecond})
	var w mutex.RequestID
	s.Do(x.waiter, func(c core.Core) {
		var err error
		if w, err = c.(mutex.Algorithm).Acquire(s.Clock(x.waiter).Now(), mutex.Request{Lock: "w"}); err != nil {
			t.Fatal(err)
		}
	})
	after, err := s.Core(x.waiter).(mutex.Causal).Vector()
	if err != nil {
		t.Fatal(err)
	}
	s.Run(time.Millisecond)
	s.SetLink(x.waiter, x.co, sim.LinkConfig{Delay: time.Millisecond})
	asked := s.Elapsed()
	dep := x.acquire(x.holder, "y", after)
	if !s.RunUntil(func() bool { return x.lookup(x.holder, dep).Granted || x.lookup(x.waiter, w).Granted }, 2*time.Second) {
		t.Fatal("neither granted")
	}
	if x.lookup(x.holder, dep).Granted {
		t.Fatalf("y granted %v after it was asked, before w, which it names (member %d up, its request delayed 400 ms on its stream); WARN: %q",
			s.Elapsed()-asked, x.waiter, warned(t, s, x.co, central.EventUnknownPredecessor))
	}
	t.Logf("w granted %v after y was asked", s.Elapsed()-asked)
	if !s.RunUntil(func() bool { return x.lookup(x.holder, dep).Granted }, 2*time.Second) {
		t.Fatal("y never granted")
	}
	if w := warned(t, s, x.co, central.EventUnknownPredecessor); len(w) > 0 {
		t.Errorf("y granted after w, but the coordinator said it skipped it: %q", w)
	}
}

// TestUnknownPredecessorBound: a predecessor that never comes holds its
// dependent for a bounded time however its member is heard. y's vector,
// written by hand, names member 1's request 5 more than it has made.
//
//   - Member 1 up, answering beats: its sync answering the first beat
//     sent after y was queued counts its requests below it, so the
//     request was never made; y is granted then (within a beat and a
//     round trip: 102 ms here), said as a vector naming a request never
//     made (it was held DeadAfter, 250 ms).
//   - Member 1 crashed, and frames coming in its name all the while
//     (forged renewals, keyless, every 50 ms: the coordinator keeps
//     hearing "member 1" but no answer to its beats): y is granted
//     4 x DeadAfter (1 s) after its queueing, said as heard but not
//     answering. Without the bound, the frames would hold y for as long
//     as they came.
func TestUnknownPredecessorBound(t *testing.T) {
	for _, heardOnly := range []bool{false, true} {
		name := "answering"
		if heardOnly {
			name = "heard only"
		}
		t.Run(name, func(t *testing.T) {
			x := crossingCluster(t, central.TokenAskFactory, time.Second)
			s := x.s
			inc := s.Core(x.waiter).(*central.Core).Incarnation()
			after := clock.VectorOf(map[uint32]uint64{x.waiter: uint64(inc)<<32 | 5})
			if heardOnly {
				s.Crash(x.waiter)
			}
			asked := s.Elapsed()
			var dep mutex.RequestID
			s.Do(x.holder, func(c core.Core) {
				var err error
				if dep, err = c.(mutex.Algorithm).Acquire(s.Clock(x.holder).Now(), mutex.Request{Lock: "y", After: after}); err != nil {
					t.Fatal(err)
				}
			})
			forged := 0
			granted := func() bool { return x.lookup(x.holder, dep).Granted }
			for !granted() && s.Elapsed()-asked < 2*time.Second {
				s.RunUntil(granted, 50*time.Millisecond)
				if heardOnly && !granted() {
					d := s.Core(x.co).(*central.Core).Report().Detail.(central.Detail)
					ps := s.Node(x.co).Peer(x.waiter)
					if err := s.Forge(x.waiter, x.co, wire.KindCentralRenew, d.Term, ps.Stamp+1,
						wire.CentralRenew{Name: "z", Incarnation: inc, Seq: 1, Fence: 1}); err != nil && !errors.Is(err, central.ErrUnknownRequest) {
						t.Fatalf("forged renewal: %v", err)
					}
					forged++
				}
			}
			if !granted() {
				t.Fatalf("y not granted in 2 s: its predecessor never comes, and must not hold it for ever")
			}
			waited := s.Elapsed() - asked
			ws := warned(t, s, x.co, central.EventUnknownPredecessor)
			t.Logf("y granted %v after it was asked (%d forged frames); WARN: %q", waited, forged, ws)
			if len(ws) != 1 {
				t.Fatalf("want one WARN for y's predecessor, got %q", ws)
			}
			if !heardOnly {
				if waited > 250*time.Millisecond || !strings.Contains(ws[0], "never made") {
					t.Errorf("y granted %v after it was asked, member %d answering beats: want it within a beat and a round trip of its word (its sync shows the request never made), said so", waited, x.waiter)
				}
				return
			}
			if forged < 10 {
				t.Fatalf("only %d frames forged in member %d's name: the test no longer keeps it heard", forged, x.waiter)
			}
			if waited < 990*time.Millisecond || waited > 1100*time.Millisecond || !strings.Contains(ws[0], "answered none of the beats") {
				t.Errorf("y granted %v after it was asked, member %d heard (frames in its name) but answering no beat: want 4 x DeadAfter (1 s) from its queueing, said so", waited, x.waiter)
			}
		})
	}
}

// refusedGrantOfX sets up the case of TestExpiredGrantHoldsDependents and
// TestExpiredGrantBound: the waiter asks for x with a 300 ms lease, the
// holder's y names it, and the waiter's grant of x crosses its sync (its
// frames to the coordinator cut) and is refused where it landed. from is
// when the grant was sent.
func refusedGrantOfX(t *testing.T) (x *crossing, dep mutex.RequestID, from time.Duration) {
	t.Helper()
	return refusedGrantOfXOn(t, crossingCluster(t, central.TokenAskFactory, time.Second), 300*time.Millisecond)
}

// refusedGrantOfXOn is refusedGrantOfX in cluster x, the waiter asking a
// lease of lease.
func refusedGrantOfXOn(t *testing.T, x *crossing, lease time.Duration) (_ *crossing, dep mutex.RequestID, from time.Duration) {
	t.Helper()
	s := x.s
	x.held = x.acquire(x.holder, "x", clock.Vector{})
	s.Do(x.waiter, func(c core.Core) {
		var err error
		if x.waits, err = c.(mutex.Algorithm).Acquire(s.Clock(x.waiter).Now(), mutex.Request{Lock: "x", Lease: lease}); err != nil {
			t.Fatal(err)
		}
	})
	s.Run(10 * time.Millisecond)
	after, err := s.Core(x.waiter).(mutex.Causal).Vector()
	if err != nil {
		t.Fatal(err)
	}
	dep = x.acquire(x.holder, "y", after) // names the waiter's x
	from = x.crossGrant()
	x.deliverCutOff()
	if x.lookup(x.waiter, x.waits).Granted {
		t.Fatal("the waiter took the grant: the test no longer reaches a grant refused where it landed")
	}
	return x, dep, from
}

// TestExpiredGrantHoldsDependents: the waiter's request for x, asking a
// 300 ms lease, is granted while its frames to the coordinator are lost
// (its sync answering a beat, which listed x waiting, among them), and it
// refuses the grant, which crossed that sync; to the coordinator it is an
// unconfirmed grant. Its lease ends at the coordinator 300 ms later, before
// the waiter's 350 ms of silence end (less than 2 x DeadAfter). The
// holder's y names x. The grant used to count as served once its lease
// ended here: y was granted then, before x, and nothing was said (the
// oracle under short cuts: TestOracle/tokenask+shortcuts seed 32,
// TestMixedBuilds/tokenask/harsh seed 14). Now it holds y as it did while
// held: until the waiter's sync, which has x queued again and granted,
// then y.
func TestExpiredGrantHoldsDependents(t *testing.T) {
	x, dep, from := refusedGrantOfX(t)
	s := x.s
	if s.RunUntil(func() bool { return x.lookup(x.holder, dep).Granted }, from+350*time.Millisecond-s.Elapsed()) {
		t.Fatalf("y granted %v after the grant of x, which it names, while the waiter, its frames lost, still waited for x (WARN: %q)",
			s.Elapsed()-from, warned(t, s, x.co, central.EventUnknownPredecessor))
	}
	if n := s.Core(x.co).(*central.Core).Report().Counters["leases_ended_unreleased"]; n == 0 {
		t.Fatal("the refused grant's lease did not end at the coordinator: the test no longer reaches the case")
	}
	s.Heal()
	if !s.RunUntil(func() bool { return x.lookup(x.waiter, x.waits).Granted }, time.Second) {
		t.Fatal("the waiter never granted x")
	}
	at := s.Elapsed()
	if x.lookup(x.holder, dep).Granted {
		t.Fatal("y granted before the waiter held x")
	}
	if !s.RunUntil(func() bool { return x.lookup(x.holder, dep).Granted }, time.Second) {
		t.Fatal("y never granted")
	}
	t.Logf("x held by the waiter %v after its first grant, y %v later", at-from, s.Elapsed()-at)
	if w := warned(t, s, x.co, central.EventUnknownPredecessor); len(w) > 0 {
		t.Errorf("y granted after x, but the coordinator said it skipped it: %q", w)
	}
}
