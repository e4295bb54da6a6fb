package central_test

import (
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
)

// longOn1And4 is the --lease of members configured apart: 3 s on members
// 1 and 4, 1 s on the others.
func longOn1And4(id uint32) time.Duration {
	if id == 1 || id == 4 {
		return 3 * time.Second
	}
	return time.Second
}

// TestReannouncedHoldLongerLease: members configured apart. Members 1
// and 4 run with a 3 s maximum lease (mutexd --lease 3s), members 2 and 3
// with 1 s. Member 1 holds x from coordinator 4 with a 3 s lease, and
// renews it all along; 4 is SIGKILLed and 3 takes over. Member 1's sync
// re-announces x with a lease longer than 3's own maximum: 3 dropped it
// (sync_bad_lease), skipped its Hold (every member but 4 joined, 4's own
// clients quiet), granted x to member 2 inside member 1's lease, and
// refused member 1's renewal as not held (found by review-central). A
// hold is kept until its lease, as its member counts it, has ended
// (whatever this coordinator's maximum), its renewals confirmed for at
// most this coordinator's own maximum, and the mismatch said at WARN,
// naming both members and the flag.
func TestReannouncedHoldLongerLease(t *testing.T) {
	r := reannounceLeases(t, 4, 0, longOn1And4)
	r.s.Start()
	r.s.Run(5 * time.Second) // 4's Hold: every member started less than a lease ago
	var held mutex.RequestID
	r.s.Do(1, func(c core.Core) { held, _ = c.(*central.Core).Acquire(r.s.Clock(1).Now(), mutex.Request{Lock: "x"}) })
	if !r.s.RunUntil(func() bool { st, _ := r.core(1).Lookup(held); return st.Granted }, time.Second) {
		t.Fatal("member 1 not granted x")
	}
	if st, _ := r.core(1).Lookup(held); st.LeaseMS <= 1000 {
		t.Fatalf("member 1 granted a %d ms lease: the test no longer reaches a lease above 3's maximum", st.LeaseMS)
	}
	r.s.Crash(4)
	r.s.Run(10 * time.Millisecond)
	// Asked of 4, dead: re-announced, waiting, with member 1's 3 s lease,
	// to 3, which refuses it as it would the request itself (it used to
	// leave it waiting for ever).
	var long3 mutex.RequestID
	r.s.Do(1, func(c core.Core) { long3, _ = c.(*central.Core).Acquire(r.s.Clock(1).Now(), mutex.Request{Lock: "y"}) })
	var asked mutex.RequestID
	for i := range 16 {
		r.s.Do(1, func(c core.Core) { _ = c.(*central.Core).Renew(r.s.Clock(1).Now(), held, 0) })
		if i == 2 {
			r.s.Do(2, func(c core.Core) { asked, _ = c.(*central.Core).Acquire(r.s.Clock(2).Now(), mutex.Request{Lock: "x"}) })
		}
		r.s.Run(250 * time.Millisecond)
	}
	if _, ok := r.core(1).Lookup(long3); ok {
		t.Errorf("member 1's request for y with a 3 s lease still waits at 3, whose --lease is 1 s: %v", r.core(3).Report().Counters)
	}
	refused := false
	for _, e := range r.s.Events() {
		why, _ := e.Arg("reason")
		refused = refused || e.Node == 1 && e.Name == mutex.EventLost && lock(e) == "y" && why == string(central.Refused)
	}
	if !refused {
		t.Error("member 1's request for y was not refused")
	}
	checkExclusive(t, r.s, "x")
	// A loss does not end member 1's client's hold before its lease does
	// (checkExclusive shortens it): the client learns of it later.
	var end1 time.Time
	for _, e := range r.s.Events() {
		exp, _ := e.Arg("expires")
		switch {
		case e.Node == 1 && e.Name == mutex.EventLost && lock(e) == "x":
			t.Errorf("member 1 lost x: %s", e.String())
		case e.Node == 1 && (e.Name == mutex.EventGranted || e.Name == mutex.EventRenewed):
			end1 = exp.(time.Time)
		case e.Node == 2 && e.Name == mutex.EventGranted && e.Local.Before(end1):
			t.Errorf("two holders: member 2 granted x at %v, inside member 1's lease (to %v)",
				e.Local.Sub(r.s.Config().Start), end1.Sub(r.s.Config().Start))
		}
	}
	if d := r.core(3).Report().Detail.(central.Detail); !d.Coordinates {
		t.Fatal("3 does not coordinate: the test no longer reaches the takeover")
	}
	var warned []string
	for _, e := range r.s.Events() {
		if e.Node == 3 && e.Name == central.EventLeaseAboveMax {
			if !e.Warn {
				t.Errorf("%s not at WARN: %s", e.Name, e.Msg)
			}
			warned = append(warned, e.Msg)
		}
	}
	if len(warned) != 1 {
		t.Fatalf("3 said %d times that member 1's lease exceeds its maximum, want once: %q", len(warned), warned)
	}
	for _, w := range []string{"member 1", "member 3", "--lease", "3s", "1s"} {
		if !strings.Contains(warned[0], w) {
			t.Errorf("the warning does not say %q: %s", w, warned[0])
		}
	}
	// Member 1 releases; member 2, waiting all along, is granted.
	r.s.Do(1, func(c core.Core) { _ = c.(*central.Core).Release(r.s.Clock(1).Now(), held) })
	if !r.s.RunUntil(func() bool { st, _ := r.core(2).Lookup(asked); return st.Granted }, 2*time.Second) {
		t.Fatalf("member 2 not granted x after member 1 released it: %v", r.core(3).Report().Counters)
	}
}

// lock is the lock an event names.
func lock(e sim.Event) string { l, _ := e.Arg("lock"); s, _ := l.(string); return s }
