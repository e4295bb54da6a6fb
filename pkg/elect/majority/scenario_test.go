package majority_test

import (
	"testing"

	"github.com/synclab/synclab/internal/testkit/electscript"
	"github.com/synclab/synclab/internal/testkit/scenario"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/majority"
)

// TestScenarios replays testdata/scenarios on the simulator with fixed
// link delays (internal/testkit/electscript: the commands are there); after a
// deliberate change, regenerate with
//
//	go test ./pkg/elect/majority -run TestScenarios -rewrite
//
// and read the diff. "cluster N [W1,W2,...]" gives the vote weights.
func TestScenarios(t *testing.T) {
	scenario.Files(t, func(t *testing.T, script string) string {
		return electscript.Run(t, script, electscript.Setup{
			New: func(t testing.TB, a scenario.Args) ([]uint32, func(core.Env) (elect.Elector, error)) {
				cfg := majority.DefaultLANConfig()
				members := electscript.Numbered(a)
				weights := a.IDs(2)
				for i, id := range members {
					m := majority.Member{ID: id, Weight: 1}
					if i < len(weights) {
						m.Weight = weights[i]
					}
					cfg.Members = append(cfg.Members, m)
				}
				return members, func(env core.Env) (elect.Elector, error) { return majority.New(env, cfg) }
			},
			Kinds: majority.Kinds,
		})
	})
}
