package central_test

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
	"github.com/synclab/synclab/pkg/mutex/central"
)

// TestUnsavedTermNotCoordinated: leadcheck.Isolated on member 4 of 5.
// Before the coordinator's election reserved, the member coordinated a
// term on no disk and coordinated it again after its restart: one term
// whose fences start at the same base. Healed, it is granted the lock.
func TestUnsavedTermNotCoordinated(t *testing.T) {
	sim.Seeds(t, 5, func(t *testing.T, seed int64) {
		s := defaultCluster(t, seed)
		if got := coordinator(s); got != 5 {
			t.Fatalf("coordinator %d, want 5", got)
		}
		leadcheck.Isolated(t, s, 4, 10*time.Second, func() uint64 { return leadcheck.DiskBound(t, s, 4, electionState) }, func() error {
			d := detail(s, 4)
			if d.Coordinates || !strings.Contains(d.Election.Phase, "write fails") {
				return fmt.Errorf("coordinates %v, election phase %q", d.Coordinates, d.Election.Phase)
			}
			return nil
		})
		if t.Failed() {
			return
		}
		s.SetDiskFaults(4, 0)
		s.Heal()
		if !acquired(s, 4, 10*time.Second) {
			t.Fatalf("member 4 not granted the lock 10 s after healing (coordinator %d)", coordinator(s))
		}
		if err := leadcheck.LedOnce(s.Events()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestReassertNotCoordinated: leadcheck.Reasserted on the coordinator, 5
// of 5: cut off, it keeps its term while the others elect a newer one;
// healed with its disk failing, it would take the cluster back above
// their term without an elected event (a reassert). Its claim must wait
// for the write like any other; restarted, it follows 4. Its disk
// mended, 4 is granted the lock.
func TestReassertNotCoordinated(t *testing.T) {
	sim.Seeds(t, 5, func(t *testing.T, seed int64) {
		s := defaultCluster(t, seed)
		if got := coordinator(s); got != 5 {
			t.Fatalf("coordinator %d, want 5", got)
		}
		leadcheck.Reasserted(t, s, 5, 10*time.Second, func() uint64 { return leadcheck.DiskBound(t, s, 5, electionState) }, func() error {
			// Restarted where 4 coordinates, it follows 4 (its claims
			// above its reservation are held anyway).
			if d := detail(s, 5); d.Coordinates {
				return fmt.Errorf("coordinates with its writes failing, election phase %q", d.Election.Phase)
			}
			return nil
		})
		if t.Failed() {
			return
		}
		s.SetDiskFaults(5, 0)
		if !acquired(s, 4, 10*time.Second) {
			t.Fatalf("member 4 not granted the lock 10 s after 5's disk works (coordinator %d)", coordinator(s))
		}
		if err := leadcheck.LedOnce(s.Events()); err != nil {
			t.Fatal(err)
		}
	})
}

// electionState is the election's section of central's state.
func electionState(state []byte, _ [][]byte) ([]byte, error) {
	saved, err := central.Restore(state)
	return saved.Election, err
}

// TestRollingReserve: leadcheck.Rolls over five members, each roll
// followed by a grant (the upgraded members reserving).
func TestRollingReserve(t *testing.T) {
	ids := []uint32{1, 2, 3, 4, 5}
	probe, err := central.New(core.Env{ID: 1, Members: ids, Now: time.Unix(0, 0)}, central.DefaultLANConfig())
	if err != nil {
		t.Fatal(err)
	}
	vc := probe.Config()
	previous := vc.BullyConfig(ids) // the previous release's election
	previous.Reserve = false
	sim.Seeds(t, 5, func(t *testing.T, seed int64) {
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: time.Millisecond}})
		reserve := leadcheck.AddRolling(t, s, ids, func(env core.Env, reserve bool) (core.Core, error) {
			cfg := central.DefaultLANConfig()
			if !reserve {
				cfg.Election = func(env core.Env) (elect.Elector, error) { return bully.New(env, previous) }
			}
			return central.New(env, cfg)
		})
		s.Run(6 * time.Second)
		term := func(id uint32) uint64 { return detail(s, id).Election.Term }
		leadcheck.Rolls(t, s, ids, 3*time.Second, reserve, term, func(on bool) {
			if !acquired(s, 1, 10*time.Second) {
				t.Fatalf("reserving %v: not granted 10 s after the roll (coordinator %d)", on, coordinator(s))
			}
			for _, id := range ids {
				if bound := leadcheck.DiskBound(t, s, id, electionState); on && bound <= term(id) {
					t.Fatalf("member %d's disk reserves nothing after its upgrade", id)
				}
			}
		})
	})
}
