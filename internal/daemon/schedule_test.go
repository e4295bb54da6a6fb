package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/testkit/testenv"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
)

// sleeper needs Tick every period of its clock (core.Scheduler), and at
// once after a Do asks for it.
type sleeper struct {
	period time.Duration
	mu     sync.Mutex // the test reads ticks while the loop runs
	ticks  []time.Time
	next   time.Time
}

func (s *sleeper) Step(core.Message) error          { return nil }
func (s *sleeper) StepDatagram(core.Datagram) error { return nil }
func (s *sleeper) Status() any                      { return nil }
func (s *sleeper) Ready() core.Ready                { return core.Ready{} }
func (s *sleeper) Deadline() time.Time              { return s.next }
func (s *sleeper) Tick(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ticks = append(s.ticks, now)
	s.next = now.Add(s.period)
}
func (s *sleeper) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ticks)
}

// waitTicks polls until s has had n ticks, or fails the test after within
// (time enough for any scheduling delay a loaded host adds; the loop's own
// timers are far shorter).
func (s *sleeper) waitTicks(t *testing.T, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for s.count() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d ticks after %v, want %d", s.count(), within, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// fakeTimer is the loop's timer under a test (Daemon.newTimer): it records
// every duration it is armed for and fires only when the test says, so the
// loop's schedule is checked exactly and nothing races a real timer.
type fakeTimer struct {
	c     chan time.Time
	armed chan time.Duration // every duration armed, in order
}

func newFakeTimer() *fakeTimer {
	return &fakeTimer{c: make(chan time.Time, 1), armed: make(chan time.Duration, 1024)}
}

// make is the Daemon.newTimer of a loop that has this one timer.
func (f *fakeTimer) make(d time.Duration) loopTimer {
	f.armed <- d
	return f
}

func (f *fakeTimer) Chan() <-chan time.Time { return f.c }

// Reset arms the timer anew. A firing not yet received stays: the test
// fires only after seeing the loop arm the timer, and the loop may arm it
// again for the same moment (after a tick and on the deadline's change)
// before it receives the firing.
func (f *fakeTimer) Reset(d time.Duration) bool {
	f.armed <- d
	return true
}

func (f *fakeTimer) Stop() bool { return true }

func (f *fakeTimer) fire(now time.Time) { f.c <- now }

// next returns the next duration armed that differs from last (re-arming
// for the same time is harmless: the loop re-arms after every tick and on
// every change of the core's deadline, which may coincide), failing the
// test if it is not want.
func (f *fakeTimer) next(t *testing.T, last, want time.Duration) {
	t.Helper()
	for {
		select {
		case d := <-f.armed:
			if d == last && d != want {
				continue
			}
			if d != want {
				t.Fatalf("the loop's timer armed for %v, want %v (after %v)", d, want, last)
			}
			return
		case <-time.After(hangGuard):
			t.Fatalf("the loop's timer never armed for %v (after %v)", want, last)
		}
	}
}

// startSleeper runs a daemon of one member around s, on a simulated clock
// that reads t0 until the test advances it and the test's loop timer.
func startSleeper(t *testing.T, t0 time.Time, s *sleeper, opts ...func(*Config)) (*Daemon, Config, *testenv.Clock, *fakeTimer) {
	t.Helper()
	return startCore(t, t0, s, opts...)
}

// startCore is startSleeper for any core c.
func startCore(t *testing.T, t0 time.Time, c core.Core, opts ...func(*Config)) (*Daemon, Config, *testenv.Clock, *fakeTimer) {
	t.Helper()
	clk := testenv.NewClock(t0)
	cfg := testConfig(t, transport.NewMemNetwork(), shortDir(t), 1, 1)
	cfg.Clock = clock.NewSim(clock.SimConfig{}, clk.Now)
	for _, o := range opts {
		o(&cfg)
	}
	d, err := New(cfg, func(core.Env) (core.Core, error) { return c, nil })
	if err != nil {
		t.Fatal(err)
	}
	timer := newFakeTimer()
	d.newTimer = timer.make
	start(t, d)
	return d, cfg, clk, timer
}

// TestLoopArmsTheCoresDeadline: a core that says when it needs Tick is
// ticked then, not every TickInterval (2 ms here: 100 ticks per 200 ms
// period); a deadline far away is slept in MaxSleep steps; a Do that moves
// the deadline re-arms the loop's timer at once. The core's clock and the
// loop's timer are the test's: what the loop arms and when the core is
// ticked are exact, whatever the host's load.
func TestLoopArmsTheCoresDeadline(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	const period = 200 * time.Millisecond
	s := &sleeper{period: period}
	d, cfg, clk, timer := startSleeper(t, t0, s)
	// fire advances the clock by d, fires the timer and waits for the
	// tick it causes.
	fire := func(d time.Duration) {
		t.Helper()
		n := s.count()
		timer.fire(clk.Advance(d))
		s.waitTicks(t, n+1, hangGuard)
	}
	// The first Tick one TickInterval after the start, then one per period.
	timer.next(t, 0, cfg.TickInterval)
	fire(cfg.TickInterval)
	last := cfg.TickInterval
	for range 3 {
		timer.next(t, last, period)
		fire(period)
		last = period
	}
	timer.next(t, period, period)
	s.mu.Lock()
	got := slices.Clone(s.ticks)
	s.mu.Unlock()
	want := []time.Time{t0.Add(2 * time.Millisecond), t0.Add(202 * time.Millisecond), t0.Add(402 * time.Millisecond), t0.Add(602 * time.Millisecond)}
	if !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Fatalf("ticks at %v, want %v", got, want)
	}

	setNext := func(in time.Duration) {
		t.Helper()
		if err := d.Do(context.Background(), func(*node.Node) {
			s.mu.Lock()
			s.next, s.period = cfg.Clock.Now().Add(in), time.Hour
			s.mu.Unlock()
		}); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing due for an hour: the loop sleeps MaxSleep, and again after
	// the tick that ends that sleep.
	setNext(time.Hour)
	timer.next(t, period, node.MaxSleep)
	fire(node.MaxSleep)
	// Right after it, a Do asks for a tick in 5 ms: the timer is re-armed
	// for 5 ms at once, not left to the MaxSleep it was armed for.
	setNext(5 * time.Millisecond)
	timer.next(t, node.MaxSleep, 5*time.Millisecond)
	fire(5 * time.Millisecond)
	timer.next(t, 5*time.Millisecond, node.MaxSleep)
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.ticks); n != 6 || !s.ticks[4].Equal(t0.Add(1602*time.Millisecond)) || !s.ticks[5].Equal(t0.Add(1607*time.Millisecond)) {
		t.Fatalf("ticks at %v, want the fourth's then %v and %v", s.ticks, t0.Add(1602*time.Millisecond), t0.Add(1607*time.Millisecond))
	}
}

