package orderd

import (
	"testing"

	"github.com/synclab/synclab/internal/testkit/e2e"

	"github.com/synclab/synclab/pkg/order/rsm"
	"github.com/synclab/synclab/pkg/wire"
)

// The attacks of issue 29 that the first pass (lab_attack_wire_test.go
// in electd and mutexd) left open, on real daemons with frames forged
// from a lab host with a member's source address: a ring hop numbered 2^63, snapshots numbered
// far ahead, configuration announcements and epoch refusals forged
// without a key; and what a restart costs each member's first frame with
// one. Each test logs what it measured, which on main was the failure the
// issue describes (SYNCLAB_E2E_BIN runs them against other binaries).

// newOrderdAttack starts three orderd members (sequencer 3) and an
// attacker's host, and applies one command at member from everywhere.
func newOrderdAttack(t *testing.T, port int, keyed bool, from int) (*e2e.AttackLab, *cluster) {
	t.Helper()
	a := e2e.NewAttackLab(t, "orderd", port, 3, keyed, nil)
	a.StartAll()
	c := &cluster{&e2e.Cluster{T: t, Daemon: "orderd", Dir: a.Dir}} // the same control sockets, for orderd's helpers
	c.awaitSequencer(3, 3)
	if out, err := c.orderd(from, "apply", "deposit 100"); err != nil {
		t.Fatalf("apply: %v %s", err, out)
	}
	c.sameState(1, 1, 2, 3)
	return a, c
}

// TestLabAttackOrderdSnapshotPace is issue 29's second item on real orderd
// daemons: eight snapshots "from the sequencer" to member 1, each 2^40-1
// past the last. On main member 1 installed them all (a snapshot could
// take a commit point 2^40 ahead, per frame: 2^24 of them end the number
// space), its commit point 2^43 ahead of the cluster's, and it applied
// nothing more the cluster did. Now each is refused (rejected_implausible:
// a sequencer cannot have numbered that far since member 1 was last
// caught up), and member 1 applies every command with the others.
func TestLabAttackOrderdSnapshotPace(t *testing.T) {
	e2e.ForEachSecurity(t, func(t *testing.T, keyed bool) {
		a, c := newOrderdAttack(t, 7740, keyed, 1)
		commit := func() uint64 { return uint64(e2e.Num(a.MustStatus(1), "node", "core", "sequencer", "commit")) }
		before := commit()
		term := uint64(e2e.Num(a.MustStatus(1), "node", "core", "sequencer", "term"))
		data := []byte(`{"machine":` + string(rsm.New().Snapshot()) + `,"sids":{}}`)
		var burst []e2e.Forged
		for k := range uint64(8) {
			burst = append(burst, e2e.Forged{From: 3, To: 1, Kind: wire.KindOrderSnapshot, Term: term, Payload: wire.OrderSnapshot{Index: before + (k+1)*(1<<40-1), Data: data}})
		}
		a.ForgeBurst(burst...)
		if keyed {
			a.Refused(1, 8)
		} else {
			a.Refused(1, 8, "node", "core", "counters", "rejected_implausible")
		}
		moved := commit() - before
		t.Logf("8 forged snapshots moved member 1's commit point by %d (2^43 = %d)", moved, uint64(1)<<43)
		if moved > 1<<20 {
			t.Errorf("8 forged snapshots moved member 1's commit point by %d", moved)
		}
		if out, err := c.orderd(2, "apply", "deposit 5"); err != nil {
			t.Fatalf("apply after the attack: %v %s", err, out)
		}
		c.sameState(2, 1, 2, 3)
	})
}

// TestLabAttackOrderdForgedEra: without a key, one submission "from"
// member 2 to the sequencer (3) in a submission era 1000 ahead of member
// 2's. On main the sequencer numbered it and took every real submission of
// member 2 after it for numbered already: member 2's sends were answered
// (the forged entry was taken for theirs) but never applied anywhere, also
// after member 2 restarted. Now member 2's next submission, stamped after
// the forged one, brings its eras back (eras_undone), and what it sends is
// applied everywhere.
func TestLabAttackOrderdForgedEra(t *testing.T) {
	e2e.ForEachSecurity(t, func(t *testing.T, keyed bool) {
		a, c := newOrderdAttack(t, 7790, keyed, 2)
		const era = 1 // member 2's first start
		a.ForgeBurst(e2e.Forged{From: 2, To: 3, Kind: wire.KindOrderSubmit, Term: 0, Payload: wire.OrderSubmit{SID: (era+1000)<<32 | 1, Message: []byte("deposit 1")}, Lamport: a.LamportOf(3) + 1000})
		if keyed {
			a.Refused(3, 1)
		}
		for _, cmd := range []string{"deposit 5", "deposit 7"} {
			if out, err := c.orderd(2, "apply", cmd); err != nil {
				t.Fatalf("apply %q at member 2 after the forged submission: %v %s", cmd, err, out)
			}
		}
		applied := uint64(3)
		if !keyed {
			applied = 4 // the forged one is applied too: without a key, anyone's command is
		}
		c.sameState(applied, 1, 2, 3)
		t.Logf("sequencer: eras_undone %v; member 2: forged_own_entries %v", e2e.Num(a.MustStatus(3), "node", "core", "counters", "eras_undone"),
			e2e.Num(a.MustStatus(2), "node", "core", "counters", "forged_own_entries"))
	})
}
