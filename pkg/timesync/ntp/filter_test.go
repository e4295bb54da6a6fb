package ntp

import (
	"math/rand/v2"
	"testing"
	"time"
)

func smp(sec int, offUS, delayUS float64) Sample {
	return Sample{Offset: us(offUS), Delay: us(delayUS), Dispersion: us(1), Time: at(time.Duration(sec) * time.Second)}
}

// TestFilterHandComputed walks the filter through a sequence whose every
// output was computed by hand (see the comments; PHI = 15 µs/s, each
// sample's own dispersion 1 µs, precision 1 µs, poll 1 s).
func TestFilterHandComputed(t *testing.T) {
	f := NewFilter(us(1))
	poll := time.Second
	steps := []struct {
		s       Sample
		outcome FilterOutcome
		est     Estimate
	}{
		// One sample: chosen; jitter at the 1 µs floor; dispersion
		// 1µs/2 + 16 s × (1/4 + ... + 1/256) = 500 ns + 7.9375 s.
		{smp(0, 10, 100), FilterUpdated, Estimate{Offset: us(10), Delay: us(100), Dispersion: 7937500500, Jitter: us(1), Time: at(0), Updated: at(0)}},
		// s1 has less delay. Sorted: s1 (ε 1 µs), s0 (ε 1+15 = 16 µs).
		// ε = 0.5 + 16/4 µs + 16 s × (1/4 - 1/256) = 3.9375 s + 4.5 µs.
		// ψ = sqrt((10-12)²/1) = 2 µs.
		{smp(1, 12, 80), FilterUpdated, Estimate{Offset: us(12), Delay: us(80), Dispersion: 3937504500, Jitter: us(2), Time: at(time.Second), Updated: at(time.Second)}},
		// s2 has more delay: s1 is still the best and already used. The
		// offset stays; dispersion and jitter are the register's now.
		// Sorted: s1 (1+15), s0 (1+30), s2 (1): ε = 16/2 + 31/4 + 1/8 µs
		// + 16 s × (1/8 - 1/256) = 15.875 µs + 1.9375 s.
		// ψ = sqrt(((10-12)² + (8-12)²)/2) = sqrt(10) µs.
		{smp(2, 8, 120), FilterStale, Estimate{Offset: us(12), Delay: us(80), Dispersion: 1937515875, Jitter: 3162, Time: at(time.Second), Updated: at(2 * time.Second)}},
		// s3 is the best. Sorted: s3 (1), s1 (1+30), s0 (1+45), s2 (1+15):
		// ε = 0.5 + 31/4 + 46/8 + 16/16 µs + 16 s × (1/16 - 1/256)
		//   = 15 µs + 0.9375 s.
		// ψ = sqrt(((12-11)² + (10-11)² + (8-11)²)/3) = sqrt(11/3) µs.
		{smp(3, 11, 70), FilterUpdated, Estimate{Offset: us(11), Delay: us(70), Dispersion: 937515000, Jitter: 1915, Time: at(3 * time.Second), Updated: at(3 * time.Second)}},
		// A popcorn spike: |100-11| = 89 µs > 3 × 1.915 µs, 1 s after
		// the last update (< 2 polls). Offset and jitter stay; the
		// dispersion is the register's: sorted s4 (1), s3 (16), s1 (46),
		// s0 (61), s2 (31): ε = 0.5 + 4 + 5.75 + 3.8125 + 0.96875 µs +
		// 16 s × (1/32 - 1/256) = 15.03125 µs + 0.4375 s.
		{smp(4, 100, 60), FilterSpike, Estimate{Offset: us(11), Delay: us(70), Dispersion: 437515032, Jitter: 1915, Time: at(3 * time.Second), Updated: at(4 * time.Second)}},
		// A normal sample with even less delay is used. Sorted: s5 (50,
		// 1), s4 (60, 16), s3 (70, 31), s1 (80, 61), s0 (100, 76), s2
		// (120, 46): ε = 0.5 + 4 + 3.875 + 3.8125 + 2.375 + 0.71875 µs
		// + 16 s × (1/64 - 1/256) = 15.28125 µs + 187.5 ms.
		// ψ = sqrt((88² + 1 + 0 + 2² + 4²)/5) = sqrt(7765/5) µs.
		{smp(5, 12, 50), FilterUpdated, Estimate{Offset: us(12), Delay: us(50), Dispersion: 187515282, Jitter: 39408, Time: at(5 * time.Second), Updated: at(5 * time.Second)}},
	}
	for i, st := range steps {
		got := f.Add(st.s, poll)
		if got != st.outcome {
			t.Fatalf("step %d: outcome %v, want %v", i, got, st.outcome)
		}
		est, ok := f.Estimate()
		if !ok || est != st.est {
			t.Fatalf("step %d: estimate %+v, want %+v", i, est, st.est)
		}
	}
	if f.Len() != 6 {
		t.Errorf("Len %d, want 6", f.Len())
	}
}

