package ntp

import (
	"math"
	"time"
)

// Sample is one measurement of a source's clock: the result of one on-wire
// exchange (RFC 5905 section 8), the tuple (θ, δ, ε, t) the clock filter
// stores.
type Sample struct {
	// Offset is θ: the source's clock minus the local clock (positive: the
	// local clock is behind and must move forward).
	Offset time.Duration
	// Delay is δ: the round-trip delay, never below the local precision.
	Delay time.Duration
	// Dispersion is ε: the maximum error of the measurement itself (both
	// clocks' precision plus the drift accumulated during the exchange).
	Dispersion time.Duration
	// Time is the local time of the measurement (T4, the arrival of the
	// reply), on the local clock's scale.
	Time time.Time
	// Sent is T1, when the request of the exchange left, on the local
	// clock's scale. An interleaved answer measures the exchange before
	// it (Association.EnableInterleaved): Sent and Time are that one's.
	Sent time.Time
	// Header is the source's variables as the packet that carried this
	// measurement gave them (zero when none did). The source's clock was
	// only as good as its root delay and dispersion said at that moment:
	// when the filter later picks this sample over newer ones, the bound
	// must be built from this header, not from the newest packet's, or a
	// source that was unsure then and is sure now lends the old sample a
	// certainty it never had (Estimate.Root).
	Header Peer
}

// OffsetDelay computes the clock offset and round-trip delay of one exchange
// from its four timestamps (RFC 5905 section 8):
//
//	  local   t1 ----------------------------> t4
//	              \                        /
//	  remote       t2 --------------------t3
//
//	offset = ((t2 - t1) + (t3 - t4)) / 2
//	delay  = (t4 - t1) - (t3 - t2)
//
// t1 and t4 are read on the local clock, t2 and t3 on the remote one. The
// offset is the remote clock minus the local clock under the assumption that
// both legs take equally long; its error is at most delay/2.
//
// The arithmetic cannot overflow: differences saturate at ±292 years (as
// time.Time.Sub does) and the halves are summed with their remainders
// instead of halving a sum that could wrap. delay is returned as computed and
// may be negative (a remote clock running backwards, or timestamps from
// different exchanges); MakeSample floors it.
func OffsetDelay(t1, t2, t3, t4 time.Time) (offset, delay time.Duration) {
	a := t2.Sub(t1) // outbound leg plus offset
	b := t3.Sub(t4) // minus the return leg, plus offset
	offset = halfSum(a, b)
	delay = subSat(t4.Sub(t1), t3.Sub(t2))
	return offset, delay
}

// halfSum returns (a+b)/2 rounded towards zero without overflowing.
func halfSum(a, b time.Duration) time.Duration {
	h := a/2 + b/2 // cannot overflow: each half is within ±2^62
	r := a%2 + b%2 // in [-2, 2]
	return h + r/2
}

// subSat returns a-b, saturating at the range of time.Duration.
func subSat(a, b time.Duration) time.Duration {
	d := a - b
	// Overflow happened iff a and b have different signs and d's sign
	// differs from a's.
	if (a >= 0) != (b >= 0) && (d >= 0) != (a >= 0) {
		if a >= 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return d
}

// addSat returns a+b, saturating at the range of time.Duration.
func addSat(a, b time.Duration) time.Duration {
	d := a + b
	if (a >= 0) == (b >= 0) && (d >= 0) != (a >= 0) {
		if a >= 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return d
}

// MakeSample builds the filter sample of one exchange (RFC 5905 section 8,
// A.5.1.1 packet()): offset and delay from the four timestamps, the delay
// floored at the local precision (a LAN exchange can measure below the
// clock's resolution, or slightly negative), and the sample dispersion
//
//	ε = ρ_remote + ρ_local + PHI × (t4 - t1)
//
// where ρ are the two clocks' precisions and PHI (MaxDriftPPM) bounds how far
// either clock may have drifted during the exchange. Time is t4, Sent t1.
func MakeSample(t1, t2, t3, t4 time.Time, localPrecision, remotePrecision time.Duration) Sample {
	offset, delay := OffsetDelay(t1, t2, t3, t4)
	delay = max(delay, localPrecision)
	disp := addSat(addSat(localPrecision, remotePrecision), driftOver(t4.Sub(t1), MaxDriftPPM))
	return Sample{Offset: offset, Delay: delay, Dispersion: min(disp, MaxDispersion), Time: t4, Sent: t1}
}

// RootDistance returns λ, the maximum error of a source's clock relative to
// the primary reference at the root of its synchronisation tree, as seen
// from the local clock at now (RFC 5905 section 11.2, A.5.5.2 root_dist()):
//
//	λ = (rootDelay + δ)/2 + rootDisp + ε + PHI × (now - t) + ψ
//
// rootDelay and rootDisp are the source's own (from its packets); δ, ε, ψ
// and t come from the clock filter's current estimate (t is the time ε was
// computed, Estimate.Updated). The RFC floors
// rootDelay + δ at MINDISP (5 ms); synclab does not, because that floor
// makes every LAN bound at least 2.5 ms wide. Pass MinDispersion-floored
// delays yourself for strict RFC behaviour.
func RootDistance(rootDelay, rootDisp time.Duration, e Estimate, now time.Time) time.Duration {
	d := addSat(rootDelay, e.Delay) / 2
	d = addSat(d, rootDisp)
	d = addSat(d, e.DispersionAt(now))
	return addSat(d, e.Jitter)
}
