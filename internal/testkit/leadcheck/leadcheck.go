// Package leadcheck is an oracle over the simulator's event log for the
// cores that embed a leader election (orderd's sequencer, mutexd's central
// coordinator, timed's Berkeley master): no member claims one term (reports
// itself elected, or leading a new term: claim) in two of its lives. A term's authority is its number (a
// fence, a sequence era, a round's term): a member that led a term, was
// restarted and led it again hands that number to two leaderships. It
// happens when a member reports a term its disk does not hold (its write
// failed), reads the older term after a restart and claims the same one
// again.
package leadcheck

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
)

// restartEvent is the simulator's event for a restart (sim.Restart).
const restartEvent = "sim.restart"

// claim returns the term of a claim a member reported (e.Node leads
// it): elect.EventElected, or elect.EventLeaderElected naming the member
// itself. bully reports elected only when a member becomes leader; a
// leader that takes the cluster back above a newer term (a reassert)
// reports only the leader_elected of its new term, and a claim there on
// no disk would pass an oracle that saw elected alone.
func claim(e sim.Event) (term uint64, ok bool, err error) {
	switch e.Name {
	case elect.EventElected:
	case elect.EventLeaderElected:
		if lead, _ := e.Arg("leader"); lead != e.Node {
			return 0, false, nil
		}
	default:
		return 0, false, nil
	}
	tm, _ := e.Arg("term")
	term, ok = tm.(uint64)
	if !ok {
		return 0, false, fmt.Errorf("node %d: %s at %v without a term", e.Node, e.Name, e.At)
	}
	return term, true, nil
}

// LedOnce returns an error naming the first member that led one term
// (reported a claim of it: claim) in two of its lives, or nil.
func LedOnce(events []sim.Event) error {
	type led struct {
		node uint32
		term uint64
	}
	life := map[uint32]int{} // per member, its restarts so far
	ledIn := map[led]int{}   // the life a member reported the term in
	for _, e := range events {
		if e.Name == restartEvent {
			life[e.Node]++
			continue
		}
		term, ok, err := claim(e)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		k := led{e.Node, term}
		if prev, ok := ledIn[k]; ok && prev != life[e.Node] {
			return fmt.Errorf("node %d led term %#x in two lives (restart %d, then %d, at %v)", e.Node, term, prev, life[e.Node], e.At)
		}
		ledIn[k] = life[e.Node]
	}
	return nil
}

// Unsaved returns the terms node claimed (claim) at or after from that
// are above bound, the highest term its disk allows it (for bully the
// larger of its term and its reservation, bully.RestoreReserved): while
// its writes fail, nothing it reports may go past what it wrote before.
func Unsaved(events []sim.Event, node uint32, from time.Duration, bound uint64) []uint64 {
	var terms []uint64
	for _, e := range events {
		if e.Node != node || e.At < from {
			continue
		}
		if term, ok, _ := claim(e); ok && term > bound {
			terms = append(terms, term)
		}
	}
	return terms
}

// Bound is the highest term a member whose election's state on disk is
// state (bully's, either format) may have claimed: the larger of its term
// and its reservation (bully.RestoreReserved).
func Bound(state []byte) (uint64, error) {
	term, reserved, err := bully.RestoreReserved(state)
	return max(term, reserved), err
}

// Isolated is the failing-disk scenario every daemon's election is
// tested with: member id is cut off from the others with every state
// write failing, for run: it gives its leader up and wins its election
// alone. It must report no term above bound() (what its disk lets it have
// claimed, DiskBound: its reservation covers one claim); its frames wait
// for their write whatever, but a member that reported a term on no disk
// said in its log and status that it led, and after a restart read the
// older term and claimed the same one again. Then it is restarted, runs
// as long again (every claim now above its reservation, so held), and
// held must find its status saying so (nil); no term may be led in two
// lives. The disk and the links are left broken: the caller heals them.
func Isolated(t testing.TB, s *sim.Sim, id uint32, run time.Duration, bound func() uint64, held func() error) {
	t.Helper()
	from := s.Elapsed()
	s.SetDiskFaults(id, 1)
	s.Isolate(id)
	s.Run(run)
	restartHeld(t, s, id, from, run, bound, held)
}

