package algorithms_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/testkit/leadcheck"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/algorithms"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/elect/internal/electtest"
)

// TestSimSlowWritesDefaultElection measures electd's default election
// (bully at electd's timings: 200 ms heartbeats, 400 ms leader timeout,
// 4 ms probes) with every state write taking 0, 200, 700 or 1500 ms (sim
// SetWriteLatency, drawn within 25% of that), on 3 members over a
// minute. Unlike orderd's sequencer (TestSimSlowWritesSequencerChurn in
// pkg/order), a bully leader writes nothing once elected, so its
// heartbeats stop waiting for the disk once the terms settle: the
// start's election takes a few writes longer (a term reserved, claimed,
// adopted), and with writes longer than the 200 ms a leader may be
// silent, every one of them blocks a new leader long enough for the
// others to elect again, for up to ~13 s at 1.5 s writes (seed 3: 4
// terms, the last won at 11.7 s); then the leader stays. What a slow disk costs electd is that
// start, and every failover as much.
func TestSimSlowWritesDefaultElection(t *testing.T) {
	alg, err := elect.Lookup(algorithms.All, algorithms.Default)
	if err != nil {
		t.Fatal(err)
	}
	opts := bully.Probed
	opts.AnswerTimeout = 50 * time.Millisecond // electd's --answer-timeout default
	for _, lat := range []time.Duration{0, 200 * time.Millisecond, 700 * time.Millisecond, 1500 * time.Millisecond} {
		for seed := int64(1); seed <= 5; seed++ {
			s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: time.Millisecond}})
			c := electtest.New(t, s, alg, []uint32{1, 2, 3}, opts)
			for _, id := range c.IDs {
				s.SetWriteLatency(id, lat*3/4, lat*5/4)
			}
			c.Run(time.Minute)
			terms, first := leadcheck.Terms(s.Events(), 0)
			late, _ := leadcheck.Terms(s.Events(), 30*time.Second)
			t.Logf("writes of %v: first leader at %v, %d terms in a minute (seed %d)", lat, first, terms, seed)
			if first < 0 || first > time.Second+4*lat || terms > 8 || late > 0 {
				t.Fatalf("writes of %v: first leader at %v (want within 1 s + 4 writes), %d terms in a minute (want <= 8), %d after the first 30 s (want 0)",
					lat, first, terms, late)
			}
			c.Claims()
		}
	}
}
