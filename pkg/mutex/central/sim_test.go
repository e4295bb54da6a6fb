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
// it shares: the same oracle, the same faults; and its causal order,
// which the oracle checks too (a grant it reports making without a
// predecessor excused only 2 x DeadAfter after the predecessor was asked,
// the least its rules wait), also under short one-way cuts that lose the
// frames on the members' streams, syncs and grants, with no fault to
// excuse an overtaking (tokenask+shortcuts: TestOracleShortCuts).
func TestOracle(t *testing.T) {
	for _, f := range []mutex.Factory{central.Factory, central.TokenAskFactory} {
		t.Run(f.Name, func(t *testing.T) {
			sim.Seeds(t, 20, func(t *testing.T, seed int64) {
				c := mutextest.Run(t, seed, mutextest.Config{Factory: f, Target: coordinator, CausalSkipEvent: central.EventUnknownPredecessor, CausalSkipAfter: causalSkipAfter, CausalRefused: causalRefused})
				t.Log(c)
			})
		})
	}
	t.Run(central.TokenAskName+"+shortcuts", func(t *testing.T) {
		// The word of a predecessor's member (askWord: a dependent waited
		// a beat interval for a predecessor never heard of, and the
		// coordinator asks on the member's stream) is the rule the cuts
		// alone reach least (TestOracleShortCuts: 2 seeds of 20); with
		// the faults too, in 8 seeds of the first 20 (33 asks). Counted
		// over the members running at each run's end, asserted over 10
		// seeds or more.
		seeds, asked, with := 0, uint64(0), 0
		sim.Seeds(t, 20, func(t *testing.T, seed int64) {
			c := mutextest.Run(t, seed, tokenAskShortCuts(mutextest.Calm))
			t.Log(c)
			n := uint64(0)
			for _, id := range c.IDs() {
				if c.Sim().Running(id) {
					n += c.Sim().Core(id).(*central.Core).Report().Counters["beats_called_word"]
				}
			}
			seeds, asked = seeds+1, asked+n
			if n > 0 {
				with++
			}
		})
		t.Logf("%d seeds: the word asked %d times, in %d seeds (beats_called_word)", seeds, asked, with)
		if seeds >= 10 && !t.Failed() && asked == 0 {
			t.Errorf("no predecessor's member asked for its word (beats_called_word) in %d seeds: the oracle no longer reaches askWord", seeds)
		}
	})
}

// TestOracleLeasesApart: TestOracle on older builds (no configuration
// agreement, no frame Checked) whose --lease differs, as a real older
// build's may: each member runs 1 s or 2 s (mutextest.LeasesApart), its
// clients ask up to its own. A coordinator of 2 s grants a 1.8 s lease,
// falls, and one of 1 s takes the hold over from its holder's sync: it
// must keep the hold whole (its member is unchecked: peerLease), or it
// grants the lock inside it. With the cut made regardless of Checked
// (peerLease's `if true || ...`, the two-holder bug
// TestUncheckedLongerLease pins), the first seed that fails: central
// calm 56, harsh 69; tokenask calm 30, harsh 3 (-sim.seeds=100). What
// central does not promise across leases apart (a longer lease nobody
// re-announces: EventLeaseAboveMax) the harness keeps out of the run:
// no loss, no fault on a member holding a long lease. tokenask+shortcuts
// adds short one-way cuts (tokenAskShortCuts): a request asking more than
// the coordinator's --lease is refused, and the refusal lost with a cut
// reaches its member a sync later, while its dependents go on (the causal
// oracle takes the refusal's sending for the request's end:
// causalRefused).
func TestOracleLeasesApart(t *testing.T) {
	for _, name := range []string{central.Name, central.TokenAskName, central.TokenAskName + "+shortcuts"} {
		for _, h := range []mutextest.Hosts{mutextest.Calm, mutextest.Harsh} {
			t.Run(name+"/"+h.Name, func(t *testing.T) {
				sim.Seeds(t, 8, func(t *testing.T, seed int64) {
					c := mutextest.Run(t, seed, leasesApart(name, h, mutextest.BuildsOlder))
					t.Log(c)
				})
			})
		}
	}
}

// leasesApart is the config of TestOracleLeasesApart and TestMixedBuilds
// for the variant named (tokenask+shortcuts: tokenask under short
// one-way cuts) on hosts h, its members of builds b.
func leasesApart(name string, h mutextest.Hosts, b mutextest.Builds) mutextest.Config {
	cfg := mutextest.Config{Factory: central.Factory, Hosts: h, Target: coordinator,
		CausalSkipEvent: central.EventUnknownPredecessor, CausalSkipAfter: causalSkipAfter, CausalRefused: causalRefused}
	switch name {
	case central.TokenAskName:
		cfg.Factory = central.TokenAskFactory
	case central.TokenAskName + "+shortcuts":
		cfg = tokenAskShortCuts(h)
	}
	cfg.Builds, cfg.LeasesApart = b, true
	return cfg
}

