package central_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/wire"
)

// TestOracleHarsh: both variants keep the oracle on harsh hosts
// (mutextest.Harsh: clocks drifting up to 495 ppm, loops 5-20 ms late),
// where a member paused with a grant in its kernel reads it, when it
// continues, stamped from before its pause. Judged on that stamp, the
// grant was taken and reported after its lease had ended (the seeds found
// first: member 3 of seed 82 reported at 13.107 s on its clock a grant
// whose lease ended at 12.229 s); it now waits for the next reading of
// the clock and is refused then (the request waits, and the next sync
// asks for it again). A renewal's confirmation, too, was reported after
// its lease's end (seed 416) and now waits for the
// reading the same way. Seeds 37 and 56 broke tokenask's causal order: a
// grant voided where it landed (its member's sync answering a beat read
// with it listed the request waiting) and made anew after a request
// naming it was granted (50-52 ms ahead; TestGrantReadWithBeat); 175 and
// 193 did on the way to the fix (a beat read just before the grant; a
// grant listed held, then refused at the clock's reading for its lease:
// TestDependentWaitsForTakenGrant). A few more seeds after them; the wide
// search is -sim.seeds. Skips tokenask says are excused as in TestOracle
// (none was, before: none was said), and tokenask+shortcuts runs it
// under short one-way cuts (TestOracleShortCuts).
func TestOracleHarsh(t *testing.T) {
	for _, f := range []mutex.Factory{central.Factory, central.TokenAskFactory} {
		t.Run(f.Name, func(t *testing.T) {
			run := func(t *testing.T, seed int64, cfg mutextest.Config) {
				cfg.Factory, cfg.Hosts = f, mutextest.Harsh
				cfg.CausalSkipEvent, cfg.CausalSkipAfter = central.EventUnknownPredecessor, causalSkipAfter
				c := mutextest.Run(t, seed, cfg)
				t.Log(c)
			}
			// Found without configuration agreement: pinned so
			// (BuildsOlder), they replay the runs found (even seeds
			// draw agreement on every member).
			for _, seed := range []int64{82, 265, 416, 37, 56, 175, 193} { // grants, grants, a renewal; causal order
				t.Run(fmt.Sprintf("found=%d", seed), func(t *testing.T) { run(t, seed, mutextest.Config{Builds: mutextest.BuildsOlder}) })
			}
			sim.Seeds(t, 4, func(t *testing.T, seed int64) { run(t, seed, mutextest.Config{}) })
		})
	}
	t.Run(central.TokenAskName+"+shortcuts", func(t *testing.T) {
		sim.Seeds(t, 4, func(t *testing.T, seed int64) {
			c := mutextest.Run(t, seed, tokenAskShortCuts(mutextest.Harsh))
			t.Log(c)
		})
	})
}

// TestOwnGrantAtClockReading: the coordinator's own request, next in the
// queue, is not granted in the Step of the release that frees the lock
// (its now is the frame's receive stamp, and the loop may read the frame
// long after: a grant counted from it could be over when reported) but at
// the Tick its Deadline asks for at once, a reading of the clock.
func TestOwnGrantAtClockReading(t *testing.T) {
	r := &scenarioRun{t: t}
	r.newCluster(3, nil) // coordinator 3
	r.s.Run(2 * time.Second)
	acquire := func(id uint32) (req mutex.RequestID) {
		r.s.Do(id, func(c core.Core) { req, _ = c.(*central.Core).Acquire(r.s.Clock(id).Now(), mutex.Request{Lock: "x"}) })
		r.s.Run(10 * time.Millisecond)
		return req
	}
	// An entry of the coordinator's own first: the members' answers to a
	// beat back its own clients' leases for a while (localBacked).
	first := acquire(3)
	held := acquire(2)
	r.s.Do(3, func(c core.Core) { c.(*central.Core).Release(r.s.Clock(3).Now(), first) })
	r.s.Run(10 * time.Millisecond)
	own := acquire(3)
	m2, co := r.core(2), r.core(3)
	st, _ := m2.Lookup(held)
	if !st.Granted {
		t.Fatal("member 2 not granted")
	}
	d := co.Report().Detail.(central.Detail)
	if !d.Coordinates {
		t.Fatal("member 3 does not coordinate")
	}
	if err := r.inject(3, core.Message{From: 2, Term: d.Term, Kind: wire.KindCentralRelease,
		Payload: encode(t, wire.CentralRelease{Name: "x", Incarnation: m2.Incarnation(), Seq: uint64(held), Fence: st.Fence})}); err != nil {
		t.Fatal(err)
	}
	if st, _ := co.Lookup(own); st.Granted {
		t.Fatal("the coordinator's own request granted in the release's Step, on its receive stamp")
	}
	if dl := co.Deadline(); dl.After(r.s.Clock(3).Now().Add(time.Millisecond)) {
		t.Fatalf("deadline %v on: want a Tick at once", dl.Sub(r.s.Clock(3).Now()))
	}
	r.s.Run(time.Millisecond)
	if st, _ := co.Lookup(own); !st.Granted {
		t.Fatalf("the coordinator's own request not granted at the next Tick: %+v %+v", st, co.Report().Counters)
	}
}

