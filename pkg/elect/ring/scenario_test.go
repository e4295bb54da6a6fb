package ring_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/electscript"
	"github.com/synclab/synclab/internal/testkit/scenario"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/ring"
	"github.com/synclab/synclab/pkg/wire"
)

// TestScenarios replays the scripts in testdata/scenarios, the notes'
// examples, on the simulator (internal/testkit/electscript has the commands) with
// 100 ms on every link and no jitter or loss, so that the interleaving is
// the one the notes draw (all members that start together send before
// any message arrives), and compares what happens with the output
// recorded in the file. Regenerate after a deliberate change with
//
//	go test ./pkg/elect/ring -run TestScenarios -rewrite
//
// and read the diff. With -electscript.out DIR each scenario is drawn
// (one line per member, one arrow per frame).
//
// The cluster command names the variant and the logical ring:
//
//	cluster VARIANT R1,R2,... [textbook]  members on the ring in this
//	                             order (successor = next); they all start
//	                             now, so all of them suspect at once
//
// Only leadership events are printed.
func TestScenarios(t *testing.T) {
	scenario.Files(t, func(t *testing.T, script string) string {
		return electscript.Run(t, script, electscript.Setup{
			New: func(t testing.TB, a scenario.Args) ([]uint32, func(core.Env) (elect.Elector, error)) {
				v := variantNamed(t, a.F[1])
				order := a.IDs(2)
				textbook := len(a.F) > 3 && a.F[3] == "textbook"
				return order, func(env core.Env) (elect.Elector, error) {
					return ring.New(env, scenarioConfig(v, order, textbook))
				}
			},
			Kinds: []wire.Kind{wire.KindRingElection, wire.KindRingCoordinator, wire.KindRingAck, wire.KindRingHeartbeat},
			Show:  elect.LeadershipEvent,
			Delay: hopDelay,
		})
	})
}

// scenarioConfig slows everything to the links' pace (100 ms a hop), so
// that the election runs undisturbed by heartbeats and timeouts.
func scenarioConfig(v ring.Variant, order []uint32, textbook bool) ring.Config {
	return ring.Config{
		Variant:         v,
		Ring:            order,
		Textbook:        textbook,
		Heartbeat:       time.Second,
		LeaderTimeout:   20 * time.Second,
		Stagger:         time.Second,
		HopTimeout:      500 * time.Millisecond,
		HopTries:        3,
		ElectionTimeout: time.Minute,
	}
}

const hopDelay = 100 * time.Millisecond

func variantNamed(t testing.TB, name string) ring.Variant {
	t.Helper()
	for v := ring.Naive; v <= ring.FredricksonLynch; v++ {
		if v.String() == name {
			return v
		}
	}
	t.Fatalf("unknown variant %q", name)
	return 0
}
