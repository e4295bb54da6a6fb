package order

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/order/rsm"
)

// TestSimCoveredClaimUnsavedRecovery: member 5 (the highest) sequences;
// cut off, it is replaced by 4; every state write of 5 then fails and
// the links heal. 5's claim of a newer term is covered by the
// reservation it wrote while healthy, so its election leads without a
// write, and it starts recovering the log in that term; the term's own
// write (Log.Term, a promise) fails, so every frame of 5 stays home while
// 4 goes on sequencing. 5 must say that its term waits for its disk
// (status said "recovering" in a term nobody heard of, beside 4's
// sequencer: the central coordinator's review finding, here for orderd),
// and, its disk mended, its recovery must go on: its frames leave, it
// sequences, and a multicast is applied everywhere.
func TestSimCoveredClaimUnsavedRecovery(t *testing.T) {
	sim.Seeds(t, 10, func(t *testing.T, seed int64) {
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 300 * time.Microsecond}})
		cfg := DefaultLANConfig()
		cfg.Machine = func() StateMachine { return rsm.New() }
		addMembers(t, s, 5, cfg)
		s.Run(2 * time.Second)
		seqOf := func(id uint32) *SequencerStatus { return s.Core(id).(*Core).Report().Sequencer }
		if st := seqOf(1); st.Sequencer != 5 {
			t.Fatalf("sequencer %d, want 5", st.Sequencer)
		}
		s.Isolate(5)
		s.Run(5 * time.Second)
		if st := seqOf(1); st.Sequencer != 4 {
			t.Fatalf("5 cut off: sequencer %d, want 4", st.Sequencer)
		}
		s.SetDiskFaults(5, 1)
		s.Heal()
		s.Run(5 * time.Second)
		st5 := seqOf(5)
		if st5.Sequencer != 5 || st5.Role != "recovering" {
			t.Fatalf("member 5, its claim covered and its writes failing: sequencer %d, role %q, want itself, recovering (the scenario)", st5.Sequencer, st5.Role)
		}
		if st5.Unsaved == 0 || st5.Unsaved != st5.Term || epoch.Owner(st5.Unsaved) != 5 {
			t.Fatalf("member 5 recovers term %s with every write failing for 5 s, and its status does not say the term waits for its disk (unsaved term %#x)",
				epoch.Format(st5.Term), st5.Unsaved)
		}
		multicastApplied(t, s, []uint32{1, 2, 3, 4}, 1) // 4 sequences meanwhile
		if seqOf(1).Sequencer != 4 || seqOf(4).Unsaved != 0 {
			t.Fatalf("member 1 follows %d, 4's status %+v", seqOf(1).Sequencer, *seqOf(4))
		}
		s.SetDiskFaults(5, 0)
		s.Run(5 * time.Second)
		if st := seqOf(5); st.Unsaved != 0 || st.Role != "sequencer" {
			t.Fatalf("member 5's disk works again: role %q, unsaved term %#x; want sequencer, none", st.Role, st.Unsaved)
		}
		multicastApplied(t, s, []uint32{1, 2, 3, 4, 5}, 2)
	})
}