// TestLoopSleepsUntilTheDeadline: the same on real time, with the real
// timer: the core is ticked at its deadlines, never before one. Only that
// lower bound is checked (a timer never fires early); how late a loaded
// host wakes the loop is not, and what the loop arms is
// TestLoopArmsTheCoresDeadline's.
func TestLoopSleepsUntilTheDeadline(t *testing.T) {
	cfg := testConfig(t, transport.NewMemNetwork(), shortDir(t), 1, 1)
	s := &sleeper{period: 200 * time.Millisecond}
	d, err := New(cfg, func(core.Env) (core.Core, error) { return s, nil })
	if err != nil {
		t.Fatal(err)
	}
	start(t, d)
	s.waitTicks(t, 4, hangGuard)
	s.mu.Lock()
	defer s.mu.Unlock()
	var gaps []time.Duration
	for i := 1; i < len(s.ticks); i++ {
		gaps = append(gaps, s.ticks[i].Sub(s.ticks[i-1]))
	}
	t.Logf("gaps between ticks at a 200 ms deadline: %v", gaps)
	for i, gap := range gaps {
		if gap < s.period {
			t.Errorf("tick %d came %v after the last, before the deadline", i+1, gap)
		}
	}
}

// TestIdleSecondWakesOncePerDeadline: what an idle daemon costs is its
// wake-ups. Over one idle second of a core that needs Tick every 50 ms
// (electd's and orderd's heartbeat), the loop's timer fires 20 times and
// is armed 20 times, each for the core's next deadline: no tick at the
// loop's own 2 ms interval, no re-arming for a moment already armed (each
// is a syscall and a pass of the loop; a tick used to arm the timer
// twice). The clock and the timer are the test's, so the counts are exact
// whatever the host's load.
func TestIdleSecondWakesOncePerDeadline(t *testing.T) {
	const period = 50 * time.Millisecond
	s := &sleeper{period: period}
	d, cfg, clk, timer := startSleeper(t, time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC), s)
	timer.next(t, 0, cfg.TickInterval)
	timer.c <- clk.Advance(cfg.TickInterval)
	s.waitTicks(t, 1, hangGuard)
	timer.next(t, cfg.TickInterval, period)

	// armed takes every arming the loop made so far, waiting for the one
	// that must follow a tick.
	var arms []time.Duration
	armed := func(wait bool) {
		t.Helper()
		if wait {
			select {
			case a := <-timer.armed:
				arms = append(arms, a)
			case <-time.After(hangGuard):
				t.Fatalf("the loop did not re-arm its timer after tick %d", s.count())
			}
		}
		for {
			select {
			case a := <-timer.armed:
				arms = append(arms, a)
			default:
				return
			}
		}
	}
	for i := range int(time.Second / period) {
		timer.c <- clk.Advance(period)
		s.waitTicks(t, i+2, hangGuard)
		armed(true)
	}
	// A second arming for the same tick comes right after the first: a
	// little wall time and a pass of the loop (a Do) let one show.
	time.Sleep(20 * time.Millisecond)
	if err := d.Do(context.Background(), func(*node.Node) {}); err != nil {
		t.Fatal(err)
	}
	armed(false)

	if n := s.count() - 1; n != 20 {
		t.Errorf("%d ticks in the idle second, want 20", n)
	}
	if len(arms) != 20 {
		t.Errorf("the loop armed its timer %d times in the idle second (%v), want 20: once per tick", len(arms), arms)
	}
	for _, a := range arms {
		if a != period {
			t.Errorf("the loop armed its timer for %v, want the core's deadline %v", a, period)
			break
		}
	}
}

