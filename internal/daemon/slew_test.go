package daemon

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/servo"
)

// slewer decides at every tick, like a servo, to absorb what is left of
// the clock's slew plus extra more, from the tick's reading on.
type slewer struct {
	clk   clock.Clock
	extra time.Duration
	rd    core.Ready
}

func (s *slewer) Step(core.Message) error          { return nil }
func (s *slewer) StepDatagram(core.Datagram) error { return nil }
func (s *slewer) Status() any                      { return nil }
func (s *slewer) Ready() core.Ready                { rd := s.rd; s.rd = core.Ready{}; return rd }
func (s *slewer) Tick(time.Time) {
	st, _ := s.clk.State()
	s.rd.Adjustments = append(s.rd.Adjustments, clock.Adjustment{Kind: clock.AdjustSlew, Offset: st.SlewLeft + s.extra})
}

// TestSlewAppliedLateEndsWherePlanned: a slew decided at a tick and applied
// 5 ms later (a busy host: the loop did not run meanwhile) replaces the
// slew in progress, which went on absorbing for those 5 ms (416 us at
// 83,333 ppm); the daemon takes that off, so the clock ends exactly where
// the core planned from the tick's reading, not 416 us further.
func TestSlewAppliedLateEndsWherePlanned(t *testing.T) {
	real := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	sim := clock.NewSim(clock.SimConfig{}, func() time.Time { return real })
	cfg := testConfig(t, transport.NewMemNetwork(), shortDir(t), 1, 1)
	cfg.Clock = sim
	s := &slewer{clk: sim, extra: 100 * time.Microsecond}
	d, err := New(cfg, func(core.Env) (core.Core, error) { return s, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer d.state.close()
	if err := sim.Slew(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	before := sim.TrueOffset()
	d.tick() // plans 1 ms + 100 us from here
	real = real.Add(5 * time.Millisecond)
	d.process() // applied 5 ms late
	real = real.Add(time.Second)
	if st, _ := sim.State(); st.SlewLeft != 0 {
		t.Fatalf("slew not over: %v left", st.SlewLeft)
	}
	if moved := sim.TrueOffset() - before; moved != 1100*time.Microsecond {
		t.Errorf("the clock moved %v, want the 1.1 ms planned at the tick (not 416 us more)", moved)
	}
}

// servoCore disciplines its clock with a servo, measuring it exactly: at
// every tick it asks for an update (the measurement's root distance 10
// us), and it learns when the clock took the slew (core.Adjuster).
type servoCore struct {
	clk   *clock.Sim
	servo *servo.Servo
	rd    core.Ready
	ats   []time.Time
}

func (s *servoCore) Step(core.Message) error          { return nil }
func (s *servoCore) StepDatagram(core.Datagram) error { return nil }
func (s *servoCore) Status() any                      { return nil }
func (s *servoCore) Ready() core.Ready                { rd := s.rd; s.rd = core.Ready{}; return rd }
func (s *servoCore) Adjusted(at time.Time)            { s.ats = append(s.ats, at); s.servo.Applied(at) }
func (s *servoCore) Tick(now time.Time) {
	res, err := s.servo.Update(now, servo.Measurement{Time: now, Offset: -s.clk.TrueOffset() - s.servo.Pending(now), RootDistance: 10 * time.Microsecond})
	if err == nil {
		s.rd.Adjustments = append(s.rd.Adjustments, res.Adjustments...)
	}
}

// TestSlewAppliedLateBoundHolds: a servo decides a 30 ms slew from rest at
// a tick and the daemon applies it 5 ms later (a busy host). The daemon
// tells the core when the clock took it, so the servo counts the slew from
// then: its pending slew is the clock's (counted from the tick, it would
// be 416 us short), its bound holds the true time while the slew runs,
// and the truetime page, published with the adjustment, needs no widening
// for a slew the core miscounted (slew_miss 0).
func TestSlewAppliedLateBoundHolds(t *testing.T) {
	real := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	sim := clock.NewSim(clock.SimConfig{Offset: -30 * time.Millisecond}, func() time.Time { return real })
	dir := shortDir(t)
	cfg := testConfig(t, transport.NewMemNetwork(), dir, 1, 1)
	cfg.Clock = sim
	sv, err := servo.New(servo.Config{MaxSlewPPM: sim.Config().MaxSlewPPM})
	if err != nil {
		t.Fatal(err)
	}
	s := &servoCore{clk: sim, servo: sv}
	cfg.TrueTime = &TrueTime{Path: filepath.Join(dir, "tt"), Bound: func(_ core.Core, now time.Time) (TrueTimeBound, bool) {
		lo, hi := sv.Bound(now)
		return TrueTimeBound{Earliest: lo, Latest: hi, GrowthPPM: sv.GrowthPPM(), Pending: sv.Pending(now)}, sv.Synchronized()
	}}
	d := publishing(t, cfg, s)
	d.tick() // decides the slew at this reading
	decided := sim.Now()
	real = real.Add(5 * time.Millisecond)
	d.process() // the clock takes it 5 ms later
	if len(s.ats) != 1 || s.ats[0].Sub(decided) < 5*time.Millisecond {
		t.Fatalf("Adjusted %v, want once, at the clock's reading 5 ms after the decision at %v", s.ats, decided)
	}
	for range 400 { // the slew runs 360 ms
		real = real.Add(time.Millisecond)
		now := sim.Now()
		st, _ := sim.State()
		if miss := (st.SlewLeft - sv.Pending(now)).Abs(); miss > time.Microsecond {
			t.Fatalf("at %v: the clock has %v left to slew, the servo counts on %v", real, st.SlewLeft, sv.Pending(now))
		}
		if lo, hi := sv.Bound(now); real.Before(lo) || real.After(hi) {
			t.Fatalf("at %v: true time outside the bound [%v, %v] around the reading (true offset %v)", real, lo.Sub(now), hi.Sub(now), sim.TrueOffset())
		}
	}
	if d.ttMiss > time.Microsecond {
		t.Errorf("the page was widened by %v for a slew the core miscounted", d.ttMiss)
	}
}
