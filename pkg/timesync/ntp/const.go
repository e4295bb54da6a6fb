package ntp

import "time"

// Protocol constants of RFC 5905 (section 7.2 and appendix A.1.1), as
// durations where they are times. Where synclab departs from the RFC's value
// the comment says why.
const (
	// MaxDriftPPM is PHI, the frequency tolerance every NTP clock is
	// assumed to keep: 15 ppm (15 µs per second). Dispersion grows at this
	// rate between samples.
	MaxDriftPPM = 15.0

	// NStage is the number of stages of the clock filter's shift register.
	NStage = 8

	// MaxDispersion is MAXDISP: the dispersion of an empty filter stage and
	// the largest dispersion a sample can carry.
	MaxDispersion = 16 * time.Second

	// MinDispersion is MINDISP, the RFC's floor on a peer's root delay in
	// the root distance. synclab does not apply it by default (see
	// RootDistance): on a LAN it would inflate every error bound to
	// milliseconds. SelectConfig.MinDistance may use it.
	MinDispersion = 5 * time.Millisecond

	// MaxDistance is MAXDIST: a source whose root distance exceeds it is
	// not fit to synchronise to.
	MaxDistance = time.Second

	// MaxStratum is MAXSTRAT: stratum 16 means unsynchronised.
	MaxStratum = 16

	// SpikeGate is SGATE: the popcorn spike suppressor discards a sample
	// whose offset differs from the last one used by more than SpikeGate
	// times the peer jitter.
	SpikeGate = 3

	// MinClusterSurvivors is NMIN: the cluster algorithm never prunes
	// below this many survivors.
	MinClusterSurvivors = 3

	// MinSaneSurvivors is NSANE: selection fails with fewer truechimers.
	MinSaneSurvivors = 1

	// MaxCandidates is NMAX: the most sources the cluster algorithm
	// considers (the rest, the worst by stratum and distance, are
	// reported as Excess).
	MaxCandidates = 50
)

// Precision converts an NTP precision exponent (log2 seconds, as carried in
// the packet's Precision field) to a duration, at least 1 ns. An exponent of
// -20 is about 1 µs; -30 or below gives 1 ns.
func Precision(exp int8) time.Duration {
	switch {
	case exp >= 31: // beyond any plausible clock; saturate rather than overflow
		return time.Duration(1<<62 - 1)
	case exp >= 0:
		return time.Duration(int64(time.Second) << uint(exp))
	}
	d := time.Duration(int64(time.Second) >> uint(-exp))
	if d < 1 {
		d = 1
	}
	return d
}

// driftOver returns the dispersion accumulated over elapsed at ppm parts per
// million, rounded up so that bounds built from it never shrink by rounding.
// Negative elapsed times (a clock read out of order) count as zero.
func driftOver(elapsed time.Duration, ppm float64) time.Duration {
	if elapsed <= 0 || ppm <= 0 {
		return 0
	}
	ns := float64(elapsed) * ppm * 1e-6
	if ns >= float64(1<<62) {
		return time.Duration(1 << 62)
	}
	d := time.Duration(ns)
	if float64(d) < ns {
		d++
	}
	return d
}