// TestTrueTimeOnTheLoopTimer: the truetime page is published on the
// loop's one timer, not a Go ticker beside it (whose every firing woke the
// runtime's monitor thread twice: two of an idle timed's dozen wake-ups
// a second). With the core's next deadline far off, the loop arms its
// timer for the next publication, within TrueTimeInterval; that firing
// publishes the page without ticking the core, and arms for the next.
func TestTrueTimeOnTheLoopTimer(t *testing.T) {
	const period = 10 * time.Second // the core's: later than any publication
	s := &sleeper{period: period}
	page := filepath.Join(shortDir(t), "truetime")
	d, cfg, clk, timer := startSleeper(t, time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC), s, func(c *Config) {
		c.TrueTime = &TrueTime{Path: page, Bound: func(core.Core, time.Time) (TrueTimeBound, bool) { return TrueTimeBound{}, false }}
	})
	timer.next(t, 0, cfg.TickInterval)
	timer.c <- clk.Advance(cfg.TickInterval)
	s.waitTicks(t, 1, hangGuard)
	published := func() uint64 {
		t.Helper()
		var n uint64
		if err := d.Do(context.Background(), func(*node.Node) { n = d.tt.Published() }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := range 2 {
		// The arming after the last firing: the publication's, in wall
		// time, not the core's 10 s (nor MaxSleep).
		var wait time.Duration
		for done := false; !done; {
			select {
			case wait = <-timer.armed:
				done = wait <= TrueTimeInterval
			case <-time.After(hangGuard):
				t.Fatalf("publication %d: the loop never armed its timer for the truetime page", i+1)
			}
		}
		before := published()
		time.Sleep(wait) // wall time: the page's schedule
		timer.c <- clk.Advance(wait)
		deadline := time.Now().Add(hangGuard)
		for published() == before {
			if time.Now().After(deadline) {
				t.Fatalf("publication %d: the timer fired after %v, the page not published", i+1, wait)
			}
			time.Sleep(time.Millisecond)
		}
		if n := s.count(); n != 1 {
			t.Fatalf("publication %d ticked the core (%d ticks): its deadline is %v away", i+1, n, period)
		}
	}
}

// appendingSleeper is a sleeper whose core appends one record to its log
// on its first tick (so that the loop batches as for orderd) and counts
// the Readys the loop takes.
type appendingSleeper struct {
	sleeper
	core.Durable
	appended bool
	readys   atomic.Int64
}

func (a *appendingSleeper) Tick(now time.Time) {
	a.sleeper.Tick(now)
	if !a.appended {
		a.appended = true
		a.Change(false)
	}
}

func (a *appendingSleeper) Ready() core.Ready {
	a.readys.Add(1)
	var rd core.Ready
	a.Durable.ReadyLog(&rd, false, func() []byte { return []byte("whole-state") }, func() []byte { return []byte("record") })
	return rd
}

// TestIdleTickOnePass: an idle tick of a core that appends to its log
// (orderd) is one pass of the loop: one Ready acted on, not a pass for
// the frames queued before the deadline (none) and another for the tick.
func TestIdleTickOnePass(t *testing.T) {
	const period = 50 * time.Millisecond
	a := &appendingSleeper{sleeper: sleeper{period: period}}
	d, cfg, clk, timer := startCore(t, time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC), a)
	timer.next(t, 0, cfg.TickInterval)
	timer.c <- clk.Advance(cfg.TickInterval)
	a.waitTicks(t, 1, hangGuard)
	timer.next(t, cfg.TickInterval, period)
	if err := d.Do(context.Background(), func(*node.Node) {
		if !d.appends {
			t.Error("the core's first record did not make the loop batch")
		}
	}); err != nil {
		t.Fatal(err)
	}
	before := a.readys.Load()
	const ticks = 10
	for i := range ticks {
		timer.c <- clk.Advance(period)
		a.waitTicks(t, i+2, hangGuard)
		timer.next(t, 0, period)
	}
	if n := a.readys.Load() - before; n != ticks {
		t.Errorf("%d Readys for %d idle ticks, want one each", n, ticks)
	}
}

