package tokenring_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/tokenring"
	"github.com/synclab/synclab/pkg/wire"
)

// The tests of this file pin the four defects issue 15 found on namespace
// hosts ("The token ring, too"), each as the promise the README makes.

// holderFault is what happens to the member holding the lock.
type holderFault int

const (
	partitionHolder holderFault = iota // cut off alone; the other four stay connected
	pauseHolder                        // its daemon stopped for 5 s (SIGSTOP)
)

// TestSimHolderCutOffGap: five members with the LAN defaults (3 s lease),
// one lock, every member's client asking for it again and again. The
// member holding it is partitioned alone, or paused 5 s, while its client
// holds a lease it keeps renewing. The majority must grant again within
// 4 s (the README's recovery: a loss timeout, a locate, and the wait for
// every lease the old holder could still have), and the oracle holds: no
// grant overlaps another in real time, fences grow.
func TestSimHolderCutOffGap(t *testing.T) {
	for _, fault := range []holderFault{partitionHolder, pauseHolder} {
		name := map[holderFault]string{partitionHolder: "partitioned", pauseHolder: "paused"}[fault]
		t.Run(name, func(t *testing.T) {
			var worst time.Duration
			sim.Seeds(t, 12, func(t *testing.T, seed int64) {
				gap := holderCutOffGap(t, seed, fault)
				worst = max(worst, gap)
				if gap > 4*time.Second {
					t.Fatalf("the majority granted nothing for %v after the holder was %s (want <= 4s)\n%s", gap, name, lastTail)
				}
			})
			t.Logf("holder %s: longest gap until the majority grants %v", name, worst)
		})
	}
}

// newLANRing is a ring of n members with the LAN defaults (3 s lease), one
// lock "x", links of 0.2-0.5 ms that lose nothing; half the seeds trust
// senders as a keyed cluster does, half vouch for tokens.
func newLANRing(t *testing.T, seed int64, n int) *ring {
	r := newRing(t, seed, n)
	r.cfg = tokenring.DefaultLANConfig()
	r.cfg.Members = r.ids
	r.cfg.TrustSenders = seed%2 == 1
	r.locks = []string{"x"}
	r.s.SetDefaultLink(sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 300 * time.Microsecond})
	return r
}

// holderCutOffGap runs one trial and returns the time from the fault to
// the first grant at another member.
func holderCutOffGap(t *testing.T, seed int64, fault holderFault) time.Duration {
	r := newLANRing(t, seed, 5)
	r.run(2*time.Second, true)
	// Wait for a holder and make its client hold on, renewing, to a
	// random point in its lease (not just at the grant). A holder that
	// loses its lock meanwhile (a renewal refused: the ring's own loss
	// rules) is replaced by the next.
	var victim uint32
	for tries := 0; victim == 0 || !r.clients[victim].holding; tries++ {
		if tries == 20 {
			t.Fatalf("no client held the lock for long\n%s", r.tail())
		}
		victim = 0
		for victim == 0 {
			r.run(time.Millisecond, true)
			for _, id := range r.ids {
				if c := r.clients[id]; c.holding && !c.hung && victim == 0 {
					victim = id
					c.until = r.s.Elapsed() + time.Hour
				}
			}
		}
		r.run(time.Duration(r.rng.Int64N(int64(1500*time.Millisecond))), true)
	}
	at := r.s.Elapsed()
	granted := r.granted
	switch fault {
	case partitionHolder:
		r.s.Isolate(victim)
	case pauseHolder:
		r.s.Pause(victim)
	}
	gap := time.Duration(-1)
	end := at + 12*time.Second
	for r.s.Elapsed() < end {
		if fault == pauseHolder && r.s.Elapsed() >= at+5*time.Second {
			r.s.Resume(victim)
		}
		r.run(time.Millisecond, true)
		if gap < 0 && r.granted > granted {
			for _, iv := range r.grants["x"] {
				if iv.start >= at && iv.node != victim {
					gap = iv.start - at
					break
				}
			}
		}
	}
	lastTail = ""
	for _, e := range r.s.Events() {
		if e.At >= at && e.At <= at+gap+time.Millisecond && !strings.HasPrefix(e.Name, "lock_") {
			lastTail += e.String() + "\n"
		}
	}
	r.s.Heal()
	r.run(3*time.Second, true)
	r.checkExclusion()
	if gap < 0 {
		t.Fatalf("the majority granted nothing in 12 s after member %d was cut off\n%s", victim, r.tail())
	}
	return gap
}

