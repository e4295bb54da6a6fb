package order

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/testkit/leadcheck"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/order/rsm"
)

// TestSimSlowWritesSequencerChurn measures orderd's sequencer election
// with every state write taking 0, 200, 700 or 1500 ms (sim
// SetWriteLatency, drawn within 25% of that), at orderd's defaults (200 ms heartbeats, 400 ms
// leader timeout, 4 ms probes), on 3 members over a minute with a
// total-order multicast every 500 ms: the terms elected in that minute.
// The daemon's loop blocks in each write, the sequencer's heartbeats
// with it, so writes longer than the silence a sequencer is allowed (the
// timeout less a heartbeat: 200 ms) make the members elect again, and
// each election writes again: the lab's measurement with strace's fsync
// delay on 3 orderds (3 terms in 30 s at 200 ms per fsync, 8 at 700 ms;
// a snapshot is two fsyncs, so a write there takes 2-3 times the
// injected delay). This pins today's behaviour: the churn at 700 and
// 1500 ms is the defect that writing off the loop (docs/design.md,
// "Slow disks") must remove; a fix turns the last check around.
func TestSimSlowWritesSequencerChurn(t *testing.T) {
	opts := elect.Options{Heartbeat: 200 * time.Millisecond, LeaderTimeout: 400 * time.Millisecond, Probe: 4 * time.Millisecond, HintProbe: 30 * time.Millisecond}
	cfg := DefaultLANConfig()
	cfg.Heartbeat = min(opts.Heartbeat, cfg.Heartbeat)
	cfg.Election = func(env core.Env) (elect.Elector, error) {
		return bully.New(env, SequencerElection(bully.FromOptions(env.Members, opts)))
	}
	cfg.Machine = func() StateMachine { return rsm.New() }
	for _, lat := range []time.Duration{0, 200 * time.Millisecond, 700 * time.Millisecond, 1500 * time.Millisecond} {
		var counts []int
		for seed := int64(1); seed <= 5; seed++ {
			s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: 200 * time.Microsecond}})
			addMembers(t, s, 3, cfg)
			for _, id := range s.IDs() {
				s.SetWriteLatency(id, lat*3/4, lat*5/4)
			}
			for i := range 120 {
				s.Run(500 * time.Millisecond)
				id := uint32(1 + i%3)
				_ = s.Do(id, func(c core.Core) { _ = c.(*Core).Multicast(s.Clock(id).Now(), TotalOrder, []byte(fmt.Sprint(i))) })
			}
			terms, first := leadcheck.Terms(s.Events(), 0)
			t.Logf("writes of %v: first sequencer at %v, %d terms in a minute (seed %d)", lat, first, terms, seed)
			if first < 0 {
				t.Fatalf("writes of %v: no sequencer in a minute (seed %d)", lat, seed)
			}
			counts = append(counts, terms)
		}
		slices.Sort(counts)
		switch median := counts[len(counts)/2]; {
		case lat == 0 && counts[len(counts)-1] != 1:
			t.Fatalf("instant writes: terms in a minute %v, want 1 each", counts)
		case lat == 200*time.Millisecond && counts[len(counts)-1] > 4:
			t.Fatalf("writes of %v: terms in a minute %v, want the start's few (<= 4)", lat, counts)
		case lat >= 700*time.Millisecond && median < 10:
			// The median over drawn latencies: members whose writes fall
			// in step are all blocked at once, none timing the others out,
			// and some seeds settle for a while (700 ms, fixed, seed 3: 4).
			t.Fatalf("writes of %v: terms in a minute %v (median %d): the churn measured with the loop blocked in its writes is gone (if writing left the loop, turn this check around)", lat, counts, median)
		}
	}
}
