package servo

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/clock"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
func us(n float64) time.Duration { return time.Duration(n * float64(time.Microsecond)) }
func sec(n float64) time.Time    { return t0.Add(time.Duration(n * float64(time.Second))) }

func mustNew(t *testing.T, cfg Config) *Servo {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func kinds(adj []clock.Adjustment) []clock.AdjustKind {
	var k []clock.AdjustKind
	for _, a := range adj {
		k = append(k, a.Kind)
	}
	return k
}

func find(adj []clock.Adjustment, k clock.AdjustKind) (clock.Adjustment, bool) {
	for _, a := range adj {
		if a.Kind == k {
			return a, true
		}
	}
	return clock.Adjustment{}, false
}

func TestConfigValidate(t *testing.T) {
	var c Config
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.MaxSlewPPM != 83333 || c.MaxFrequencyPPM != 500 || c.MaxDriftPPM != 15 || c.PhaseGain != 1 ||
		c.FrequencyWindow != 16 || c.StepLimit != 3 || c.StepThreshold != 0 {
		t.Errorf("defaults %+v", c)
	}
	for name, bad := range map[string]Config{
		"slew":         {MaxSlewPPM: -1},
		"slew nan":     {MaxSlewPPM: math.NaN()},
		"freq":         {MaxFrequencyPPM: 2e6},
		"drift":        {MaxDriftPPM: -1},
		"restored":     {Frequency: 600},
		"restored inf": {Frequency: math.Inf(1)},
		"threshold":    {StepThreshold: -1},
		"limit":        {StepLimit: -1},
		"gain":         {PhaseGain: 1.5},
		"window":       {FrequencyWindow: 1},
	} {
		if err := bad.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestFirstUpdate(t *testing.T) {
	s := mustNew(t, Config{Frequency: -20})
	if s.Synchronized() {
		t.Fatal("synchronized before any measurement")
	}
	if lo, hi := s.Bound(t0); !lo.IsZero() || !hi.IsZero() {
		t.Fatal("bound before any measurement")
	}
	res, err := s.Update(t0, Measurement{Time: t0, Offset: ms(40), RootDistance: us(200)})
	if err != nil {
		t.Fatal(err)
	}
	want := []clock.AdjustKind{clock.AdjustSlew, clock.AdjustFrequency, clock.AdjustSync}
	if got := kinds(res.Adjustments); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("adjustments %v, want %v", got, want)
	}
	if a := res.Adjustments[0]; a.Offset != ms(40) {
		t.Errorf("slew %v, want 40ms", a.Offset)
	}
	if a := res.Adjustments[1]; a.PPM != -20 {
		t.Errorf("restored frequency %v, want -20", a.PPM)
	}
	if a := res.Adjustments[2]; !a.Synced || a.MaxError < ms(40) {
		t.Errorf("sync %+v", a)
	}
	if res.Action != ActionSlew || res.Correction != ms(40) || s.Frequency() != -20 {
		t.Errorf("result %+v freq %v", res, s.Frequency())
	}
	// Right after the update the bound is centred on the measured
	// offset with the measurement's root distance as half-width.
	lo, hi := s.Bound(t0)
	if lo != t0.Add(ms(40)-us(200)) || hi != t0.Add(ms(40)+us(200)) {
		t.Errorf("bound [%v, %v]", lo.Sub(t0), hi.Sub(t0))
	}
	// A second later the slew (83333 ppm) has absorbed the 40 ms; with
	// no frequency estimate yet the bound grows at 15 + 500 + 20 ppm.
	lo, hi = s.Bound(sec(1))
	half := us(200) + us(535)
	if lo != sec(1).Add(-half) || hi != sec(1).Add(half) {
		t.Errorf("bound after 1s [%v, %v], want ±%v", lo.Sub(sec(1)), hi.Sub(sec(1)), half)
	}
}

func TestStepRules(t *testing.T) {
	cfg := Config{StepThreshold: ms(10), StepLimit: 2}
	for _, tc := range []struct {
		name    string
		offsets []time.Duration // one per update, 10 s apart
		actions []Action
	}{
		{"forward step at start", []time.Duration{ms(100)}, []Action{ActionStep}},
		{"never backwards", []time.Duration{-ms(100)}, []Action{ActionSlew}},
		{"below threshold", []time.Duration{ms(5)}, []Action{ActionSlew}},
		{"only in the window", []time.Duration{ms(1), ms(1), ms(100)}, []Action{ActionSlew, ActionSlew, ActionSlew}},
		{"second update may step", []time.Duration{ms(1), ms(100)}, []Action{ActionSlew, ActionStep}},
	} {
		s := mustNew(t, cfg)
		for i, off := range tc.offsets {
			now := sec(float64(10 * i))
			res, err := s.Update(now, Measurement{Time: now, Offset: off, RootDistance: us(100)})
			if err != nil {
				t.Fatal(err)
			}
			if res.Action != tc.actions[i] {
				t.Errorf("%s: update %d: %v, want %v", tc.name, i, res.Action, tc.actions[i])
			}
			if st, ok := find(res.Adjustments, clock.AdjustStep); ok && st.Offset <= 0 {
				t.Errorf("%s: step of %v", tc.name, st.Offset)
			}
		}
	}
	// Stepping is off by default.
	s := mustNew(t, Config{})
	res, _ := s.Update(t0, Measurement{Time: t0, Offset: time.Second, RootDistance: us(100)})
	if res.Action != ActionSlew {
		t.Errorf("default config stepped")
	}
}

func TestSlewKeepsRemainder(t *testing.T) {
	s := mustNew(t, Config{})
	s.Update(t0, Measurement{Time: t0, Offset: ms(100), RootDistance: us(100)})
	// Half a second later (local time: the clock runs 8.3% fast while
	// slewing forward) 0.5·r/(1+r) s of the slew is done. A raw
	// measurement finds what is left plus 1 ms; normalised with Pending
	// it is 1 ms. The new slew must be remainder + 1 ms (the remainder is
	// not dropped, nor counted twice) and only the 1 ms is a new
	// correction.
	const r = 83333e-6
	left := ms(100) - time.Duration(math.Round(0.5e9*r/(1+r)))
	if p := s.Pending(sec(0.5)); (p - left).Abs() > 1 {
		t.Fatalf("Pending %v, want %v", p, left)
	}
	if p := s.Pending(sec(-1)); p != 0 {
		t.Errorf("Pending before any slew: %v", p)
	}
	raw := left + ms(1)
	res, err := s.Update(sec(0.5), Measurement{Time: sec(0.5), Offset: raw - s.Pending(sec(0.5)), RootDistance: us(100)})
	if err != nil {
		t.Fatal(err)
	}
	sl, _ := find(res.Adjustments, clock.AdjustSlew)
	if d := sl.Offset - (left + ms(1)); d < -1 || d > 1 {
		t.Errorf("slew %v, want %v", sl.Offset, left+ms(1))
	}
	if res.Correction != ms(1) {
		t.Errorf("correction %v, want 1ms (only the new part)", res.Correction)
	}
}

func TestFrequencyEstimateAndClamp(t *testing.T) {
	// A clock 100 ppm fast, measured exactly each 10 s with the whole
	// offset slewed: each measurement is the drift over the interval.
	s := mustNew(t, Config{})
	if _, err := s.Update(t0, Measurement{Time: t0, Offset: 0, RootDistance: us(10)}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Update(sec(10), Measurement{Time: sec(10), Offset: -ms(1), RootDistance: us(10)})
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := find(res.Adjustments, clock.AdjustFrequency); !ok || math.Abs(f.PPM+100) > 1e-6 {
		t.Errorf("frequency %+v, want -100 ppm", f)
	}
	// Worst case slope error: two points 10 s apart, each off by 10 µs:
	// 2 µs/s = 2 ppm.
	if st := s.State(); math.Abs(st.FrequencyError-2) > 1e-9 || st.Updates != 2 {
		t.Errorf("state %+v", st)
	}
	// 2000 ppm is beyond the kernel's ±500: clamped.
	s = mustNew(t, Config{})
	s.Update(t0, Measurement{Time: t0, RootDistance: us(10)})
	res, _ = s.Update(sec(10), Measurement{Time: sec(10), Offset: -ms(20), RootDistance: us(10)})
	if res.Frequency != -500 {
		t.Errorf("frequency %v, want the -500 ppm clamp", res.Frequency)
	}
	// Too uncertain to estimate (two points 1 ms apart with 100 µs
	// errors): the frequency is left alone.
	s = mustNew(t, Config{Frequency: 7})
	s.Update(t0, Measurement{Time: t0, RootDistance: us(100)})
	res, _ = s.Update(t0.Add(time.Millisecond), Measurement{Time: t0.Add(time.Millisecond), Offset: us(50), RootDistance: us(100)})
	if res.Frequency != 7 {
		t.Errorf("frequency %v, want 7 (unchanged)", res.Frequency)
	}
	if _, ok := find(res.Adjustments, clock.AdjustFrequency); ok {
		t.Error("a frequency adjustment without a change")
	}
}

func TestUpdateErrorsChangeNothing(t *testing.T) {
	s := mustNew(t, Config{})
	s.Update(sec(10), Measurement{Time: sec(10), Offset: ms(1), RootDistance: us(100)})
	before := s.State()
	for name, tc := range map[string]struct {
		now  time.Time
		m    Measurement
		want error
	}{
		"future":            {sec(20), Measurement{Time: sec(21), RootDistance: 1}, ErrFutureMeasurement},
		"same time":         {sec(20), Measurement{Time: sec(10), RootDistance: 1}, ErrOutOfOrder},
		"older":             {sec(20), Measurement{Time: sec(5), RootDistance: 1}, ErrOutOfOrder},
		"zero time":         {sec(20), Measurement{RootDistance: 1}, ErrBadMeasurement},
		"negative distance": {sec(20), Measurement{Time: sec(15), RootDistance: -1}, ErrBadMeasurement},
	} {
		if _, err := s.Update(tc.now, tc.m); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if s.State() != before {
		t.Errorf("state changed: %+v -> %+v", before, s.State())
	}
}

func TestActionString(t *testing.T) {
	if ActionSlew.String() != "slew" || ActionStep.String() != "step" || Action(0).String() != "unknown" {
		t.Error("Action.String")
	}
}

func TestSyncAdjustment(t *testing.T) {
	s := mustNew(t, Config{})
	if a := s.SyncAdjustment(t0); a.Kind != clock.AdjustSync || a.Synced || a.MaxError != 16*time.Second {
		t.Errorf("before sync: %+v", a)
	}
	s.Update(t0, Measurement{Time: t0, Offset: ms(1), RootDistance: us(100)})
	if a := s.SyncAdjustment(sec(10)); !a.Synced || a.MaxError != us(100)+us(5150) {
		// 100 µs + (15 + 500) ppm × 10 s; the 1 ms slew is done.
		t.Errorf("after 10 s: %+v", a)
	}
	// 16 s / 515 ppm ≈ 8.6 h of holdover without measurements.
	if a := s.SyncAdjustment(sec(9 * 3600)); a.Synced || a.MaxError != 16*time.Second {
		t.Errorf("after 9 h: %+v", a)
	}
	if off, ok := s.Offset(sec(10)); !ok || off != 0 {
		t.Errorf("predicted offset %v %v", off, ok)
	}
}

func TestLongRunBoundedState(t *testing.T) {
	// Thousands of updates: the ledgers and the regression window stay
	// bounded, and the estimate stays right.
	s := mustNew(t, Config{})
	var trueOff float64 = 5e6 // ns, local ahead; drift +12 ppm
	for i := range 3000 {
		now := sec(float64(i) * 8)
		res, err := s.Update(now, Measurement{Time: now, Offset: time.Duration(-trueOff), RootDistance: us(50)})
		if err != nil {
			t.Fatal(err)
		}
		// The whole slew completes within 8 s here; apply it and the
		// frequency, then drift for 8 s.
		sl, _ := find(res.Adjustments, clock.AdjustSlew)
		trueOff += float64(sl.Offset)
		trueOff += (12 + res.Frequency) * 8e3
	}
	if len(s.slews) > ledgerMax || len(s.freqs) > ledgerMax || len(s.points) > s.cfg.FrequencyWindow {
		t.Errorf("state grew: %d slews, %d freqs, %d points", len(s.slews), len(s.freqs), len(s.points))
	}
	if math.Abs(s.Frequency()+12) > 0.01 || math.Abs(trueOff) > 100 {
		t.Errorf("frequency %.4f, offset %.0f ns", s.Frequency(), trueOff)
	}
	if off, ok := s.Offset(sec(3000 * 8)); !ok || off.Abs() > us(1) {
		t.Errorf("predicted offset %v", off)
	}
	if _, err := New(Config{PhaseGain: 2}); !errors.Is(err, ErrConfig) {
		t.Errorf("New accepted a bad config: %v", err)
	}
}

// TestRestoredFrequencyKeptUntilBeaten: a frequency restored with its saved
// error survives the first regressions after a restart, which rest on a
// few measurements with the large root distances of a filling clock filter;
// a regression replaces it once its own error is smaller. Without a saved
// error the first regression replaces it at once.
func TestRestoredFrequencyKeptUntilBeaten(t *testing.T) {
	// The clock's true drift is +30 ppm and the restored correction -30
	// is right; the early measurements carry ±0.4 ms of noise within a
	// 0.5 ms root distance, enough to fit a wildly wrong slope.
	noisy := []Measurement{
		{Time: sec(0), Offset: ms(0.4), RootDistance: ms(0.5)},
		{Time: sec(2), Offset: ms(-0.4), RootDistance: ms(0.5)},
		{Time: sec(4), Offset: ms(0.4), RootDistance: ms(0.5)},
	}
	feed := func(s *Servo) {
		t.Helper()
		for _, m := range noisy {
			if _, err := s.Update(m.Time, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	trusted := mustNew(t, Config{Frequency: -30, FrequencyError: 0.05})
	feed(trusted)
	if f := trusted.Frequency(); f != -30 {
		t.Errorf("restored frequency with a 0.05 ppm error replaced by %v ppm after 3 noisy measurements", f)
	}
	if st := trusted.State(); st.FrequencyError < DefaultMaxFrequencyPPM {
		t.Errorf("bound's frequency error %v ppm before any regression was adopted: must stay conservative", st.FrequencyError)
	}
	guess := mustNew(t, Config{Frequency: -30})
	feed(guess)
	if f := guess.Frequency(); f == -30 {
		t.Error("a restored frequency without an error survived the first regressions")
	}

	// Many precise measurements: the regression's error drops below the
	// prior's (0.05 + RestoredWanderPPM) and it takes over, here finding
	// the drift the offsets show (+2 ppm left after the -30 correction).
	for i := range 40 {
		at := sec(10 + 10*float64(i))
		off := -time.Duration(2e-6 * float64(at.Sub(sec(10))))
		if _, err := trusted.Update(at, Measurement{Time: at, Offset: off, RootDistance: us(5)}); err != nil {
			t.Fatal(err)
		}
	}
	if f := trusted.Frequency(); math.Abs(f-(-30)) < 0.5 {
		t.Errorf("frequency %v ppm after 40 precise measurements showing a residual drift: regression never adopted", f)
	}
}

// TestSlewed: the phase applied between two instants follows the slew
// commands at the configured rate, across a change of command.
func TestSlewed(t *testing.T) {
	s := mustNew(t, Config{})
	if _, err := s.Update(sec(0), Measurement{Time: sec(0), Offset: ms(50), RootDistance: us(100)}); err != nil {
		t.Fatal(err)
	}
	r := DefaultMaxSlewPPM * 1e-6 / (1 + DefaultMaxSlewPPM*1e-6) // a forward slew, per local second
	want := time.Duration(0.25 * r * 1e9)
	if got := s.Slewed(sec(0.25), sec(0.5)); (got - want).Abs() > time.Microsecond {
		t.Errorf("slewed over a quarter second %v, want %v", got, want)
	}
	if got := s.Slewed(sec(0), sec(10)); (got - ms(50)).Abs() > time.Microsecond {
		t.Errorf("slewed in total %v, want the whole 50ms", got)
	}
	if s.Slewed(sec(2), sec(1)) != 0 || s.Slewed(sec(-5), sec(0)) != 0 {
		t.Error("slewed over an empty or past interval")
	}
	// A new command at 2 s (slew back 10 ms) continues the history.
	if _, err := s.Update(sec(2), Measurement{Time: sec(2), Offset: ms(-10), RootDistance: us(100)}); err != nil {
		t.Fatal(err)
	}
	if got := s.Slewed(sec(0), sec(10)); (got - ms(40)).Abs() > 2*time.Microsecond {
		t.Errorf("slewed across two commands %v, want 50ms - 10ms", got)
	}
}

// TestCommandedAfter: the corrections commanded after a sample's time are
// what a sample added only later (interleaved NTP: a poll old) must still
// lose; Pending alone would leave the update made meanwhile in it, and the
// servo would correct that update again.
func TestCommandedAfter(t *testing.T) {
	s := mustNew(t, Config{})
	r1, _ := s.Update(sec(0), Measurement{Time: sec(0), Offset: ms(10), RootDistance: us(100)})
	r2, _ := s.Update(sec(1), Measurement{Time: sec(1), Offset: us(300) - s.Pending(sec(1)), RootDistance: us(100)})
	if r1.Correction == 0 || r2.Correction == 0 {
		t.Fatalf("corrections %v %v", r1.Correction, r2.Correction)
	}
	for _, tc := range []struct {
		at   time.Time
		want time.Duration
	}{
		{sec(-1), r1.Correction + r2.Correction},
		{sec(0.5), r2.Correction},
		{sec(1), 0}, // decided at 1 s: not after it
		{sec(2), 0},
	} {
		if got := s.CommandedAfter(tc.at); got != tc.want {
			t.Errorf("CommandedAfter(%v): %v, want %v", tc.at.Sub(t0), got, tc.want)
		}
	}
}
