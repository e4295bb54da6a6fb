package central_test

import (
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/wire"
)

// takeoverInHold: a cluster of three without a key (central's defaults,
// a 1 s lease, maxQueue unless 0); coordinator 3's own client holds
// "own" (its beats said Local, so its successor does not skip its Hold
// on the others' word at once), 3 is SIGKILLed and 2 takes over. It
// returns once 2 coordinates, in its Hold.
func takeoverInHold(t *testing.T, maxQueue int) *scenarioRun {
	t.Helper()
	r := reannounceRun(t, 3, maxQueue)
	r.s.Start()
	r.s.Run(2 * time.Second)
	var own mutex.RequestID
	r.s.Do(3, func(c core.Core) { own, _ = c.(*central.Core).Acquire(r.s.Clock(3).Now(), mutex.Request{Lock: "own"}) })
	if !r.s.RunUntil(func() bool { st, _ := r.core(3).Lookup(own); return st.Granted }, time.Second) {
		t.Fatal("3 not granted its own lock")
	}
	r.s.Crash(3)
	if !r.s.RunUntil(func() bool { return r.core(2).Report().Detail.(central.Detail).Coordinates }, 5*time.Second) {
		t.Fatal("2 does not take over")
	}
	if r.core(2).Report().Detail.(central.Detail).Ready {
		t.Fatal("2 skipped its Hold: the test no longer reaches a takeover in its Hold")
	}
	return r
}

// forgeSync sends coordinator to, as member 1 (any incarnation: without a
// key anyone can), a sync holding entries.
func (r *scenarioRun) forgeSync(to, inc, stamp uint32, entries []wire.CentralSyncEntry) {
	r.t.Helper()
	d := r.core(to).Report().Detail.(central.Detail)
	s := wire.CentralSync{Incarnation: inc, Stamp: stamp, MaxSeq: 1 << 20, Entries: entries}
	if err := r.inject(to, core.Message{From: 1, Term: d.Term, Kind: wire.KindCentralSync, Payload: encode(r.t, s)}); err != nil {
		r.t.Fatal(err)
	}
}

// warned returns what member id said at WARN as event name.
func warned(t *testing.T, s *sim.Sim, id uint32, name string) []string {
	t.Helper()
	var msgs []string
	for _, e := range s.EventsNamed(name) {
		if e.Node == id {
			if !e.Warn {
				t.Errorf("%s not at WARN: %s", name, e.Msg)
			}
			msgs = append(msgs, e.Msg)
		}
	}
	return msgs
}

// checkForgeryWarning checks that msgs is one warning naming member 1
// and saying that, without a key, anyone can send it.
func checkForgeryWarning(t *testing.T, name string, msgs []string) {
	t.Helper()
	if len(msgs) != 1 {
		t.Fatalf("2 said %s %d times, want once: %q", name, len(msgs), msgs)
	}
	for _, w := range []string{"member 1", "without a key, anyone on the LAN can send this; set a key"} {
		if !strings.Contains(msgs[0], w) {
			t.Errorf("%s does not say %q: %s", name, w, msgs[0])
		}
	}
}

// TestForgedHoldHourLease: one forged sync, during a new coordinator's
// Hold, re-announces a hold of z with an hour's lease. No member's
// --lease is that long, so no coordinator granted it; it used to be kept
// until its lease ended (a re-announced hold longer than MaxLease is, for
// members configured apart), and nobody was granted z for an hour. It is
// kept for the cluster's longest lease (MaxPeerLease) only, and said at
// WARN, naming the member and the key.
func TestForgedHoldHourLease(t *testing.T) {
	r := takeoverInHold(t, 0)
	co := r.core(2)
	r.forgeSync(2, r.core(1).Incarnation()+1, 1<<20, []wire.CentralSyncEntry{
		{Name: "z", Held: true, LeaseMS: 3_600_000, LeftMS: 3_600_000, Seq: 1, Fence: 1}})
	forged := r.s.Now()
	if !r.s.RunUntil(func() bool { return co.Report().Detail.(central.Detail).Ready }, 5*time.Second) {
		t.Fatal("2's Hold does not end")
	}
	var asked mutex.RequestID
	r.s.Do(2, func(c core.Core) { asked, _ = c.(*central.Core).Acquire(r.s.Clock(2).Now(), mutex.Request{Lock: "z"}) })
	// The cluster's longest lease, padded, from the forged sync: 1.02 s.
	if !r.s.RunUntil(func() bool { st, _ := co.Lookup(asked); return st.Granted }, 3*time.Second) {
		t.Fatalf("z not granted %v after one forged sync re-announced it held for an hour (coordinator 2's --lease: 1s): %v",
			r.s.Now().Sub(forged), co.Report().Counters)
	}
	if n := co.Report().Counters["holds_lease_above_cluster"]; n != 1 {
		t.Errorf("holds_lease_above_cluster %d, want 1", n)
	}
	checkForgeryWarning(t, central.EventLeaseAboveCluster, warned(t, r.s, 2, central.EventLeaseAboveCluster))
}
