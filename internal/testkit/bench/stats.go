package bench

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Summary describes a set of measured durations.
type Summary struct {
	N    int
	Min  time.Duration
	P50  time.Duration
	P99  time.Duration
	Max  time.Duration
	Mean time.Duration
}

// Summarize returns the distribution of samples (left unmodified). Its
// percentiles are nearest-rank: the p-th percentile is the smallest sample
// that at least p% of the samples do not exceed. So every percentile is a
// time that was actually measured, and with fewer than 100 samples p99 is
// the maximum: with 20 trials nothing smaller can honestly be called p99.
// An empty set gives the zero Summary (N == 0).
func Summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Summary{
		N:    len(s),
		Min:  s[0],
		P50:  Percentile(s, 50),
		P99:  Percentile(s, 99),
		Max:  s[len(s)-1],
		Mean: sum / time.Duration(len(s)),
	}
}

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// sorted, which must be sorted in increasing order and not empty.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		panic("bench: Percentile of no samples")
	}
	if p <= 0 || p > 100 {
		panic(fmt.Sprintf("bench: Percentile(%v): want 0 < p <= 100", p))
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

// String is the summary as one line: "p50 512.3 ms  p99 601.0 ms  max
// 601.0 ms (n=20)".
func (s Summary) String() string {
	if s.N == 0 {
		return "no samples"
	}
	return fmt.Sprintf("p50 %s  p99 %s  max %s (n=%d)", Millis(s.P50), Millis(s.P99), Millis(s.Max), s.N)
}

// Millis formats d in milliseconds with one decimal: "512.3 ms".
func Millis(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// MB formats a size in decimal megabytes, the unit of the RSS target:
// "7.9 MB".
func MB(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// Rate formats a byte count over an interval as bytes per second: "1234 B/s".
func Rate(n uint64, over time.Duration) string {
	if over <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f B/s", float64(n)/over.Seconds())
}