// TestDueTickInTheSameStep: a call (or a frame) that makes the core's
// deadline due at once, as a grant a frame completed is judged at the
// next reading of the clock, is ticked in the same step: one Ready acted
// on, not the loop's timer armed for now and a second pass, with a second
// write of an appending core's state. The loop's timer is the test's and
// never fires here: without the step's tick the core is not ticked.
func TestDueTickInTheSameStep(t *testing.T) {
	for _, appending := range []bool{false, true} {
		t.Run(fmt.Sprintf("appending=%v", appending), func(t *testing.T) {
			a := &appendingSleeper{sleeper: sleeper{period: time.Hour}}
			var c core.Core = &a.sleeper
			if appending {
				c = a
			}
			d, cfg, clk, timer := startCore(t, time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC), c)
			timer.next(t, 0, cfg.TickInterval)
			timer.c <- clk.Advance(cfg.TickInterval)
			a.waitTicks(t, 1, hangGuard)
			clk.Advance(time.Millisecond)
			before := a.readys.Load()
			if err := d.Do(context.Background(), func(*node.Node) {
				a.mu.Lock()
				a.next = cfg.Clock.Now() // due at once
				a.mu.Unlock()
			}); err != nil {
				t.Fatal(err)
			}
			if n := a.count(); n != 2 {
				t.Fatalf("%d ticks when the Do returned, want 2: the due tick left to the loop's timer", n)
			}
			if d.appends != appending {
				t.Fatalf("appends %v", d.appends)
			}
			if n := a.readys.Load() - before; appending && n != 1 {
				t.Errorf("%d Readys for the Do and its tick, want 1", n)
			}
			// Its next deadline an hour away: no further tick.
			if err := d.Do(context.Background(), func(*node.Node) {}); err != nil {
				t.Fatal(err)
			}
			if n := a.count(); n != 2 {
				t.Fatalf("%d ticks after a Do with nothing due, want 2", n)
			}
		})
	}
}

// TestNoTickAfterTheLoop: once the loop has ended, a locked step (a
// stopping timed closes its truetime page so) does not tick the core,
// even with its deadline due: that Tick's Ready would write to the page
// being unmapped (a fault that kills the process with a slew running)
// and emit events to hooks already stopped.
func TestNoTickAfterTheLoop(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	s := &sleeper{period: time.Hour}
	clk := testenv.NewClock(t0)
	cfg := testConfig(t, transport.NewMemNetwork(), shortDir(t), 1, 1)
	cfg.Clock = clock.NewSim(clock.SimConfig{}, clk.Now)
	d, err := New(cfg, func(core.Env) (core.Core, error) { return s, nil })
	if err != nil {
		t.Fatal(err)
	}
	timer := newFakeTimer()
	d.newTimer = timer.make
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	timer.next(t, 0, cfg.TickInterval)
	timer.c <- clk.Advance(cfg.TickInterval)
	s.waitTicks(t, 1, hangGuard)
	if err := d.Do(context.Background(), func(*node.Node) {
		s.mu.Lock()
		s.next = cfg.Clock.Now().Add(time.Millisecond)
		s.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(hangGuard):
		t.Fatalf("daemon did not stop within %v", hangGuard)
	}
	clk.Advance(5 * time.Millisecond) // the deadline passed since the loop's last tick
	d.locked(func() {})
	if n := s.count(); n != 1 {
		t.Fatalf("%d ticks, want 1: the core was ticked after its loop ended", n)
	}
}