// TestMixedBuilds: central's two variants keep the oracle in a cluster
// whose members mix builds with configuration agreement and without
// (mutextest.BuildsMixed, never drawn by default), the older builds on
// a --lease of their own (1 s or 2 s: LeasesApart): the coordinator cuts a
// re-announced hold to its own --lease only for a member whose
// configuration agreement compared (core.Message.Checked), keeps an
// older build's whole, and the agreeing members refuse an older build's
// new incarnation for three announce intervals (sending it nothing of
// their cores meanwhile: a cut both ways). With the cut made regardless
// of Checked (central's peerLease), two holders: central/harsh seed 40,
// tokenask/harsh seed 18 (-sim.seeds=50). tokenask+shortcuts adds short
// one-way cuts, as TestOracleLeasesApart does (taken from the member's
// report of it, the end of a request refused for its lease failed
// calm seed 23 and harsh seed 24 falsely: 108 ms and 324 ms). The
// wide search is -sim.seeds. Open: at -sim.seeds=200 tokenask fails
// exclusion on calm seed 130 and harsh seed 123 (at 24b05092 too, before
// the short cuts were added), tokenask+shortcuts on harsh seed 130, each
// the same way: an agreeing member coordinates while it still refuses an
// older build's frames (its admission window), so that older build's
// hold, of its own 2 s --lease, is never re-announced to it, and it
// grants the lock after its own 1 s Hold, inside that lease (seed 123:
// member 5 refused member 2's sync and renewals from 9.74 s, granted at
// 10.54 s inside member 2's lease to 10.77 s); every other seed of the
// 200 passes, and none of 400 with equal leases (review-tokenask2): a
// limit docs/mutexd.md gives (a rolling upgrade that also changes
// --lease).
func TestMixedBuilds(t *testing.T) {
	for _, name := range []string{central.Name, central.TokenAskName, central.TokenAskName + "+shortcuts"} {
		for _, h := range []mutextest.Hosts{mutextest.Calm, mutextest.Harsh} {
			t.Run(name+"/"+h.Name, func(t *testing.T) {
				sim.Seeds(t, 6, func(t *testing.T, seed int64) {
					c := mutextest.Run(t, seed, leasesApart(name, h, mutextest.BuildsMixed))
					t.Log(c)
				})
			})
		}
	}
}

