package app

import (
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/core"
)

// CoreEnv is the core.Env a daemon's core is built from: this member, the
// members, the node's clock now, the seeded rand and the persisted state.
// It adapts daemon.CoreFactory's arguments until the factory takes a
// core.Env itself (issue 14's daemon change), so that cores are built from
// an Env under the daemon as under the simulator.
func CoreEnv(cfg *daemon.Config, persisted []byte, rnd *rand.Rand) core.Env {
	env := core.Env{
		ID:      cfg.ID,
		Members: slices.Sorted(maps.Keys(cfg.Members)),
		Rand:    rnd,
		State:   persisted,
	}
	if cfg.Clock != nil {
		env.Now = cfg.Clock.Now()
	}
	return env
}
