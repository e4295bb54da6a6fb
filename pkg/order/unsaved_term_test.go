package order

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/testkit/leadcheck"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/order/rsm"
)

// TestSimUnsavedTermNotSequenced: leadcheck.Isolated on member 2 of 3.
// Before the sequencer's election reserved, the member took the
// sequencer's role for a term on no disk (status "recovering") and led
// that term, one log era, again after its restart. Healed, its multicast
// is ordered.
func TestSimUnsavedTermNotSequenced(t *testing.T) {
	unsavedTermRun(t, leadcheck.Isolated, 2)
}

// TestSimReassertNotSequenced: leadcheck.Reasserted on the sequencer, 3
// of 3: cut off, it keeps its term while 1 and 2 elect newer ones; healed
// with its disk failing, it would take the role back above their term
// without an elected event (a reassert). Its claim must wait for the
// write like any other. Its disk mended, its multicast is ordered.
func TestSimReassertNotSequenced(t *testing.T) {
	unsavedTermRun(t, leadcheck.Reasserted, 3)
}

// unsavedTermRun runs scenario (a leadcheck failing-disk scenario) on
// member id of 3 once 3 is the sequencer, with the status a held claim
// must show; then mends the disk and the links and has a multicast
// ordered.
func unsavedTermRun(t *testing.T, scenario func(testing.TB, *sim.Sim, uint32, time.Duration, func() uint64, func() error), id uint32) {
	sim.SoakSeeds(t, 5, 100, func(t *testing.T, seed int64) {
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 300 * time.Microsecond}})
		cfg := DefaultLANConfig()
		cfg.Machine = func() StateMachine { return rsm.New() }
		addMembers(t, s, 3, cfg)
		s.Run(time.Second)
		member := func(id uint32) *Core { return s.Core(id).(*Core) }
		if seq := member(1).seqr.leader; seq != 3 {
			t.Fatalf("sequencer %d, want 3", seq)
		}
		scenario(t, s, id, 5*time.Second, func() uint64 { return leadcheck.DiskBound(t, s, id, electionState(s, id)) }, func() error {
			if st := member(id).Report().Sequencer; st.Role != "member" || !strings.Contains(st.Phase, "write fails") {
				return fmt.Errorf("role %q, election phase %q", st.Role, st.Phase)
			}
			return nil
		})
		if t.Failed() {
			return
		}
		s.SetDiskFaults(id, 0)
		s.Heal()
		s.Run(5 * time.Second)
		multicastApplied(t, s, []uint32{1, 2, 3}, 1)
		if err := leadcheck.LedOnce(s.Events()); err != nil {
			t.Fatal(err)
		}
	})
}

// multicastApplied has member 1 multicast a deposit in total order and
// fails t unless every member of ids has applied n commands 5 s later.
func multicastApplied(t *testing.T, s *sim.Sim, ids []uint32, n uint64) {
	t.Helper()
	_ = s.Do(1, func(c core.Core) {
		if err := c.(*Core).Multicast(s.Clock(1).Now(), TotalOrder, []byte("deposit 100")); err != nil {
			t.Fatal(err)
		}
	})
	applied := func() bool {
		for _, id := range ids {
			if s.Core(id).(*Core).st.Log.Applied < n {
				return false
			}
		}
		return true
	}
	if !s.RunUntil(applied, 5*time.Second) {
		t.Fatalf("a multicast not applied everywhere 5 s on: %+v", *s.Core(1).(*Core).Report().Sequencer)
	}
}

// electionState finds the election's section of orderd's state, decoded
// as member id of s decodes it.
func electionState(s *sim.Sim, id uint32) func([]byte, [][]byte) ([]byte, error) {
	return func(state []byte, log [][]byte) ([]byte, error) {
		st, _, err := decodeState(state, log, s.Core(id).(*Core))
		if err != nil {
			return nil, err
		}
		return st.Election, nil
	}
}

// TestSimRollingReserve: leadcheck.Rolls over three members, each roll
// followed by a multicast applied everywhere (the upgraded members
// reserving).
func TestSimRollingReserve(t *testing.T) {
	sim.Seeds(t, 5, func(t *testing.T, seed int64) {
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 300 * time.Microsecond}})
		ids := []uint32{1, 2, 3}
		reserve := leadcheck.AddRolling(t, s, ids, func(env core.Env, reserve bool) (core.Core, error) {
			cfg := DefaultLANConfig()
			cfg.Machine = func() StateMachine { return rsm.New() }
			if !reserve {
				cfg.Election = func(env core.Env) (elect.Elector, error) { return bully.New(env, bully.DefaultLANConfig()) }
			}
			return New(env, cfg)
		})
		s.Run(time.Second)
		member := func(id uint32) *Core { return s.Core(id).(*Core) }
		term := func(id uint32) uint64 { _, tm, _ := member(id).el.Leader(); return tm }
		rolls := uint64(0)
		leadcheck.Rolls(t, s, ids, 2*time.Second, reserve, term, func(on bool) {
			rolls++
			multicastApplied(t, s, ids, rolls)
			for _, id := range ids {
				if bound := leadcheck.DiskBound(t, s, id, electionState(s, id)); on && bound <= term(id) {
					t.Fatalf("member %d's disk reserves nothing after its upgrade", id)
				}
			}
		})
	})
}

// TestSimUnsavedTermOnlyItsOwnWrite: SequencerStatus.Unsaved (orderd
// status: "SEQUENCER TERM X WAITS FOR ITS STATE WRITE") names a term whose
// own write failed, not any failed write with a promise pending: sequencer
// 3's term on disk for 2 s, then a FIFO record's write fails; the status
// said the term waited for its write (review-order4's
// TestRevUnsavedTermOnAnyFailedPromise).
func TestSimUnsavedTermOnlyItsOwnWrite(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond}})
	addMembers(t, s, 3, DefaultLANConfig())
	s.Run(2 * time.Second)
	st := s.Core(3).(*Core).Report().Sequencer
	if st.Sequencer != 3 || st.Role != "sequencer" || st.Unsaved != 0 {
		t.Fatalf("want 3 sequencing, its term saved: %+v", *st)
	}
	s.SetDiskFaults(3, 1)
	if err := s.Do(3, func(c core.Core) {
		if err := c.(*Core).Multicast(s.Clock(3).Now(), FIFO, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	s.Run(10 * time.Millisecond)
	if s.Counters(3).WriteFailures == 0 {
		t.Fatal("no write failed: the test proves nothing")
	}
	if st := s.Core(3).(*Core).Report().Sequencer; st.Unsaved != 0 {
		t.Fatalf("sequencer 3, term %#x written 2 s ago, an entry's write failing: status says term %#x waits for its state write (role %s)", st.Term, st.Unsaved, st.Role)
	}
}
