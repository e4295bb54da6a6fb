package ntp

import (
	"math"
	"sort"
	"time"
)

// Estimate is a clock filter's output for one source: the peer variables of
// RFC 5905 section 11 (θ, δ, ε, ψ, t).
type Estimate struct {
	Offset     time.Duration // θ of the chosen sample
	Delay      time.Duration // δ of the chosen sample
	Dispersion time.Duration // filter dispersion ε at Updated
	Jitter     time.Duration // ψ: RMS of the offset differences, ≥ precision
	Time       time.Time     // local time of the chosen sample
	// Updated is the time of the newest sample in the register when
	// Dispersion (and Jitter) were computed. Every sample refreshes them,
	// even one that does not change the chosen sample: the register's
	// dispersion falls as it fills, whichever sample is best.
	Updated time.Time
	// Header is the chosen sample's Sample.Header.
	Header Peer
}

// Root returns cur, the source's newest variables, with the root delay
// and root dispersion raised to those of the packet that carried the
// chosen sample. The source's error at the sample's time is bounded by
// what it said then; a newer, larger root dispersion says the source is
// less sure now, and is kept too. Stratum, leap and reference ID stay the
// newest (they say what the source is, not how far off it was).
func (e Estimate) Root(cur Peer) Peer {
	cur.RootDelay = max(cur.RootDelay, e.Header.RootDelay)
	cur.RootDispersion = max(cur.RootDispersion, e.Header.RootDispersion)
	return cur
}

// DispersionAt returns the estimate's dispersion grown at PHI up to now.
func (e Estimate) DispersionAt(now time.Time) time.Duration {
	return addSat(e.Dispersion, driftOver(now.Sub(e.Updated), MaxDriftPPM))
}

// FilterOutcome says what Filter.Add did with a sample.
type FilterOutcome uint8

const (
	// FilterUpdated: the filter chose a sample newer than the last one
	// used; the estimate changed and should go to selection.
	FilterUpdated FilterOutcome = iota + 1
	// FilterStale: the lowest-delay sample is one already used (or older);
	// the sample was stored and the estimate's dispersion and jitter
	// refreshed, but its offset is not new. This is the normal result of
	// a reply that had more delay than an earlier one.
	FilterStale
	// FilterSpike: the popcorn spike suppressor discarded the chosen
	// sample: its offset jumped by more than SpikeGate × jitter less than
	// two poll intervals after the last sample used. The sample stays in
	// the register; if it is still the best one two poll intervals after
	// the last update, it is taken to be a real change and used.
	FilterSpike
	// FilterInvalid: the sample was refused (zero time, dispersion or delay
	// at or above MaxDispersion, or older than the newest stored sample).
	FilterInvalid
)

func (o FilterOutcome) String() string {
	switch o {
	case FilterUpdated:
		return "updated"
	case FilterStale:
		return "stale"
	case FilterSpike:
		return "spike"
	case FilterInvalid:
		return "invalid"
	}
	return "unknown"
}

// Filter is the clock filter of RFC 5905 section 10 for one source. It keeps
// the last NStage samples in a shift register, newest first:
//
//	Add(s) -> [ s0 | s1 | s2 | s3 | s4 | s5 | s6 | s7 ] -> oldest dropped
//	            each ε_i grows at PHI × (now - t_i)
//	sorted by delay: the minimum-delay sample is chosen (its offset is
//	the least affected by queueing), jitter = RMS(θ_i - θ_chosen)
//
// and reports the minimum-delay sample as the source's estimate, subject to
// two rules:
//
//   - each sample is used at most once, and never one older than the last
//     sample used (RFC's "prime directive"): feeding the discipline the same
//     measurement twice would make it overreact;
//   - the popcorn spike suppressor: a chosen sample whose offset differs from
//     the last estimate by more than SpikeGate × the last jitter, less than
//     two poll intervals after the last update, is ignored, and the jitter
//     is not updated from it. The
//     gate uses the jitter from before the spike because a spike inflates the
//     jitter computed with it and would walk through its own gate. It only
//     acts once that jitter was computed from at least NStage/2 samples.
//
// The zero Filter is empty and uses a jitter floor of 1 ns; NewFilter sets
// the floor to the local clock precision. A Filter is not safe for
// concurrent use.
type Filter struct {
	stages [NStage]Sample // stages[0] is the newest
	n      int            // stages in use

	precision time.Duration // jitter floor

	est   Estimate // the last estimate produced (valid if used)
	used  bool     // est holds a used sample
	basis int      // samples in the register when est was computed
}

// spikeMinSamples is how many samples the jitter must have been computed
// from before the spike suppressor trusts it as a scale. The RFC gates from
// the second sample on, when the jitter is still the precision floor (or the
// difference of two samples): every ordinary LAN sample of a fresh burst
// would then be thrown away as a spike.
const spikeMinSamples = NStage / 2

