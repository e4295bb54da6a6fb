package central_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/mutexscript"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
)

// TestReannouncedHoldOverQueueLimit: MaxQueue 8 at every member. Member 1 holds x from coordinator 4; 4 is SIGKILLed and, while
// the others have not noticed, member 3's client queues 8 requests for x
// (kept locally, 4 is dead). 3 takes over: its own 8 waiting requests fill
// its queue, so member 1's sync re-announcing x is not admitted
// (refused_queue_full), and member 1 joined, the Hold was skipped (4
// quiet), x was free in 3's queue: 3 granted x to itself inside member 1's
// lease, and member 1's next renewal was refused "not held" although it
// synced (found by review). A re-announced hold is taken over the limit.
func TestReannouncedHoldOverQueueLimit(t *testing.T) {
	r := reannounceRun(t, 4, 8)
	held := holdThenKill(r, 2*time.Second, "x", 4)
	for range 8 {
		r.s.Do(3, func(c core.Core) {
			if _, err := c.(*central.Core).Acquire(r.s.Clock(3).Now(), mutex.Request{Lock: "x"}); err != nil {
				t.Fatal(err)
			}
		})
	}
	// member 1 renews all along, as a client holding x does
	for range 12 {
		r.s.Do(1, func(c core.Core) { _ = c.(*central.Core).Renew(r.s.Clock(1).Now(), held, 0) })
		r.s.Run(250 * time.Millisecond)
	}
	checkExclusive(t, r.s, "x")
	for _, e := range r.s.Events() {
		if e.Node == 1 && e.Name == mutex.EventLost {
			t.Errorf("member 1 lost x: %s", e.String())
		}
	}
}

// reannounceRun is a simulated cluster of n members 1..n running central
// with a 1 s maximum lease and, unless 0, maxQueue, its bully election
// ranking them by ID (n the first coordinator).
func reannounceRun(t *testing.T, n uint32, maxQueue int) *scenarioRun {
	return reannounceLeases(t, n, maxQueue, func(uint32) time.Duration { return time.Second })
}

// holdThenKill starts r, runs it for settle, has member 1 hold lock and
// SIGKILLs coordinator coord 10 ms later; it returns member 1's request.
func holdThenKill(r *scenarioRun, settle time.Duration, lock string, coord uint32) mutex.RequestID {
	r.t.Helper()
	r.s.Start()
	r.s.Run(settle)
	var held mutex.RequestID
	r.s.Do(1, func(c core.Core) { held, _ = c.(*central.Core).Acquire(r.s.Clock(1).Now(), mutex.Request{Lock: lock}) })
	if !r.s.RunUntil(func() bool { st, _ := r.core(1).Lookup(held); return st.Granted }, time.Second) {
		r.t.Fatalf("member 1 not granted %s", lock)
	}
	r.s.Crash(coord)
	r.s.Run(10 * time.Millisecond)
	return held
}

// reannounceLeases is reannounceRun with each member's maximum lease
// (--lease) from lease: members configured apart, each told the longest
// (MaxPeerLease), as a cluster run so must.
func reannounceLeases(t *testing.T, n uint32, maxQueue int, lease func(id uint32) time.Duration) *scenarioRun {
	return leasesRun(t, n, maxQueue, lease, true)
}

// leasesRun is reannounceLeases, each member told the longest lease
// (MaxPeerLease) only if declared: else it is left zero, as mutexd leaves
// it (ConfigFor), and the simulator's nodes run no configuration
// agreement, so every member is unchecked.
func leasesRun(t *testing.T, n uint32, maxQueue int, lease func(id uint32) time.Duration, declared bool) *scenarioRun {
	var members []bully.Member
	var ids []uint32
	var longest time.Duration
	for id := uint32(1); id <= n; id++ {
		members, ids = append(members, bully.Member{ID: id}), append(ids, id)
		longest = max(longest, lease(id))
	}
	cl := mutexscript.Cluster{Members: ids, New: func(id uint32, env core.Env) (mutex.Algorithm, error) {
		cfg := central.DefaultLANConfig()
		cfg.MaxLease = lease(id)
		if declared {
			cfg.MaxPeerLease = longest
		}
		if maxQueue > 0 {
			cfg.MaxQueue = maxQueue
		}
		cfg.Election = func(env core.Env) (elect.Elector, error) {
			bc := bully.DefaultLANConfig()
			bc.Members = members
			return bully.New(env, bc)
		}
		return central.New(env, cfg)
	}}
	r := &scenarioRun{t: t, variant: central.Coordinator}
	r.s = mutexscript.NewSim(t, cl)
	return r
}
