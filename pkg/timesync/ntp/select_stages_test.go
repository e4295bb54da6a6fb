package ntp

import (
	"math"
	"testing"
	"time"
)

// Each stage of Select alone, on inputs small enough to check by hand.

func TestFitnessStage(t *testing.T) {
	cfg := SelectConfig{}.withDefaults()
	cands := []Candidate{
		{Reachable: true, Stratum: 2, RootDistance: time.Millisecond},
		{Reachable: false, Stratum: 2},
		{Reachable: true, Stratum: 16},
		{Reachable: true, Stratum: 2, RootDistance: 2 * time.Second},
		{Reachable: true, Stratum: 2, Loop: true},
		{Reachable: true, Stratum: 3, RootDistance: time.Millisecond},
	}
	v := make([]Verdict, len(cands))
	fit := fitness(cands, cfg, v)
	want := []Verdict{0, VerdictUnreachable, VerdictStratum, VerdictTooFar, VerdictLoop, 0}
	if len(fit) != 2 || fit[0] != 0 || fit[1] != 5 {
		t.Errorf("fit %v, want [0 5]", fit)
	}
	for i := range want {
		if v[i] != want[i] {
			t.Errorf("candidate %d: %v, want %v", i, v[i], want[i])
		}
	}
}

func intervals(pairs ...float64) []endpoint {
	var cands []Candidate
	var fit []int
	for i := 0; i+1 < len(pairs); i += 2 {
		cands = append(cands, Candidate{Offset: time.Duration(pairs[i]), RootDistance: time.Duration(pairs[i+1])})
		fit = append(fit, len(fit))
	}
	return correctness(cands, fit, func(i int) float64 { return float64(cands[i].RootDistance) })
}

func TestIntersectStage(t *testing.T) {
	// Marzullo's textbook case: [8,12] [11,13] [10,12] meet in [11,12].
	in, ok := intersect(intervals(10, 2, 12, 1, 11, 1))
	if !ok || in.low != 11 || in.high != 12 {
		t.Errorf("three intervals: %+v %v, want [11,12]", in, ok)
	}
	// A falseticker far away: the other two still agree (f = 1 < 3/2).
	in, ok = intersect(intervals(10, 2, 11, 1, 100, 1))
	if !ok || in.low != 10 || in.high != 12 {
		t.Errorf("with a falseticker: %+v %v, want [10,12]", in, ok)
	}
	// Two that disagree: no majority.
	if _, ok := intersect(intervals(0, 1, 10, 1)); ok {
		t.Error("two disjoint intervals intersected")
	}
	// Touching intervals are closed: they meet at the point.
	if in, ok := intersect(intervals(0, 1, 2, 1)); !ok || in.low != 1 || in.high != 1 {
		t.Errorf("touching: %+v %v", in, ok)
	}
	// The majority region of [8,12] [11,13] [10,12]: covered twice from 10
	// to 12.
	in, _ = intersect(intervals(10, 2, 12, 1, 11, 1))
	if in.majLow != 10 || in.majHigh != 12 {
		t.Errorf("majority region [%v,%v], want [10,12]", in.majLow, in.majHigh)
	}
}

func TestTruechimersStage(t *testing.T) {
	cands := []Candidate{{Offset: 10, RootDistance: 2}, {Offset: 100, RootDistance: 1}, {Offset: 11, RootDistance: 1}}
	v := make([]Verdict, 3)
	dist := func(i int) float64 { return float64(cands[i].RootDistance) }
	got := truechimers(cands, []int{0, 1, 2}, dist, intersection{low: 10, high: 12}, v)
	if len(got) != 2 || got[0] != 0 || got[1] != 2 || v[1] != VerdictFalseticker {
		t.Errorf("truechimers %v verdicts %v", got, v)
	}
}

func TestClusterStage(t *testing.T) {
	cfg := SelectConfig{MinSurvivors: 2}.withDefaults()
	// Stratum first, then distance; the outlier at 1 s goes.
	cands := []Candidate{
		{Offset: 0, RootDistance: 3, Stratum: 2},
		{Offset: time.Second, RootDistance: 1, Stratum: 2},
		{Offset: 1, RootDistance: 5, Stratum: 1},
	}
	v := make([]Verdict, 3)
	surv := cluster(cands, []int{0, 1, 2}, func(i int) float64 { return float64(cands[i].RootDistance) }, cfg, v)
	if len(surv) != 2 || surv[0] != 2 || surv[1] != 0 || v[1] != VerdictOutlier {
		t.Errorf("survivors %v verdicts %v, want [2 0] and 1 an outlier", surv, v)
	}
}

func TestCombineStage(t *testing.T) {
	// Weights 1/λ: offsets 0 (λ 1) and 3 (λ 2) combine to (0 + 3/2) / (1 + 1/2) = 1.
	cands := []Candidate{{Offset: 0, RootDistance: 1, Jitter: 4}, {Offset: 3, RootDistance: 2}}
	off, jit := combine(cands, []int{0, 1}, func(i int) float64 { return float64(cands[i].RootDistance) })
	// Selection jitter about the system peer: sqrt((0 + 9/2) / 1.5) = sqrt(3).
	wantJit := time.Duration(math.Round(math.Hypot(4, math.Sqrt(3))))
	if off != 1 || jit != wantJit {
		t.Errorf("offset %v jitter %v, want 1 and %v", off, jit, wantJit)
	}
}
