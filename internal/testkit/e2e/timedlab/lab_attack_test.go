package timedlab

import (
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
	"github.com/synclab/synclab/pkg/wire"
)

// spread is the largest difference between two members' true offsets
// (timed --clock sim reports each clock's exact error).
func spread(a *e2e.AttackLab) (time.Duration, bool) {
	var lo, hi float64
	for i := 1; i <= a.N; i++ {
		st, err := a.Status(i)
		if err != nil {
			return 0, false
		}
		off := e2e.Num(st, "true_offset_ns")
		if i == 1 || off < lo {
			lo = off
		}
		if i == 1 || off > hi {
			hi = off
		}
	}
	return time.Duration(hi - lo), true
}

// TestLabAttackBerkeleyWorkerClock is the Berkeley attacks: a
// heartbeat "from the master" with term 0xffffffff00000003, which used to
// crash a timed worker as it crashed electd (refused now: term_absurd);
// then three frames "from the master" to a synchronised worker, a
// heartbeat in a newer term, a poll and an adjustment of +10 s. The worker used to slew by
// seconds while refusing the real master's frames as stale. Now the
// correction is held back (its error bound rules it out: adjust_spike),
// or refused because the master already took its term back
// (rejected_not_master) or polled again (rejected_stale_round); the
// master stays; the clocks stay together.
func TestLabAttackBerkeleyWorkerClock(t *testing.T) {
	e2e.ForEachSecurity(t, func(t *testing.T, keyed bool) {
		offsets := []string{"", "40ms", "-30ms", "10ms"}
		a := e2e.NewAttackLab(t, "timed", 7300, 3, keyed, func(i int) []string {
			return []string{"--mode", "berkeley", "--clock", "sim", "--sim-offset", offsets[i], "--sim-drift", fmt.Sprint(10 * i)}
		})
		a.StartAll()
		a.Eventually("the clocks within 1 ms of each other under master 3", 30*time.Second, func() bool {
			lead, _ := a.AgreedLeader("cluster", "election")
			p, ok := spread(a)
			return ok && lead == 3 && p < time.Millisecond
		})
		// The absurd term first, as a heartbeat of the master: it used to
		// crash the worker (no term left to claim) half a second later.
		a.Forge(3, 2, wire.KindLeaderHeartbeat, 0xffffffff00000003, wire.LeaderHeartbeat{})
		time.Sleep(3 * time.Second) // the servos settle their frequencies
		a.Alive(2)
		a.Refused(2, 1, "node", "core", "cluster", "election", "rejected", "term_absurd")
		_, term := a.AgreedLeader("cluster", "election")
		next := term + 1<<32 // the master's own term, one round on
		a.ForgeBurst(
			e2e.Forged{From: 3, To: 2, Kind: wire.KindLeaderHeartbeat, Term: next, Payload: wire.LeaderHeartbeat{}},
			e2e.Forged{From: 3, To: 2, Kind: wire.KindClockPoll, Term: next, Payload: wire.ClockPoll{Round: 1, Sample: 0}},
			e2e.Forged{From: 3, To: 2, Kind: wire.KindClockAdjust, Term: next, Payload: wire.ClockAdjust{Round: 1, Sample: 0, Correction: int64(10 * time.Second), Error: uint64(time.Millisecond)}})
		var worst time.Duration
		for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if p, ok := spread(a); ok {
				worst = max(worst, p)
			}
		}
		for i := 1; i <= 3; i++ {
			a.Alive(i)
		}
		st := a.MustStatus(2)
		counters := func(k string) float64 { return e2e.Num(st, "node", "core", "cluster", "counters", k) }
		// Which refusal it meets depends on how the real master's frames
		// interleave: the forged heartbeat is contested at the master's
		// next one, which then takes its term back and polls again.
		refusals := counters("adjust_spike") + counters("rejected_not_master") + counters("rejected_stale_round")
		t.Logf("worker 2: adjust_spike %v, rejected_not_master %v, rejected_stale_round %v, leader_contested %v; worst spread after the attack %v; %v",
			counters("adjust_spike"), counters("rejected_not_master"), counters("rejected_stale_round"),
			e2e.Num(st, "node", "core", "cluster", "election", "leader_contested"), worst, e2e.Field(st, "node", "core", "cluster", "counters"))
		if worst > time.Millisecond {
			t.Errorf("the clocks were %v apart after the attack", worst)
		}
		if a.Keyed {
			a.Refused(2, 3)
		} else if refusals < 1 {
			t.Errorf("the forged adjustment was neither held back nor refused: %v", e2e.Field(st, "node", "core"))
		}
		if lead, _ := a.AgreedLeader("cluster", "election"); lead != 3 {
			t.Errorf("master %d after the attack, want 3", lead)
		}
	})
}
