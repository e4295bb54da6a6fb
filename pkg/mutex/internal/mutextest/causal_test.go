package mutextest

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/wire"
)

// TestCausalOracle: the causal oracle refuses a dependent granted while
// the request it names waited, however that request then ends, and
// excuses it only where the algorithm gives way: the predecessor's
// member was faulted before the dependent's grant. Two histories a core
// that ignores the order produces passed before: a predecessor that
// ended without a grant (lost, or its member crashed) after its
// dependent was granted, and one whose member was faulted only after
// its dependent's grant ("any fault excuses everything"). A predecessor
// the algorithm refused (Config.CausalRefused) ends at the refusal, not
// at its member's report, and only if it is not granted after all, and
// its member reports it lost (a crash or a withdrawal later is its end).
func TestCausalOracle(t *testing.T) {
	const p, d = 1, 2 // the predecessor's member, the dependent's
	type step struct {
		at    int // ms
		what  string
		fault [2]int // "fault": its window on p's member, ms (end 0: open)
	}
	for _, tc := range []struct {
		name  string
		steps []step
		wrong bool
	}{
		{"in order", []step{{at: 5, what: "grant p"}, {at: 10, what: "grant d"}}, false},
		{"dependent first", []step{{at: 10, what: "grant d"}, {at: 500, what: "grant p"}}, true},
		{"both at once", []step{{at: 10, what: "grant d"}, {at: 10, what: "grant p"}}, false},
		{"dependent first, predecessor lost later", []step{{at: 10, what: "grant d"}, {at: 500, what: "end p"}}, true},
		{"dependent first, predecessor's member crashed later", []step{{at: 10, what: "grant d"}, {at: 500, what: "crash p"}}, true},
		{"predecessor lost, then its dependent", []step{{at: 5, what: "end p"}, {at: 10, what: "grant d"}}, false},
		{"predecessor lost with its dependent", []step{{at: 10, what: "grant d"}, {at: 10, what: "end p"}}, false},
		{"dependent first, predecessor's member faulted later", []step{{at: 10, what: "grant d"}, {at: 400, what: "fault", fault: [2]int{400, 1400}}, {at: 1500, what: "grant p"}}, true},
		{"predecessor's member faulted first", []step{{at: 5, what: "fault", fault: [2]int{5, 1000}}, {at: 500, what: "grant d"}, {at: 1100, what: "grant p"}}, false},
		{"predecessor's member faulted first, predecessor lost", []step{{at: 5, what: "fault", fault: [2]int{5, 0}}, {at: 500, what: "grant d"}, {at: 1100, what: "end p"}}, false},
		{"fault over before the request", []step{{at: 0, what: "fault", fault: [2]int{-100, -50}}, {at: 10, what: "grant d"}, {at: 500, what: "grant p"}}, true},
		// Config.CausalRefused: the coordinator's refusal ends the
		// predecessor, not its member's later report of it.
		{"predecessor refused, then its dependent, the refusal reported later", []step{{at: 5, what: "refuse p"}, {at: 10, what: "grant d"}, {at: 500, what: "end p"}}, false},
		{"dependent first, predecessor refused later", []step{{at: 10, what: "grant d"}, {at: 400, what: "refuse p"}, {at: 500, what: "end p"}}, true},
		{"predecessor refused, its dependent granted, then the predecessor granted after all", []step{{at: 5, what: "refuse p"}, {at: 10, what: "grant d"}, {at: 500, what: "grant p"}}, true},
		// A refusal its member never acts on (a stale coordinator's, one
		// lost with a cut: the request waits again) ends nothing; a crash
		// or withdrawal later is the end (review-tokenask2).
		{"predecessor refused, never acted on, its dependent granted, then its member crashed", []step{{at: 5, what: "refuse p"}, {at: 100, what: "grant d"}, {at: 500, what: "crash p"}}, true},
		{"predecessor refused, never acted on, its dependent granted, then it was withdrawn", []step{{at: 5, what: "refuse p"}, {at: 100, what: "grant d"}, {at: 500, what: "withdraw p"}}, true},
	} {
		f := &fatal{TB: t}
		c := &Cluster{t: f, s: sim.New(sim.Config{Seed: 1}), cfg: Config{Hosts: Calm},
			causal: &causalOracle{reqs: map[uint64]*creq{}, byStamp: map[uint32]map[uint64]*creq{}}}
		o := c.causal
		pr := &creq{node: p, stamp: 1<<32 | 1}
		dr := &creq{node: d, stamp: 1<<32 | 1, after: clock.VectorOf(map[uint32]uint64{p: pr.stamp})}
		for _, r := range []*creq{pr, dr} {
			o.reqs[uint64(r.node)<<32|1] = r
			o.byStamp[r.node] = map[uint64]*creq{r.stamp: r}
		}
		for _, s := range tc.steps {
			at := time.Duration(s.at) * time.Millisecond
			switch s.what {
			case "grant p":
				c.causalGranted(p, 1, at)
			case "grant d":
				c.causalGranted(d, 1, at)
			case "end p":
				c.causalEnded(p, 1, at, true)
			case "refuse p":
				// The coordinator's refusal of p, leaving it at at.
				c.cfg.CausalRefused = func(wire.Frame) (uint32, uint64, bool) { return p, pr.stamp, true }
				c.s.Run(at - c.s.Elapsed())
				c.causalRefused(sim.SentFrame{})
			case "crash p":
				c.causalEnded(p, 0, at, false)
			case "withdraw p":
				c.causalEnded(p, 1, at, false)
			case "fault":
				fl := fault{node: p, start: time.Duration(s.fault[0]) * time.Millisecond}
				if s.fault[1] != 0 {
					fl.end = time.Duration(s.fault[1]) * time.Millisecond
				}
				o.faults = append(o.faults, fl)
			}
		}
		if got := f.msg != ""; got != tc.wrong {
			t.Errorf("%s: violation found %v, want %v (%s)", tc.name, got, tc.wrong, f.msg)
		}
	}
}