// NewFilter returns an empty filter whose jitter is never reported below
// precision (the local clock's resolution: a jitter of zero would make the
// spike gate refuse any change at all).
func NewFilter(precision time.Duration) *Filter {
	return &Filter{precision: max(precision, 1)}
}

// Len returns the number of samples in the register.
func (f *Filter) Len() int { return f.n }

// Samples returns the register's samples, newest first.
func (f *Filter) Samples() []Sample {
	return append([]Sample(nil), f.stages[:f.n]...)
}

// Estimate returns the current estimate and whether there is one (at least
// one sample has been used).
func (f *Filter) Estimate() (Estimate, bool) { return f.est, f.used }

// Reset empties the filter (after a clock step the daemon could not
// account for with Shift, or when a source restarts).
func (f *Filter) Reset() {
	prec := f.precision
	*f = Filter{precision: prec}
}

// Shift accounts for a correction of the local clock: the clock was moved
// forward by d (a slew commanded or a step applied), so every stored offset,
// which is remote minus local, is d smaller than it was when measured.
// Without this, the discipline's own corrections would look like spikes and
// old samples would be acted on twice.
func (f *Filter) Shift(d time.Duration) {
	for i := range f.n {
		f.stages[i].Offset = subSat(f.stages[i].Offset, d)
	}
	if f.used {
		f.est.Offset = subSat(f.est.Offset, d)
	}
}

// Add shifts s into the register and recomputes the estimate (RFC 5905
// A.5.2 clock_filter()). poll is the source's current poll interval: the
// spike suppressor only acts until two poll intervals have passed since the
// last sample used (measured to s.Time), so a genuine change of offset gets
// through after that instead of being refused for as long as it lasts.
func (f *Filter) Add(s Sample, poll time.Duration) FilterOutcome {
	if s.Time.IsZero() || s.Delay >= MaxDispersion || s.Dispersion >= MaxDispersion ||
		s.Delay < 0 || s.Dispersion < 0 {
		return FilterInvalid
	}
	if f.n > 0 && s.Time.Before(f.stages[0].Time) {
		return FilterInvalid
	}
	copy(f.stages[1:], f.stages[:NStage-1])
	f.stages[0] = s
	f.n = min(f.n+1, NStage)

	now := s.Time
	// Sort a copy by delay; on equal delay the newer sample wins (the
	// register is newest first and the sort is stable).
	var sorted [NStage]Sample
	copy(sorted[:], f.stages[:f.n])
	list := sorted[:f.n]
	sort.SliceStable(list, func(i, j int) bool { return list[i].Delay < list[j].Delay })

	// Filter dispersion: ε = Σ ε_i / 2^(i+1) over all NStage stages in
	// delay order, empty stages counting MaxDispersion. Recent low-delay
	// samples dominate; a half-empty register is correctly very uncertain.
	var disp float64
	for i := NStage - 1; i >= 0; i-- {
		e := float64(MaxDispersion)
		if i < f.n {
			e = float64(addSat(list[i].Dispersion, driftOver(now.Sub(list[i].Time), MaxDriftPPM)))
		}
		disp = (disp + e) / 2
	}

	chosen := list[0]
	jitter := f.jitter(list)
	dispersion := time.Duration(math.Ceil(disp))

	if f.used && !chosen.Time.After(f.est.Time) {
		// The best sample is one already used: the offset stays, the
		// register's statistics are refreshed.
		f.est.Dispersion, f.est.Jitter, f.est.Updated = dispersion, jitter, now
		return FilterStale
	}
	if f.used && f.basis >= spikeMinSamples {
		jump := math.Abs(float64(chosen.Offset) - float64(f.est.Offset))
		// f.est.Jitter is the jitter before this sample arrived.
		if jump > SpikeGate*float64(f.est.Jitter) && now.Sub(f.est.Time) < 2*poll {
			// The jitter keeps its pre-spike value (the spike would
			// inflate it); the dispersion is still the register's.
			f.est.Dispersion, f.est.Updated = dispersion, now
			return FilterSpike
		}
	}
	f.est = Estimate{
		Offset:     chosen.Offset,
		Delay:      chosen.Delay,
		Dispersion: dispersion,
		Jitter:     jitter,
		Time:       chosen.Time,
		Updated:    now,
		Header:     chosen.Header,
	}
	f.used = true
	f.basis = f.n
	return FilterUpdated
}

// jitter returns ψ = sqrt(Σ_{i≥1} (θ_i - θ_0)² / (n-1)) over the samples
// sorted by delay, floored at the precision.
func (f *Filter) jitter(list []Sample) time.Duration {
	if len(list) < 2 {
		return max(f.precision, 1)
	}
	var sum float64
	for _, s := range list[1:] {
		d := float64(s.Offset) - float64(list[0].Offset)
		sum += d * d
	}
	j := time.Duration(math.Round(math.Sqrt(sum / float64(len(list)-1))))
	return max(j, f.precision, 1)
}