// TestSimLossyMemberBypass: a waiting member is bypassed at most N-1
// times (doc.go), even when one member's links lose a fifth of their
// datagrams and a fifth of its TCP frames are sent again after the
// retransmission timeout (200 ms, as long as the acknowledgement timeout,
// and every frame behind them waits): between a client's request and
// its grant, the other members are granted the lock at most N-1 times in
// all. Issue 15 saw the lossy member's predecessor skip it, regenerate the
// token and serve its own client 5 times in a row while the lossy member's
// client waited 4 s. Thirty seeds (about 0.1 s each): a holder made to
// keep the token while exactly one other member waits first fails at
// seed 23 (a review's reintroduced defect).
func TestSimLossyMemberBypass(t *testing.T) {
	sim.Seeds(t, 30, func(t *testing.T, seed int64) { lossyMemberBypass(t, seed) })
}

// TestSimLossyMemberBypassUnheardWants: seed 1600 of TestSimLossyMemberBypass
// (found by a scan of 3000 seeds; the only failure there). Member 1 passes
// the token to the lossy member 2 at 8.513 s; TCP resends it, and it
// arrives 200 ms later carrying no want, since nobody else waited when it
// left. Meanwhile members 1, 3, 4 and 5 ask (8.516-8.532 s) and each
// broadcasts its want: all four datagrams to member 2 are lost (a chance
// of 0.2^4), while members 1, 3, 4 and 5 hear each other. Member 2, knowing
// of no other want, serves its own client six times in a row (8.715 to
// 8.812 s, the last one held until 9.678 s). The waiters' locates, a loss
// timeout after they asked, reach it from 9.017 s, while its client holds
// the lock, and it passes the token at its release after that one grant.
// No member bypassed a want it knew of: the repeated grants of a member
// that heard no want are outside the bound (the locate, a loss timeout
// later, is what bounds them), and the test names them.
func TestSimLossyMemberBypassUnheardWants(t *testing.T) {
	if unheard := lossyMemberBypass(t, 1600); unheard < 5 {
		t.Errorf("most repeated grants of a member that heard no want of the waiter: %d, want >= 5 (member 2's at 8.745-8.812 s): the seed no longer reproduces the case", unheard)
	}
}

