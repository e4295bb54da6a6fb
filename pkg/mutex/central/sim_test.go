package central_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/mutex/mutextest"
	"github.com/synclab/synclab/pkg/wire"
)

// coordinator is the member that coordinates now (0: none): the member
// worth crashing, pausing and partitioning besides the holders.
func coordinator(s *sim.Sim) uint32 {
	for _, id := range s.IDs() {
		if s.Running(id) {
			if c, ok := s.Core(id).(*central.Core); ok && c.Report().Detail.(central.Detail).Coordinates {
				return id
			}
		}
	}
	return 0
}

// TestOracle: over many seeds, with crashes and restarts of the
// coordinator and of members (holders or not), pauses longer than the
// lease, a member (the coordinator, often) partitioned alone, and lossy,
// duplicating, reordering links, the generic oracle holds: no exclusive
// grant beside another grant of its lock at any real instant (leases on
// the members' drifting clocks), readers only beside readers, fences above
// every earlier grant of the lock, and every request granted once the
// faults stop.
func TestOracle(t *testing.T) {
	sim.Seeds(t, 20, func(t *testing.T, seed int64) {
		c := mutextest.Run(t, seed, mutextest.Config{Factory: central.Factory, Target: coordinator})
		t.Log(c)
	})
}

// TestMessagesPerEntry measures uncontended entries at every member that
// does not coordinate: exactly the notes' three messages each (request,
// grant, release) at every cluster size, the coordinator's own entries
// none; beats and syncs are the idle traffic, counted apart.
// mutextest.MessagesPerEntry (every frame but heartbeats in each entry's
// window, so also the beats, syncs and election heartbeats that fall in
// it, and the coordinator's free entries) is logged beside.
func TestMessagesPerEntry(t *testing.T) {
	for _, n := range []int{3, 5, 9} {
		r := &scenarioRun{t: t}
		r.newCluster(n, nil)
		s := r.s
		s.Run(3 * time.Second)
		s.ResetCounts()
		for _, id := range s.IDs() {
			var req mutex.RequestID
			s.Do(id, func(x core.Core) {
				var err error
				if req, err = x.(mutex.Algorithm).Acquire(s.Clock(id).Now(), mutex.Request{Lock: "counter"}); err != nil {
					t.Fatal(err)
				}
			})
			granted := func() bool {
				st, ok := s.Core(id).(mutex.Algorithm).Lookup(req)
				return ok && st.Granted
			}
			if !s.RunUntil(granted, time.Second) {
				t.Fatalf("%d members: member %d not granted", n, id)
			}
			s.Do(id, func(x core.Core) {
				if err := x.(mutex.Algorithm).Release(s.Clock(id).Now(), req); err != nil {
					t.Fatal(err)
				}
			})
			s.Run(20 * time.Millisecond)
		}
		var sent uint64
		for _, k := range []wire.Kind{wire.KindCentralRequest, wire.KindCentralGrant, wire.KindCentralRelease} {
			sent += s.Sent(k)
		}
		per := float64(sent) / float64(n-1)
		generic := mutextest.MessagesPerEntry(t, central.Factory, mutex.Options{}, n)
		t.Logf("%d members: %.2f messages per entry away from the coordinator (notes: %s), 0 at the coordinator; "+
			"generic count (beats, syncs, election heartbeats in the window included, coordinator's entries too): %.2f",
			n, per, central.Factory.Cost.Text, generic)
		if lo, hi := central.Factory.Cost.Messages(n); per < lo || per > hi {
			t.Errorf("%d members: %.2f messages per entry, the notes say %s", n, per, central.Factory.Cost.Text)
		}
	}
}
