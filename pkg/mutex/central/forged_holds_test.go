package central_test

import (
	"fmt"
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
	return takeoverInHoldOf(reannounceRun(t, 3, maxQueue))
}

// takeoverInHoldOf is takeoverInHold on run r, of 3 members.
func takeoverInHoldOf(r *scenarioRun) *scenarioRun {
	t := r.t
	t.Helper()
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
	r.forgeSyncChecked(to, inc, stamp, entries, false)
}

// forgeSyncChecked is forgeSync, the frame marked checked or not as the
// node's configuration agreement marks it (core.Message.Checked): a
// forger keyless naming a member whose configuration was compared is
// admitted as that member.
func (r *scenarioRun) forgeSyncChecked(to, inc, stamp uint32, entries []wire.CentralSyncEntry, checked bool) {
	r.t.Helper()
	d := r.core(to).Report().Detail.(central.Detail)
	s := wire.CentralSync{Incarnation: inc, Stamp: stamp, MaxSeq: 1 << 20, Entries: entries}
	if err := r.inject(to, core.Message{From: 1, Term: d.Term, Kind: wire.KindCentralSync, Payload: encode(r.t, s), Checked: checked}); err != nil {
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

// TestForgedHoldsCapped: during the Hold, 40 forged syncs "from member
// 1", each naming a new incarnation and holding 512 new locks. A
// re-announced hold is taken over the queue's limits (left out, it made
// two holders), and a new incarnation drops only the older one's waiting
// requests: the forged holds of every incarnation piled up (20,480 locks
// from 40 syncs, MaxLocks 4,096). A member's entries at the coordinator,
// every incarnation's together, are now capped at its share and one
// sync's; the table holds at most MaxQueue / 2 plus a sync's entries per
// other member; what was not kept holds every grant back until it would
// end, and no longer.
func TestForgedHoldsCapped(t *testing.T) {
	r := takeoverInHold(t, 0)
	co := r.core(2)
	// Late in the Hold: what is not kept outlasts it.
	if !r.s.RunUntil(func() bool {
		d := co.Report().Detail.(central.Detail)
		return d.Joined >= 2 && d.HoldLeftMS <= 200
	}, 5*time.Second) {
		t.Fatal("2's Hold does not near its end")
	}
	inc := r.core(1).Incarnation()
	const syncs = 40
	for i := range syncs {
		var entries []wire.CentralSyncEntry
		for j := range wire.MaxSyncEntries {
			entries = append(entries, wire.CentralSyncEntry{Name: fmt.Sprintf("f%d.%d", i, j), Held: true,
				LeaseMS: 1000, LeftMS: 900, Seq: uint64(j + 1), Fence: 1})
		}
		r.forgeSync(2, inc+1+uint32(i), uint32(1<<20+i), entries)
	}
	last := r.s.Now()
	if co.Report().Detail.(central.Detail).Ready {
		t.Fatal("2's Hold ended during the forged syncs: the test no longer forges in the Hold")
	}
	cfg := central.DefaultLANConfig()
	share := cfg.MaxQueue / 2 / 2
	bound := cfg.MaxQueue/2 + 2*wire.MaxSyncEntries
	st := co.Report()
	entries := 0
	for _, l := range st.Locks {
		entries += len(l.Detail.(central.LockDetail).Holders) + len(l.Detail.(central.LockDetail).Waiting)
	}
	t.Logf("%d forged syncs: %d locks, %d entries in the coordinator's queue; sync_holds_over_cap %d", syncs, len(st.Locks), entries, st.Counters["sync_holds_over_cap"])
	if entries > share+wire.MaxSyncEntries || entries > bound {
		t.Errorf("coordinator holds %d entries (%d locks) after %d forged syncs naming new incarnations: more than member 1's cap %d (its share %d and one sync's %d), the table's bound %d",
			entries, len(st.Locks), syncs, share+wire.MaxSyncEntries, share, wire.MaxSyncEntries, bound)
	}
	checkForgeryWarning(t, central.EventHoldsOverCap, warned(t, r.s, 2, central.EventHoldsOverCap))
	if !r.s.RunUntil(func() bool { return co.Report().Detail.(central.Detail).Ready }, 2*time.Second) {
		t.Fatal("2's Hold does not end")
	}
	if lines, _ := statusText(t, co); !strings.Contains(lines, "GRANTING NOTHING until") || !strings.Contains(lines, "central_holds_over_cap") {
		t.Errorf("status does not say that 2 grants nothing for the holds not kept:\n%s", lines)
	}
	// What was not kept ends as it would have: 0.9 s padded after the
	// last forged sync; the Hold too. Then every lock is granted again.
	var asked mutex.RequestID
	r.s.Do(2, func(c core.Core) { asked, _ = c.(*central.Core).Acquire(r.s.Clock(2).Now(), mutex.Request{Lock: "y"}) })
	if !r.s.RunUntil(func() bool { st, _ := co.Lookup(asked); return st.Granted }, 3*time.Second) {
		t.Fatalf("y not granted %v after the last forged sync: %v", r.s.Now().Sub(last), co.Report().Counters)
	}
	if waited := r.s.Now().Sub(last); waited < 900*time.Millisecond {
		t.Errorf("y granted %v after the last forged sync, before its holds not kept would end (0.9 s)", waited)
	}
}

// TestForgedHoldsBeforeRealHold: a review's case against a cap counted
// per member (TestRevCapDropsRealHold). Member 1 holds x from
// coordinator 3; 3, its own clients quiet, is SIGKILLed and 2 takes
// over. Member 1's sync is slow to come (a delayed link); meanwhile a
// forger's two syncs, each naming a new incarnation of member 1 and
// holding 512 locks, fill member 1's cap (MaxQueue 2048: a share of 512).
// Then member 1's real sync re-announces x. Refused over the cap, x
// counted as free, every member but 3 joined and 3's clients quiet, 2
// skipped its Hold and granted x to its own client inside member 1's
// lease: two holders. Not kept over the cap, x holds every grant back
// until it ends, and the Hold is waited out whole.
func TestForgedHoldsBeforeRealHold(t *testing.T) {
	// A 9 s lease (beats of 1 s): member 1's lease runs long after 2
	// takes over (2.5 beats of silence).
	r := reannounceLeases(t, 3, 2048, func(uint32) time.Duration { return 9 * time.Second })
	r.s.Start()
	r.s.SetLink(1, 2, sim.LinkConfig{Delay: 400 * time.Millisecond})
	held := holdThenKill(r, 12*time.Second, "x", 3) // the first Hold: every member started a lease ago
	co := r.core(2)
	if !r.s.RunUntil(func() bool { return co.Report().Detail.(central.Detail).Coordinates }, 5*time.Second) {
		t.Fatal("2 does not take over")
	}
	if d := co.Report().Detail.(central.Detail); d.Ready || d.Joined > 1 {
		t.Fatalf("member 1's sync arrived before the forged ones (joined %d, ready %v): the test no longer reaches the review's order", d.Joined, d.Ready)
	}
	inc := r.core(1).Incarnation()
	for i := range 2 {
		var entries []wire.CentralSyncEntry
		for j := range wire.MaxSyncEntries {
			entries = append(entries, wire.CentralSyncEntry{Name: fmt.Sprintf("f%d.%d", i, j), Held: true,
				LeaseMS: 1000, LeftMS: 900, Seq: uint64(j + 1), Fence: 1})
		}
		r.forgeSync(2, inc+1+uint32(i), uint32(1<<20+i), entries)
	}
	r.s.Do(2, func(c core.Core) { _, _ = c.(*central.Core).Acquire(r.s.Clock(2).Now(), mutex.Request{Lock: "x"}) })
	// Member 1 renews all along, as a client holding x does, through
	// 2's Hold (9.5 s, padded).
	for range 48 {
		r.s.Do(1, func(c core.Core) { _ = c.(*central.Core).Renew(r.s.Clock(1).Now(), held, 0) })
		r.s.Run(250 * time.Millisecond)
	}
	if co.Report().Counters["sync_holds_over_cap"] == 0 {
		t.Fatalf("member 1's real hold was not over its cap: the test no longer reaches the review's case: %v", co.Report().Counters)
	}
	checkExclusive(t, r.s, "x")
	// Member 1's client holds x until the lease it was last given ends,
	// whatever its member learns meanwhile (checkExclusive ends a hold
	// at a loss): refused as not held, the member said so, yet its
	// client ran on.
	var end1 time.Time
	granted := false
	for _, e := range r.s.Events() {
		exp, _ := e.Arg("expires")
		switch {
		case lock(e) != "x":
		case e.Node == 1 && (e.Name == mutex.EventGranted || e.Name == mutex.EventRenewed):
			end1 = exp.(time.Time)
		case e.Node == 2 && e.Name == mutex.EventGranted:
			granted = true
			if e.Local.Before(end1) {
				t.Errorf("two holders: 2's client granted x at %v, inside member 1's lease (to %v)",
					e.Local.Sub(r.s.Config().Start), end1.Sub(r.s.Config().Start))
			}
		}
	}
	if !granted {
		t.Errorf("2's client not granted x once member 1's lease ended: %v", co.Report().Counters)
	}
}
