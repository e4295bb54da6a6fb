package ntp

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Candidate is one source as the selection sees it: its filter estimate
// reduced to an offset, a jitter and a root distance, plus what the fitness
// checks need.
type Candidate struct {
	// Offset is θ, the source's clock minus the local clock.
	Offset time.Duration
	// Jitter is the source's peer jitter ψ from its clock filter.
	Jitter time.Duration
	// RootDistance is λ (RootDistance()): the half-width of the source's
	// correctness interval [Offset-λ, Offset+λ], which contains the true
	// offset if the source is a truechimer.
	RootDistance time.Duration
	// Stratum is the source's stratum (1 for a primary server).
	Stratum uint8
	// Reachable is false when the source has answered none of the last
	// polls (its reach register is zero) or has no estimate yet.
	Reachable bool
	// Loop is true when the source synchronises to this host (its
	// reference ID is ours): using it would close a timing loop.
	Loop bool
}

// Verdict is what the selection decided about one candidate, like the
// tally codes of `chronyc sources` and ntpq.
type Verdict uint8

const (
	// VerdictSysPeer: selected, and the best survivor (the system peer
	// whose stratum and jitter the system inherits).
	VerdictSysPeer Verdict = iota + 1
	// VerdictCombined: selected: a survivor whose offset is combined.
	VerdictCombined
	// VerdictOutlier: a truechimer pruned by the cluster algorithm.
	VerdictOutlier
	// VerdictFalseticker: its correctness interval misses the intersection
	// of the majority's.
	VerdictFalseticker
	// VerdictExcess: a truechimer beyond the MaxCandidates best.
	VerdictExcess
	// VerdictUnreachable: no recent answer.
	VerdictUnreachable
	// VerdictStratum: stratum 0 (unspecified) or at/above the maximum.
	VerdictStratum
	// VerdictTooFar: root distance beyond the maximum.
	VerdictTooFar
	// VerdictLoop: the source synchronises to us.
	VerdictLoop
	// VerdictNoMajority: usable, but the sources do not agree enough for
	// any of them to be trusted (selection failed).
	VerdictNoMajority
)

var verdictNames = [...]string{
	VerdictSysPeer:     "sys_peer",
	VerdictCombined:    "combined",
	VerdictOutlier:     "outlier",
	VerdictFalseticker: "falseticker",
	VerdictExcess:      "excess",
	VerdictUnreachable: "unreachable",
	VerdictStratum:     "bad_stratum",
	VerdictTooFar:      "too_far",
	VerdictLoop:        "loop",
	VerdictNoMajority:  "no_majority",
}

// String returns a stable label for status output and metrics.
func (v Verdict) String() string {
	if int(v) < len(verdictNames) && verdictNames[v] != "" {
		return verdictNames[v]
	}
	return "unknown"
}

// Selected reports whether the candidate contributes to the system offset.
func (v Verdict) Selected() bool { return v == VerdictSysPeer || v == VerdictCombined }

// SelectConfig tunes Select. The zero value means RFC 5905's values.
type SelectConfig struct {
	// MaxDistance: candidates with a larger root distance are unfit
	// (default MaxDistance, 1 s).
	MaxDistance time.Duration
	// MaxStratum: candidates at or above it are unfit (default 16).
	MaxStratum uint8
	// MinSurvivors: the cluster algorithm stops pruning at this many
	// survivors (default NMIN = 3).
	MinSurvivors int
	// MinSane: fewer truechimers than this is a failure (default NSANE =
	// 1).
	MinSane int
	// MaxCandidates: at most this many truechimers, the best by stratum
	// and distance, go to clustering (default NMAX = 50).
	MaxCandidates int
	// MinDistance floors every root distance for the interval and the
	// weights (default 1 ns; MinDispersion/2 is the RFC's floor).
	MinDistance time.Duration
}

