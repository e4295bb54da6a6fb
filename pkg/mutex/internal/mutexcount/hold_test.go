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
	h.Advance(true, &out)
	if len(out) != 1 || h.Held() != 0 || !h.Deadline(t0).IsZero() {
		t.Fatalf("written: %v left, %d held", out, h.Held())
	}

	// A failed write: held through Readies that carry the promise again,
	// and those without one behind them, until a write succeeds; then at
	// the next Tick, the expired grant and renewal dropped.
	out = []mutex.Outcome{g(3, time.Second), mutex.Renewed{ID: 9, Lock: "x", Fence: 9, Expires: t0.Add(time.Second)}}
	h.Ready(&core.Ready{State: []byte{1}, Promise: true}, &out)
	h.Advance(false, &out)
	out = []mutex.Outcome{g(4, 3*time.Second), mutex.Lost{ID: 3, Lock: "x", Fence: 3, Reason: mutex.Expired}}
	h.Ready(&core.Ready{State: []byte{1}, Promise: true}, &out)
	h.Advance(false, &out)
	if !h.Deadline(t0).IsZero() {
		t.Fatal("a Tick asked for while the write fails")
	}
	h.Release(t0.Add(2*time.Second), &out, &events, counters)
	if len(out) != 0 || h.Held() != 4 {
		t.Fatalf("released before a write succeeded: %v, %d held", out, h.Held())
	}
	out = []mutex.Outcome{mutex.Released{ID: 4, Lock: "x", Fence: 4}}
	h.Ready(&core.Ready{State: []byte{1}, Promise: true}, &out)
	h.Advance(true, &out)
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
	h.Ready(&core.Ready{State: []byte{1}, Promise: true}, &out)
	h.Advance(false, &out) // the write failed
	h.Ready(&core.Ready{State: []byte{1}, Promise: true}, &out)
	h.Advance(true, &out) // a later write took it
	released := mutex.Released{ID: 5, Lock: "x", Fence: 5}
	out = append(out, released) // the client's release, before the Tick
	var events []core.Event
	h.Release(t0.Add(time.Millisecond), &out, &events, map[string]uint64{})
	if want := []mutex.Outcome{grant, released}; !reflect.DeepEqual(out, want) {
		t.Errorf("outcomes %v, want the held grant before the release made after it: %v", out, want)
	}
}
