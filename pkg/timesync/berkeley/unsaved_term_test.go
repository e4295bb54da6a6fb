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
	unsavedTermRun(t, leadcheck.Isolated, 2)
}

// TestSimReassertNotMastered: leadcheck.Reasserted on the master, 3 of 3:
// cut off, it keeps its term while 1 and 2 elect newer ones; healed with
// its disk failing, it would take the group back above their term
// without an elected event (a reassert). Its claim must wait for the
// write like any other. Its disk mended, it masters rounds again.
func TestSimReassertNotMastered(t *testing.T) {
	unsavedTermRun(t, leadcheck.Reasserted, 3)
}

// unsavedTermRun runs scenario (a leadcheck failing-disk scenario) on
// member id of 3 once 3 is the master, with the status a held claim must
// show; then mends the disk and the links: 3 masters a round of its term
// again, which id answers.
func unsavedTermRun(t *testing.T, scenario func(testing.TB, *sim.Sim, uint32, time.Duration, func() uint64, func() error), id uint32) {
	sim.Seeds(t, 5, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 5))
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: 50 * time.Microsecond}})
		g := newGroup(t, s, 3, nil, rng)
		s.Run(5 * time.Second)
		if id, _ := g.master(); id != 3 {
			t.Fatalf("master %d, want 3\n%s", id, g.dump())
		}
		scenario(t, s, id, 10*time.Second, func() uint64 { return leadcheck.DiskBound(t, s, id, electionState) }, func() error {
			if st := report(s, id); st.Role == "master" || !strings.Contains(st.Election.Phase, "write fails") {
				return fmt.Errorf("role %q, election phase %q", st.Role, st.Election.Phase)
			}
			return nil
		})
		if t.Failed() {
			return
		}
		s.SetDiskFaults(id, 0)
		s.Heal()
		s.Run(10 * time.Second)
		master, st := g.master()
		if master != 3 || st.LastRound == nil || st.LastRound.Term != st.Term {
			t.Fatalf("no round under master 3 once healed\n%s", g.dump())
		}
		for _, m := range st.LastRound.Members {
			if m.ID == id && id != master && !m.Answered {
				t.Errorf("member %d did not answer master 3's last round once healed: %+v", id, m)
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
