package berkeley_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/testkit/leadcheck"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/timesync/berkeley"
)

// TestSimUnsavedTermNotMastered: leadcheck.Isolated on member 2 of 3.
// Before the master election reserved, the member was master of a term
// on no disk and mastered it again after its restart. Healed, it answers
// the master's rounds again.
func TestSimUnsavedTermNotMastered(t *testing.T) {
	sim.Seeds(t, 5, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 5))
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: 50 * time.Microsecond}})
		g := newGroup(t, s, 3, nil, rng)
		s.Run(5 * time.Second)
		if id, _ := g.master(); id != 3 {
			t.Fatalf("master %d, want 3\n%s", id, g.dump())
		}
		leadcheck.Isolated(t, s, 2, 10*time.Second, func() uint64 { return leadcheck.DiskBound(t, s, 2, electionState) }, func() error {
			if st := report(s, 2); st.Role == "master" || !strings.Contains(st.Election.Phase, "write fails") {
				return fmt.Errorf("role %q, election phase %q", st.Role, st.Election.Phase)
			}
			return nil
		})
		if t.Failed() {
			return
		}
		s.SetDiskFaults(2, 0)
		s.Heal()
		s.Run(10 * time.Second)
		id, st := g.master()
		if id != 3 || st.LastRound == nil || st.LastRound.Term != st.Term {
			t.Fatalf("no round under master 3 once healed\n%s", g.dump())
		}
		for _, m := range st.LastRound.Members {
			if m.ID == 2 && !m.Answered {
				t.Errorf("member 2 did not answer master 3's last round once healed: %+v", m)
			}
		}
		if err := leadcheck.LedOnce(s.Events()); err != nil {
			t.Fatal(err)
		}
	})
}

// electionState is the election's section of Berkeley's state.
func electionState(state []byte, _ [][]byte) ([]byte, error) {
	saved, err := berkeley.Restore(state)
	return saved.Election, err
}

// TestSimRollingReserve: leadcheck.Rolls over three members, each roll
// followed by a round of the top member as master (the upgraded members
// reserving).
func TestSimRollingReserve(t *testing.T) {
	sim.Seeds(t, 5, func(t *testing.T, seed int64) {
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: 50 * time.Microsecond}})
		ids := []uint32{1, 2, 3}
		reserve := leadcheck.AddRolling(t, s, ids, func(env core.Env, reserve bool) (core.Core, error) {
			var cfg berkeley.Config
			if !reserve {
				cfg.Election = func(env core.Env) (elect.Elector, error) { return bully.New(env, bully.DefaultLANConfig()) }
			}
			return berkeley.New(env, cfg)
		})
		s.Run(5 * time.Second)
		term := func(id uint32) uint64 { return report(s, id).Term }
		leadcheck.Rolls(t, s, ids, 3*time.Second, reserve, term, func(on bool) {
			s.Run(5 * time.Second)
			if st := report(s, 3); st.Role != "master" || st.LastRound == nil || st.LastRound.Term != st.Term {
				t.Fatalf("reserving %v: member 3 is %s with no round of its term", on, st.Role)
			}
			for _, id := range ids {
				if bound := leadcheck.DiskBound(t, s, id, electionState); on && bound <= term(id) {
					t.Fatalf("member %d's disk reserves nothing after its upgrade", id)
				}
			}
		})
	})
}

// TestSimReassertNotMastered: leadcheck.Reasserted on the master, 3 of 3:
// cut off, it keeps its term while 1 and 2 elect a newer one; healed with
// its disk failing, it would take the group back above their term
// without an elected event (a reassert). Its claim must wait for the
// write like any other. Its disk mended, it masters rounds again.
func TestSimReassertNotMastered(t *testing.T) {
	sim.Seeds(t, 5, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 5))
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: 50 * time.Microsecond}})
		g := newGroup(t, s, 3, nil, rng)
		s.Run(5 * time.Second)
		if id, _ := g.master(); id != 3 {
			t.Fatalf("master %d, want 3\n%s", id, g.dump())
		}
		leadcheck.Reasserted(t, s, 3, 10*time.Second, func() uint64 { return leadcheck.DiskBound(t, s, 3, electionState) }, func() error {
			if st := report(s, 3); st.Role == "master" || !strings.Contains(st.Election.Phase, "write fails") {
				return fmt.Errorf("role %q, election phase %q", st.Role, st.Election.Phase)
			}
			return nil
		})
		if t.Failed() {
			return
		}
		s.SetDiskFaults(3, 0)
		s.Run(10 * time.Second)
		if id, st := g.master(); id != 3 || st.LastRound == nil || st.LastRound.Term != st.Term {
			t.Fatalf("no round under master 3 once its disk works\n%s", g.dump())
		}
		if err := leadcheck.LedOnce(s.Events()); err != nil {
			t.Fatal(err)
		}
	})
}
