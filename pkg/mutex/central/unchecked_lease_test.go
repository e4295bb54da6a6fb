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

// TestUncheckedLongerLease: TestReannouncedHoldLongerLease with
// MaxPeerLease left zero, as mutexd leaves it, and no member's
// configuration compared (members 1 and 4 an older build, --lease 3s,
// admitted unchecked; 2 and 3 --lease 1s). Member 1 holds x for 3 s from
// coordinator 4 and does not renew (its client's job ends within its
// lease); 4 is SIGKILLed and 3 takes over. 3 cut member 1's re-announced
// hold to its own --lease, as if configuration agreement had vouched for
// member 1's, and granted x to member 2 inside member 1's lease (review
// rev3: "two holders: member 2 granted x at 6.43s, inside member 1's
// lease (to 7.599s)"). Only a checked member's hold is cut now.
func TestUncheckedLongerLease(t *testing.T) {
	r := leasesRun(t, 4, 0, longOn1And4, false)
	holdThenKill(r, 5*time.Second, "x", 4)
	r.s.Do(2, func(c core.Core) { _, _ = c.(*central.Core).Acquire(r.s.Clock(2).Now(), mutex.Request{Lock: "x"}) })
	r.s.Run(4 * time.Second)
	checkLeaseOutlasted(t, r.s, 1, "x")
	if n := r.core(3).Report().Counters["holds_lease_above_cluster"]; n != 0 {
		t.Errorf("3 cut %d holds of an unchecked member", n)
	}
	switch msgs := warned(t, r.s, 3, central.EventLeaseAboveMax); {
	case len(msgs) != 1:
		t.Errorf("3 did not say %s once of member 1's 3 s hold: %q", central.EventLeaseAboveMax, msgs)
	case !strings.Contains(msgs[0], "member 1 is admitted unchecked") || !strings.Contains(msgs[0], "set a key"):
		t.Errorf("3's %s does not say member 1 is unchecked and no key bounds it: %s", central.EventLeaseAboveMax, msgs[0])
	}
}

// TestHourLeaseCutOnlyIfChecked: TestForgedHoldHourLease with
// MaxPeerLease left zero (mutexd). A hold of an hour in the name of a
// member whose configuration agreement compared (the frame checked: its
// --lease is this one's) is cut to this coordinator's lease, and said at
// WARN; the same hold of a member admitted unchecked is kept whole (it
// may run a longer --lease), and said as a lease above this member's.
func TestHourLeaseCutOnlyIfChecked(t *testing.T) {
	for _, checked := range []bool{true, false} {
		r := takeoverInHoldOf(leasesRun(t, 3, 0, func(uint32) time.Duration { return time.Second }, false))
		co := r.core(2)
		r.forgeSyncChecked(2, r.core(1).Incarnation()+1, 1<<20, []wire.CentralSyncEntry{
			{Name: "z", Held: true, LeaseMS: 3_600_000, LeftMS: 3_600_000, Seq: 1, Fence: 1}}, checked)
		if !r.s.RunUntil(func() bool { return co.Report().Detail.(central.Detail).Ready }, 5*time.Second) {
			t.Fatal("2's Hold does not end")
		}
		var asked mutex.RequestID
		r.s.Do(2, func(c core.Core) { asked, _ = c.(*central.Core).Acquire(r.s.Clock(2).Now(), mutex.Request{Lock: "z"}) })
		granted := r.s.RunUntil(func() bool { st, _ := co.Lookup(asked); return st.Granted }, 3*time.Second)
		switch {
		case checked && !granted:
			t.Errorf("checked: z not granted after an hour's hold of a member with 2's --lease (1s): %v", co.Report().Counters)
		case checked:
			checkForgeryWarning(t, central.EventLeaseAboveCluster, warned(t, r.s, 2, central.EventLeaseAboveCluster))
		case granted:
			t.Errorf("unchecked: z granted inside the hold of a member whose --lease nobody compared: %v", co.Report().Counters)
		case len(warned(t, r.s, 2, central.EventLeaseAboveMax)) != 1:
			t.Errorf("unchecked: 2 did not say %s once", central.EventLeaseAboveMax)
		}
	}
}

// checkLeaseOutlasted fails if a member other than holder was granted
// lock before holder's last lease on it ended, as holder's client counts
// it (a loss said to the member does not end its client's hold sooner).
func checkLeaseOutlasted(t *testing.T, s *sim.Sim, holder uint32, lock string) {
	t.Helper()
	var end time.Time
	for _, e := range s.Events() {
		if l, _ := e.Arg("lock"); l != lock {
			continue
		}
		exp, _ := e.Arg("expires")
		switch {
		case e.Node == holder && (e.Name == mutex.EventGranted || e.Name == mutex.EventRenewed):
			end = exp.(time.Time)
		case e.Node != holder && e.Name == mutex.EventGranted && e.Local.Before(end):
			t.Errorf("two holders: member %d granted %s at %v, inside member %d's lease (to %v)",
				e.Node, lock, e.Local.Sub(s.Config().Start), holder, end.Sub(s.Config().Start))
		}
	}
}

// TestLateHoldUncheckedWarned: after coordinator 2 waited out the leases
// of the coordinators before it (its Hold ended), member 1 re-announces a
// hold with time left. A member admitted unchecked (an older build) may
// run a longer --lease than 2's: the lock may have been granted inside it,
// so 2 says so at WARN, once in the term. A checked member's (its --lease
// is 2's) is only counted: a sync built just before its lease ended.
func TestLateHoldUncheckedWarned(t *testing.T) {
	for _, checked := range []bool{false, true} {
		r := takeoverInHoldOf(leasesRun(t, 3, 0, func(uint32) time.Duration { return time.Second }, false))
		co := r.core(2)
		if !r.s.RunUntil(func() bool { return co.Report().Detail.(central.Detail).Ready }, 5*time.Second) {
			t.Fatal("2's Hold does not end")
		}
		for i := range uint32(2) {
			r.forgeSyncChecked(2, r.core(1).Incarnation(), 1<<20+i, []wire.CentralSyncEntry{
				{Name: "z", Held: true, LeaseMS: 2000, LeftMS: 400, Seq: 1, Fence: 1}}, checked)
			r.s.Run(10 * time.Millisecond)
		}
		msgs := warned(t, r.s, 2, central.EventLateHoldUnchecked)
		late := co.Report().Counters["sync_late_hold"]
		switch {
		case late < 2:
			t.Errorf("checked %v: sync_late_hold %d, want the two syncs counted: the test no longer reaches the case", checked, late)
		case checked && len(msgs) != 0:
			t.Errorf("checked: a late hold of a member whose --lease is 2's said at WARN: %q", msgs)
		case !checked && len(msgs) != 1:
			t.Errorf("unchecked: 2 said %s %d times of member 1's late hold, want once in the term: %q", central.EventLateHoldUnchecked, len(msgs), msgs)
		case !checked && (!strings.Contains(msgs[0], "member 1 is admitted unchecked") || !strings.Contains(msgs[0], "same --lease")):
			t.Errorf("unchecked: the WARN does not name member 1 as unchecked and what to do: %s", msgs[0])
		}
	}
}
