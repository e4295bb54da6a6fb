package clock

import (
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// vclock is a virtual true-time source.
type vclock struct {
	mu sync.Mutex
	t  time.Time
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newVclock() *vclock { return &vclock{t: epoch} }

func (v *vclock) now() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.t
}

func (v *vclock) advance(d time.Duration) {
	v.mu.Lock()
	v.t = v.t.Add(d)
	v.mu.Unlock()
}

func (v *vclock) set(t time.Time) {
	v.mu.Lock()
	v.t = t
	v.mu.Unlock()
}

func mustSim(t *testing.T, cfg SimConfig) (*Sim, *vclock) {
	t.Helper()
	vc := newVclock()
	return NewSim(cfg, vc.now), vc
}

// slewDuration is the exact slew length the Sim must use: the first whole
// nanosecond at which rate has covered offset.
func slewDuration(offset time.Duration, ratePPM float64) time.Duration {
	return time.Duration(math.Ceil(math.Abs(float64(offset)) * 1e6 / ratePPM))
}

func TestSimInitialOffset(t *testing.T) {
	s, vc := mustSim(t, SimConfig{Offset: -1500 * time.Millisecond})
	if got := s.TrueOffset(); got != -1500*time.Millisecond {
		t.Fatalf("TrueOffset = %v, want -1.5s", got)
	}
	if got, want := s.Now(), vc.now().Add(-1500*time.Millisecond); !got.Equal(want) {
		t.Fatalf("Now = %v, want %v", got, want)
	}
}

func TestSimDriftAccumulatesExactly(t *testing.T) {
	s, vc := mustSim(t, SimConfig{Offset: time.Millisecond, DriftPPM: 50})
	for _, tc := range []struct {
		at   time.Duration // since creation
		want time.Duration
	}{
		{0, time.Millisecond},
		{time.Second, time.Millisecond + 50*time.Microsecond},
		{123456789 * time.Nanosecond, time.Millisecond + 6173*time.Nanosecond}, // 6172.83945 ns
		{1000 * time.Second, time.Millisecond + 50*time.Millisecond},
		{24 * time.Hour, time.Millisecond + 4320*time.Millisecond},
	} {
		vc.set(epoch.Add(tc.at))
		if got := s.TrueOffset(); got != tc.want {
			t.Errorf("after %v: TrueOffset = %v, want %v", tc.at, got, tc.want)
		}
		if got, want := s.Now(), epoch.Add(tc.at+tc.want); !got.Equal(want) {
			t.Errorf("after %v: Now = %v, want %v", tc.at, got, want)
		}
	}
}

func TestSimSlewAbsorbsExactlyAtMaxRate(t *testing.T) {
	for _, offset := range []time.Duration{time.Millisecond, -time.Millisecond, 3*time.Second + 7, -1} {
		s, vc := mustSim(t, SimConfig{})
		if err := s.Slew(offset); err != nil {
			t.Fatal(err)
		}
		d := slewDuration(offset, DefaultMaxSlewPPM)
		// Half way: the rate is the max slew rate.
		vc.advance(d / 2)
		want := time.Duration(math.Round(math.Copysign(DefaultMaxSlewPPM, float64(offset)) * float64(d/2) * 1e-6))
		if got := s.TrueOffset(); got != want {
			t.Errorf("slew %v: at half time offset = %v, want %v", offset, got, want)
		}
		st, _ := s.State()
		if st.SlewLeft != offset-want {
			t.Errorf("slew %v: SlewLeft = %v, want %v", offset, st.SlewLeft, offset-want)
		}
		// At the analytically computed end, exactly there.
		vc.set(epoch.Add(d))
		if got := s.TrueOffset(); got != offset {
			t.Errorf("slew %v: at end (%v) offset = %v", offset, d, got)
		}
		vc.advance(time.Hour) // and then it stops
		if got := s.TrueOffset(); got != offset {
			t.Errorf("slew %v: an hour later offset = %v", offset, got)
		}
		if st, _ := s.State(); st.SlewLeft != 0 {
			t.Errorf("slew %v: SlewLeft after the end = %v", offset, st.SlewLeft)
		}
	}
}

func TestSimSlewDurationMatchesRate(t *testing.T) {
	// 10 ms at 1000 ppm takes exactly 10 s: not a ns less.
	s, vc := mustSim(t, SimConfig{MaxSlewPPM: 1000, DriftPPM: 20})
	if err := s.Slew(10 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	vc.advance(10*time.Second - time.Microsecond)
	st, _ := s.State()
	if st.SlewLeft != time.Nanosecond { // 1 µs at 1000 ppm
		t.Fatalf("1 µs before the end SlewLeft = %v, want 1ns", st.SlewLeft)
	}
	vc.advance(time.Microsecond)
	st, _ = s.State()
	if st.SlewLeft != 0 {
		t.Fatalf("at the end SlewLeft = %v", st.SlewLeft)
	}
	// Drift ran all along, on top of the slew.
	vc.advance(10 * time.Second)
	if got, want := s.TrueOffset(), 10*time.Millisecond+400*time.Microsecond; got != want {
		t.Fatalf("offset = %v, want %v", got, want)
	}
}

func TestSimSlewReplacedMidway(t *testing.T) {
	s, vc := mustSim(t, SimConfig{MaxSlewPPM: 1000})
	if err := s.Slew(10 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	vc.advance(4 * time.Second) // 4 ms absorbed, 6 ms dropped
	if got := s.TrueOffset(); got != 4*time.Millisecond {
		t.Fatalf("after 4 s offset = %v", got)
	}
	if err := s.Slew(-time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.State(); st.SlewLeft != -time.Millisecond {
		t.Fatalf("SlewLeft = %v, want -1ms", st.SlewLeft)
	}
	vc.advance(500 * time.Millisecond)
	if got := s.TrueOffset(); got != 3500*time.Microsecond {
		t.Fatalf("half way back offset = %v", got)
	}
	vc.advance(time.Minute)
	if got := s.TrueOffset(); got != 3*time.Millisecond {
		t.Fatalf("final offset = %v, want 3ms", got)
	}
	// Slew(0) cancels.
	if err := s.Slew(time.Second); err != nil {
		t.Fatal(err)
	}
	vc.advance(time.Second)
	if err := s.Slew(0); err != nil {
		t.Fatal(err)
	}
	vc.advance(time.Hour)
	if got := s.TrueOffset(); got != 4*time.Millisecond {
		t.Fatalf("after cancel offset = %v, want 4ms", got)
	}
}

func TestSimStep(t *testing.T) {
	s, vc := mustSim(t, SimConfig{})
	if err := s.Step(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := s.TrueOffset(); got != 2*time.Second {
		t.Fatalf("offset = %v", got)
	}
	before := s.Now()
	if err := s.Step(-time.Second); !errors.Is(err, ErrBackwardStep) {
		t.Fatalf("backward step: err = %v, want ErrBackwardStep", err)
	}
	if got := s.Now(); !got.Equal(before) {
		t.Fatalf("a refused step moved the clock: %v -> %v", before, got)
	}
	vc.advance(time.Second)
	if err := s.Step(0); err != nil {
		t.Fatal(err)
	}

	b, _ := mustSim(t, SimConfig{AllowBackwardStep: true})
	if err := b.Step(-time.Second); err != nil {
		t.Fatalf("allowed backward step: %v", err)
	}
	if got := b.TrueOffset(); got != -time.Second {
		t.Fatalf("offset = %v", got)
	}
}

func TestSimFrequencyCancelsDrift(t *testing.T) {
	s, vc := mustSim(t, SimConfig{Offset: 5 * time.Millisecond, DriftPPM: 37.5})
	vc.advance(10 * time.Second)
	if err := s.SetFrequency(-37.5); err != nil {
		t.Fatal(err)
	}
	at := s.TrueOffset() // 5 ms + 375 µs
	if at != 5375*time.Microsecond {
		t.Fatalf("offset = %v", at)
	}
	for range 100 {
		vc.advance(1000 * time.Second)
		if got := s.TrueOffset(); got != at {
			t.Fatalf("offset moved to %v under a cancelling correction", got)
		}
	}
	if f := s.TrueFrequency(); f != 0 {
		t.Fatalf("TrueFrequency = %v", f)
	}
	if st, _ := s.State(); st.Frequency != -37.5 {
		t.Fatalf("State.Frequency = %v", st.Frequency)
	}
}

// TestSimChangeDrift: a change of the oscillator's frequency takes effect
// from the instant it is made, and the correction in force stays.
func TestSimChangeDrift(t *testing.T) {
	s, vc := mustSim(t, SimConfig{DriftPPM: 10})
	if err := s.SetFrequency(-10); err != nil {
		t.Fatal(err)
	}
	vc.advance(10 * time.Second)
	s.ChangeDrift(2)
	if f := s.TrueFrequency(); f != 2 {
		t.Fatalf("TrueFrequency = %v after a 2 ppm step", f)
	}
	vc.advance(10 * time.Second)
	if got := s.TrueOffset(); got != 20*time.Microsecond {
		t.Fatalf("offset = %v 10 s after a 2 ppm step, want 20us", got)
	}
	if st, _ := s.State(); st.Frequency != -10 {
		t.Fatalf("State.Frequency = %v", st.Frequency)
	}
}

func TestSimFrequencyRange(t *testing.T) {
	s, _ := mustSim(t, SimConfig{})
	for _, ppm := range []float64{500.0001, -501, math.NaN(), math.Inf(1)} {
		if err := s.SetFrequency(ppm); !errors.Is(err, ErrFrequencyRange) {
			t.Errorf("SetFrequency(%v) = %v, want ErrFrequencyRange", ppm, err)
		}
	}
	if err := s.SetFrequency(-500); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.State(); st.Frequency != -500 {
		t.Fatalf("Frequency = %v", st.Frequency)
	}
	if err := s.SetFrequency(600); err == nil {
		t.Fatal("600 ppm accepted")
	}
	if st, _ := s.State(); st.Frequency != -500 {
		t.Fatalf("a refused SetFrequency changed the frequency to %v", st.Frequency)
	}
}

func TestSimWanderDeterministicAndReadIndependent(t *testing.T) {
	cfg := SimConfig{DriftPPM: 3, WanderPPM: 0.5, Seed: 42}
	a, va := mustSim(t, cfg)
	b, vb := mustSim(t, cfg)
	c, vc := mustSim(t, SimConfig{DriftPPM: 3, WanderPPM: 0.5, Seed: 43})
	// a is read every 7 ms, b once per 100 s, c as often as a.
	total := 300 * time.Second
	for el := time.Duration(0); el < total; el += 7 * time.Millisecond {
		va.advance(7 * time.Millisecond)
		vc.advance(7 * time.Millisecond)
		a.Now()
		c.Now()
	}
	final := va.now()
	vc.set(final)
	for vb.now().Before(final) {
		vb.advance(min(100*time.Second, final.Sub(vb.now())))
		b.Now()
	}
	if ga, gb := a.TrueOffset(), b.TrueOffset(); ga != gb {
		t.Fatalf("same seed, different read pattern: %v vs %v", ga, gb)
	}
	if fa, fb := a.TrueFrequency(), b.TrueFrequency(); fa != fb {
		t.Fatalf("frequencies differ: %v vs %v", fa, fb)
	}
	if a.TrueOffset() == c.TrueOffset() {
		t.Fatalf("different seeds gave the same offset %v", a.TrueOffset())
	}
	// Wander moved the frequency away from the drift; 300 steps of
	// 0.5 ppm give a walk of about 8.7 ppm standard deviation.
	if f := a.TrueFrequency(); f == 3 || math.Abs(f-3) > 100 {
		t.Fatalf("frequency after wander = %v", f)
	}
}

func TestSimWanderStaysBounded(t *testing.T) {
	s, vc := mustSim(t, SimConfig{WanderPPM: 50, Seed: 1})
	for range 20000 {
		vc.advance(WanderStep)
		if f := s.TrueFrequency(); math.Abs(f) > maxWanderExcursion {
			t.Fatalf("wander %v ppm beyond ±%v", f, maxWanderExcursion)
		}
	}
}

func TestSimTrueOffsetIsNowMinusTrue(t *testing.T) {
	s, vc := mustSim(t, SimConfig{Offset: 123456789, DriftPPM: -17.25, WanderPPM: 0.1, Seed: 9})
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		vc.advance(time.Duration(r.Int64N(int64(3 * time.Second))))
		switch r.IntN(5) {
		case 0:
			_ = s.Slew(time.Duration(r.Int64N(int64(20*time.Millisecond))) - 10*time.Millisecond)
		case 1:
			_ = s.SetFrequency(r.Float64()*1000 - 500)
		case 2:
			_ = s.Step(time.Duration(r.Int64N(int64(time.Millisecond))))
		}
		if got, want := s.Now().Sub(vc.now()), s.TrueOffset(); got != want {
			t.Fatalf("step %d: Now-true = %v, TrueOffset = %v", i, got, want)
		}
	}
}

func TestSimFromKernel(t *testing.T) {
	s, vc := mustSim(t, SimConfig{Offset: time.Second, DriftPPM: 10, WanderPPM: 0.2, Seed: 5})
	if got, want := s.FromKernel(vc.now()), s.Now(); !got.Equal(want) {
		t.Fatalf("FromKernel(now) = %v, Now = %v", got, want)
	}
	// Readings at past instants, with rate changes in between, are
	// reproduced exactly from the recorded segments.
	type reading struct{ true, local time.Time }
	var past []reading
	for i := range 20 {
		vc.advance(300 * time.Millisecond)
		past = append(past, reading{vc.now(), s.Now()})
		switch i % 4 {
		case 0:
			_ = s.Slew(2 * time.Millisecond)
		case 1:
			_ = s.SetFrequency(float64(i))
		case 2:
			_ = s.Step(time.Microsecond)
		}
	}
	vc.advance(50 * time.Millisecond)
	for i, r := range past[len(past)-8:] {
		// The reading right at an adjustment instant is the one from
		// before it (Now came first), except for a step, which jumps.
		if got := s.FromKernel(r.true); !got.Equal(r.local) && (len(past)-8+i)%4 != 2 {
			t.Errorf("FromKernel(%v) = %v, want %v", r.true, got, r.local)
		}
	}
	// Round trip: local reading of a true instant minus the offset then.
	tk := vc.now().Add(-10 * time.Millisecond)
	local := s.FromKernel(tk)
	if back := local.Add(-s.TrueOffset()); back.Sub(tk).Abs() > time.Microsecond {
		t.Fatalf("round trip %v -> %v -> %v", tk, local, back)
	}
	// Far older than the history: extrapolated, continuous and monotonic.
	old1, old2 := s.FromKernel(epoch.Add(-time.Hour)), s.FromKernel(epoch.Add(-time.Hour+time.Second))
	if d := old2.Sub(old1); d < 999*time.Millisecond || d > 1001*time.Millisecond {
		t.Fatalf("extrapolated second lasted %v", d)
	}
}

func TestSimFromKernelFutureDoesNotDisturb(t *testing.T) {
	cfg := SimConfig{WanderPPM: 1, Seed: 3}
	a, va := mustSim(t, cfg)
	b, vb := mustSim(t, cfg)
	_ = a.Slew(time.Millisecond)
	_ = b.Slew(time.Millisecond)
	future := va.now().Add(5 * time.Second) // past the slew end and 5 wander steps
	predicted := a.FromKernel(future)
	va.set(future)
	vb.set(future)
	if got := a.Now(); !got.Equal(predicted) {
		t.Fatalf("FromKernel(future) = %v, Now there = %v", predicted, got)
	}
	if ga, gb := a.Now(), b.Now(); !ga.Equal(gb) {
		t.Fatalf("a future read changed the clock: %v vs %v", ga, gb)
	}
}

func TestSimMonotonicUnderAdjustments(t *testing.T) {
	s, vc := mustSim(t, SimConfig{
		DriftPPM: -90000, WanderPPM: 50, Seed: 11, MaxSlewPPM: 500000, MaxFrequencyPPM: 200000,
	})
	r := rand.New(rand.NewPCG(3, 4))
	last := s.Now()
	for i := range 50000 {
		vc.advance(time.Duration(r.Int64N(int64(time.Millisecond))))
		switch r.IntN(20) {
		case 0:
			_ = s.Slew(-time.Duration(r.Int64N(int64(time.Second))))
		case 1:
			_ = s.SetFrequency(-r.Float64() * 200000)
		case 2:
			_ = s.Step(time.Duration(r.Int64N(1000)))
		}
		now := s.Now()
		if now.Before(last) {
			t.Fatalf("step %d: clock went back from %v to %v", i, last, now)
		}
		last = now
	}
}

func TestSimSync(t *testing.T) {
	s, vc := mustSim(t, SimConfig{})
	st, _ := s.State()
	if st.Synchronized || st.MaxError != 16*time.Second {
		t.Fatalf("initial state %+v", st)
	}
	if err := s.SetSync(true, time.Millisecond, 2*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	vc.advance(10 * time.Second)
	st, _ = s.State()
	if !st.Synchronized || st.EstError != time.Millisecond || st.MaxError != 7*time.Millisecond {
		t.Fatalf("state %+v", st)
	}
	vc.advance(32000 * time.Second) // max error grows past 16 s
	if st, _ = s.State(); st.Synchronized || st.MaxError != 16*time.Second {
		t.Fatalf("state after a long holdover %+v", st)
	}
	if err := s.SetSync(true, -1, 0); err == nil {
		t.Fatal("negative error accepted")
	}
}

func TestSimConfigValidate(t *testing.T) {
	for _, cfg := range []SimConfig{
		{DriftPPM: math.NaN()},
		{DriftPPM: 200000},
		{WanderPPM: -1},
		{MaxSlewPPM: -5},
		{MaxSlewPPM: 1e6},
		{MaxFrequencyPPM: math.Inf(1)},
	} {
		if err := cfg.Validate(); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	cfg := SimConfig{}
	if err := cfg.Validate(); err != nil || cfg.MaxSlewPPM != DefaultMaxSlewPPM || cfg.MaxFrequencyPPM != DefaultMaxFrequencyPPM {
		t.Fatalf("defaults: %+v, %v", cfg, err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("NewSim accepted an invalid config")
		}
	}()
	NewSim(SimConfig{DriftPPM: 1e6}, time.Now)
}

func TestSimConcurrent(t *testing.T) {
	s, vc := mustSim(t, SimConfig{DriftPPM: 5, WanderPPM: 0.1, Seed: 2})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 2000 {
			vc.advance(time.Millisecond)
		}
		close(stop)
	}()
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := s.Now()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				switch (i + g) % 50 {
				case 0:
					_ = s.Slew(time.Millisecond)
				case 1:
					_ = s.SetFrequency(float64(g))
				case 2:
					_, _ = s.State()
				case 3:
					_ = s.FromKernel(vc.now())
				}
				// Each goroutine's own successive reads never go
				// back: the true source only advances.
				if now := s.Now(); now.Before(last) {
					t.Errorf("went back %v -> %v", last, now)
					return
				} else {
					last = now
				}
			}
		}()
	}
	wg.Wait()
}

func TestSimRealSource(t *testing.T) {
	// With time.Now as the source, readings carry no monotonic clock
	// reading and follow real time plus the offset.
	s := NewSim(SimConfig{Offset: time.Hour}, time.Now)
	before := time.Now().Round(0)
	got := s.Now()
	after := time.Now().Round(0)
	if got != got.Round(0) {
		t.Fatal("Now carries a monotonic reading")
	}
	// Bracketed by real readings: a descheduled goroutine widens the
	// bracket, it cannot fail the test.
	if real := got.Add(-time.Hour); real.Before(before) || real.After(after) {
		t.Fatalf("Now - 1h = %v, not between the real readings %v and %v around it", real, before, after)
	}
}

func TestApply(t *testing.T) {
	s, _ := mustSim(t, SimConfig{})
	for _, a := range []Adjustment{
		{Kind: AdjustStep, Offset: time.Second},
		{Kind: AdjustFrequency, PPM: 12},
		{Kind: AdjustSlew, Offset: time.Millisecond},
		{Kind: AdjustSync, Synced: true, EstError: time.Microsecond, MaxError: time.Millisecond},
	} {
		if err := Apply(s, a); err != nil {
			t.Fatalf("%v: %v", a.Kind, err)
		}
	}
	st, _ := s.State()
	if s.TrueOffset() != time.Second || st.Frequency != 12 || st.SlewLeft != time.Millisecond ||
		!st.Synchronized || st.EstError != time.Microsecond || st.MaxError != time.Millisecond {
		t.Fatalf("state after Apply: %+v, offset %v", st, s.TrueOffset())
	}
	if err := Apply(s, Adjustment{Kind: 99}); err == nil {
		t.Fatal("unknown kind applied")
	}
	if err := Apply(s, Adjustment{Kind: AdjustStep, Offset: -1}); !errors.Is(err, ErrBackwardStep) {
		t.Fatalf("backward step through Apply: %v", err)
	}
}
