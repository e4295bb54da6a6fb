package servo

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/timesync/ntp"
)

// TestPipelineWithFilter runs the whole client chain against a perfect
// server over a path with random, asymmetric delays: exchange -> MakeSample
// -> Filter (with Shift after every correction) -> Servo -> simulated
// clock, with the Poller choosing the intervals. The filter sometimes picks
// an older sample, which exercises the Correction/Shift contract: the error
// must stay inside the servo's bound at every second, the clock must never
// go backwards, and it must converge.
func TestPipelineWithFilter(t *testing.T) {
	for _, tc := range []struct {
		offset time.Duration
		drift  float64
		wander float64
		step   time.Duration
	}{
		{100 * time.Millisecond, 50, 0, 0},
		{-100 * time.Millisecond, -50, 0, 0},
		{-100 * time.Millisecond, 30, 0, 10 * time.Millisecond}, // behind: one forward step
		{20 * time.Millisecond, -20, 0.01, 0},                   // wandering oscillator
		{1500 * time.Millisecond, 10, 0, 0},                     // an 18 s slew across the burst
	} {
		for seed := uint64(1); seed <= 4; seed++ {
			runPipeline(t, seed, tc.offset, tc.drift, tc.wander, tc.step)
		}
	}
}

func runPipeline(t *testing.T, seed uint64, offset time.Duration, drift, wander float64, step time.Duration) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	vt := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	sim := clock.NewSim(clock.SimConfig{Offset: offset, DriftPPM: drift, WanderPPM: wander, Seed: int64(seed)},
		func() time.Time { return vt })
	s := mustNew(t, Config{MaxSlewPPM: sim.Config().MaxSlewPPM, StepThreshold: step})
	f := ntp.NewFilter(time.Microsecond)
	p, err := ntp.NewPoller(ntp.PollConfig{MinPoll: 2, MaxPoll: 6})
	if err != nil {
		t.Fatal(err)
	}
	oneWay := func() time.Duration {
		return 50*time.Microsecond + time.Duration(rng.ExpFloat64()*float64(30*time.Microsecond))
	}
	var lastRead time.Time
	steps := 0
	check := func() {
		now := sim.Now()
		if now.Before(lastRead) {
			t.Fatalf("seed %d: clock went backwards", seed)
		}
		lastRead = now
		if !s.Synchronized() {
			return
		}
		if lo, hi := s.Bound(now); vt.Before(lo) || vt.After(hi) {
			t.Fatalf("seed %d offset %v drift %v: truth outside the bound at +%v: error %v, bound [%v, %v]",
				seed, offset, drift, vt.Sub(time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)),
				sim.TrueOffset(), lo.Sub(now), hi.Sub(now))
		}
	}
	end := vt.Add(40 * time.Minute)
	var worst time.Duration
	for vt.Before(end) {
		// One exchange with a perfect server (its clock is true time).
		t1 := sim.Now()
		vt = vt.Add(oneWay())
		t2 := vt
		t3 := vt.Add(10 * time.Microsecond)
		vt = t3.Add(oneWay())
		t4 := sim.Now()
		p.Received()
		smp := ntp.MakeSample(t1, t2, t3, t4, time.Microsecond, time.Microsecond)
		smp.Offset -= s.Pending(smp.Time)
		if f.Add(smp, ntp.PollInterval(p.Poll())) == ntp.FilterUpdated {
			est, _ := f.Estimate()
			m := Measurement{
				Time:         est.Time,
				Offset:       est.Offset,
				RootDistance: ntp.RootDistance(0, 0, est, t4),
				Jitter:       est.Jitter,
			}
			res, err := s.Update(t4, m)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range res.Adjustments {
				if a.Kind == clock.AdjustStep {
					steps++
				}
				if err := clock.Apply(sim, a); err != nil {
					t.Fatalf("apply %v: %v", a.Kind, err)
				}
			}
			f.Shift(res.Correction)
			p.Update(res.Offset, est.Jitter)
		}
		check()
		wait := p.Sent()
		for wait > 0 {
			d := min(wait, time.Second)
			vt = vt.Add(d)
			wait -= d
			check()
		}
		if end.Sub(vt) < 15*time.Minute {
			e := sim.TrueOffset()
			worst = max(worst, max(e, -e))
		}
	}
	// A wandering oscillator (0.01 ppm/√s: about 0.5 ppm over the run)
	// is followed with a lag of the regression window at 64 s polls.
	limit := 100 * time.Microsecond
	if wander > 0 {
		limit = 300 * time.Microsecond
	}
	if worst > limit {
		t.Errorf("seed %d offset %v drift %v: |error| up to %v in the last 15 min, want < %v", seed, offset, drift, worst, limit)
	}
	if wander == 0 && math.Abs(s.Frequency()+drift) > 3 {
		t.Errorf("seed %d: frequency %.3f, want %.1f ± 3 ppm", seed, s.Frequency(), -drift)
	}
	if wantSteps := map[bool]int{true: 1, false: 0}[step > 0 && offset < 0]; steps != wantSteps {
		t.Errorf("seed %d: %d steps, want %d", seed, steps, wantSteps)
	}
	t.Logf("seed %d offset %v drift %v: worst %v freq %.3f poll %d", seed, offset, drift, worst, s.Frequency(), p.Poll())
}
