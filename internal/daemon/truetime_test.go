package daemon

import (
	"bytes"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/truetime"
)

// pageClock is a simulated clock that, at every change, reads the
// truetime page as an application would, recording whether the page was
// mid-write (the read gives up with ErrStale after its 100 ms of spinning).
type pageClock struct {
	*clock.Sim
	r        *truetime.Reader
	midWrite map[string]bool
}

func (c *pageClock) look(kind string) {
	_, err := c.r.Read()
	c.midWrite[kind] = errors.Is(err, truetime.ErrStale) && strings.Contains(err.Error(), "mid-write")
}

func (c *pageClock) Slew(o time.Duration) error { c.look("slew"); return c.Sim.Slew(o) }
func (c *pageClock) Step(o time.Duration) error { c.look("step"); return c.Sim.Step(o) }
func (c *pageClock) SetFrequency(p float64) error {
	c.look("frequency")
	return c.Sim.SetFrequency(p)
}
func (c *pageClock) SetSync(s bool, est, max time.Duration) error {
	c.look("sync")
	return c.Sim.SetSync(s, est, max)
}

// adjuster hands over the adjustments it is given, once.
type adjuster struct{ rd core.Ready }

func (a *adjuster) Step(core.Message) error          { return nil }
func (a *adjuster) StepDatagram(core.Datagram) error { return nil }
func (a *adjuster) Status() any                      { return nil }
func (a *adjuster) Tick(time.Time)                   {}
func (a *adjuster) Ready() core.Ready                { rd := a.rd; a.rd = core.Ready{}; return rd }

// publishing builds a daemon of c with cfg and opens its page, as Run
// does, without running it; closed when the test ends.
func publishing(t *testing.T, cfg Config, c core.Core) *Daemon {
	t.Helper()
	d, err := New(cfg, func(core.Env) (core.Core, error) { return c, nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.state.close() })
	if err := d.openTrueTime(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.tt.Close() })
	return d
}

// TestTrueTimeWrittenAroundAdjustments: the daemon changes the clock
// (slew, step, frequency) only while the page is mid-write, so no reader
// combines the old publication with the changed clock, and publishes
// afresh right after: the core's bound, with the slew the clock still
// has to make. A Ready with only the kernel's sync status changes nothing
// a reader computes with, and does not hold readers up.
func TestTrueTimeWrittenAroundAdjustments(t *testing.T) {
	dir := shortDir(t)
	cfg := testConfig(t, transport.NewMemNetwork(), dir, 1, 1)
	path := filepath.Join(dir, "tt")
	pc := &pageClock{Sim: clock.NewSim(clock.SimConfig{}, time.Now), midWrite: map[string]bool{}}
	cfg.Clock = pc
	// The core counts on the slew the clock has left, or on none at all
	// (a slew it decided earlier than the clock began it).
	counted := true
	cfg.TrueTime = &TrueTime{Path: path, Bound: func(_ core.Core, now time.Time) (TrueTimeBound, bool) {
		b := TrueTimeBound{Earliest: now.Add(-time.Millisecond), Latest: now.Add(2 * time.Millisecond), GrowthPPM: 20}
		if st, _ := pc.Sim.State(); counted {
			b.Pending = st.SlewLeft
		}
		return b, true
	}}
	a := &adjuster{}
	d := publishing(t, cfg, a)
	var err error
	if pc.r, err = truetime.Open(path); err != nil {
		t.Fatal(err)
	}
	defer pc.r.Close()

	a.rd.Adjustments = []clock.Adjustment{{Kind: clock.AdjustSync, Synced: true}}
	d.process()
	if pc.midWrite["sync"] {
		t.Errorf("a sync-only Ready held readers up")
	}
	a.rd.Adjustments = []clock.Adjustment{
		{Kind: clock.AdjustFrequency, PPM: 3}, {Kind: clock.AdjustStep, Offset: time.Millisecond},
		{Kind: clock.AdjustSlew, Offset: 40 * time.Millisecond}, {Kind: clock.AdjustSync, Synced: true},
	}
	before := d.tt.Published()
	d.process()
	for _, k := range []string{"frequency", "step", "slew", "sync"} {
		if !pc.midWrite[k] {
			t.Errorf("the clock's %s was changed outside a write of the page", k)
		}
	}
	if d.tt.Published() != before+1 {
		t.Errorf("%d publications with the adjustments, want 1", d.tt.Published()-before)
	}
	rd, err := pc.r.Read()
	if err != nil {
		t.Fatal(err)
	}
	// 3 ms of bound, 40 ms still to slew forward less what the clock
	// absorbed since (the sync's look spun 100 ms: 8.3 ms at 83,333 ppm),
	// a little for the age.
	width := rd.Latest.Sub(rd.Earliest)
	if width < 25*time.Millisecond || width > 44*time.Millisecond {
		t.Errorf("published width %v, want the 3 ms bound and the 40 ms slew left", width)
	}
	if rd.Flags != truetime.FlagSynchronised|truetime.FlagSimulated {
		t.Errorf("flags %b", rd.Flags)
	}
	// The core counts on no slew left: the clock has 30 ms more to make
	// than the bound's centre assumes; the page is widened by that, on
	// the slew's side (latest: the clock still to move forward means the
	// true time may be that much later).
	counted = false
	d.locked(d.publishTrueTime)
	rd2, err := pc.r.Read()
	if err != nil {
		t.Fatal(err)
	}
	left := rd2.Latest.Sub(rd2.Now) - rd.Latest.Sub(rd.Now)
	if left < 25*time.Millisecond || left > 32*time.Millisecond || d.ttMiss < 25*time.Millisecond {
		t.Errorf("latest moved %v further with a slew not counted (miss %v), want the slew left, 25-32 ms", left, d.ttMiss)
	}
	st := d.trueTimeStatus()
	if st == nil || st.Path != path || !st.Bound || st.Publications != d.tt.Published() {
		t.Errorf("status %+v", st)
	}
}