func (c SelectConfig) withDefaults() SelectConfig {
	if c.MaxDistance <= 0 {
		c.MaxDistance = MaxDistance
	}
	if c.MaxStratum == 0 {
		c.MaxStratum = MaxStratum
	}
	if c.MinSurvivors <= 0 {
		c.MinSurvivors = MinClusterSurvivors
	}
	if c.MinSane <= 0 {
		c.MinSane = MinSaneSurvivors
	}
	if c.MaxCandidates <= 0 {
		c.MaxCandidates = MaxCandidates
	}
	if c.MinDistance <= 0 {
		c.MinDistance = 1
	}
	return c
}

// Selection is the outcome of Select.
type Selection struct {
	// Verdicts holds one verdict per candidate, in input order.
	Verdicts []Verdict
	// SysPeer is the index of the system peer, or -1.
	SysPeer int
	// Offset is the combined system offset Θ: the survivors' offsets
	// weighted by 1/λ.
	Offset time.Duration
	// Jitter is the system jitter: the system peer's jitter combined with
	// the selection jitter of the survivors about it.
	Jitter time.Duration
	// Low and High bound the intersection interval the majority agrees
	// on (offsets).
	Low, High time.Duration
	// MajorityLow and MajorityHigh bound the offsets covered by the
	// correctness intervals of a majority of the fit candidates. As long
	// as the truechimers are a majority, the true offset lies in
	// [MajorityLow, MajorityHigh]: this is what makes Distance a
	// truthful error bound.
	MajorityLow, MajorityHigh time.Duration
	// Survivors is the number of selected candidates.
	Survivors int
}

// Select runs the system process of RFC 5905 section 11.2 over the
// candidates and returns the verdict on each and, on success, the combined
// system offset and jitter:
//
//  1. fitness: unreachable, loop, bad stratum and too-far candidates are
//     set aside;
//  2. intersection (11.2.1, Marzullo's algorithm as ntpd runs it): find the
//     smallest number f of falsetickers such that some interval is
//     contained in the correctness intervals of n-f candidates, with
//     2f < n; candidates whose interval misses it are falsetickers;
//  3. cluster (11.2.2): order the truechimers by stratum, then root
//     distance; while more than MinSurvivors remain, drop the one with the
//     largest selection jitter (RMS distance of its offset to the others')
//     unless that jitter is already below the smallest peer jitter;
//  4. combine (11.2.3): Θ = Σ θ_i/λ_i / Σ 1/λ_i; the first survivor is the
//     system peer.
//
// The error wraps ErrNoCandidates when no candidate is fit, ErrNoMajority
// when no majority of them agrees, and ErrTooFewSurvivors when fewer than
// MinSane truechimers remain; the verdicts are filled in even then.
func Select(cands []Candidate, cfg SelectConfig) (Selection, error) {
	cfg = cfg.withDefaults()
	sel := Selection{Verdicts: make([]Verdict, len(cands)), SysPeer: -1}
	fit := fitness(cands, cfg, sel.Verdicts)
	if len(fit) == 0 {
		return sel, ErrNoCandidates
	}
	dist := func(i int) float64 { return float64(max(cands[i].RootDistance, cfg.MinDistance)) }
	in, ok := intersect(correctness(cands, fit, dist))
	if !ok {
		for _, i := range fit {
			sel.Verdicts[i] = VerdictNoMajority
		}
		return sel, fmt.Errorf("%w: %d candidates", ErrNoMajority, len(fit))
	}
	sel.Low, sel.High = time.Duration(math.Floor(in.low)), time.Duration(math.Ceil(in.high))
	sel.MajorityLow, sel.MajorityHigh = time.Duration(math.Floor(in.majLow)), time.Duration(math.Ceil(in.majHigh))
	truechimers := truechimers(cands, fit, dist, in, sel.Verdicts)
	if len(truechimers) < cfg.MinSane {
		for _, i := range truechimers {
			sel.Verdicts[i] = VerdictNoMajority
		}
		return sel, fmt.Errorf("%w: %d of %d needed", ErrTooFewSurvivors, len(truechimers), cfg.MinSane)
	}
	surv := cluster(cands, truechimers, dist, cfg, sel.Verdicts)
	offset, jitter := combine(cands, surv, dist)
	for _, i := range surv {
		sel.Verdicts[i] = VerdictCombined
	}
	sel.Verdicts[surv[0]] = VerdictSysPeer
	sel.SysPeer = surv[0]
	sel.Offset, sel.Jitter = offset, jitter
	sel.Survivors = len(surv)
	return sel, nil
}

