package daemon

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// ringWith is a window of n events one second apart from t0 (written as
// a trace.Log writes them: the header first, then lines in any pieces).
func ringWith(t *testing.T, n int) (*traceRing, time.Time) {
	t.Helper()
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	r := &traceRing{}
	var b []byte
	b = append(b, `{"synclab_trace":1,"daemon":"electd","id":2}`+"\n"...)
	for i := range n {
		b = trace.AppendEvent(b, &trace.Event{T: t0.Add(time.Duration(i) * time.Second), Ev: trace.EvLocal, Name: fmt.Sprintf("event_%03d", i)})
	}
	for len(b) > 0 { // in pieces of 7 bytes: lines arrive cut
		k := min(7, len(b))
		r.Write(b[:k])
		b = b[k:]
	}
	return r, t0
}

// TestTraceRingChunks: a fresh ask starts at the first event at or after
// From; asks that continue get the stream where they left off, lines cut
// across chunks, until End; an ask whose window is gone starts afresh.
func TestTraceRingChunks(t *testing.T) {
	r, t0 := ringWith(t, 40)
	c := r.chunk(&wire.TraceQuery{From: wire.NTPTimeFromTime(t0.Add(10 * time.Second))}, 5)
	if c.Flags != wire.TraceFresh || c.Window != 5 || len(c.Data) != wire.MaxTraceChunkData || !bytes.Contains(c.Data[:90], []byte("event_010")) {
		t.Fatalf("fresh chunk: flags %b, window %d, %d bytes: %.60s", c.Flags, c.Window, len(c.Data), c.Data)
	}
	all := append([]byte{}, c.Data...)
	for next := c.Offset + uint64(len(c.Data)); next < c.End; {
		c = r.chunk(&wire.TraceQuery{Window: 5, After: next}, 5)
		if c.Flags != 0 || c.Offset != next {
			t.Fatalf("continued: flags %b, offset %d, want %d", c.Flags, c.Offset, next)
		}
		all = append(all, c.Data...)
		next = c.Offset + uint64(len(c.Data))
	}
	f, err := trace.Read(bytes.NewReader(append([]byte(`{"synclab_trace":1,"daemon":"electd","id":2}`+"\n"), all...)), "window")
	if err != nil || len(f.Events) != 30 || f.Events[0].Name != "event_010" || f.Events[29].Name != "event_039" {
		t.Fatalf("reassembled: %v, %d events", err, len(f.Events))
	}
	if c := r.chunk(&wire.TraceQuery{Window: 4, After: 100}, 5); c.Flags != wire.TraceFresh {
		t.Fatalf("another window's offset: flags %b", c.Flags)
	}
	if c := r.chunk(&wire.TraceQuery{Window: 5, After: c.End}, 5); c.Flags != 0 || len(c.Data) != 0 {
		t.Fatalf("caught up: %+v", c)
	}
}

// TestTraceRingBounded: the window keeps at most traceRingLines lines and
// traceRingAge of events, dropping the oldest (counted); an ask for what
// was dropped says so (TraceLost) and goes on from the oldest held.
func TestTraceRingBounded(t *testing.T) {
	r, _ := ringWith(t, 200) // 200 s: past traceRingAge
	lines, _, dropped := r.size()
	if lines != int(traceRingAge/time.Second)+1 || dropped != uint64(200-lines) {
		t.Fatalf("%d lines held, %d dropped", lines, dropped)
	}
	c := r.chunk(&wire.TraceQuery{Window: 5, After: 0}, 5)
	if c.Flags != wire.TraceLost || c.Offset != r.lines[0].off || !bytes.HasPrefix(c.Data, r.lines[0].b[:20]) {
		t.Fatalf("a dropped offset: flags %b, offset %d (oldest %d)", c.Flags, c.Offset, r.lines[0].off)
	}
	big := &traceRing{header: true}
	for i := range traceRingLines + 10 {
		big.add([]byte(fmt.Sprintf(`{"t":"2026-12-06T10:00:00.%06dZ","ev":"local"}`+"\n", i)))
	}
	if n, _, d := big.size(); n != traceRingLines || d != 10 {
		t.Fatalf("%d lines held, %d dropped", n, d)
	}
}

// idleCore is a core that does nothing.
type idleCore struct{}

func (idleCore) Step(core.Message) error          { return nil }
func (idleCore) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }
func (idleCore) Tick(time.Time)                   {}
func (idleCore) Ready() core.Ready                { return core.Ready{} }
func (idleCore) Status() any                      { return nil }

// windowDaemon is a daemon of n members, member 1, with its node: enough
// for the trace window's bookkeeping.
func windowDaemon(tb testing.TB, n int) *Daemon {
	tb.Helper()
	members := map[uint32]netip.AddrPort{}
	for id := 1; id <= n; id++ {
		members[uint32(id)] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, byte(id >> 8), byte(id)}), 7000)
	}
	nd, err := node.New(node.Config{ID: 1, Members: members, Cluster: "lab", Incarnation: 1}, idleCore{})
	if err != nil {
		tb.Fatal(err)
	}
	sim := clock.NewSim(clock.SimConfig{}, time.Now)
	return &Daemon{cfg: Config{Name: "electd", ID: 1, Members: members, Clock: sim, ClockName: "sim"},
		node: nd, log: slog.New(slog.DiscardHandler), started: time.Now()}
}

// TestTraceWindowIdleFromTheLatestAsk: the window stays on while any
// member asked within TraceWindowIdle, and goes off once the latest ask
// is older.
func TestTraceWindowIdleFromTheLatestAsk(t *testing.T) {
	d := windowDaemon(t, 64)
	for m := uint32(2); m <= 64; m++ {
		if _, ok := d.traceWindow(m, &wire.TraceQuery{}); !ok {
			t.Fatal("no window")
		}
	}
	d.traceStep()
	w := d.win
	if w == nil || w.pending {
		t.Fatalf("window %+v, want on and recording", w)
	}
	w.asked[64] = time.Now()
	w.last = w.asked[64]
	d.traceStep()
	if d.win == nil {
		t.Fatal("the window went off with an ask a moment ago")
	}
	w.last = time.Now().Add(-TraceWindowIdle - time.Second)
	d.traceStep()
	if d.win != nil {
		t.Fatalf("the window stayed on %v after the latest ask", TraceWindowIdle+time.Second)
	}
	if n := testing.AllocsPerRun(100, d.traceStep); n != 0 {
		t.Errorf("traceStep without a window: %v allocations", n)
	}
}

// BenchmarkTraceStep: what every frame pays for the trace window, with
// none open and with one that 1 and 63 members asked for: the same.
func BenchmarkTraceStep(b *testing.B) {
	for _, askers := range []int{0, 1, 63} {
		b.Run(fmt.Sprintf("askers=%d", askers), func(b *testing.B) {
			d := windowDaemon(b, 64)
			for m := range askers {
				d.traceWindow(uint32(m+2), &wire.TraceQuery{})
			}
			d.traceStep()
			b.ReportAllocs()
			for b.Loop() {
				d.traceStep()
			}
		})
	}
}
