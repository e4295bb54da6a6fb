package servo

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/clock"
)

// measureLate is measure on a busy host: the adjustments are applied late
// after the decision (true time), the slew less what the clock absorbed
// meanwhile (as the daemon's slewPlan does), and the servo is told when
// the clock took them (Applied), as the daemon does through core.Adjuster.
func (l *loop) measureLate(late time.Duration) {
	l.t.Helper()
	now := l.sim.Now()
	st0, _ := l.sim.State()
	res, err := l.servo.Update(now, Measurement{Time: now, Offset: -l.sim.TrueOffset() - l.servo.Pending(now), RootDistance: l.lambda})
	if err != nil {
		l.t.Fatal(err)
	}
	l.vt = l.vt.Add(late) // nobody reads the servo meanwhile: the loop is busy
	st1, _ := l.sim.State()
	for _, a := range res.Adjustments {
		if a.Kind == clock.AdjustSlew {
			a.Offset -= st0.SlewLeft - st1.SlewLeft
		}
		if err := clock.Apply(l.sim, a); err != nil {
			l.t.Fatal(err)
		}
	}
	l.servo.Applied(l.sim.Now())
}

// TestSlewAppliedLate: a slew the clock begins 5 ms after the update that
// decided it (a busy host) leaves the clock 416 us short of where a servo
// counting it from the decision puts it, for as long as the slew runs.
// Told when the clock took it, the servo's pending slew is the clock's to
// within 2 us, and the truth stays inside its 20 us bound
// at every millisecond: from rest (the first, 40 ms slew), over a slew
// still running (the clock absorbed part of it meanwhile), and again from
// rest (the oscillator's 50 ppm, 10 s later).
func TestSlewAppliedLate(t *testing.T) {
	const late = 5 * time.Millisecond
	l := newLoop(t, 1, clock.SimConfig{Offset: -40 * time.Millisecond, DriftPPM: 50}, Config{}, 20*time.Microsecond, 0)
	worst := time.Duration(0)
	follow := func(d time.Duration) {
		t.Helper()
		for end := l.vt.Add(d); l.vt.Before(end); {
			l.vt = l.vt.Add(time.Millisecond)
			l.check()
			now := l.sim.Now()
			st, _ := l.sim.State()
			miss := (st.SlewLeft - l.servo.Pending(now)).Abs()
			worst = max(worst, miss)
			// The servo's model of the slew leaves the oscillator's
			// drift and the frequency correction out of the rate
			// (tens of ppm of what it absorbs: 0.8 us of the 40 ms):
			// 2 us of tolerance, against the 416 us of a slew counted
			// 5 ms early.
			if miss > 2*time.Microsecond {
				t.Fatalf("at %v: the clock has %v left to slew, the servo counts on %v", now, st.SlewLeft, l.servo.Pending(now))
			}
		}
	}
	l.measureLate(late) // from rest: 40 ms
	follow(200 * time.Millisecond)
	l.measureLate(late) // amid it: the clock absorbed 5 ms of it meanwhile
	follow(2 * time.Second)
	if st, _ := l.sim.State(); st.SlewLeft != 0 {
		t.Fatalf("slew not over: %v", st.SlewLeft)
	}
	follow(8 * time.Second) // at rest, drifting 50 ppm: 400 us more off
	l.measureLate(late)
	follow(time.Second)
	t.Logf("largest difference between the clock's slew left and the servo's: %v", worst)
}
