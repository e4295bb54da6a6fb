package mutexcount

import (
	"reflect"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
)

// TestHold: outcomes of a Ready without a promise pass at once; those of a
// Ready with one leave at its Advance when the write succeeded, and after a
// failed write only at the Tick after a later write succeeds, in order,
// behind nothing and before what came later; there a grant or a renewal
// whose lease ended is dropped, counted and said (WARN once a minute), and
// a Lost or Released still passes.
func TestHold(t *testing.T) {
	t0 := time.Unix(1000, 0)
	g := func(id mutex.RequestID, exp time.Duration) mutex.Granted {
		return mutex.Granted{ID: id, Lock: "x", Fence: uint64(id), Expires: t0.Add(exp)}
	}
	var h Hold
	counters := map[string]uint64{}
	var events []core.Event

	// No promise, nothing held: the outcomes stay where the driver drains them.
	out := []mutex.Outcome{g(1, time.Second)}
	h.Ready(&core.Ready{}, &out)
	if len(out) != 1 || h.Held() != 0 {
		t.Fatalf("no promise: %v left, %d held", out, h.Held())
	}

	// A promise written at once: held for the write, out at its Advance.
	out = []mutex.Outcome{g(2, time.Second)}
	h.Ready(&core.Ready{State: []byte{1}, Promise: true}, &out)
	if len(out) != 0 || h.Held() != 1 {
		t.Fatalf("promise: %v left, %d held", out, h.Held())
	}
	h.Advance(true, &out, &events)
	if len(out) != 1 || h.Held() != 0 {
		t.Fatalf("written: %v left, %d held", out, h.Held())
	}

	// A failed write: held through Readies that carry the promise again,
	// and those without one behind them, until a write succeeds; then at
	// the next Tick, the expired grant and renewal dropped.
	out = []mutex.Outcome{g(3, time.Second), mutex.Renewed{ID: 9, Lock: "x", Fence: 9, Expires: t0.Add(time.Second)}}
	h.Ready(&core.Ready{State: []byte{1}, Promise: true}, &out)
	h.Advance(false, &out, &events)
	out = []mutex.Outcome{g(4, 3*time.Second), mutex.Lost{ID: 3, Lock: "x", Fence: 3, Reason: mutex.Expired}}
	h.Ready(&core.Ready{State: []byte{1}, Promise: true}, &out)
	h.Advance(false, &out, &events)
	h.Ready(&core.Ready{State: []byte{1}, Promise: true}, &out)
	if !h.Deadline(t0).IsZero() {
		t.Fatal("a Tick asked for while the write fails")
	}
	events = nil
	h.Release(t0.Add(2*time.Second), &out, &events, counters)
	if len(out) != 0 || h.Held() != 4 {
		t.Fatalf("released before a write succeeded: %v, %d held", out, h.Held())
	}
	out = []mutex.Outcome{mutex.Released{ID: 4, Lock: "x", Fence: 4}}
	h.Ready(&core.Ready{State: []byte{1}, Promise: true}, &out)
	h.Advance(true, &out, &events)
	if len(out) != 0 || h.Held() != 5 {
		t.Fatalf("released at the Advance after a failed write (no reading of the clock): %v", out)
	}
	now := t0.Add(2 * time.Second)
	if d := h.Deadline(now); !d.Equal(now.Add(time.Nanosecond)) {
		t.Fatalf("deadline %v, want a reading at once", d)
	}
	h.Release(now, &out, &events, counters)
	want := []mutex.Outcome{g(4, 3*time.Second), mutex.Lost{ID: 3, Lock: "x", Fence: 3, Reason: mutex.Expired}, mutex.Released{ID: 4, Lock: "x", Fence: 4}}
	if !reflect.DeepEqual(out, want) || h.Held() != 0 {
		t.Fatalf("released %v, want %v", out, want)
	}
	if counters["grants_unsaved"] != 1 || counters["renewals_unsaved"] != 1 || len(events) != 2 ||
		events[0].Name != mutex.EventGrantUnsaved || !events[0].Warn || events[1].Warn {
		t.Fatalf("counters %v, events %+v: want each dropped counted and said, the first at WARN", counters, events)
	}
}

// TestHoldReleaseBeforeLaterOutcomes: a grant held across a failed write
// leaves at the Tick after a good one; a release of it the client made in
// the same turn of the driver's loop, before that Tick, is already in the
// core's outcomes. The grant must come first (a review: the release
// reached the driver before the grant it ends, and the acquire's waiter
// was answered "released before any grant").
func TestHoldReleaseBeforeLaterOutcomes(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var h Hold
	grant := mutex.Granted{ID: 5, Lock: "x", Fence: 5, Expires: t0.Add(time.Second)}
	out := []mutex.Outcome{grant}
	var events []core.Event
	h.Ready(&core.Ready{State: []byte{1}, Promise: true}, &out)
	h.Advance(false, &out, &events) // the write failed
	h.Ready(&core.Ready{State: []byte{1}, Promise: true}, &out)
	h.Advance(true, &out, &events) // a later write took it
	released := mutex.Released{ID: 5, Lock: "x", Fence: 5}
	out = append(out, released) // the client's release, before the Tick
	h.Release(t0.Add(time.Millisecond), &out, &events, map[string]uint64{})
	if want := []mutex.Outcome{grant, released}; !reflect.DeepEqual(out, want) {
		t.Errorf("outcomes %v, want the held grant before the release made after it: %v", out, want)
	}
}