// Reasserted is Isolated for a leader's claim: leader id is cut off
// while the others elect among themselves, and elect again after each
// of them restarts (a power cut on their side), so their term passes the
// one id reserved; then, with every state write of id failing, the links
// heal, and id, still leading its own term, hears the newer one and takes
// the cluster back above it (bully's reassert: no elected event, its
// claim's term is in a leader_elected), a claim its reservation does not
// cover. It must claim nothing above bound(), and after a restart held
// must find it not leading; no term may be led in two lives. The disk is
// left failing: the caller mends it.
func Reasserted(t testing.TB, s *sim.Sim, id uint32, run time.Duration, bound func() uint64, held func() error) {
	t.Helper()
	s.Isolate(id)
	s.Run(run)
	for _, other := range s.IDs() {
		if other != id {
			s.Restart(other)
		}
	}
	s.Run(run)
	from := s.Elapsed()
	s.SetDiskFaults(id, 1)
	s.Heal()
	s.Run(run)
	restartHeld(t, s, id, from, run, bound, held)
}

// restartHeld is the end of Isolated and Reasserted: no claim of id above
// bound() since from, then a restart and run, held, LedOnce.
func restartHeld(t testing.TB, s *sim.Sim, id uint32, from, run time.Duration, bound func() uint64, held func() error) {
	t.Helper()
	if terms := Unsaved(s.Events(), id, from, bound()); len(terms) > 0 {
		t.Errorf("member %d claimed terms %#x above its disk's with every write failing", id, terms)
	}
	// Its reservation covered one claim; the restart's claims above it
	// wait for a write.
	s.Restart(id)
	s.Run(run)
	if err := held(); err != nil {
		t.Errorf("member %d with its claim held: %v", id, err)
	}
	if err := LedOnce(s.Events()); err != nil {
		t.Fatal(err)
	}
}

// AddRolling adds members ids to s, each built by build as the reserving
// build (reserve[id], true) or the previous release's (false, the
// default), and returns reserve for Rolls to flip. A build that refuses
// the other's state fails t.
func AddRolling(t testing.TB, s *sim.Sim, ids []uint32, build func(env core.Env, reserve bool) (core.Core, error)) map[uint32]bool {
	reserve := map[uint32]bool{}
	for _, id := range ids {
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			c, err := build(env, reserve[id])
			if err != nil {
				t.Fatalf("member %d (reserving %v): %v", id, reserve[id], err)
			}
			return c
		}, clock.SimConfig{})
	}
	return reserve
}

// Rolls upgrades the members ids of a cluster of the previous release
// (its election without bully.Config.Reserve, writing the first state
// format) one at a time to the reserving build (Roll, flipping reserve
// from AddRolling), then downgrades them the same way: each build must
// read the other's state, no term may go back across a restart nor be led
// in two lives; after each roll, check(on) tests the cluster's service.
func Rolls(t testing.TB, s *sim.Sim, ids []uint32, settle time.Duration, reserve map[uint32]bool, term func(id uint32) uint64, check func(on bool)) {
	t.Helper()
	for _, on := range []bool{true, false} {
		Roll(t, s, ids, settle, func(id uint32) { reserve[id] = on }, term)
		check(on)
	}
}

// Roll restarts the members ids one at a time, as a rolling upgrade or
// downgrade does: set(id) switches what the member's factory builds next,
// then it restarts and the cluster runs settle. It fails t if a member's
// election term (term) went back across its restart, or once a member
// led one term in two lives (LedOnce).
func Roll(t testing.TB, s *sim.Sim, ids []uint32, settle time.Duration, set func(id uint32), term func(id uint32) uint64) {
	t.Helper()
	for _, id := range ids {
		before := term(id)
		set(id)
		s.Restart(id)
		if after := term(id); after < before {
			t.Fatalf("member %d restarted at term %#x, below its %#x before", id, after, before)
		}
		s.Run(settle)
	}
	if err := LedOnce(s.Events()); err != nil {
		t.Fatal(err)
	}
}

// DiskBound is Bound of the election's state on member id's disk (its
// snapshot and log records), which section finds in the daemon's own
// format; an unreadable disk fails t.
func DiskBound(t testing.TB, s *sim.Sim, id uint32, section func(state []byte, log [][]byte) ([]byte, error)) uint64 {
	t.Helper()
	state, err := section(s.Disk(id), s.DiskLog(id))
	if err == nil {
		var bound uint64
		if bound, err = Bound(state); err == nil {
			return bound
		}
	}
	t.Fatalf("member %d's disk: %v", id, err)
	return 0
}

// Terms returns how many distinct terms members reported themselves
// elected for (elect.EventElected) at or after from, and when the first
// such report came (-1: none): a stable cluster elects once, a churning
// one again and again.
func Terms(events []sim.Event, from time.Duration) (terms int, first time.Duration) {
	seen := map[uint64]bool{}
	first = -1
	for _, e := range events {
		if e.At < from || e.Name != elect.EventElected {
			continue
		}
		tm, _ := e.Arg("term")
		term, ok := tm.(uint64)
		if !ok || seen[term] {
			continue
		}
		seen[term] = true
		if first < 0 {
			first = e.At
		}
	}
	return len(seen), first
}
