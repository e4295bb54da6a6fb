package daemon

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// TestSlowPersistWarns: a write of the core's state over SlowPersist is a
// WARN naming the file and its sync, once per interval however many
// follow; status counts every write, keeps the slowest and the last slow
// one; a fast write warns of nothing.
func TestSlowPersistWarns(t *testing.T) {
	var buf bytes.Buffer
	dir := t.TempDir()
	d := &Daemon{alerts: newAlerts(slog.New(slog.NewTextHandler(&buf, nil))), state: &stateDir{path: dir}}
	fast := writeTimes{wrote: 20 * time.Microsecond, synced: 400 * time.Microsecond}
	d.persisted(CoreStateFile, 13, true, fast, 450*time.Microsecond)
	if buf.Len() > 0 || d.persist.Slow != 0 || d.persist.Writes != 1 {
		t.Fatalf("a fast write: slow %d, writes %d, log:\n%s", d.persist.Slow, d.persist.Writes, buf.String())
	}
	slow := writeTimes{wrote: 30 * time.Microsecond, synced: 137 * time.Millisecond}
	for range 5 {
		d.persisted(CoreStateFile, 13, true, slow, 140*time.Millisecond)
	}
	out := buf.String()
	if n := strings.Count(out, "level=WARN"); n != 1 {
		t.Fatalf("%d WARN lines for 5 slow writes within the interval:\n%s", n, out)
	}
	for _, want := range []string{filepath.Join(dir, CoreStateFile), "took 140 ms", "137 ms of it syncing", "messages that depend on it", "--state-dir"} {
		if !strings.Contains(out, want) {
			t.Errorf("the warning lacks %q:\n%s", want, out)
		}
	}
	p := d.persist
	if p.Writes != 6 || p.Slow != 5 || p.Slowest.TotalUs != 140000 || p.LastSlow.SyncUs != 137000 || p.Last.Bytes != 13 || !p.Last.Promise {
		t.Fatalf("status: %+v (slowest %+v, last slow %+v)", p, *p.Slowest, *p.LastSlow)
	}
}

// TestStateWriteTimed: an atomic write of the core's state reports its
// write and its syncs (the trace's and status's figures are measured, not
// zero).
func TestStateWriteTimed(t *testing.T) {
	s := &stateDir{path: t.TempDir()}
	l := &coreLog{dir: s.path}
	if err := s.snapshot(l, []byte("term")); err != nil {
		t.Fatal(err)
	}
	if s.took.synced <= 0 || s.took.wrote <= 0 {
		t.Fatalf("state write timed as %+v", s.took)
	}
}

// promiser is a core whose state changes with or without a promise, each
// change with a frame to member 2 and, with clk set, a 1 ms slew of it
// (timed: its polls and slews beside its frequency). It records when the
// clock took the slew (Adjusted) and how much of it the clock still had
// to make when the write ended (Advance).
type promiser struct {
	core.Durable
	n    int
	msgs []core.Message
	clk  *clock.Sim
	adjs []clock.Adjustment
	// calls is "adjusted" and "advanced <slew left>", in order.
	calls []string
}

func (c *promiser) change(promise bool) {
	c.n++
	c.Change(promise)
	c.msgs = append(c.msgs, core.Message{To: 2, Kind: wire.KindElection, Term: uint64(c.n)})
	if c.clk != nil {
		c.adjs = append(c.adjs, clock.Adjustment{Kind: clock.AdjustSlew, Offset: time.Millisecond})
	}
}
func (c *promiser) Step(core.Message) error          { return nil }
func (c *promiser) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }
func (c *promiser) Status() any                      { return nil }
func (c *promiser) Tick(time.Time)                   {}
func (c *promiser) Adjusted(time.Time)               { c.calls = append(c.calls, "adjusted") }
func (c *promiser) Advance(saved bool) {
	if c.clk != nil {
		st, _ := c.clk.State()
		c.calls = append(c.calls, fmt.Sprintf("advanced %v", st.SlewLeft))
	}
	c.Durable.Advance(saved)
}
func (c *promiser) Ready() core.Ready {
	rd := core.Ready{Messages: c.msgs, Adjustments: c.adjs}
	c.msgs, c.adjs = nil, nil
	c.Durable.Ready(&rd, func() []byte { return fmt.Appendf(nil, "n=%d", c.n) })
	return rd
}