// fitness is stage 1 (RFC 5905 A.5.5.2 fit()): it returns the indexes of
// the fit candidates, in input order, and sets the verdict of the others
// (unreachable, bad stratum, too far, loop).
func fitness(cands []Candidate, cfg SelectConfig, verdicts []Verdict) []int {
	fit := make([]int, 0, len(cands))
	for i, c := range cands {
		switch {
		case !c.Reachable:
			verdicts[i] = VerdictUnreachable
		case c.Stratum == 0 || c.Stratum >= cfg.MaxStratum:
			verdicts[i] = VerdictStratum
		case c.RootDistance > cfg.MaxDistance || c.RootDistance < 0:
			verdicts[i] = VerdictTooFar
		case c.Loop:
			verdicts[i] = VerdictLoop
		default:
			fit = append(fit, i)
		}
	}
	return fit
}

// endpoint is one end of a correctness interval: typ -1 for a lower end,
// +1 for an upper one.
type endpoint struct {
	val float64
	typ int
}

// correctness returns the endpoints of the fit candidates' correctness
// intervals [θ-λ, θ+λ], sorted for the intersection's scans: ascending,
// and on equal values lower endpoints first, so that intervals that merely
// touch still intersect (closed intervals).
func correctness(cands []Candidate, fit []int, dist func(int) float64) []endpoint {
	eps := make([]endpoint, 0, 2*len(fit))
	for _, i := range fit {
		o, l := float64(cands[i].Offset), dist(i)
		eps = append(eps, endpoint{o - l, -1}, endpoint{o + l, +1})
	}
	sort.Slice(eps, func(a, b int) bool {
		if eps[a].val != eps[b].val {
			return eps[a].val < eps[b].val
		}
		return eps[a].typ < eps[b].typ
	})
	return eps
}

// intersection is what stage 2 finds.
type intersection struct {
	low, high       float64 // the interval n-f of the intervals contain
	majLow, majHigh float64 // the region a majority of them covers
}

// intersect is stage 2 (RFC 5905 11.2.1, Marzullo's algorithm as ntpd
// runs it) over the sorted endpoints of n intervals: the smallest number f
// of falsetickers, 2f < n, such that some interval [low, high] lies in
// n-f of them, found by scanning up (coverage rises at lower endpoints)
// and down. ok is false when there is none: no majority agrees.
//
// It also returns the region any majority covers: if the truechimers are
// a majority, the true offset is inside every one of their intervals,
// hence covered at least n/2+1 times, so it lies between the first and the
// last point with that coverage, even where [low, high] (which may include
// a falseticker whose interval happens to overlap) does not contain it.
func intersect(eps []endpoint) (in intersection, ok bool) {
	n := len(eps) / 2
	first := func(k int) (float64, bool) { // the lowest point covered k times
		chime := 0
		for _, e := range eps {
			chime -= e.typ
			if chime >= k {
				return e.val, true
			}
		}
		return 0, false
	}
	last := func(k int) (float64, bool) { // the highest point covered k times
		chime := 0
		for j := len(eps) - 1; j >= 0; j-- {
			chime += eps[j].typ
			if chime >= k {
				return eps[j].val, true
			}
		}
		return 0, false
	}
	for allow := 0; 2*allow < n; allow++ {
		low, gotLow := first(n - allow)
		high, gotHigh := last(n - allow)
		if gotLow && gotHigh && high >= low {
			in.low, in.high, ok = low, high, true
			break
		}
	}
	if !ok {
		return intersection{}, false
	}
	in.majLow, _ = first(n/2 + 1)
	in.majHigh, _ = last(n/2 + 1)
	return in, true
}

