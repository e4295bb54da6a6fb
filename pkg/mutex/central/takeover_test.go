package central_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
)

// TestRenewalHeldAcrossTakeover: 4 members, 4 coordinates and member 1
// holds x. Member 1 renews, and its loop stalls with 4's confirmation in
// its kernel; the links 4-2 and 4-3 are cut and 3 takes over. Member 1
// then reads 4's confirmation and 3's claim in one pass, before its next
// Tick. The confirmation waits for the clock's reading (c.entering); the
// claim has member 1 sync to 3, announcing the lease with the time it had
// left. Before the fix the confirmation was entered at that Tick anyway:
// member 1's lease grew past the end 3 knew, and 3 granted x to member 2
// at that end while member 1 still held it (two holders, found by
// review). Now a grant or renewal held for the reading is void once the
// coordinator followed changes (grants_superseded): what the sync told 3
// is what holds.
func TestRenewalHeldAcrossTakeover(t *testing.T) {
	for _, v := range []central.Variant{central.Coordinator, central.TokenAsk} {
		t.Run(v.String(), func(t *testing.T) {
			r, held := holdingX(t, v)
			r.s.Run(300 * time.Millisecond)
			var err error
			r.s.Do(1, func(c core.Core) { err = c.(*central.Core).Renew(r.s.Clock(1).Now(), held, 0) })
			if err != nil {
				t.Fatal(err)
			}
			r.s.Pause(1) // 4's confirmation waits in member 1's kernel
			for _, p := range [][2]uint32{{4, 2}, {2, 4}, {4, 3}, {3, 4}} {
				r.s.Cut(p[0], p[1])
			}
			if !r.s.RunUntil(func() bool { return r.core(3).Report().Detail.(central.Detail).Coordinates }, 2*time.Second) {
				t.Fatal("member 3 did not take over")
			}
			// 3's claim (bully's coordinator datagram) left as it took
			// over and lands a link's delay later: member 1 resumes just
			// before, reading 4's confirmation (held in its kernel), then
			// the claim, and ticks only after (its first tick comes at a
			// random phase, at least a nanosecond on, behind the claim).
			r.s.Run(r.s.Link(3, 1).Delay - time.Nanosecond)
			r.s.Resume(1)
			r.s.Run(10 * time.Millisecond)
			r.s.Do(2, func(c core.Core) { c.(*central.Core).Acquire(r.s.Clock(2).Now(), mutex.Request{Lock: "x"}) })
			r.s.Run(3 * time.Second)
			checkExclusive(t, r.s, "x")
			if n := r.core(1).Report().Counters["grants_superseded"]; n != 1 {
				t.Errorf("member 1 voided %d confirmations held for the clock's reading, want 1 (the run no longer reads the confirmation and the claim in one pass?): %v",
					n, r.core(1).Report().Counters)
			}
		})
	}
}

// holdingX starts 4 members running variant v, 4 coordinating, and has
// member 1 granted x (its request returned).
func holdingX(t *testing.T, v central.Variant) (*scenarioRun, mutex.RequestID) {
	t.Helper()
	r := &scenarioRun{t: t, variant: v}
	r.newCluster(4, nil) // coordinator 4
	r.s.Run(2 * time.Second)
	if d := r.core(4).Report().Detail.(central.Detail); !d.Coordinates {
		t.Fatal("member 4 does not coordinate")
	}
	var held mutex.RequestID
	r.s.Do(1, func(c core.Core) { held, _ = c.(*central.Core).Acquire(r.s.Clock(1).Now(), mutex.Request{Lock: "x"}) })
	if !r.s.RunUntil(func() bool { st, _ := r.core(1).Lookup(held); return st.Granted }, time.Second) {
		t.Fatal("member 1 not granted x")
	}
	return r, held
}

// checkExclusive fails if two members held lock at once: each hold runs
// from its grant to its release, its loss, or the end of its lease as
// last granted or renewed (the members' clocks are exact: local times
// compare across them).
func checkExclusive(t *testing.T, s *sim.Sim, lock string) {
	t.Helper()
	type hold struct {
		node     uint32
		from, to time.Time
		id       uint64
	}
	var holds []*hold
	cur := map[uint32]*hold{}
	for _, e := range s.Events() {
		if l, _ := e.Arg("lock"); l != lock {
			continue
		}
		switch e.Name {
		case mutex.EventGranted, mutex.EventRenewed:
			exp, _ := e.Arg("expires")
			h := cur[e.Node]
			if e.Name == mutex.EventGranted || h == nil {
				h = &hold{node: e.Node, from: e.Local}
				holds, cur[e.Node] = append(holds, h), h
			}
			h.to = exp.(time.Time)
			t.Logf("%v n%d %s expires %v", e.At, e.Node, e.Name, exp.(time.Time).Sub(s.Config().Start))
		case mutex.EventReleased, mutex.EventLost:
			if h := cur[e.Node]; h != nil && e.Local.Before(h.to) {
				h.to = e.Local
			}
			delete(cur, e.Node)
			t.Logf("%v n%d %s", e.At, e.Node, e.Name)
		}
	}
	start := s.Config().Start
	for i, a := range holds {
		for _, b := range holds[i+1:] {
			if a.node != b.node && a.from.Before(b.to) && b.from.Before(a.to) {
				t.Errorf("two holders of %s: member %d from %v to %v, member %d from %v to %v", lock,
					a.node, a.from.Sub(start), a.to.Sub(start), b.node, b.from.Sub(start), b.to.Sub(start))
			}
		}
	}
}
