package tracecheck

import (
	"fmt"
	"slices"
	"time"
)

// timedProperties are timed's promises. A synchronised clock publishes an
// error bound, its maximum error (the kernel's, which NTP clients read as
// the root dispersion and `timed status` shows): how far it may be from
// its reference's time. A run on simulated clocks (--clock sim) records
// with every event both that bound and the clock's exact error
// (trace.Event's max_error_ns and true_offset_ns).
//
// The reference is not true time in general: a Berkeley group keeps its
// own average, an NTP tree its root's clock. So the check is the one that
// holds whatever the common reference: two clocks within their bounds of
// one reference are within the sum of their bounds of each other. Two
// clocks farther apart than that, at one instant, are a violation: one of
// them was farther from the reference than it published.
var timedProperties = []property{
	{name: "offset-within-bound", promise: "every synchronised clock within the error bound it publishes of its reference's time (checked where the traces carry the truth: simulated clocks)",
		applies: groundTruth, check: checkOffsetBound},
}

// pairWindow is how far apart in true time two clocks' samples may be to
// be compared; their offsets may part by driftPPM of it meanwhile, which
// the check allows.
const pairWindow = 10 * time.Millisecond

func groundTruth(r *run, c *cluster) string {
	for _, i := range c.events {
		if r.d.Events[i].TrueOffset != nil {
			return ""
		}
	}
	return "the traces carry no ground truth (a clock's true offset is known on simulated clocks only: timed run --clock sim): not checked"
}

// sample is one event's word on its clock.
type sample struct {
	ev         int
	t          time.Time // true time
	off, bound time.Duration
	file       string
	id         uint32
	host       string
}

func checkOffsetBound(r *run, c *cluster) Result {
	byFile := map[string][]sample{}
	var files []string
	for _, i := range c.events {
		e := &r.d.Events[i]
		if e.TrueOffset == nil || e.MaxError <= 0 || e.T.IsZero() {
			continue
		}
		off := time.Duration(*e.TrueOffset)
		p := &r.d.Procs[e.Proc]
		if byFile[e.File] == nil {
			files = append(files, e.File)
		}
		byFile[e.File] = append(byFile[e.File], sample{ev: i, t: e.T.Add(-off), off: off, bound: time.Duration(e.MaxError), file: e.File, id: p.ID, host: p.Host})
	}
	for _, f := range files {
		slices.SortStableFunc(byFile[f], func(a, b sample) int { return a.t.Compare(b.t) })
	}
	var t tally
	worst := 0.0
	for x, fa := range files {
		for _, fb := range files[x+1:] {
			bs := byFile[fb]
			for _, a := range byFile[fa] {
				j, _ := slices.BinarySearchFunc(bs, a.t, func(s sample, t time.Time) int { return s.t.Compare(t) })
				// The nearest of bs[j-1] and bs[j].
				best := -1
				for _, k := range []int{j - 1, j} {
					if k >= 0 && k < len(bs) && (best < 0 || bs[k].t.Sub(a.t).Abs() < bs[best].t.Sub(a.t).Abs()) {
						best = k
					}
				}
				if best < 0 || bs[best].t.Sub(a.t).Abs() > pairWindow {
					continue
				}
				b := bs[best]
				gap := b.t.Sub(a.t).Abs()
				allow := a.bound + b.bound + time.Duration(float64(gap)*driftPPM/1e6)
				apart := (a.off - b.off).Abs()
				t.checked++
				if apart <= allow {
					worst = max(worst, float64(apart)/float64(allow))
					continue
				}
				t.violation(fmt.Sprintf("member %d (%s) published an error bound of %v and member %d (%s) one of %v, %v apart in true time, yet their clocks were %v apart: more than both bounds together, so one was farther from their reference than it said",
					a.id, a.host, a.bound, b.id, b.host, b.bound, gap, apart), r.refs([2]int{a.ev, b.ev}))
			}
		}
	}
	if t.checked == 0 {
		t.unsure(fmt.Sprintf("no two clocks published a bound within %v of each other in true time (%s)", pairWindow, plural(len(files), "clock")+" with a bound"), nil)
	}
	return t.result(fmt.Sprintf("%s of two clocks' samples (%s with a bound): every two within both bounds of each other (at most %.0f%% of them)",
		plural(t.checked, "pair"), plural(len(files), "clock"), worst*100), "pairs")
}