// lossyMemberBypass runs one seed of TestSimLossyMemberBypass and returns
// the most grants exempted from a wait's count as repeats of a member that
// had not heard the waiter.
func lossyMemberBypass(t *testing.T, seed int64) int {
	const n = 5
	r := newLANRing(t, seed, n)
	lossy := r.ids[1+int(seed)%(n-1)]
	lossyLink := sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 300 * time.Microsecond, Loss: 0.2, Retransmit: 0.2}
	for _, id := range r.ids {
		if id != lossy {
			r.s.SetLinkBoth(lossy, id, lossyLink)
		}
	}
	r.run(20*time.Second, true)
	r.run(6*time.Second, false)
	// The bound below counts the waits that ended: a lock stuck with
	// every request waiting would pass it (a holder ignoring its token's
	// wants did, "most bypasses 0").
	r.checkAllGranted()
	r.checkExclusion()
	// A regenerated token does not know who waited for the old one:
	// a wait that spans a regeneration is not held to the bound, and
	// regenerations after the first (the start) must stay rare.
	var regens []time.Duration
	for _, e := range r.s.EventsNamed(tokenring.EventRegenerated) {
		regens = append(regens, e.At)
	}
	if len(regens) > 2 {
		t.Errorf("%d regenerations in 26 s with one lossy member (issue 15 saw 4 in 1.3 s): %v", len(regens), regens)
	}
	// Nor can a member pass the token to a want it never heard: when
	// every want of the waiters is lost on its way to the holder, the
	// holder serves its own client again until a waiter's locate (a loss
	// timeout later) reaches it. Such a repeated grant (the lock's previous
	// grant was at the same member) before the member received any ring
	// probe from the waiter since it asked is not counted; a repeat after
	// one is (a want known and bypassed).
	probes := map[[2]uint32][]time.Duration{} // delivered ring probes, by from and to
	for _, e := range r.s.Trace() {
		if e.Kind == wire.KindRingProbe && e.Fate == sim.FateDelivered {
			k := [2]uint32{e.From, e.To}
			probes[k] = append(probes[k], e.At)
		}
	}
	heardBefore := func(h, m uint32, from, to time.Duration) bool {
		return slices.ContainsFunc(probes[[2]uint32{m, h}], func(at time.Duration) bool { return at > from && at < to })
	}
	worst, lossyWorst, unheardWorst := 0, 0, 0
	for _, w := range r.waits {
		if slices.ContainsFunc(regens, func(at time.Duration) bool { return at > w.asked && at < w.granted }) {
			continue
		}
		bypasses, unheard := 0, 0
		for i, iv := range r.grants["x"] {
			if !(iv.start > w.asked && iv.start < w.granted && iv.node != w.node) {
				continue
			}
			if i > 0 && r.grants["x"][i-1].node == iv.node && !heardBefore(iv.node, w.node, w.asked, iv.start) {
				unheard++
				continue
			}
			bypasses++
		}
		worst = max(worst, bypasses)
		unheardWorst = max(unheardWorst, unheard)
		if w.node == lossy {
			lossyWorst = max(lossyWorst, bypasses)
		}
		if bypasses > n-1 {
			t.Errorf("member %d asked at %v, granted at %v: bypassed %d times (want <= %d; lossy member %d; %d more repeats of a member that had not heard it)", w.node, w.asked, w.granted, bypasses, n-1, lossy, unheard)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("lossy member %d: %d waits, most bypasses %d (of the lossy member: %d), most unheard repeats %d, %d regenerations", lossy, len(r.waits), worst, lossyWorst, unheardWorst, len(regens))
	return unheardWorst
}

// TestSimLocateMissesTheMakerInItsHold: the trace of issue 15's lossy ring
// (TestSimLossyMemberBypass, seed 81) took apart. A regenerated token waits
// out its Hold at the member that made it, checking nothing; a member that
// asks for the lock then looks for the token, and when all three tries of
// its locate miss the maker's answers (a lossy link) while a majority
// answers "not here", it used to make a token of its own, dooming the live
// one a moment before its first grant and making everyone wait a new Hold.
// Here: member 1 holds the lock, renewing, and crashes; member 2 makes the
// replacement; during its Hold, the link between 2 and 3 is cut for as long
// as 3's first locate runs. Member 3 must not regenerate: it is granted on
// 2's token, and the ring made exactly one token after the crash.
func TestSimLocateMissesTheMakerInItsHold(t *testing.T) {
	for _, trust := range []bool{true, false} {
		t.Run(fmt.Sprintf("trust=%v", trust), func(t *testing.T) {
			s := settledRingOfFive(t, trust)
			acquire := func(id uint32) mutex.RequestID { return acquireX(t, s, id) }
			granted := func(id uint32, req mutex.RequestID) func() bool {
				return func() bool { return grantedX(s, id, req) }
			}
			held := acquire(1)
			if !s.RunUntil(granted(1, held), 2*time.Second) {
				t.Fatal("member 1 never granted")
			}
			for range 2 { // renewals are checks: a majority confirms 1's token
				s.Run(time.Second)
				s.Do(1, func(cc core.Core) { cc.(*tokenring.Core).Renew(s.Clock(1).Now(), held, 0) })
			}
			// (10 ms after the last renewal: the replacement's Hold then
			// runs about 1.53 s, since a Hold is counted from the promises'
			// answers rather than from the end of the prepare, and a lease
			// ends within MaxLease of the check it was renewed on.)
			s.Run(10 * time.Millisecond)
			s.Crash(1)
			crashed := s.Elapsed()
			acquire(2)
			made := func() []sim.Event {
				var out []sim.Event
				for _, e := range s.EventsNamed(tokenring.EventRegenerated) {
					if e.At > crashed {
						out = append(out, e)
					}
				}
				return out
			}
			if !s.RunUntil(func() bool { return len(made()) > 0 }, 5*time.Second) {
				t.Fatal("no token made after the holder crashed")
			}
			replacement := made()[0]
			hold := arg[time.Duration](replacement, "hold")
			if replacement.Node != 2 || hold < 1500*time.Millisecond {
				t.Fatalf("the setup needs member 2 to make a token whose Hold outlasts member 3's locate, 1.5 s after it is made: %v", replacement)
			}
			// Member 3 asks 0.8 s into the Hold and locates a loss timeout
			// later, while the promises of 2's majority are over a third of
			// a lease old (the sign of a live holder it used to trust); its
			// locate's three tries all miss member 2.
			start := replacement.At
			s.Run(start + 700*time.Millisecond - s.Elapsed())
			s.Cut(2, 3)
			s.Cut(3, 2)
			s.Run(100 * time.Millisecond)
			waiting := acquire(3)
			s.Run(start + 1500*time.Millisecond - s.Elapsed())
			s.Heal()
			got := s.RunUntil(granted(3, waiting), 5*time.Second)
			if len(made()) != 1 {
				t.Errorf("%d tokens made after the crash, want 1 (member 3 regenerated over member 2's token in its Hold): %v", len(made()), made())
			}
			if !got {
				t.Fatalf("member 3 never granted")
			}
			for _, e := range s.EventsNamed(mutex.EventGranted) {
				if e.Node == 3 && arg[uint64](e, "request") == uint64(waiting) && arg[uint64](e, "generation") != arg[uint64](replacement, "generation") {
					t.Errorf("member 3 granted on generation %#x, want member 2's %#x", arg[uint64](e, "generation"), arg[uint64](replacement, "generation"))
				}
			}
			if n := s.Core(3).(*tokenring.Core).Report().Counters["locate_token_in_hold"]; n == 0 {
				t.Errorf("member 3 never waited for a token in its Hold (counter locate_token_in_hold 0): the cut did not reach its locate")
			}
		})
	}
}

// TestSimWantsTheSenderMissed: seed 132 of TestSimLossyMemberBypass. The
// wants of members 4 and 5 are lost on their way to member 2, which holds
// the token, and reach member 3; member 2 passes the token to 3 with 3's
// want alone, and the token takes longer than an acknowledgement timeout
// on the way (TCP resending it). Member 3 used to drop the wants it had
// heard before the token's arrival as if the token carried them, and
// served its own client again and again while 4 and 5 waited for their
// locates. Now 3 serves one request and passes the token to 4: a
// numbered want the token has not served stands.
func TestSimWantsTheSenderMissed(t *testing.T) {
	for _, trust := range []bool{true, false} {
		t.Run(fmt.Sprintf("trust=%v", trust), func(t *testing.T) {
			s := settledRingOfFive(t, trust)
			acquire := func(id uint32) mutex.RequestID { return acquireX(t, s, id) }
			release := func(id uint32, req mutex.RequestID) { releaseX(t, s, id, req) }
			granted := func(id uint32, req mutex.RequestID) bool { return grantedX(s, id, req) }
			held := acquire(2)
			if !s.RunUntil(func() bool { return granted(2, held) }, 2*time.Second) {
				t.Fatal("member 2 never granted")
			}
			third := acquire(3)
			s.Run(10 * time.Millisecond)
			s.Cut(4, 2)
			s.Cut(5, 2)
			fourth, fifth := acquire(4), acquire(5)
			s.Run(50 * time.Millisecond)
			s.SetLink(2, 3, sim.LinkConfig{Delay: 200 * time.Microsecond, Retransmit: 1}) // the token arrives 200 ms late
			release(2, held)
			if !s.RunUntil(func() bool { return granted(3, third) }, time.Second) {
				t.Fatal("member 3 never granted")
			}
			release(3, third)
			again := acquire(3) // its client asks at once, as a busy one does
			s.RunUntil(func() bool { return granted(4, fourth) || granted(3, again) }, 300*time.Millisecond)
			if granted(3, again) || !granted(4, fourth) {
				t.Errorf("member 3 served its own client again (%v) while 4 and 5 waited, their wants heard at 3 before the token came (4 granted: %v, 5 granted: %v)",
					granted(3, again), granted(4, fourth), granted(5, fifth))
			}
		})
	}
}

// TestSimHandoffPasses: the lock moves from member 1 to member 2 in one
// token pass (issue 15 counted N+1: the token first went round the whole
// ring to members that no longer wanted it), and an idle ring sends O(N)
// frames per second in all. Prints both at 4, 16 and 64 members.
func TestSimHandoffPasses(t *testing.T) {
	for _, n := range []int{4, 16, 64} {
		passes, idle := handoffAndIdle(t, n)
		t.Logf("%2d members: %d token passes per handoff, idle ring %.0f frames/s in all (%.1f per member)", n, passes, idle, idle/float64(n))
		if passes != 1 {
			t.Errorf("%d members: the lock moved from member 1 to 2 in %d token passes, want 1", n, passes)
		}
		if limit := 3 * float64(n); idle > limit {
			t.Errorf("%d members: idle ring sends %.0f frames/s, want O(N) (<= %.0f)", n, idle, limit)
		}
	}
}

// settledRingOfFive is a ring of members 1-5 on 0.2 ms links (seed 1),
// trusting senders as a keyed cluster does or vouching for tokens, run 2 s
// so that it is up before a test's first request.
func settledRingOfFive(t *testing.T, trust bool) *sim.Sim {
	t.Helper()
	s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond}})
	addMembersTrusting(t, s, []uint32{1, 2, 3, 4, 5}, trust)
	s.Run(2 * time.Second)
	return s
}

