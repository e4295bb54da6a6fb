package order

import (
	"encoding/json"
	"errors"
	"fmt"
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
func TestSimAbsurdSnapshotRefused(t *testing.T) {
	sim.SoakSeeds(t, 5, 100, func(t *testing.T, seed int64) {
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 300 * time.Microsecond}})
		cfg := DefaultLANConfig()
		cfg.Machine = func() StateMachine { return rsm.New() }
		addMembers(t, s, 3, cfg)
		s.Run(time.Second)
		orderCore := func(id uint32) *Core { return s.Core(id).(*Core) }
		seqID := orderCore(1).seqr.leader
		if seqID == 0 {
			t.Fatal("no sequencer elected")
		}
		var victim, sender uint32
		for id := uint32(1); id <= 3; id++ {
			switch {
			case id == seqID:
			case victim == 0:
				victim = id
			default:
				sender = id
			}
		}
		n := 0
		deposit := func(from uint32) {
			n++
			_ = s.Do(from, func(c core.Core) {
				if err := c.(*Core).Multicast(s.Clock(from).Now(), TotalOrder, []byte(fmt.Sprintf("deposit %d", n))); err != nil {
					t.Fatal(err)
				}
			})
		}
		machine := func(id uint32) string { return string(orderCore(id).Machine().Snapshot()) }
		same := func() bool {
			for id := uint32(1); id <= 3; id++ {
				if s.Running(id) && (machine(id) != machine(sender) || orderCore(id).st.Log.Applied != orderCore(sender).st.Log.Applied) {
					return false
				}
			}
			return true
		}
		deposit(sender)
		if !s.RunUntil(same, 2*time.Second) {
			t.Fatal("the first deposit never reached every member")
		}

		_, term, _ := orderCore(victim).el.Leader()
		data, err := json.Marshal(snapshotData{Machine: orderCore(seqID).Machine().Snapshot(), SIDs: map[uint32]uint64{}})
		if err != nil {
			t.Fatal(err)
		}
		for _, index := range []uint64{^uint64(0), orderCore(victim).st.Log.Commit + 1<<40 + 1} {
			payload, err := wire.OrderSnapshot{Index: index, Data: data}.AppendBinary(nil)
			if err != nil {
				t.Fatal(err)
			}
			before := orderCore(victim).counters["rejected_implausible"]
			_ = s.Do(victim, func(c core.Core) {
				err = c.Step(core.Message{From: seqID, Kind: wire.KindOrderSnapshot, Term: term, Payload: payload, Time: s.Clock(victim).Now()})
			})
			if !errors.Is(err, ErrImplausible) {
				t.Errorf("a snapshot numbered %#x: %v, want %v", index, err, ErrImplausible)
			}
			if got := orderCore(victim).counters["rejected_implausible"]; got != before+1 {
				t.Errorf("a snapshot numbered %#x: rejected_implausible %d, want %d", index, got, before+1)
			}
		}

		deposit(sender)
		if !s.RunUntil(same, 2*time.Second) {
			t.Fatalf("member %d stopped applying after the snapshot: applied %d, the others %d", victim, orderCore(victim).st.Log.Applied, orderCore(sender).st.Log.Applied)
		}
		s.Crash(victim)
		s.Restart(victim)
		s.Crash(seqID) // the next sequencer recovers from the victim's log too
		s.Run(2 * time.Second)
		deposit(sender)
		if !s.RunUntil(same, 5*time.Second) {
			t.Fatalf("after a restart and a new sequencer: member %d applied %d (commit %d), member %d applied %d", victim, orderCore(victim).st.Log.Applied, orderCore(victim).st.Log.Commit, sender, orderCore(sender).st.Log.Applied)
		}
		if last := orderCore(sender).st.Log.last(); last > 100 {
			t.Fatalf("the log runs to %d after three deposits", last)
		}
	})
}
