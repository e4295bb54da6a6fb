package servo

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/clock"
)

// loop is a closed loop: a simulated clock under virtual time, measured with
// bounded noise and disciplined by a Servo.
type loop struct {
	t      *testing.T
	vt     time.Time // true (virtual) time
	sim    *clock.Sim
	servo  *Servo
	rng    *rand.Rand
	lambda time.Duration // root distance of every measurement
	noise  time.Duration // |measurement error| <= noise <= lambda

	lastRead time.Time
}

func newLoop(t *testing.T, seed uint64, sc clock.SimConfig, cfg Config, lambda, noise time.Duration) *loop {
	t.Helper()
	l := &loop{
		t:      t,
		vt:     time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC),
		rng:    rand.New(rand.NewPCG(seed, seed^0x5eed)),
		lambda: lambda,
		noise:  noise,
	}
	l.sim = clock.NewSim(sc, func() time.Time { return l.vt })
	cfg.MaxSlewPPM = l.sim.Config().MaxSlewPPM
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l.servo = s
	return l
}

// advance moves true time by d in one-second steps, checking at each step
// that the clock never goes backwards and that the truth stays inside the
// servo's bound.
func (l *loop) advance(d time.Duration) {
	l.t.Helper()
	for d > 0 {
		st := min(d, time.Second)
		l.vt = l.vt.Add(st)
		d -= st
		l.check()
	}
}

func (l *loop) check() {
	l.t.Helper()
	now := l.sim.Now()
	if !l.lastRead.IsZero() && now.Before(l.lastRead) {
		l.t.Fatalf("clock went backwards: %v after %v", now, l.lastRead)
	}
	l.lastRead = now
	if !l.servo.Synchronized() {
		return
	}
	lo, hi := l.servo.Bound(now)
	if l.vt.Before(lo) || l.vt.After(hi) {
		l.t.Fatalf("true time outside the bound at %v: true offset %v, bound [%v, %v] around the reading; servo %+v",
			l.vt, l.sim.TrueOffset(), lo.Sub(now), hi.Sub(now), l.servo.last)
	}
}

// measure takes one measurement now and feeds it to the servo.
func (l *loop) measure() Result {
	l.t.Helper()
	now := l.sim.Now()
	errNs := (l.rng.Float64()*2 - 1) * float64(l.noise)
	m := Measurement{
		Time:         now,
		Offset:       -l.sim.TrueOffset() + time.Duration(errNs) - l.servo.Pending(now),
		RootDistance: l.lambda,
		Jitter:       l.noise / 2,
	}
	res, err := l.servo.Update(now, m)
	if err != nil {
		l.t.Fatal(err)
	}
	for _, a := range res.Adjustments {
		if a.Kind == clock.AdjustStep && a.Offset < 0 {
			l.t.Fatalf("servo asked for a backward step of %v", a.Offset)
		}
		if err := clock.Apply(l.sim, a); err != nil {
			l.t.Fatalf("apply %v: %v", a.Kind, err)
		}
	}
	l.check()
	return res
}

