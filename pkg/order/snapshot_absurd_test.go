package order

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/order/rsm"
	"github.com/synclab/synclab/pkg/wire"
)

// One snapshot "from the sequencer", in its term, numbered 2^64-1 (what a
// host forges for an --insecure cluster, spoofing the sequencer's
// address, or a sequencer gone wrong sends): on main the member installed
// it and persisted it, its commit point at the end of the number space,
// and took nothing more from any Append (every number "committed"), its
// acks refused as implausible: its state machine stopped for good,
// restarts included. Worse, its recover reply then named the longest log,
// so the next sequencer fetched the snapshot from it and numbered on from
// 2^64-1. Now a snapshot more than 2^40 numbers past the commit point is
// refused and counted (a million multicasts a second for 12 days; as the
// Lamport stamps, one frame cannot bring a number within reach of its
// end), and the cluster carries on, through a new sequencer too.
// snapshotLab is three members with a state machine, the sequencer
// elected, one deposit applied everywhere: victim and sender are the two
// members that do not sequence.
type snapshotLab struct {
	t                     *testing.T
	s                     *sim.Sim
	seqID, victim, sender uint32
	n                     int
}

func newSnapshotLab(t *testing.T, seed int64) *snapshotLab {
	s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 300 * time.Microsecond}})
	cfg := DefaultLANConfig()
	cfg.Machine = func() StateMachine { return rsm.New() }
	addMembers(t, s, 3, cfg)
	s.Run(time.Second)
	l := &snapshotLab{t: t, s: s}
	l.seqID = l.core(1).seqr.leader
	if l.seqID == 0 {
		t.Fatal("no sequencer elected")
	}
	for id := uint32(1); id <= 3; id++ {
		switch {
		case id == l.seqID:
		case l.victim == 0:
			l.victim = id
		default:
			l.sender = id
		}
	}
	l.deposit(l.sender)
	if !s.RunUntil(l.same, 2*time.Second) {
		t.Fatal("the first deposit never reached every member")
	}
	return l
}

func (l *snapshotLab) core(id uint32) *Core { return l.s.Core(id).(*Core) }

func (l *snapshotLab) deposit(from uint32) {
	l.n++
	_ = l.s.Do(from, func(c core.Core) {
		if err := c.(*Core).Multicast(l.s.Clock(from).Now(), TotalOrder, []byte(fmt.Sprintf("deposit %d", l.n))); err != nil {
			l.t.Fatal(err)
		}
	})
}

func (l *snapshotLab) machine(id uint32) string { return string(l.core(id).Machine().Snapshot()) }

// same says whether every running member holds the sender's state.
func (l *snapshotLab) same() bool {
	for id := uint32(1); id <= 3; id++ {
		if l.s.Running(id) && (l.machine(id) != l.machine(l.sender) || l.core(id).st.Log.Applied != l.core(l.sender).st.Log.Applied) {
			return false
		}
	}
	return true
}

// forgeSnapshot steps the victim with a snapshot "from the sequencer" in
// its term, numbered index, holding the sequencer's state.
func (l *snapshotLab) forgeSnapshot(index uint64) error {
	_, term, _ := l.core(l.victim).el.Leader()
	data, err := json.Marshal(snapshotData{Machine: l.core(l.seqID).Machine().Snapshot(), SIDs: map[uint32]uint64{}})
	if err != nil {
		l.t.Fatal(err)
	}
	payload, err := wire.OrderSnapshot{Index: index, Data: data}.AppendBinary(nil)
	if err != nil {
		l.t.Fatal(err)
	}
	_ = l.s.Do(l.victim, func(c core.Core) {
		err = c.Step(core.Message{From: l.seqID, Kind: wire.KindOrderSnapshot, Term: term, Payload: payload, Time: l.s.Clock(l.victim).Now()})
	})
	return err
}

