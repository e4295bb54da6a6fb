package bench

import (
	"encoding/hex"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/order"
)

// TestFindPathFanOut follows one multicast through made-up traces of five
// hosts (h5 the sequencer) whose frames to the members leave and arrive
// at known times, and checks the fan-out rows: the spread of the
// sequencer's sends and of the members' arrivals, which each member's own
// hops leave out.
func TestFindPathFanOut(t *testing.T) {
	const seq = 5
	t0 := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	at := func(us int) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }
	hexMsg := hex.EncodeToString([]byte("m"))
	traces := map[int]*trace.File{}
	for i := 1; i <= seq; i++ {
		traces[i] = &trace.File{}
	}
	add := func(h int, e trace.Event) { traces[h].Events = append(traces[h].Events, e) }
	entries := []any{map[string]any{"message": hexMsg}}

	add(1, trace.Event{T: at(100), Ev: trace.EvSend, Kind: "order_submit", Fields: map[string]any{"message": hexMsg}})
	add(seq, trace.Event{T: at(120), Ev: trace.EvRecv, Kind: "order_submit", Fields: map[string]any{"message": hexMsg}})
	// The Appends leave 100 us apart (first to last out: 300 us) and
	// arrive 20 us later, but h4's 80 us later (first to last in: 360 us).
	for m := 1; m <= 4; m++ {
		out, in := 100+100*m, 120+100*m
		if m == 4 {
			in = 100 + 100*m + 80
		}
		frame := fmt.Sprintf("append-%d", m)
		add(seq, trace.Event{T: at(out), Ev: trace.EvSend, Kind: "order_append", Frame: frame, Fields: map[string]any{"prev": 0.0, "entries": entries}})
		add(m, trace.Event{T: at(in), Ev: trace.EvRecv, Kind: "order_append", Frame: frame, Fields: map[string]any{"prev": 0.0, "entries": entries}})
	}
	// Each member acknowledges 300 us after its Append; the acks reach
	// the sequencer 20 us later.
	for m := 1; m <= 4; m++ {
		in := traces[m].Events[len(traces[m].Events)-1].T
		frame := fmt.Sprintf("ack-%d", m)
		add(m, trace.Event{T: in.Add(300 * time.Microsecond), Ev: trace.EvSend, Kind: "order_append_ack", Frame: frame, Fields: map[string]any{"match": 1.0}})
	}
	for m := 1; m <= 4; m++ {
		add(seq, trace.Event{T: traces[m].Events[len(traces[m].Events)-1].T.Add(20 * time.Microsecond), Ev: trace.EvRecv, Kind: "order_append_ack", Frame: fmt.Sprintf("ack-%d", m)})
	}
	// The commit points leave 50 us apart from 1000 us (first to last
	// out: 150 us) and arrive 10 us later, but h4's 40 us later (first to
	// last in: 180 us).
	for m := 1; m <= 4; m++ {
		out := 950 + 50*m
		in := out + 10
		if m == 4 {
			in = out + 40
		}
		frame := fmt.Sprintf("commit-%d", m)
		add(seq, trace.Event{T: at(out), Ev: trace.EvSend, Kind: "order_append", Frame: frame, Fields: map[string]any{"commit": 1.0}})
		add(m, trace.Event{T: at(in), Ev: trace.EvRecv, Kind: "order_append", Frame: frame, Fields: map[string]any{"commit": 1.0}})
		add(m, trace.Event{T: at(in + 30), Ev: trace.EvLocal, Name: order.EventDelivered, Args: map[string]any{"seq": 1.0}})
	}
	for _, f := range traces {
		sortEvents(f)
	}

	hops, why := findPath(traces, seq, "m", t0)
	if why != "" {
		t.Fatalf("findPath: %s", why)
	}
	got := map[string]time.Duration{}
	for _, h := range hops {
		got[h.name] = h.d
	}
	for name, want := range map[string]time.Duration{
		"  then its Appends to the other members: first to last out":       300 * time.Microsecond,
		"  and at the members: first to last Append in":                    360 * time.Microsecond,
		"  then its commit points to the other members: first to last out": 150 * time.Microsecond,
		"  and at the members: first to last commit point in":              180 * time.Microsecond,
		"one-way sequencer -> member (Append)":                             20 * time.Microsecond,
	} {
		d, ok := got[name]
		if !ok {
			t.Errorf("no row %q (rows: %v)", name, hops)
			continue
		}
		if d != want {
			t.Errorf("%q = %v, want %v", name, d, want)
		}
	}
}

// sortEvents puts f's events in time order, as a trace file has them.
func sortEvents(f *trace.File) {
	slices.SortStableFunc(f.Events, func(a, b trace.Event) int { return a.T.Compare(b.T) })
}
