package mutexd

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"

	"github.com/synclab/synclab/pkg/wire"
)

// The attacks of issue 29 that the first pass (lab_attack_wire_test.go
// in electd and mutexd) left open, on real daemons with frames forged
// from a lab host with a member's source address: a ring hop numbered 2^63, snapshots numbered
// far ahead, configuration announcements and epoch refusals forged
// without a key; and what a restart costs each member's first frame with
// one. Each test logs what it measured, which on main was the failure the
// issue describes (SYNCLAB_E2E_BIN runs them against other binaries).

// TestLabAttackCentralBeat: without a key, one beat "from" the central
// coordinator (3) to each other member numbered 2^32-1, in its term. On
// main each member then took every real beat of the term for an old one
// and answered none: the coordinator's support ran out and it granted
// nothing until the term changed (lock x timed out at member 1). Now a
// beat stamped after the forged one is the coordinator's again
// (beats_undone), and x is granted.
func TestLabAttackCentralBeat(t *testing.T) {
	e2e.ForEachSecurity(t, func(t *testing.T, keyed bool) {
		a := e2e.NewAttackLab(t, "mutexd", 7780, 3, keyed, func(int) []string { return []string{"--algorithm", "central"} })
		a.StartAll()
		a.WaitHeard()
		if err := lockAt(a, 1, "x", 10*time.Second); err != nil {
			t.Fatalf("lock x at member 1 before the attack: %v", err)
		}
		term := uint64(e2e.Num(a.MustStatus(1), "node", "core", "detail", "term"))
		a.ForgeBurst(
			e2e.Forged{From: 3, To: 1, Kind: wire.KindCentralBeat, Term: term, Payload: wire.CentralBeat{Beat: 1<<32 - 1}, Lamport: a.LamportOf(1) + 1000},
			e2e.Forged{From: 3, To: 2, Kind: wire.KindCentralBeat, Term: term, Payload: wire.CentralBeat{Beat: 1<<32 - 1}, Lamport: a.LamportOf(2) + 1000})
		if keyed {
			a.Refused(1, 1)
			a.Refused(2, 1)
		}
		time.Sleep(3 * time.Second) // past the confirm window: support now comes from real beats only
		start := time.Now()
		if err := lockAt(a, 1, "x", 10*time.Second); err != nil {
			t.Fatalf("lock x at member 1 after a forged beat: %v (coordinator's counters %v)", err, e2e.Field(a.MustStatus(3), "node", "core", "counters"))
		}
		t.Logf("x granted at member 1 %v after the forged beats; beats_undone: member 1 %v, member 2 %v", time.Since(start).Round(time.Millisecond),
			e2e.Num(a.MustStatus(1), "node", "core", "counters", "beats_undone"), e2e.Num(a.MustStatus(2), "node", "core", "counters", "beats_undone"))
	})
}