// writeOrder runs a daemon on c, has it change its state without a
// promise and then with one, and returns the trace's order of its frames
// ("send") and state writes ("write").
func writeOrder(t *testing.T, cfg Config, c *promiser) []string {
	t.Helper()
	d, err := New(cfg, func(core.Env) (core.Core, error) { return c, nil })
	if err != nil {
		t.Fatal(err)
	}
	start(t, d)
	ctx := context.Background()
	file := filepath.Join(filepath.Dir(cfg.ControlPath), "order.trace")
	var terr error
	d.Do(ctx, func(*node.Node) { _, terr = d.startTrace(file, 0, false) })
	if terr != nil {
		t.Fatal(terr)
	}
	for _, promise := range []bool{false, true} {
		if err := d.DoSaved(ctx, func(n *node.Node) { n.Core().(*promiser).change(promise) }); err != nil {
			t.Fatal(err)
		}
	}
	d.Do(ctx, func(*node.Node) { _, terr = d.stopTrace() })
	if terr != nil {
		t.Fatal(terr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.Contains(line, `"ev":"send"`) && strings.Contains(line, `"kind":"election"`):
			order = append(order, "send")
		case strings.Contains(line, `"name":"`+TraceStateWrite+`"`):
			order = append(order, "write")
		}
	}
	return order
}

// TestStateWithoutPromiseSentFirst: a core that writes its state (not a
// log) and hands a change without a promise (bully's claim on its
// reservation) has the Ready's frames sent before the write, which runs
// while they travel; a change with a promise is written first. The
// trace's order says which went first.
func TestStateWithoutPromiseSentFirst(t *testing.T) {
	dir := shortDir(t)
	order := writeOrder(t, testConfig(t, transport.NewMemNetwork(), dir, 1, 2), &promiser{})
	if want := []string{"send", "write", "write", "send"}; !slices.Equal(order, want) {
		t.Fatalf("trace order %v, want %v (without a promise the frame first, with one the write first)", order, want)
	}
}

// TestAdjustedBeforeTheWrite: a Ready's clock adjustments are applied
// before its state write, promise or not: a discipline counts its slew
// from the tick that decided it, and a slew that waited for a slow
// fdatasync had its bound (and the time it serves) trust a correction
// the clock had not begun (timed's NTP client on a 20-200 ms disk: a true
// offset of -235 us outside its +-216 us bound). So the core hears that
// the clock took the slew (Adjusted) before it hears how the write went
// (Advance), when the clock has it to make; and, the clock adjusted
// first, a Ready without a promise sends its frames before the write as
// any other does (they are stamped by the adjusted clock).
func TestAdjustedBeforeTheWrite(t *testing.T) {
	dir := shortDir(t)
	cfg := testConfig(t, transport.NewMemNetwork(), dir, 1, 2)
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	clk := clock.NewSim(clock.SimConfig{}, func() time.Time { return at }) // still: the slew stays whole
	cfg.Clock = clk
	c := &promiser{clk: clk}
	order := writeOrder(t, cfg, c)
	if want := []string{"send", "write", "write", "send"}; !slices.Equal(order, want) {
		t.Errorf("trace order %v, want %v (without a promise the frame first, with one the write first)", order, want)
	}
	// The first slew is made from the second's start: 1 ms left each time.
	if want := []string{"adjusted", "advanced 1ms", "adjusted", "advanced 1ms"}; !slices.Equal(c.calls, want) {
		t.Fatalf("the core was told %q, want %q: the clock must take a Ready's adjustments before its write ends", c.calls, want)
	}
}

// TestPersistLogRateLimit: a failing state directory logs its ERROR at
// most every persistLogEvery, across runs of failures too (a disk failing
// one write in three logged an ERROR and a "works again" INFO for each
// run), and a run's end only if the run was logged. Driven by a fake
// clock: the decisions are persistLog's, the daemon only writes the lines.
func TestPersistLogRateLimit(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var p persistLog
	step := 0
	fail := func(at time.Duration, want bool) {
		t.Helper()
		step++
		if got := p.failed(t0.Add(at)); got != want {
			t.Errorf("step %d: a failed write at +%v logged an ERROR: %v, want %v", step, at, got, want)
		}
	}
	save := func(wantEnded, wantSaid bool) {
		t.Helper()
		step++
		if ended, said := p.saved(); ended != wantEnded || said != wantSaid {
			t.Errorf("step %d: a write that worked: run ended %v, its end said %v; want %v, %v", step, ended, said, wantEnded, wantSaid)
		}
	}
	save(false, false)         // no run: nothing to end
	fail(0, true)              // the first failure is said at once
	fail(time.Second, false)   // and not again within 10 s
	save(true, true)           // a run that was said: its end too
	fail(2*time.Second, false) // a new run 2 s after the last ERROR: not said
	save(true, false)          // so neither is its end
	fail(9*time.Second, false) // another run, still within 10 s
	fail(10*time.Second, true) // 10 s after the last ERROR: said (the same run)
	if got := p.failedAt; !got.Equal(t0.Add(9 * time.Second)) {
		t.Errorf("the run's start: %v, want +9s (failing_since)", got.Sub(t0))
	}
	save(true, true)            // the run was said: its end is
	fail(15*time.Second, false) // a flaky disk: one failure in a while
	save(true, false)
	fail(19*time.Second, false)
	save(true, false)
	fail(20*time.Second+time.Nanosecond, true)
	save(true, true)
}