// TestOracleDiskFaults: TestOracle's faults with every member's state
// writes failing one time in five through the fault rounds (a full or
// read-only disk). A coordinator whose term did not reach its disk must
// neither grant in it nor, once it leads again after a partition, take
// the lock table it rebuilt for the whole truth: seed 53 once granted
// member 5 inside member 2's still-running lease.
func TestOracleDiskFaults(t *testing.T) {
	for _, f := range []mutex.Factory{central.Factory, central.TokenAskFactory} {
		t.Run(f.Name, func(t *testing.T) {
			sim.Seeds(t, 60, func(t *testing.T, seed int64) {
				c := mutextest.Run(t, seed, mutextest.Config{Factory: f, Target: coordinator, DiskFaults: 0.2, CausalSkipEvent: central.EventUnknownPredecessor, CausalSkipAfter: causalSkipAfter, CausalRefused: causalRefused})
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
// coordinator whose own clients held nothing is replaced as soon as the
// election notices (DeadAfter after its last leader heartbeat, so between
// DeadAfter - BeatInterval and DeadAfter after the crash) and the four
// others join: every one of them re-announced what it holds, and each
// says that the dead one's beats had not announced a lease of its own
// clients for a Hold (CentralSyncPrevQuiet). It used to wait out a lease
// and half a beat from the last beat the members answered (2.5-3.5 s
// after the crash), whatever the coordinator's own clients held.
func TestCoordinatorCrashRecovery(t *testing.T) {
	cfg := central.DefaultLANConfig()
	beat := central.DefaultBeat(cfg.MaxLease)
	dead := beat * 5 / 2
	lo, hi := dead-beat, dead+50*time.Millisecond
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

// TestCoordinatorCrashOwnHolder: a coordinator whose own client holds the
// lock when it is SIGKILLed (that client's process lives on, and keeps
// its lease) is replaced only once that lease has surely ended, wherever
// in the lease the crash comes: its grant waited for a majority's answers
// to a beat that announced it (not Quiet), and the successor hears of it from
// them. The crash instants cover the whole lease (every 240 ms from the
// grant to 2.9 s into the 3 s lease), and the members are told of the
// dead coordinator's closed port a link delay after the crash (a hint), so
// that the successor is elected about 0.2 s after the crash whatever the
// instant: a successor that took the others' word that all they hold is
// re-announced would grant inside the lease at every instant but the last
// few (without the hint, the election alone took 1.5-2.5 s, past the end
// of the lease for any crash late in it).
func TestCoordinatorCrashOwnHolder(t *testing.T) {
	cfg := central.DefaultLANConfig()
	for k := range 13 {
		s := defaultCluster(t, int64(k+1))
		asked := s.Elapsed()
		if !acquired(s, 5, time.Second) {
			t.Fatalf("offset %d: the coordinator's own client was not granted", k)
		}
		granted := s.Elapsed()
		s.Run(time.Duration(k) * 240 * time.Millisecond)
		s.Crash(5)
		crashed := s.Elapsed()
		s.Run(time.Millisecond) // the FIN, a link delay later
		for id := uint32(1); id <= 4; id++ {
			if err := s.Hint(id, 5, core.HintStreamClosed); err != nil {
				t.Fatal(err)
			}
		}
		if !s.RunUntil(func() bool { return coordinator(s) != 0 }, 5*time.Second) {
			t.Fatalf("offset %d: no successor 5 s after the crash", k)
		}
		elected := s.Elapsed()
		if !acquired(s, 1, 10*time.Second) {
			t.Fatalf("offset %d: not granted 10 s after the coordinator's crash", k)
		}
		at := s.Elapsed()
		t.Logf("own client granted %v after asking; coordinator crashed %v into its lease; successor %v after the crash; member 1 granted %v after the crash, %v after the lease's start",
			(granted - asked).Round(time.Millisecond), (crashed - asked).Round(time.Millisecond), (elected - crashed).Round(time.Millisecond),
			(at - crashed).Round(time.Millisecond), (at - asked).Round(time.Millisecond))
		if at-asked < cfg.MaxLease {
			t.Errorf("offset %d: member 1 granted %v after the dead coordinator's own client asked for its %v lease", k, at-asked, cfg.MaxLease)
		}
		if crashed-asked < cfg.MaxLease-500*time.Millisecond && elected-asked >= cfg.MaxLease {
			t.Errorf("offset %d: successor elected %v into the lease: the test does not reach inside the lease", k, elected-asked)
		}
	}
}

// crashCoordinatorAndAsk crashes the coordinator (5) and asks for x at
// member 1; it returns when each happened (s.Elapsed).
func crashCoordinatorAndAsk(t *testing.T, s *sim.Sim, k int) (crashed, granted time.Duration) {
	t.Helper()
	s.Crash(5)
	crashed = s.Elapsed()
	if !acquired(s, 1, 10*time.Second) {
		t.Fatalf("offset %d: not granted 10 s after the coordinator's crash", k)
	}
	return crashed, s.Elapsed()
}

// TestCoordinatorCrashAfterRestart: a member restarted shortly before the
// coordinator's SIGKILL may have had leases in its previous run that nobody
// can re-announce (here member 2 held x when its daemon was killed, and
// its client kept the lease). The successor never grants inside that
// lease, nor later than it used to (a Hold after the last beat answered).
// Once the restarted member has answered a beat of the dead coordinator
// (here from 1.5 s after its restart), the successor grants as soon as
// the election is over and that member's syncs say its start is a lease
// old (padded): before, it waited a Hold from the members' last answer to
// the dead coordinator.
func TestCoordinatorCrashAfterRestart(t *testing.T) {
	cfg := central.DefaultLANConfig()
	hold := cfg.MaxLease + central.DefaultBeat(cfg.MaxLease)/2 + 100*time.Millisecond
	for k := range 6 {
		s := defaultCluster(t, int64(k+1))
		asked := s.Elapsed()
		if !acquired(s, 2, time.Second) {
			t.Fatalf("offset %d: member 2 not granted", k)
		}
		s.Run(100 * time.Millisecond)
		s.Crash(2)
		s.Restart(2)
		restarted := s.Elapsed()
		s.Run(time.Duration(k) * 500 * time.Millisecond)
		crashed, at := crashCoordinatorAndAsk(t, s, k)
		t.Logf("member 2 restarted %v into its lease; coordinator crashed %v after that; member 1 granted %v after the crash, %v after 2's restart",
			(restarted - asked).Round(time.Millisecond), (crashed - restarted).Round(time.Millisecond),
			(at - crashed).Round(time.Millisecond), (at - restarted).Round(time.Millisecond))
		if at-asked < cfg.MaxLease {
			t.Errorf("offset %d: member 1 granted %v after member 2's previous run asked for its %v lease", k, at-asked, cfg.MaxLease)
		}
		if at-crashed > hold {
			t.Errorf("offset %d: member 1 granted %v after the crash, want within %v", k, at-crashed, hold)
		}
		// The election notices the crash DeadAfter after the coordinator's
		// last heartbeat; 2's start is a lease old (padded) at leaseOld,
		// and its next sync (a beat of the successor) says so.
		leaseOld := restarted + cfg.MaxLease + cfg.HoldMargin + 10*time.Millisecond + central.DefaultBeat(cfg.MaxLease)
		if want := max(leaseOld, crashed+central.DefaultBeat(cfg.MaxLease)*5/2) + 100*time.Millisecond; crashed-restarted >= 1500*time.Millisecond && at > want {
			t.Errorf("offset %d: member 1 granted %v after the crash, want by %v (2's start a lease old, or the election)", k, at-crashed, want-crashed)
		}
	}
}
