package yoyo_test

import (
	"testing"

	"github.com/synclab/synclab/internal/testkit/electscript"
	"github.com/synclab/synclab/internal/testkit/scenario"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/yoyo"
)

// TestScenarios replays testdata/scenarios on the simulator with fixed
// link delays (internal/testkit/electscript has the commands; "cluster N EDGES"
// gives the topology, as --topology does); regenerate with
// go test ./pkg/elect/yoyo -run TestScenarios -rewrite and read the diff.
func TestScenarios(t *testing.T) {
	scenario.Files(t, func(t *testing.T, script string) string {
		return electscript.Run(t, script, electscript.Setup{
			New: func(t testing.TB, a scenario.Args) ([]uint32, func(core.Env) (elect.Elector, error)) {
				cfg := yoyo.DefaultLANConfig()
				if len(a.F) > 2 {
					edges, err := yoyo.ParseTopology(a.F[2])
					if err != nil {
						t.Fatalf("%q: %v", a.Line, err)
					}
					cfg.Topology = edges
				}
				return electscript.Numbered(a), func(env core.Env) (elect.Elector, error) { return yoyo.New(env, cfg) }
			},
			Kinds: yoyo.Kinds,
		})
	})
}