// TestOwnRenewalAtClockReading: the coordinator's own client renews, and
// the renewal is parked for a majority's answer to a beat; the loop
// stalls with those answers (syncs) in its kernel and reads them 1.5 s
// later, each stamped when it arrived. Confirmed in that Step, on the
// stamp, the renewal was reported (Renewed, its lease counted from when
// the client asked) with its lease already over by the clock (found by
// review: Expires 03.320 reported at 03.820). It now waits for the next
// reading of the clock (ownDue: a Tick at once), and is refused there:
// the lease ended during the stall.
func TestOwnRenewalAtClockReading(t *testing.T) {
	for _, v := range []central.Variant{central.Coordinator, central.TokenAsk} {
		t.Run(v.String(), func(t *testing.T) { ownRenewalAtClockReading(t, v) })
	}
}

func ownRenewalAtClockReading(t *testing.T, v central.Variant) {
	syncKind := map[central.Variant]wire.Kind{central.Coordinator: wire.KindCentralSync, central.TokenAsk: wire.KindTokenAskSync}[v]
	r := &scenarioRun{t: t, variant: v}
	r.newCluster(3, nil) // coordinator 3
	r.s.Run(2 * time.Second)
	var own mutex.RequestID
	r.s.Do(3, func(c core.Core) { own, _ = c.(*central.Core).Acquire(r.s.Clock(3).Now(), mutex.Request{Lock: "x"}) })
	co := r.core(3)
	if !r.s.RunUntil(func() bool { st, _ := co.Lookup(own); return st.Granted }, time.Second) {
		t.Fatal("the coordinator's own client not granted x")
	}
	r.s.Run(300 * time.Millisecond)
	type held struct {
		m  core.Message
		at time.Duration // sent; arrives a link's delay later
	}
	var syncs []held
	r.s.OnSend(func(f sim.SentFrame) {
		if f.Frame.Receiver == 3 && f.Frame.Kind == syncKind && r.s.Paused(3) {
			syncs = append(syncs, held{core.Message{From: f.Frame.Sender, To: 3, Kind: f.Frame.Kind, Term: f.Frame.Term,
				Lamport: f.Frame.Lamport, Payload: slices.Clone(f.Frame.Payload)}, r.s.Elapsed()})
		}
	})
	parked := co.Report().Counters["renewals_parked"]
	var err error
	r.s.Do(3, func(c core.Core) { err = c.(*central.Core).Renew(r.s.Clock(3).Now(), own, 0) })
	if err != nil {
		t.Fatal(err)
	}
	if co.Report().Counters["renewals_parked"] == parked {
		t.Fatalf("the renewal was not parked: %v", co.Report().Counters)
	}
	r.s.Pause(3)
	r.s.Run(1500 * time.Millisecond)
	if len(syncs) < 2 {
		t.Fatalf("%d syncs held for member 3, want one from each member", len(syncs))
	}
	// The paused loop reads them now, stamped when they arrived.
	start := r.s.Config().Start
	for _, h := range syncs {
		h.m.Time = start.Add(h.at + r.s.Link(h.m.From, 3).Delay)
		if err := co.Step(h.m); err != nil {
			t.Fatalf("sync from %d: %v", h.m.From, err)
		}
	}
	now := r.s.Clock(3).Now()
	for _, e := range co.Ready().Events {
		if e.Name == mutex.EventRenewed {
			exp, _ := (sim.Event{Event: e}).Arg("expires")
			t.Fatalf("renewal reported in the syncs' Step, on their stamps: expires %v, the clock reads %v", exp.(time.Time).Sub(start), now.Sub(start))
		}
	}
	if dl := co.Deadline(); dl.After(now) {
		t.Fatalf("deadline %v on: want a Tick at once", dl.Sub(now))
	}
	co.Tick(now)
	lost := false
	for _, e := range co.Ready().Events {
		switch e.Name {
		case mutex.EventRenewed:
			exp, _ := (sim.Event{Event: e}).Arg("expires")
			t.Fatalf("renewal confirmed at %v with its lease over: expires %v", now.Sub(start), exp.(time.Time).Sub(start))
		case mutex.EventLost:
			lost = true
		}
	}
	if st, ok := co.Lookup(own); !lost || ok && st.Granted {
		t.Fatalf("the lease ended during the stall, and the client still holds x (lost event %v): %+v %v", lost, st, co.Report().Counters)
	}
}
