package mutexcount

import (
	"reflect"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
)

// TestDrain: every outcome of the table reaches the core's outcomes in
// order, each with its event and the arguments a core's Grants asks for,
// and ended sees each request that was lost or released before its event.
func TestDrain(t *testing.T) {
	t0 := time.Unix(1000, 0)
	reqs, err := mutex.NewTable(mutex.Limits{MinLease: time.Second, MaxLease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := reqs.Enqueue(t0, 1, mutex.Request{Lock: "x", Mode: mutex.Exclusive})
	b, _ := reqs.Enqueue(t0, 1, mutex.Request{Lock: "y", Mode: mutex.Exclusive})
	if _, err := reqs.Grant(t0, a, 7, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := reqs.Grant(t0, b, 8, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := reqs.Release(t0, a); err != nil {
		t.Fatal(err)
	}
	reqs.Lose("y", mutex.Superseded)

	var outcomes []mutex.Outcome
	var events []core.Event
	var ended []mutex.RequestID
	Drain(reqs, &outcomes, &events, Grants{Mode: true, Epoch: "term"}, func(id mutex.RequestID) {
		ended = append(ended, id)
		if n := len(events); n != 2 && n != 3 {
			t.Errorf("ended(%d) called after %d events", id, n)
		}
	})
	var names []string
	for _, e := range events {
		names = append(names, e.Name)
	}
	wantNames := []string{mutex.EventGranted, mutex.EventGranted, mutex.EventReleased, mutex.EventLost}
	if len(outcomes) != 4 || !reflect.DeepEqual(names, wantNames) {
		t.Fatalf("%d outcomes, events %v: want 4 and %v", len(outcomes), names, wantNames)
	}
	g := events[0]
	wantArgs := []any{"request", uint64(a), "lock", "x", "fence", uint64(7), "mode", "exclusive",
		"lease", time.Second, "expires", t0.Add(time.Second), "term", uint64(3)}
	if !reflect.DeepEqual(g.Args, wantArgs) {
		t.Errorf("granted args %v, want %v", g.Args, wantArgs)
	}
	if v := events[3].Args[len(events[3].Args)-1]; v != string(mutex.Superseded) {
		t.Errorf("lost reason %v", v)
	}
	if !reflect.DeepEqual(ended, []mutex.RequestID{a, b}) {
		t.Errorf("ended %v, want [%d %d]", ended, a, b)
	}

	// Without Mode or Epoch a grant says neither; nothing left to drain.
	c, _ := reqs.Enqueue(t0, 1, mutex.Request{Lock: "z"})
	reqs.Grant(t0, c, 9, 4)
	events, outcomes = nil, nil
	Drain(reqs, &outcomes, &events, Grants{}, nil)
	if len(events) != 1 || len(events[0].Args) != 10 {
		t.Errorf("plain grant: %v", events)
	}
	Drain(reqs, &outcomes, &events, Grants{}, nil)
	if len(outcomes) != 1 {
		t.Errorf("%d outcomes after a second drain, want 1", len(outcomes))
	}
}

// TestCounters: the table's, the core's and the bugs' counters in one
// view, and ByPrefix picks one family.
func TestCounters(t *testing.T) {
	reqs, err := mutex.NewTable(mutex.Limits{MinLease: time.Second, MaxLease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	reqs.Enqueue(time.Unix(0, 0), 1, mutex.Request{Lock: "x"})
	var bugs core.Bugs
	var events []core.Event
	bugs.Encode(&events, "vote", failing{}, nil)
	got := Counters(reqs, map[string]uint64{"lost_expired": 2, "rejected_stale": 1, "lost_refused": 3}, &bugs)
	if got["requests"] != 1 || got["lost_expired"] != 2 || len(ByPrefix(got, "lost_")) != 2 || ByPrefix(got, "rejected_")["stale"] != 1 {
		t.Errorf("counters %v", got)
	}
	if n := len(ByPrefix(got, "bug_")); n != 1 {
		t.Errorf("%d bug counters in %v, want 1", n, got)
	}
}

type failing struct{}

func (failing) AppendBinary(b []byte) ([]byte, error) { return b, errFail }

var errFail = errorString("cannot encode")

type errorString string

func (e errorString) Error() string { return string(e) }
