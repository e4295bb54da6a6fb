package central_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
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
//
// The token-asking variant (tokenask) keeps every promise of the machinery
// it shares: the same oracle, the same faults.
func TestOracle(t *testing.T) {
	for _, f := range []mutex.Factory{central.Factory, central.TokenAskFactory} {
		t.Run(f.Name, func(t *testing.T) {
			sim.Seeds(t, 20, func(t *testing.T, seed int64) {
				c := mutextest.Run(t, seed, mutextest.Config{Factory: f, Target: coordinator})
				t.Log(c)
			})
		})
	}
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

// TestCoordinatorCrashRecovery: with the defaults (3 s lease, a beat a
// second, bully noticing a dead leader after 2.5 s), a SIGKILLed
// coordinator's successor grants a waiting client a lease and half a
// beat after the last beat the members answered: between MaxLease -
// BeatInterval and MaxLease + LeaseSlack (padded) after the crash, at
// whatever instant of the beat the crash comes, never before (the old
// coordinator's leases may run until then) and never an election later.
func TestCoordinatorCrashRecovery(t *testing.T) {
	cfg := central.DefaultLANConfig()
	lo := cfg.MaxLease - central.DefaultBeat(cfg.MaxLease)
	hi := cfg.MaxLease + central.DefaultBeat(cfg.MaxLease)/2 + 50*time.Millisecond
	for k := range 6 {
		s := defaultCluster(t, int64(k+1))
		if got := coordinator(s); got != 5 {
			t.Fatalf("offset %d: coordinator %d, want 5", k, got)
		}
		s.Run(time.Duration(k) * 173 * time.Millisecond)
		s.Crash(5)
		crashed := s.Elapsed()
		if !acquired(s, 1, 10*time.Second) {
			t.Fatalf("offset %d: not granted 10 s after the coordinator's crash", k)
		}
		took := s.Elapsed() - crashed
		t.Logf("crash %v into the run: granted by member %d %v after it", crashed.Round(time.Millisecond), coordinator(s), took.Round(time.Millisecond))
		if took < lo || took > hi {
			t.Errorf("crash %v into the run: granted %v after it, want %v to %v", crashed.Round(time.Millisecond), took, lo, hi)
		}
	}
}

// TestCoordinatorCrashAfterRestart: a member restarted just before the
// coordinator's SIGKILL may have had leases in its previous run that nobody
// can re-announce (here member 2 held x when its daemon was killed, and
// its client kept the lease). The successor, though every member but the
// dead coordinator joined, waits until that restart is a lease old (the
// member says so in a sync at once), never granting inside the old lease;
// and no longer than that and a round trip.
func TestCoordinatorCrashAfterRestart(t *testing.T) {
	cfg := central.DefaultLANConfig()
	for k := range 6 {
		s := defaultCluster(t, int64(k+1))
		s.Run(time.Duration(k) * 173 * time.Millisecond)
		asked := s.Elapsed()
		if !acquired(s, 2, time.Second) {
			t.Fatalf("offset %d: member 2 not granted", k)
		}
		s.Run(100 * time.Millisecond)
		s.Crash(2)
		s.Restart(2)
		restarted := s.Elapsed()
		s.Run(time.Duration(k) * 50 * time.Millisecond)
		s.Crash(5)
		crashed := s.Elapsed()
		if !acquired(s, 1, 10*time.Second) {
			t.Fatalf("offset %d: not granted 10 s after the coordinator's crash", k)
		}
		at := s.Elapsed()
		t.Logf("member 2 held from %v, restarted %v later; coordinator crashed %v after that; member 1 granted %v after the crash, %v after 2's restart",
			asked.Round(time.Millisecond), (restarted - asked).Round(time.Millisecond), (crashed - restarted).Round(time.Millisecond),
			(at - crashed).Round(time.Millisecond), (at - restarted).Round(time.Millisecond))
		if at-asked < cfg.MaxLease {
			t.Errorf("offset %d: member 1 granted %v after member 2's previous run asked for its %v lease", k, at-asked, cfg.MaxLease)
		}
		if at-restarted > cfg.MaxLease+200*time.Millisecond {
			t.Errorf("offset %d: member 1 granted %v after member 2's restart, want within a lease and 200 ms", k, at-restarted)
		}
	}
}
