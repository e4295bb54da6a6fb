package omega_test

import (
	"testing"

	"github.com/synclab/synclab/internal/testkit/electscript"
	"github.com/synclab/synclab/internal/testkit/scenario"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/omega"
)

// TestScenarios replays testdata/scenarios on the simulator with fixed
// link delays (internal/testkit/electscript has the commands); regenerate with
// go test ./pkg/elect/omega -run TestScenarios -rewrite and read the diff.
func TestScenarios(t *testing.T) {
	scenario.Files(t, func(t *testing.T, script string) string {
		return electscript.Run(t, script, electscript.Setup{
			New: func(_ testing.TB, a scenario.Args) ([]uint32, func(core.Env) (elect.Elector, error)) {
				return electscript.Numbered(a), func(env core.Env) (elect.Elector, error) { return omega.New(env, omega.DefaultLANConfig()) }
			},
			Kinds: omega.Kinds,
		})
	})
}