// handoffAndIdle: take and release at member 1 twice, then at member 2
// (issue 15's reproduction), counting token passes; then idle traffic.
func handoffAndIdle(t *testing.T, n int) (passes int, idlePerSecond float64) {
	s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond}})
	var ids []uint32
	for i := 1; i <= n; i++ {
		ids = append(ids, uint32(i))
	}
	addMembersTrusting(t, s, ids, true)
	s.Run(5 * time.Second)
	take := func(id uint32) { enterOnce(t, s, id, 2*time.Second) }
	take(1)
	take(1)
	before := s.Sent(wire.KindToken)
	take(2)
	passes = int(s.Sent(wire.KindToken) - before)
	s.Run(10 * time.Second)
	var total uint64
	for k := wire.Kind(1); k < 255; k++ {
		total += s.Sent(k)
	}
	s.Run(10 * time.Second)
	var after uint64
	for k := wire.Kind(1); k < 255; k++ {
		after += s.Sent(k)
	}
	return passes, float64(after-total) / 10
}

// enterOnce takes lock x at member id, releases it once granted, and runs
// the simulation on for after.
func enterOnce(t *testing.T, s *sim.Sim, id uint32, after time.Duration) {
	t.Helper()
	req := acquireX(t, s, id)
	if !s.RunUntil(func() bool { return grantedX(s, id, req) }, 5*time.Second) {
		t.Fatalf("member %d never granted", id)
	}
	releaseX(t, s, id, req)
	s.Run(after)
}

