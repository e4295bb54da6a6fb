package bully_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/wire"
)

// TestAdoptedTermStands: member 2 of 1..3 follows 3; 3 falls silent and an
// ELECTION of a newer term comes from 1 (it gave up on a leader of a term 2
// never saw). 2 answers it and no longer follows 3 (its term is over). It
// waits for the newer term's COORDINATOR, and, with none (3 is dead and 1
// waits for 2's), stands itself: within CoordinatorTimeout and its jitter,
// then AnswerTimeout for 3's ANSWER, it claims a term above the ELECTION's.
// Before, adopting the term left 2 a follower of nobody with no timer: it
// answered every ELECTION from 1 and never stood, and 1 waited for its
// COORDINATOR for ever (TestSimOracle seeds 1197, 4856 and 19207).
func TestAdoptedTermStands(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cfg := bully.DefaultLANConfig()
	b := hintFollower(t, cfg, t0)
	newer := bully.MakeTerm(4, 1)
	electionFrom1(t, b, newer, t0.Add(2*time.Millisecond))
	rd := b.Ready()
	b.Advance(true)
	if !sent(rd, 1, wire.KindAnswer) {
		t.Fatalf("no ANSWER to 1's ELECTION: %v", rd.Messages)
	}
	if l, term, _ := b.Leader(); l != 0 || term != newer {
		t.Fatalf("after the ELECTION: leader %d in term %#x, want none in %#x", l, term, newer)
	}
	bound := t0.Add(2*time.Millisecond + cfg.CoordinatorTimeout + 2*cfg.AnswerTimeout + time.Millisecond)
	var claimed time.Time
	for now := t0.Add(3 * time.Millisecond); !now.After(t0.Add(5 * time.Second)); now = now.Add(time.Millisecond) {
		if now.Sub(t0)%(300*time.Millisecond) == 0 {
			electionFrom1(t, b, newer, now) // 1 asks again after its own coordinator wait
		}
		b.Tick(now)
		rd := b.Ready()
		b.Advance(true)
		if sent(rd, core.Broadcast, wire.KindCoordinator) {
			claimed = now
			break
		}
	}
	if claimed.IsZero() {
		t.Fatalf("2 never stood in 5 s: role %v, leader none, Deadline %v", b.Role(), b.Deadline())
	}
	if claimed.After(bound) {
		t.Errorf("2 claimed %v after the ELECTION, want within %v", claimed.Sub(t0), bound.Sub(t0))
	}
	if l, term, _ := b.Leader(); l != 2 || term <= newer || b.Role() != bully.RoleLeader {
		t.Errorf("2 leads: leader %d, term %#x (ELECTION's %#x), role %v", l, term, newer, b.Role())
	}
}

// TestAdoptedTermLeaderAlive: the same ELECTION of a newer term while 2's
// leader 3 is alive. 3 gets the ELECTION too and takes the cluster back
// above its term with a COORDINATOR: 2 follows it and stands for nothing
// (waiting for the claim does not drag the members above into an
// election).
func TestAdoptedTermLeaderAlive(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cfg := bully.DefaultLANConfig()
	b := hintFollower(t, cfg, t0)
	electionFrom1(t, b, bully.MakeTerm(4, 1), t0.Add(2*time.Millisecond))
	b.Ready()
	b.Advance(true)
	back := bully.MakeTerm(5, 3)
	for now := t0.Add(3 * time.Millisecond); !now.After(t0.Add(3 * time.Second)); now = now.Add(time.Millisecond) {
		if now.Sub(t0)%cfg.Heartbeat == 3*time.Millisecond {
			k := wire.KindLeaderHeartbeat
			var p interface{ AppendBinary([]byte) ([]byte, error) } = wire.LeaderHeartbeat{}
			if now == t0.Add(3*time.Millisecond) {
				k, p = wire.KindCoordinator, wire.Coordinator{}
			}
			m := frame(t, 3, k, back, p)
			m.Time = now
			if err := b.Step(m); err != nil {
				t.Fatal(err)
			}
		}
		b.Tick(now)
		rd := b.Ready()
		b.Advance(true)
		if sent(rd, core.Broadcast, wire.KindCoordinator) || sent(rd, 3, wire.KindElection) {
			t.Fatalf("2 stood at %v while 3 leads: %v", now.Sub(t0), rd.Messages)
		}
	}
	if l, term, _ := b.Leader(); l != 3 || term != back {
		t.Errorf("leader %d in term %#x, want 3 in %#x", l, term, back)
	}
}

// TestSimPausedTopMemberStands is TestSimOracle's seeds 1197 and 4856
// scripted: 3 of 1..4 is paused while following 4; 4 dies and 2 claims a
// newer term (its ELECTION to 3 unanswered), then 2 dies too. 3 resumes
// just before 1 gives up on 2, so 1's ELECTION of 2's term is the first
// frame 3 hears. 3 is the highest live member and must lead within a few
// elections' time; before, it answered 1 for ever and nobody led.
func TestSimPausedTopMemberStands(t *testing.T) {
	sim.Seeds(t, 20, func(t *testing.T, seed int64) {
		members := []bully.Member{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}}
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: 200 * time.Microsecond}})
		c := newCluster(t, s, members, nil)
		c.converge(3 * time.Second)
		s.Pause(3)
		s.Crash(4)
		if !s.RunUntil(func() bool { c.check(); return c.agreed(2) }, 3*time.Second) {
			t.Fatalf("2 did not take over from 4\n%s", s.Log())
		}
		s.Crash(2)
		c.run(300 * time.Millisecond) // 1's timeout on 2 is 400 ms plus 2's stagger
		if !s.Up(3) {
			t.Fatal("3 down")
		}
		s.Resume(3)
		start := s.Elapsed()
		c.converge(2 * time.Second)
		if d := s.Elapsed() - start; d > time.Second {
			t.Errorf("3 led %v after it resumed", d)
		}
		adopted := false
		for _, e := range s.EventsNamed(bully.EventLeaderLost) {
			if r, _ := e.Arg("reason"); e.Node == 3 && r == "newer_term" {
				adopted = true
			}
		}
		if !adopted {
			t.Errorf("3 did not drop 4 for a newer term: the script did not run as planned\n%s", s.Log())
		}
		c.claims()
	})
}

// electionFrom1 steps 1's ELECTION of term into b at at: 1 lost its leader.
func electionFrom1(t *testing.T, b *bully.Core, term uint64, at time.Time) {
	t.Helper()
	el := frame(t, 1, wire.KindElection, term, wire.Election{Reason: wire.ReasonLeaderLost})
	el.Time = at
	if err := b.Step(el); err != nil {
		t.Fatal(err)
	}
}

// sent reports whether rd carries a frame of kind k to to.
func sent(rd core.Ready, to uint32, k wire.Kind) bool {
	for _, m := range rd.Messages {
		if m.To == to && m.Kind == k {
			return true
		}
	}
	return false
}