// noBound checks that the page at path holds no bound, as a reader sees
// it.
func noBound(t *testing.T, path, what string) {
	t.Helper()
	r, err := truetime.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, _, err := r.Now(); !errors.Is(err, truetime.ErrUnsynchronised) {
		t.Errorf("%s: %v, want ErrUnsynchronised", what, err)
	}
}

// TestTrueTimeNoBound: a core with no bound publishes a page that says
// so; readers get ErrUnsynchronised.
func TestTrueTimeNoBound(t *testing.T) {
	dir := shortDir(t)
	cfg := testConfig(t, transport.NewMemNetwork(), dir, 1, 1)
	path := filepath.Join(dir, "tt")
	cfg.TrueTime = &TrueTime{Path: path, Bound: func(core.Core, time.Time) (TrueTimeBound, bool) { return TrueTimeBound{}, false }}
	publishing(t, cfg, &adjuster{})
	noBound(t, path, "a core without a bound")
	cfg.TrueTime.StaleAfter = time.Second
	if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), "shorter than two publications") {
		t.Errorf("a 1 s stale limit: %v", err)
	}
}

// stateless is a clock whose state cannot be read.
type stateless struct{ *clock.Sim }

func (stateless) State() (clock.State, error) {
	return clock.State{}, errors.New("adjtimex: bad file descriptor")
}

// TestTrueTimeClockStateFails: without the slew the clock has left the
// page holds no bound (readers get ErrUnsynchronised), and the log says
// why, at WARN.
func TestTrueTimeClockStateFails(t *testing.T) {
	dir := shortDir(t)
	cfg := testConfig(t, transport.NewMemNetwork(), dir, 1, 1)
	var log bytes.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	cfg.Clock = stateless{clock.NewSim(clock.SimConfig{}, time.Now)}
	path := filepath.Join(dir, "tt")
	cfg.TrueTime = &TrueTime{Path: path, Bound: func(_ core.Core, now time.Time) (TrueTimeBound, bool) {
		return TrueTimeBound{Earliest: now.Add(-time.Millisecond), Latest: now.Add(time.Millisecond)}, true
	}}
	publishing(t, cfg, &adjuster{})
	noBound(t, path, "the clock's state unknown")
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "bad file descriptor") {
		t.Errorf("log:\n%s", log.String())
	}
}
