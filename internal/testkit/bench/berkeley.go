package bench

import (
	"maps"
	"slices"
	"time"
)

// Spread is the largest difference between two of offs: with the true
// offsets of a group's clocks, the group's precision. Zero for fewer than
// two.
func Spread(offs []time.Duration) time.Duration {
	if len(offs) < 2 {
		return 0
	}
	return slices.Max(offs) - slices.Min(offs)
}

// Point is one sample of a series taken At this long after its start; OK
// is false when the sample could not be taken or does not count (a member
// did not answer, the group had no single master).
type Point struct {
	At    time.Duration
	Value time.Duration
	OK    bool
}

// SettledAt returns when the series got below limit to stay: the first
// sample from which every sample for at least hold is OK and below limit.
// A dip that does not last hold does not count, and neither does one the
// series ends before hold is over (ok false).
func SettledAt(series []Point, limit, hold time.Duration) (at time.Duration, ok bool) {
	start := -1
	for i, p := range series {
		if !p.OK || p.Value >= limit {
			start = -1
			continue
		}
		if start < 0 {
			start = i
		}
		if p.At-series[start].At >= hold {
			return series[start].At, true
		}
	}
	return 0, false
}

// PerRound divides the growth of frame counters by kind, summed over a
// group's members, by the rounds run in between: the traffic of one round.
// Counters of members that appear in only one of the two snapshots are
// ignored; kinds that did not grow are left out.
func PerRound(before, after map[int]map[string]uint64, rounds uint64) map[string]float64 {
	out := map[string]float64{}
	if rounds == 0 {
		return out
	}
	for id, a := range after {
		b, ok := before[id]
		if !ok {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(a)) {
			if d := a[k] - min(a[k], b[k]); d > 0 {
				out[k] += float64(d) / float64(rounds)
			}
		}
	}
	return out
}