// TestHoldEvents: the events of held outcomes wait with them and are
// reported when they leave; a grant held across a failed write is said
// held, once, and shows as unsaved in Lookup and status until it leaves.
// Before, lock_granted was reported with the Ready that held the grant:
// the log said the lock was held by a client that did not have it (and,
// after a crash before the write, never would).
func TestHoldEvents(t *testing.T) {
	t0 := time.Unix(1000, 0)
	reqs, err := mutex.NewTable(mutex.Limits{MinLease: 100 * time.Millisecond, MaxLease: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	id, err := reqs.Enqueue(t0, 1, mutex.Request{Lock: "x", Lease: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reqs.Grant(t0, id, 7, 1); err != nil {
		t.Fatal(err)
	}
	var (
		h        Hold
		outcomes []mutex.Outcome
		events   []core.Event
	)
	Drain(reqs, &outcomes, &events, Grants{}, nil)
	names := func(es []core.Event) (n []string) {
		for _, e := range es {
			n = append(n, e.Name)
		}
		return n
	}
	status := func() string {
		ls := mutex.LockStatus{Name: "x"}
		reqs.Fill(t0, &ls)
		h.Mark(&ls)
		if ls.Holder == nil || ls.Holder.Unsaved != ls.Holders[0].Unsaved {
			t.Fatalf("status %+v: holder and holders disagree", ls)
		}
		return ls.Holder.Unsaved
	}
	// Written at once: lock_granted leaves with the grant, at the Advance,
	// and the next Ready is asked for at once to report it.
	rd := core.Ready{State: []byte{1}, Promise: true, Events: events}
	events = nil
	h.Ready(&rd, &outcomes)
	if len(rd.Events) != 0 || h.Unsaved(id) != mutex.UnsavedGrant || status() != mutex.UnsavedGrant {
		t.Fatalf("held: the Ready reports %v, Unsaved %q: want no lock_granted before the write, the grant unsaved", names(rd.Events), h.Unsaved(id))
	}
	h.Advance(true, &outcomes, &events)
	if len(outcomes) != 1 || !reflect.DeepEqual(names(events), []string{mutex.EventGranted}) || h.Unsaved(id) != "" {
		t.Fatalf("written: outcomes %v, events %v, Unsaved %q", outcomes, names(events), h.Unsaved(id))
	}
	if d := h.Deadline(t0); !d.Equal(t0.Add(time.Nanosecond)) {
		t.Fatalf("deadline %v with lock_granted waiting for a Ready, want at once", d)
	}
	h.Ready(&core.Ready{}, &outcomes)
	if !h.Deadline(t0).IsZero() {
		t.Fatal("a Tick asked for after the Ready took the events")
	}

	// A failed write: said held once (however many writes fail), unsaved
	// in status; lock_renewed and lock_granted only at the Tick after a
	// good write.
	if err := reqs.Renew(t0, id, 0); err != nil {
		t.Fatal(err)
	}
	reqs.ConfirmRenewals(t0, "x")
	outcomes, events = nil, nil
	Drain(reqs, &outcomes, &events, Grants{}, nil)
	rd = core.Ready{State: []byte{1}, Promise: true, Events: events}
	events = nil
	h.Ready(&rd, &outcomes)
	h.Advance(false, &outcomes, &events)
	h.Ready(&core.Ready{State: []byte{1}, Promise: true}, &outcomes)
	h.Advance(false, &outcomes, &events)
	if len(rd.Events) != 0 || !reflect.DeepEqual(names(events), []string{mutex.EventGrantHeld}) || status() != mutex.UnsavedRenewal {
		t.Fatalf("write failed: reported %v then %v, status %q: want only lock_grant_held, the renewal unsaved", names(rd.Events), names(events), status())
	}
	events = nil
	h.Ready(&core.Ready{State: []byte{1}, Promise: true}, &outcomes)
	h.Advance(true, &outcomes, &events)
	h.Release(t0.Add(time.Second), &outcomes, &events, map[string]uint64{})
	if len(outcomes) != 1 || !reflect.DeepEqual(names(events), []string{mutex.EventRenewed}) || status() != "" {
		t.Fatalf("released: outcomes %v, events %v, status %q", outcomes, names(events), status())
	}
}

// TestHeldRenewalTakesItsOwnEvent (review-mutex5): renewal r1 of request
// 7, held for a write that succeeds, leaves at its Advance, its
// lock_renewed waiting in the core for the next Ready; r2, a renewal of
// the same request, is held in that Ready. The hold took the first
// lock_renewed of request 7 (r1's) as r2's, and r2's (its new expiry)
// was logged before its client had r2. It takes the last now.
func TestHeldRenewalTakesItsOwnEvent(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ev := func(exp time.Time) core.Event {
		return core.Event{Name: mutex.EventRenewed, Args: []any{"request", uint64(7), "lock", "x", "fence", uint64(1), "expires", exp}}
	}
	r1 := mutex.Renewed{ID: 7, Lock: "x", Fence: 1, Expires: t0.Add(time.Second)}
	r2 := mutex.Renewed{ID: 7, Lock: "x", Fence: 1, Expires: t0.Add(2 * time.Second)}
	var h Hold
	out := []mutex.Outcome{r1}
	rd := core.Ready{State: []byte{1}, Promise: true, Events: []core.Event{ev(r1.Expires)}}
	h.Ready(&rd, &out)
	var coreEvents []core.Event
	h.Advance(true, &out, &coreEvents)
	if len(out) != 1 || len(coreEvents) != 1 {
		t.Fatalf("r1 not released: %v, %v", out, coreEvents)
	}
	out = []mutex.Outcome{r2}
	rd = core.Ready{State: []byte{1}, Promise: true, Events: append(coreEvents, ev(r2.Expires))}
	h.Ready(&rd, &out)
	if len(rd.Events) != 1 {
		t.Fatalf("events reported now: %v", rd.Events)
	}
	if exp, _ := rd.Events[0].Args[7].(time.Time); !exp.Equal(r1.Expires) {
		t.Errorf("reported now: lock_renewed to %v, the held renewal's (its client has not got it); r1's (to %v) held in its place", exp.Sub(t0), r1.Expires.Sub(t0))
	}
}

// TestTwoHeldRenewalsKeepTheirEvents (review-mine): two renewals of one
// request drained into the same Ready, held for its promise: taking the
// last lock_renewed of the request for each in turn gave r2 r3's event
// and r3 r2's, and the log said the lease went to r3's expiry and back to
// r2's. Each keeps its own.
func TestTwoHeldRenewalsKeepTheirEvents(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ev := func(exp time.Time) core.Event {
		return core.Event{Name: mutex.EventRenewed, Args: []any{"request", uint64(7), "lock", "x", "fence", uint64(1), "expires", exp}}
	}
	r2 := mutex.Renewed{ID: 7, Lock: "x", Fence: 1, Expires: t0.Add(2 * time.Second)}
	r3 := mutex.Renewed{ID: 7, Lock: "x", Fence: 1, Expires: t0.Add(3 * time.Second)}
	var h Hold
	out := []mutex.Outcome{r2, r3}
	rd := core.Ready{State: []byte{1}, Promise: true, Events: []core.Event{ev(r2.Expires), ev(r3.Expires)}}
	h.Ready(&rd, &out)
	var evs []core.Event
	h.Advance(true, &out, &evs)
	if len(out) != 2 || len(evs) != 2 {
		t.Fatalf("not released: %v, %v", out, evs)
	}
	for i, o := range out {
		got, _ := evs[i].Args[7].(time.Time)
		want := o.(mutex.Renewed).Expires
		if !got.Equal(want) {
			t.Errorf("outcome %d (renewal to %v) released with the event of the renewal to %v", i, want.Sub(t0), got.Sub(t0))
		}
	}
}

// TestHoldAdvanceEventsFirst: a grant held for its Ready's write leaves
// at the Advance in front of what the core made since, and so does its
// lock_granted: a release event the core reported between the Ready and
// the Advance (a driver that steps the core there) comes after it, as
// Release orders them. Before, the outcomes went in front and their events
// at the back: the log said lock_released before lock_granted (review-last).
func TestHoldAdvanceEventsFirst(t *testing.T) {
	t0 := time.Unix(1000, 0)
	grant := mutex.Granted{ID: 5, Lock: "x", Fence: 5, Expires: t0.Add(time.Second)}
	granted := core.Event{Name: mutex.EventGranted, Args: []any{"lock", "x", "request", uint64(5)}}
	released := core.Event{Name: mutex.EventReleased, Args: []any{"lock", "x", "request", uint64(5)}}
	var h Hold
	out := []mutex.Outcome{grant}
	rd := core.Ready{State: []byte{1}, Promise: true, Events: []core.Event{granted}}
	h.Ready(&rd, &out)
	if len(rd.Events) != 0 {
		t.Fatalf("the held grant's event left with its Ready: %+v", rd.Events)
	}
	// Stepped between the Ready and its Advance: the client's release.
	out = []mutex.Outcome{mutex.Released{ID: 5, Lock: "x", Fence: 5}}
	events := []core.Event{released}
	h.Advance(true, &out, &events)
	if want := []mutex.Outcome{grant, mutex.Released{ID: 5, Lock: "x", Fence: 5}}; !reflect.DeepEqual(out, want) {
		t.Fatalf("outcomes %v, want %v", out, want)
	}
	if len(events) != 2 || events[0].Name != mutex.EventGranted || events[1].Name != mutex.EventReleased {
		t.Fatalf("events %+v, want lock_granted before lock_released", events)
	}
}
