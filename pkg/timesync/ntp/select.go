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

	// 1. Fitness (RFC A.5.5.2 fit()).
	fit := make([]int, 0, len(cands))
	for i, c := range cands {
		switch {
		case !c.Reachable:
			sel.Verdicts[i] = VerdictUnreachable
		case c.Stratum == 0 || c.Stratum >= cfg.MaxStratum:
			sel.Verdicts[i] = VerdictStratum
		case c.RootDistance > cfg.MaxDistance || c.RootDistance < 0:
			sel.Verdicts[i] = VerdictTooFar
		case c.Loop:
			sel.Verdicts[i] = VerdictLoop
		default:
			fit = append(fit, i)
		}
	}
	if len(fit) == 0 {
		return sel, ErrNoCandidates
	}
	dist := func(i int) float64 { return float64(max(cands[i].RootDistance, cfg.MinDistance)) }

	// 2. Intersection. Each candidate contributes a lower endpoint (type
	// -1) and an upper endpoint (+1). Scanning up, coverage rises at lower
	// endpoints; the first point covered by n-f intervals is low. Scanning
	// down gives high. On equal values lower endpoints sort first so that
	// intervals that merely touch still intersect (closed intervals).
	type endpoint struct {
		val float64
		typ int
	}
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
	n := len(fit)
	var low, high float64
	found := false
	for allow := 0; 2*allow < n; allow++ {
		chime, gotLow, gotHigh := 0, false, false
		for _, e := range eps {
			chime -= e.typ
			if chime >= n-allow {
				low, gotLow = e.val, true
				break
			}
		}
		chime = 0
		for k := len(eps) - 1; k >= 0; k-- {
			chime += eps[k].typ
			if chime >= n-allow {
				high, gotHigh = eps[k].val, true
				break
			}
		}
		if gotLow && gotHigh && high >= low {
			found = true
			break
		}
	}
	if !found {
		for _, i := range fit {
			sel.Verdicts[i] = VerdictNoMajority
		}
		return sel, fmt.Errorf("%w: %d candidates", ErrNoMajority, n)
	}
	sel.Low, sel.High = time.Duration(math.Floor(low)), time.Duration(math.Ceil(high))

	// The region any majority covers. If the truechimers are a majority
	// the true offset is inside every one of their intervals, hence
	// covered at least n/2+1 times: it lies between the first and the last
	// point with that coverage, even where the intersection above (which
	// may include a falseticker whose interval happens to overlap) does
	// not contain it.
	maj := n/2 + 1
	chime := 0
	for _, e := range eps {
		chime -= e.typ
		if chime >= maj {
			sel.MajorityLow = time.Duration(math.Floor(e.val))
			break
		}
	}
	chime = 0
	for k := len(eps) - 1; k >= 0; k-- {
		chime += eps[k].typ
		if chime >= maj {
			sel.MajorityHigh = time.Duration(math.Ceil(eps[k].val))
			break
		}
	}

	truechimers := make([]int, 0, n)
	for _, i := range fit {
		o, l := float64(cands[i].Offset), dist(i)
		if o+l < low || o-l > high {
			sel.Verdicts[i] = VerdictFalseticker
			continue
		}
		truechimers = append(truechimers, i)
	}
	if len(truechimers) < cfg.MinSane {
		for _, i := range truechimers {
			sel.Verdicts[i] = VerdictNoMajority
		}
		return sel, fmt.Errorf("%w: %d of %d needed", ErrTooFewSurvivors, len(truechimers), cfg.MinSane)
	}

	// 3. Cluster. The merit order: stratum first, then root distance
	// (RFC: stratum × MAXDIST + λ), stable on input order for ties.
	sort.SliceStable(truechimers, func(a, b int) bool {
		ca, cb := cands[truechimers[a]], cands[truechimers[b]]
		if ca.Stratum != cb.Stratum {
			return ca.Stratum < cb.Stratum
		}
		return dist(truechimers[a]) < dist(truechimers[b])
	})
	if len(truechimers) > cfg.MaxCandidates {
		for _, i := range truechimers[cfg.MaxCandidates:] {
			sel.Verdicts[i] = VerdictExcess
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
			// On equal jitter drop the later (worse merit) candidate.
			if jit >= worstJit {
				worst, worstJit = a, jit
			}
			minPeer = math.Min(minPeer, float64(cands[i].Jitter))
		}
		if worstJit < minPeer {
			break
		}
		sel.Verdicts[surv[worst]] = VerdictOutlier
		surv = append(surv[:worst:worst], surv[worst+1:]...)
	}

	// 4. Combine.
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
	for _, i := range surv {
		sel.Verdicts[i] = VerdictCombined
	}
	sel.Verdicts[sys] = VerdictSysPeer
	sel.SysPeer = sys
	sel.Offset = time.Duration(math.Round(osum / wsum))
	sel.Jitter = time.Duration(math.Round(math.Hypot(peerJitter, selJitter)))
	sel.Survivors = len(surv)
	return sel, nil
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
