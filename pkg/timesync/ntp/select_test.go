package ntp

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/wire"
)

func cand(offMS, distMS float64) Candidate {
	return Candidate{Offset: ms(offMS), RootDistance: ms(distMS), Jitter: us(100), Stratum: 2, Reachable: true}
}

func TestSelectFalseticker(t *testing.T) {
	// A [-10, 10] ms, B [-8, 12] ms, C [490, 510] ms. No point is in all
	// three; [-8, 10] is in two of three: C is a falseticker.
	sel, err := Select([]Candidate{cand(0, 10), cand(2, 10), cand(500, 10)}, SelectConfig{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Verdict{VerdictSysPeer, VerdictCombined, VerdictFalseticker}
	if !slices.Equal(sel.Verdicts, want) {
		t.Errorf("verdicts %v, want %v", sel.Verdicts, want)
	}
	if sel.Low != ms(-8) || sel.High != ms(10) {
		t.Errorf("intersection [%v, %v], want [-8ms, 10ms]", sel.Low, sel.High)
	}
	// Equal weights: Θ = 1 ms. Selection jitter about A (0 ms):
	// sqrt((0 + 2²)/2) ms = √2 ms; system jitter = hypot(0.1, √2) ms.
	if sel.Offset != ms(1) {
		t.Errorf("offset %v, want 1ms", sel.Offset)
	}
	wantJ := time.Duration(math.Round(math.Hypot(1e5, math.Sqrt2*1e6)))
	if sel.Jitter != wantJ {
		t.Errorf("jitter %v, want %v", sel.Jitter, wantJ)
	}
	if sel.SysPeer != 0 || sel.Survivors != 2 {
		t.Errorf("sys peer %d survivors %d", sel.SysPeer, sel.Survivors)
	}
	// Covered twice from -8 to 10 ms: Distance from Θ = 1 ms is 9 ms.
	if sel.MajorityLow != ms(-8) || sel.MajorityHigh != ms(10) || sel.Distance() != ms(9) {
		t.Errorf("majority [%v, %v] distance %v", sel.MajorityLow, sel.MajorityHigh, sel.Distance())
	}
}

func TestSelectDistanceWhenAFalsetickerOverlaps(t *testing.T) {
	// Early in a run, wide intervals: two truechimers at 0 and a
	// falseticker at +1 s, all with λ = 0.94 s. They all intersect in
	// [0.06, 0.94] s, which misses the truth (0), and nothing can tell
	// the falseticker apart. Θ is pulled towards it, but the majority
	// region [-0.94, 0.94] s still contains the truth and Distance
	// covers it.
	cs := []Candidate{cand(0, 940), cand(0, 940), cand(1000, 940)}
	sel, err := Select(cs, SelectConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if sel.Low > 0 && sel.High > 0 && sel.Low != ms(60) {
		t.Errorf("intersection [%v, %v]", sel.Low, sel.High)
	}
	if lo, hi := sel.Offset-sel.Distance(), sel.Offset+sel.Distance(); lo > 0 || hi < 0 {
		t.Errorf("Θ %v ± %v misses the truth", sel.Offset, sel.Distance())
	}
	if sel.MajorityLow != ms(-940) || sel.MajorityHigh != ms(940) {
		t.Errorf("majority [%v, %v]", sel.MajorityLow, sel.MajorityHigh)
	}
}

func TestSelectWeights(t *testing.T) {
	// Weights 1/λ: A (0 ms, λ 10) weighs twice B (3 ms, λ 20):
	// Θ = (0/10 + 3/20) / (1/10 + 1/20) = 1 ms. A is the system peer
	// (shorter distance at equal stratum).
	sel, err := Select([]Candidate{cand(3, 20), cand(0, 10)}, SelectConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if sel.Offset != ms(1) || sel.SysPeer != 1 {
		t.Errorf("offset %v sys peer %d, want 1ms and 1", sel.Offset, sel.SysPeer)
	}
	// Lower stratum beats shorter distance.
	a, b := cand(3, 20), cand(0, 10)
	a.Stratum, b.Stratum = 1, 3
	sel, _ = Select([]Candidate{a, b}, SelectConfig{})
	if sel.SysPeer != 0 {
		t.Errorf("sys peer %d, want the stratum-1 source", sel.SysPeer)
	}
}

func TestSelectFitness(t *testing.T) {
	unreach := cand(0, 10)
	unreach.Reachable = false
	s16 := cand(0, 10)
	s16.Stratum = 16
	s0 := cand(0, 10)
	s0.Stratum = 0
	far := cand(0, 1500)
	loop := cand(0, 10)
	loop.Loop = true
	good := cand(1, 10)
	sel, err := Select([]Candidate{unreach, s16, s0, far, loop, good}, SelectConfig{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Verdict{VerdictUnreachable, VerdictStratum, VerdictStratum, VerdictTooFar, VerdictLoop, VerdictSysPeer}
	if !slices.Equal(sel.Verdicts, want) {
		t.Errorf("verdicts %v, want %v", sel.Verdicts, want)
	}
	if sel.Offset != ms(1) {
		t.Errorf("offset %v", sel.Offset)
	}
	if _, err := Select([]Candidate{unreach, far}, SelectConfig{}); !errors.Is(err, ErrNoCandidates) {
		t.Errorf("no fit candidates: %v", err)
	}
	if _, err := Select(nil, SelectConfig{}); !errors.Is(err, ErrNoCandidates) {
		t.Errorf("nil: %v", err)
	}
}

func TestSelectNoMajority(t *testing.T) {
	// Two disjoint intervals: neither has a majority.
	sel, err := Select([]Candidate{cand(0, 10), cand(100, 10)}, SelectConfig{})
	if !errors.Is(err, ErrNoMajority) {
		t.Fatalf("err %v", err)
	}
	if !slices.Equal(sel.Verdicts, []Verdict{VerdictNoMajority, VerdictNoMajority}) || sel.SysPeer != -1 {
		t.Errorf("verdicts %v sys %d", sel.Verdicts, sel.SysPeer)
	}
	// Two against two: no majority either.
	_, err = Select([]Candidate{cand(0, 10), cand(1, 10), cand(100, 10), cand(101, 10)}, SelectConfig{})
	if !errors.Is(err, ErrNoMajority) {
		t.Errorf("2 vs 2: %v", err)
	}
	// Touching intervals intersect (closed): [-10, 10] and [10, 30].
	if _, err := Select([]Candidate{cand(0, 10), cand(20, 10)}, SelectConfig{}); err != nil {
		t.Errorf("touching intervals: %v", err)
	}
}

func TestSelectCluster(t *testing.T) {
	// Five truechimers (wide intervals) at 0, 1, 2, 3 and 50 ms, peer
	// jitter 0.1 ms. Selection jitter of 50 is the largest: pruned. Of
	// 0,1,2,3 the ends have sqrt((1+4+9)/3) ms each: the later in merit
	// order (3, equal stratum and distance: input order) goes. Three
	// survivors = NMIN: stop. Θ = 1 ms.
	cs := []Candidate{cand(0, 100), cand(1, 100), cand(2, 100), cand(3, 100), cand(50, 100)}
	sel, err := Select(cs, SelectConfig{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Verdict{VerdictSysPeer, VerdictCombined, VerdictCombined, VerdictOutlier, VerdictOutlier}
	if !slices.Equal(sel.Verdicts, want) {
		t.Errorf("verdicts %v, want %v", sel.Verdicts, want)
	}
	if sel.Offset != ms(1) {
		t.Errorf("offset %v", sel.Offset)
	}
	// With peer jitters above every selection jitter nothing is pruned.
	for i := range cs {
		cs[i].Jitter = ms(100)
	}
	sel, _ = Select(cs, SelectConfig{})
	if sel.Survivors != 5 {
		t.Errorf("survivors %d, want 5 (jitter-limited clustering)", sel.Survivors)
	}
	// MaxCandidates keeps the best by stratum then distance.
	cs = []Candidate{cand(0, 30), cand(0, 10), cand(0, 20)}
	sel, _ = Select(cs, SelectConfig{MaxCandidates: 2})
	if !slices.Equal(sel.Verdicts, []Verdict{VerdictExcess, VerdictSysPeer, VerdictCombined}) {
		t.Errorf("verdicts %v", sel.Verdicts)
	}
}

// TestSelectRejectsFalsetickers is the selection's oracle test: over many
// seeds, n sources of which f < n/2 are falsetickers with offsets far outside
// the truth; every truechimer's interval contains the true offset (0). The
// falsetickers must all be rejected and the combined offset must lie inside
// the truechimers' intervals (|Θ| ≤ their largest λ).
func TestSelectRejectsFalsetickers(t *testing.T) {
	for seed := uint64(0); seed < 2000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 42))
		n := 1 + rng.IntN(12)
		f := rng.IntN((n + 1) / 2) // 2f < n
		cs := make([]Candidate, n)
		isFalse := make([]bool, n)
		var maxTrue float64
		for _, i := range rng.Perm(n)[:f] {
			isFalse[i] = true
		}
		for i := range cs {
			lambda := 0.1 + rng.Float64()*20 // ms
			var off float64
			if isFalse[i] {
				// Far outside: at least 100 ms + λ away, either side,
				// scattered so falsetickers rarely agree with each other.
				off = (100 + lambda + rng.Float64()*10000) * float64(1-2*rng.IntN(2))
			} else {
				off = (rng.Float64()*2 - 1) * lambda // truth 0 inside
				maxTrue = math.Max(maxTrue, lambda)
			}
			cs[i] = Candidate{
				Offset: ms(off), RootDistance: ms(lambda), Jitter: us(rng.Float64() * 500),
				Stratum: uint8(1 + rng.IntN(3)), Reachable: true,
			}
		}
		sel, err := Select(cs, SelectConfig{})
		if err != nil {
			t.Fatalf("seed %d (n=%d f=%d): %v", seed, n, f, err)
		}
		for i, v := range sel.Verdicts {
			if isFalse[i] && v.Selected() {
				t.Fatalf("seed %d: falseticker %d (%v) selected", seed, i, cs[i].Offset)
			}
			if isFalse[i] && v != VerdictFalseticker {
				t.Fatalf("seed %d: falseticker %d has verdict %v", seed, i, v)
			}
			if !isFalse[i] && v == VerdictFalseticker {
				t.Fatalf("seed %d: truechimer %d called a falseticker", seed, i)
			}
		}
		if math.Abs(float64(sel.Offset)) > maxTrue*1e6+1 {
			t.Fatalf("seed %d: Θ = %v outside the truechimers' intervals (max λ %.3f ms)", seed, sel.Offset, maxTrue)
		}
		if sel.SysPeer < 0 || isFalse[sel.SysPeer] {
			t.Fatalf("seed %d: system peer %d", seed, sel.SysPeer)
		}
		if d := sel.Distance(); sel.Offset-d > 0 || sel.Offset+d < 0 {
			t.Fatalf("seed %d: Θ %v ± %v misses the truth", seed, sel.Offset, d)
		}
	}
}

// TestSelectDistanceIsTruthful: with falsetickers anywhere (overlapping
// the truth or not), as long as they are a minority, Θ ± Distance contains
// the true offset, whatever the intersection and clustering decided.
func TestSelectDistanceIsTruthful(t *testing.T) {
	for seed := uint64(0); seed < 3000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 77))
		n := 1 + rng.IntN(9)
		f := rng.IntN((n + 1) / 2)
		cs := make([]Candidate, n)
		for i := range cs {
			lambda := 0.1 + rng.Float64()*50
			off := (rng.Float64()*2 - 1) * lambda
			if i < f {
				off = (rng.Float64()*2 - 1) * 200 // anywhere, maybe overlapping
			}
			cs[i] = Candidate{Offset: ms(off), RootDistance: ms(lambda), Jitter: us(rng.Float64() * 100), Stratum: 2, Reachable: true}
		}
		sel, err := Select(cs, SelectConfig{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if d := sel.Distance(); sel.Offset-d > 0 || sel.Offset+d < 0 {
			t.Fatalf("seed %d (n=%d f=%d): Θ %v ± %v misses the truth", seed, n, f, sel.Offset, d)
		}
	}
}

func TestLabels(t *testing.T) {
	// Labels feed status output and metrics: they are stable.
	for v, want := range map[Verdict]string{
		VerdictSysPeer: "sys_peer", VerdictCombined: "combined", VerdictOutlier: "outlier",
		VerdictFalseticker: "falseticker", VerdictExcess: "excess", VerdictUnreachable: "unreachable",
		VerdictStratum: "bad_stratum", VerdictTooFar: "too_far", VerdictLoop: "loop",
		VerdictNoMajority: "no_majority", 0: "unknown", 200: "unknown",
	} {
		if v.String() != want {
			t.Errorf("Verdict(%d) = %q, want %q", v, v.String(), want)
		}
	}
	for o, want := range map[FilterOutcome]string{
		FilterUpdated: "updated", FilterStale: "stale", FilterSpike: "spike", FilterInvalid: "invalid", 0: "unknown",
	} {
		if o.String() != want {
			t.Errorf("FilterOutcome(%d) = %q, want %q", o, o.String(), want)
		}
	}
	if (&KissError{Code: "RATE"}).Error() != "ntp: kiss-o'-death RATE" || (&KissError{}).Error() != "ntp: kiss-o'-death" {
		t.Error("KissError.Error")
	}
	if !(&KissError{Code: "DENY"}).Stop() || !(&KissError{Code: "RSTR"}).Stop() {
		t.Error("DENY/RSTR must stop")
	}
	if (Selection{SysPeer: -1}).Distance() != 0 {
		t.Error("Distance of a failed selection")
	}
	if _, err := NewPoller(PollConfig{MinPoll: 8, MaxPoll: 4}); err == nil {
		t.Error("NewPoller accepted min > max")
	}
	a, _ := NewAssociation(wire.ModeSymmetricActive, 0)
	if a.Mode() != wire.ModeSymmetricActive {
		t.Error("Mode")
	}
}