func TestFilterSpikeBecomesRealAfterTwoPolls(t *testing.T) {
	f := NewFilter(us(1))
	for i := range 4 {
		if got := f.Add(smp(i, 10, 100-float64(i)), time.Second); got != FilterUpdated {
			t.Fatalf("sample %d: %v", i, got)
		}
	}
	// The offset moves to 500 µs for good, with the least delay.
	if got := f.Add(smp(4, 500, 50), time.Second); got != FilterSpike {
		t.Fatalf("first jump: %v, want spike", got)
	}
	// Two poll intervals after the last update the jump is accepted.
	if got := f.Add(smp(5, 500, 60), time.Second); got != FilterUpdated {
		t.Fatalf("persisting jump: %v, want updated", got)
	}
	if est, _ := f.Estimate(); est.Offset != us(500) || est.Time != at(4*time.Second) {
		t.Errorf("estimate %+v, want the 500 µs sample of t=4s", est)
	}
}

func TestFilterNoSpikeGateOnFewSamples(t *testing.T) {
	// The second sample differs from the first by far more than 3 ×
	// the jitter floor; with one sample behind it the jitter is no
	// scale, so it must be used.
	f := NewFilter(us(1))
	f.Add(smp(0, 10, 100), time.Second)
	if got := f.Add(smp(1, 200, 90), time.Second); got != FilterUpdated {
		t.Fatalf("got %v", got)
	}
}

func TestFilterInvalid(t *testing.T) {
	f := NewFilter(1)
	f.Add(smp(10, 0, 10), time.Second)
	for name, s := range map[string]Sample{
		"zero time":      {Delay: 1},
		"max delay":      {Delay: MaxDispersion, Time: at(20 * time.Second)},
		"max dispersion": {Dispersion: MaxDispersion, Time: at(20 * time.Second)},
		"negative delay": {Delay: -1, Time: at(20 * time.Second)},
		"older":          smp(9, 0, 1),
	} {
		if got := f.Add(s, time.Second); got != FilterInvalid {
			t.Errorf("%s: %v, want invalid", name, got)
		}
	}
	if f.Len() != 1 {
		t.Errorf("invalid samples were stored: Len %d", f.Len())
	}
}

func TestFilterShiftAndWindow(t *testing.T) {
	f := NewFilter(1)
	for i := range 10 {
		f.Add(smp(i, float64(100+i), float64(100-i)), time.Second)
	}
	if f.Len() != NStage {
		t.Fatalf("Len %d", f.Len())
	}
	if s := f.Samples(); s[0].Time != at(9*time.Second) || s[NStage-1].Time != at(2*time.Second) {
		t.Errorf("register holds %v..%v, want 9s..2s", s[0].Time, s[NStage-1].Time)
	}
	f.Shift(us(50))
	est, _ := f.Estimate()
	if est.Offset != us(59) {
		t.Errorf("estimate offset after Shift: %v, want 59µs", est.Offset)
	}
	for _, s := range f.Samples() {
		if s.Offset > us(60) {
			t.Errorf("sample not shifted: %v", s.Offset)
		}
	}
	// The shifted history agrees with a new sample of the corrected
	// clock: no spike.
	if got := f.Add(smp(10, 60, 80), time.Second); got != FilterUpdated {
		t.Errorf("after shift: %v", got)
	}
	f.Reset()
	if _, ok := f.Estimate(); ok || f.Len() != 0 {
		t.Error("Reset left state behind")
	}
}

// TestFilterInvariants feeds random sample sequences (random delays,
// offsets, gaps, shifts) and checks what must always hold: each sample is
// used at most once and in time order, the jitter never drops below the
// precision, the dispersion is never negative and never exceeds
// MaxDispersion, and the chosen sample is in the register.
func TestFilterInvariants(t *testing.T) {
	for seed := uint64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 5))
		f := NewFilter(us(1))
		now := t0
		var lastUsed time.Time
		for range 200 {
			now = now.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
			s := Sample{
				Offset:     time.Duration(rng.NormFloat64() * float64(ms(1))),
				Delay:      time.Duration(rng.ExpFloat64() * float64(ms(1))),
				Dispersion: time.Duration(rng.IntN(1000)) * time.Microsecond,
				Time:       now,
			}
			if rng.IntN(10) == 0 {
				f.Shift(time.Duration(rng.NormFloat64() * float64(ms(1))))
			}
			out := f.Add(s, time.Duration(1+rng.IntN(64))*time.Second)
			est, ok := f.Estimate()
			if !ok {
				t.Fatalf("seed %d: no estimate after %v", seed, out)
			}
			if out == FilterUpdated {
				if !est.Time.After(lastUsed) {
					t.Fatalf("seed %d: sample of %v used after %v", seed, est.Time, lastUsed)
				}
				lastUsed = est.Time
				found := false
				for _, r := range f.Samples() {
					found = found || (r.Time == est.Time && r.Offset == est.Offset && r.Delay == est.Delay)
				}
				if !found {
					t.Fatalf("seed %d: chosen sample not in the register", seed)
				}
			} else if est.Time != lastUsed {
				t.Fatalf("seed %d: %v changed the chosen sample", seed, out)
			}
			if est.Jitter < us(1) || est.Dispersion < 0 || est.Dispersion > MaxDispersion || est.Updated != now {
				t.Fatalf("seed %d: estimate %+v", seed, est)
			}
		}
	}
}
