package diagram

import (
	"fmt"
	"strings"

	"github.com/synclab/synclab/pkg/clock"
)

// CheckCausality checks the layout against the traces' own vector times,
// the ground truth of a simulated or hand-driven run: every event has a
// vector; every arrow goes forward in columns and in real time; and for
// every pair of events, the diagram's relation (Relation) is what their
// vectors say, an event drawn left of another when it happened before it
// (also with the heartbeats folded away, when neither is one), and two
// events with one vector drawn as one point. It returns the first
// few pairs drawn against their vectors. A daemon's traces without vectors
// cannot be checked.
func (d *Diagram) CheckCausality() error {
	vecs := make([]clock.Vector, len(d.Events))
	for i, e := range d.Events {
		if len(e.VC) == 0 {
			return fmt.Errorf("event %d (%s) has no vector time", i, d.describe(i))
		}
		vecs[i] = e.VC.Vector()
	}
	col := func(i int) int { return d.Groups[d.Events[i].Group].Col }
	fcol := func(i int) int { return d.Groups[d.Events[i].Group].FoldCol }
	beat := func(i int) bool { return d.Groups[d.Events[i].Group].Heartbeat }
	for _, m := range d.Messages {
		if m.Send < 0 || m.Recv < 0 {
			continue
		}
		if col(m.Send) >= col(m.Recv) {
			return fmt.Errorf("arrow %s drawn from column %d back to %d", m.Frame, col(m.Send), col(m.Recv))
		}
		if d.Events[m.Recv].T.Before(d.Events[m.Send].T) {
			return fmt.Errorf("frame %s received before it was sent (true time)", m.Frame)
		}
	}
	var bad []string
	n := 0
	for a := range d.Events {
		for b := a + 1; b < len(d.Events); b++ {
			want, got := clock.Compare(vecs[a], vecs[b]), d.Relation(a, b)
			ok := want == got
			switch want {
			case clock.Before:
				ok = ok && col(a) < col(b) && (beat(a) || beat(b) || fcol(a) < fcol(b))
			case clock.After:
				ok = ok && col(b) < col(a) && (beat(a) || beat(b) || fcol(b) < fcol(a))
			case clock.Equal:
				ok = ok && d.Events[a].Group == d.Events[b].Group
			}
			if !ok {
				if n++; n <= 5 {
					bad = append(bad, fmt.Sprintf("events %d and %d: vectors say %v, diagram %v (columns %d, %d; folded %d, %d)\n  %s\n  %s",
						a, b, want, got, col(a), col(b), fcol(a), fcol(b), d.describe(a), d.describe(b)))
				}
			}
		}
	}
	if n > 0 {
		return fmt.Errorf("%d pairs drawn against their vector times:\n%s", n, strings.Join(bad, "\n"))
	}
	return nil
}

// Arrows counts the arrows of delivered frames: sent and received in the
// traces, not refused.
func (d *Diagram) Arrows() int {
	n := 0
	for _, m := range d.Messages {
		if m.Send >= 0 && m.Recv >= 0 && !m.Dropped {
			n++
		}
	}
	return n
}