func TestClosedLoopConverges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		offset time.Duration
		drift  float64
	}{
		{"ahead-fast", 100 * time.Millisecond, 50},
		{"ahead-slow", 100 * time.Millisecond, -50},
		{"behind-fast", -100 * time.Millisecond, 50},
		{"behind-slow", -100 * time.Millisecond, -50},
		{"exact", 0, 0},
	} {
		for seed := uint64(1); seed <= 5; seed++ {
			l := newLoop(t, seed, clock.SimConfig{Offset: tc.offset, DriftPPM: tc.drift}, Config{},
				100*time.Microsecond, 20*time.Microsecond)
			// A burst of 4 two seconds apart, then 16 s polls for 10 min.
			for range 4 {
				l.measure()
				l.advance(2 * time.Second)
			}
			var worst time.Duration
			for i := range 40 {
				l.measure()
				l.advance(16 * time.Second)
				if i >= 20 {
					worst = max(worst, abs(l.sim.TrueOffset()))
				}
			}
			t.Logf("%s seed %d: worst %v freq %.3f resid %.3f", tc.name, seed, worst, l.servo.Frequency(), l.sim.TrueFrequency())
			if worst > 100*time.Microsecond {
				t.Errorf("%s seed %d: |error| after convergence up to %v, want < 100µs", tc.name, seed, worst)
			}
			if f := l.servo.Frequency(); math.Abs(f+tc.drift) > 3 {
				t.Errorf("%s seed %d: frequency %.3f ppm, want %.1f ± 3", tc.name, seed, f, -tc.drift)
			}
			if f := l.sim.TrueFrequency(); math.Abs(f) > 3 {
				t.Errorf("%s seed %d: residual true frequency %.3f ppm", tc.name, seed, f)
			}
		}
	}
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// TestBoundHoldsAtWorstCaseNoise drives the loop with measurement errors
// as large as the root distance allows (±λ, often exactly at the edge):
// the bound must still contain the truth at every second. This is what
// the worst-case (not statistical) frequency error buys.
func TestBoundHoldsAtWorstCaseNoise(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		drift := (rng.Float64()*2 - 1) * 100
		off := time.Duration((rng.Float64()*2 - 1) * float64(200*time.Millisecond))
		l := newLoop(t, seed, clock.SimConfig{Offset: off, DriftPPM: drift}, Config{FrequencyWindow: 4 + rng.IntN(20)},
			time.Duration(10+rng.IntN(500))*time.Microsecond, 0)
		l.noise = l.lambda
		t.Logf("seed %d: offset %v drift %.1f λ %v window %d", seed, off, drift, l.lambda, l.servo.Config().FrequencyWindow)
		for i := range 60 {
			if rng.IntN(3) == 0 {
				l.noise = l.lambda // the edge: ±λ exactly
				l.rng = rand.New(rand.NewPCG(seed, uint64(i)))
			}
			l.measure()
			l.advance(time.Duration(1+rng.IntN(64)) * time.Second)
		}
	}
}

func TestTrimNonlinear(t *testing.T) {
	var line, bent []point
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 16 {
		x := float64(i * 16)
		line = append(line, point{x: x, y: 1000 + 50*x + rng.NormFloat64()*10, lambda: 20})
		// The frequency changed halfway: a kink.
		y := 1000 + 50*x
		if i >= 8 {
			y += 3 * (x - 128)
		}
		bent = append(bent, point{x: x, y: y, lambda: 20})
	}
	if got := trimNonlinear(append([]point(nil), line...)); len(got) != 16 {
		t.Errorf("a noisy line was trimmed to %d points", len(got))
	}
	got := trimNonlinear(append([]point(nil), bent...))
	if len(got) > 8 || got[0].x < 128 {
		t.Errorf("a kinked series kept %d points from x=%v", len(got), got[0].x)
	}
}

// TestRegressionSmoothsPhase: with noisy measurements the phase comes from
// the regression line, so the clock follows the line and not each sample's
// noise. Taking every measurement at face value leaves the clock about as
// far off as the noise: mean |error| near noise/2 for uniform noise (about
// 110 µs here, measured with the smoothing turned off); the line halves it.
func TestRegressionSmoothsPhase(t *testing.T) {
	const noise = 200 * time.Microsecond
	var sum time.Duration
	var n int
	for seed := uint64(1); seed <= 5; seed++ {
		l := newLoop(t, seed, clock.SimConfig{Offset: 30 * time.Millisecond, DriftPPM: 20}, Config{},
			2*noise, noise)
		for range 4 {
			l.measure()
			l.advance(2 * time.Second)
		}
		for i := range 80 {
			l.measure()
			l.advance(16 * time.Second)
			if i >= 30 {
				sum += abs(l.sim.TrueOffset())
				n++
			}
		}
		st := l.servo.State()
		t.Logf("seed %d: %d of %d updates smoothed", seed, st.Smoothed, st.Updates)
		if st.Smoothed < st.Updates/2 {
			t.Errorf("seed %d: only %d of %d updates took the regression's phase", seed, st.Smoothed, st.Updates)
		}
	}
	mean := sum / time.Duration(n)
	t.Logf("mean |error| %v with ±%v noise", mean, noise)
	if mean > noise*2/5 {
		t.Errorf("mean |error| %v with ±%v noise, want < %v", mean, noise, noise*2/5)
	}
}