func TestSimAbsurdSnapshotRefused(t *testing.T) {
	sim.SoakSeeds(t, 5, 100, func(t *testing.T, seed int64) {
		l := newSnapshotLab(t, seed)
		s, victim, sender, seqID := l.s, l.victim, l.sender, l.seqID
		for _, index := range []uint64{^uint64(0), l.core(victim).st.Log.Commit + 1<<40 + 1} {
			before := l.core(victim).counters["rejected_implausible"]
			if err := l.forgeSnapshot(index); !errors.Is(err, ErrImplausible) {
				t.Errorf("a snapshot numbered %#x: %v, want %v", index, err, ErrImplausible)
			}
			if got := l.core(victim).counters["rejected_implausible"]; got != before+1 {
				t.Errorf("a snapshot numbered %#x: rejected_implausible %d, want %d", index, got, before+1)
			}
		}

		l.deposit(sender)
		if !s.RunUntil(l.same, 2*time.Second) {
			t.Fatalf("member %d stopped applying after the snapshot: applied %d, the others %d", victim, l.core(victim).st.Log.Applied, l.core(sender).st.Log.Applied)
		}
		s.Crash(victim)
		s.Restart(victim)
		s.Crash(seqID) // the next sequencer recovers from the victim's log too
		s.Run(2 * time.Second)
		l.deposit(sender)
		if !s.RunUntil(l.same, 5*time.Second) {
			t.Fatalf("after a restart and a new sequencer: member %d applied %d (commit %d), member %d applied %d", victim, l.core(victim).st.Log.Applied, l.core(victim).st.Log.Commit, sender, l.core(sender).st.Log.Applied)
		}
		if last := l.core(sender).st.Log.last(); last > 100 {
			t.Fatalf("the log runs to %d after three deposits", last)
		}
	})
}

// TestSimSnapshotsPaced is issue 29's second item: on main a snapshot
// could move a member's commit point by up to 2^40 past it, per frame, so
// 2^24 forged snapshots in a row (what a host forges for an --insecure
// cluster) ended the number space, and one stopped the member's
// deliveries until the cluster numbered that far. Now snapshots move it by
// what a sequencer can have numbered since the member was last caught up
// (2^16, and 2^20 a second): 64 forged at once, each 2^40 ahead, move
// nothing; nor do 64 each just past the allowance; and the member keeps
// applying what the cluster does.
func TestSimSnapshotsPaced(t *testing.T) {
	sim.SoakSeeds(t, 3, 20, func(t *testing.T, seed int64) {
		l := newSnapshotLab(t, seed)
		l.deposit(l.sender)
		if !l.s.RunUntil(func() bool { return l.same() && l.core(l.victim).st.Log.Applied > 0 }, 2*time.Second) {
			t.Fatal("the deposit never reached every member")
		}
		start := l.core(l.victim).st.Log.Commit
		refused := 0
		for range 64 {
			if err := l.forgeSnapshot(l.core(l.victim).st.Log.Commit + 1<<40 - 1); errors.Is(err, ErrImplausible) {
				refused++
			}
		}
		for range 64 {
			if err := l.forgeSnapshot(l.core(l.victim).st.Log.Commit + l.core(l.victim).snapshotAllowance() + 1); errors.Is(err, ErrImplausible) {
				refused++
			}
		}
		moved := l.core(l.victim).st.Log.Commit - start
		t.Logf("128 forged snapshots moved member %d's commit point by %d (%d refused)", l.victim, moved, refused)
		if moved != 0 || refused != 128 {
			t.Fatalf("128 forged snapshots: %d refused, the commit point moved by %d (2^%.1f)", refused, moved, math.Log2(float64(moved)))
		}
		l.deposit(l.sender)
		if !l.s.RunUntil(l.same, 2*time.Second) {
			t.Fatalf("member %d stopped applying after the forged snapshots", l.victim)
		}
	})
}

// TestSimFarBehindCatchesUp: a member cut off while the cluster numbers
// far past the log it keeps takes the sequencer's snapshot when it is back
// (the time it was away pays for the jump), and after a restart too
// (HeardAt is saved).
func TestSimFarBehindCatchesUp(t *testing.T) {
	for _, restart := range []bool{false, true} {
		l := newSnapshotLab(t, 1)
		l.s.Isolate(l.victim)
		if restart {
			l.s.Crash(l.victim)
		}
		for range 3 * l.core(l.seqID).cfg.KeepLog {
			l.deposit(l.sender)
			l.s.Run(time.Millisecond)
		}
		l.s.Run(time.Second)
		l.s.Heal()
		if restart {
			l.s.Restart(l.victim)
			if l.core(l.victim).st.Log.HeardAt.IsZero() {
				t.Error("HeardAt not saved: a restarted member far behind would wait for the rate")
			}
		}
		if !l.s.RunUntil(l.same, 10*time.Second) {
			t.Fatalf("restart %v: member %d never caught up: applied %d, the others %d; counters %v", restart, l.victim,
				l.core(l.victim).st.Log.Applied, l.core(l.sender).st.Log.Applied, l.core(l.victim).counters)
		}
		if l.core(l.victim).counters["snapshots_installed"] == 0 {
			t.Errorf("restart %v: caught up without a snapshot: the test did not test", restart)
		}
	}
}