// acquireX: a client of member id asks for lock x (the default lease).
func acquireX(t *testing.T, s *sim.Sim, id uint32) mutex.RequestID {
	t.Helper()
	var req mutex.RequestID
	s.Do(id, func(cc core.Core) {
		var err error
		if req, err = cc.(*tokenring.Core).Acquire(s.Clock(id).Now(), mutex.Request{Lock: "x", Client: "t"}); err != nil {
			t.Fatal(err)
		}
	})
	return req
}

// releaseX: that client gives request req back.
func releaseX(t *testing.T, s *sim.Sim, id uint32, req mutex.RequestID) {
	t.Helper()
	s.Do(id, func(cc core.Core) {
		if err := cc.(*tokenring.Core).Release(s.Clock(id).Now(), req); err != nil {
			t.Fatal(err)
		}
	})
}

// grantedX says whether member id's request req holds its lock.
func grantedX(s *sim.Sim, id uint32, req mutex.RequestID) bool {
	st, ok := s.Core(id).(*tokenring.Core).Lookup(req)
	return ok && st.Granted
}

var lastTail string

var _ = fmt.Sprint
var _ = slices.Sort[[]int]

// TestSimEntriesInTurnPasses: lock entries at each member in turn (take and
// release at member 1, then at 2, then 3 ...), one right after the other,
// as the bench runs them. Each entry must cost one token pass, from the
// last holder to the next: a member that overheard an earlier member's
// want, served since, must not send the token round the whole ring to it
// (the bench counted 6 passes per second entry at 5 members, 17 at 16).
func TestSimEntriesInTurnPasses(t *testing.T) {
	for _, n := range []int{5, 16} {
		for _, trust := range []bool{true, false} {
			perEntry, locates := entriesInTurn(t, n, trust)
			t.Logf("%2d members (trust senders %v): %.2f token passes, %.2f locates per entry", n, trust, perEntry, locates)
			if perEntry > 1 {
				t.Errorf("%d members: %.2f token passes per entry in turn, want 1", n, perEntry)
			}
			if locates > 0 {
				t.Errorf("%d members: %.2f locate probes per entry in turn, want 0", n, locates)
			}
		}
	}
}

// entriesInTurn runs 3n entries, member after member, and returns the
// token passes and locate probes per entry.
func entriesInTurn(t *testing.T, n int, trust bool) (passes, locates float64) {
	s := sim.New(sim.Config{Seed: int64(n), DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 100 * time.Microsecond}})
	var ids []uint32
	for i := 1; i <= n; i++ {
		ids = append(ids, uint32(i))
	}
	addMembersTrusting(t, s, ids, trust)
	s.Run(5 * time.Second)
	enter := func(id uint32) { enterOnce(t, s, id, time.Millisecond) }
	enter(ids[0]) // the token comes to member 1 (made, or found)
	s.Run(time.Second)
	locatesSent := func() (sum uint64) {
		for _, id := range ids {
			sum += s.Core(id).(*tokenring.Core).Report().Counters["probes_locate"]
		}
		return sum
	}
	tokens, probes := s.Sent(wire.KindToken), locatesSent()
	entries := 3 * n
	for i := 1; i <= entries; i++ {
		enter(ids[i%n])
	}
	s.Run(time.Second) // a token sent on round the ring would be counted here
	passes = float64(s.Sent(wire.KindToken)-tokens) / float64(entries)
	locates = float64(locatesSent()-probes) / float64(entries)
	return passes, locates
}