// truechimers returns the fit candidates whose correctness interval meets
// the intersection, in input order, and marks the others falsetickers.
func truechimers(cands []Candidate, fit []int, dist func(int) float64, in intersection, verdicts []Verdict) []int {
	out := make([]int, 0, len(fit))
	for _, i := range fit {
		o, l := float64(cands[i].Offset), dist(i)
		if o+l < in.low || o-l > in.high {
			verdicts[i] = VerdictFalseticker
			continue
		}
		out = append(out, i)
	}
	return out
}

// cluster is stage 3 (RFC 5905 11.2.2): it orders the truechimers by merit
// (stratum, then root distance: the RFC's stratum × MAXDIST + λ, stable on
// input order for ties), keeps the MaxCandidates best (the rest: excess),
// and, while more than MinSurvivors remain, drops the one with the largest
// selection jitter (the RMS distance of its offset to the others'; the
// later on a tie) unless that jitter is already below the smallest peer
// jitter. It returns the survivors, best first, and marks the outliers.
func cluster(cands []Candidate, truechimers []int, dist func(int) float64, cfg SelectConfig, verdicts []Verdict) []int {
	sort.SliceStable(truechimers, func(a, b int) bool {
		ca, cb := cands[truechimers[a]], cands[truechimers[b]]
		if ca.Stratum != cb.Stratum {
			return ca.Stratum < cb.Stratum
		}
		return dist(truechimers[a]) < dist(truechimers[b])
	})
	if len(truechimers) > cfg.MaxCandidates {
		for _, i := range truechimers[cfg.MaxCandidates:] {
			verdicts[i] = VerdictExcess
		}
		truechimers = truechimers[:cfg.MaxCandidates]
	}
	surv := truechimers
	for len(surv) > cfg.MinSurvivors {
		worst, worstJit := -1, -1.0
		minPeer := math.Inf(1)
		for a, i := range surv {
			var sum float64
			for _, j := range surv {
				d := float64(cands[i].Offset) - float64(cands[j].Offset)
				sum += d * d
			}
			jit := math.Sqrt(sum / float64(len(surv)-1))
			if jit >= worstJit {
				worst, worstJit = a, jit
			}
			minPeer = math.Min(minPeer, float64(cands[i].Jitter))
		}
		if worstJit < minPeer {
			break
		}
		verdicts[surv[worst]] = VerdictOutlier
		surv = append(surv[:worst:worst], surv[worst+1:]...)
	}
	return surv
}

// combine is stage 4 (RFC 5905 11.2.3): the system offset Θ = Σ θ_i/λ_i /
// Σ 1/λ_i over the survivors, and the system jitter: the system peer's
// (the first survivor's) peer jitter combined with the survivors' selection
// jitter about it.
func combine(cands []Candidate, surv []int, dist func(int) float64) (offset, jitter time.Duration) {
	var wsum, osum float64
	for _, i := range surv {
		w := 1 / dist(i)
		wsum += w
		osum += w * float64(cands[i].Offset)
	}
	sys := surv[0]
	var jsum float64
	for _, i := range surv {
		d := float64(cands[i].Offset) - float64(cands[sys].Offset)
		jsum += d * d / dist(i)
	}
	selJitter := math.Sqrt(jsum / wsum)
	peerJitter := float64(cands[sys].Jitter)
	return time.Duration(math.Round(osum / wsum)), time.Duration(math.Round(math.Hypot(peerJitter, selJitter)))
}

// Distance returns the system root distance: the largest distance from the
// combined offset to the edge of the majority region, so that
// [Offset-Distance, Offset+Distance] contains the true offset whenever the
// truechimers are a majority. It is the RootDistance to give the servo for
// Offset. Zero on a failed selection.
func (s Selection) Distance() time.Duration {
	if s.SysPeer < 0 {
		return 0
	}
	return max(s.Offset-s.MajorityLow, s.MajorityHigh-s.Offset, 0)
}
