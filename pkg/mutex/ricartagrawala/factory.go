package ricartagrawala

import (
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/permission"
)

// Name is the algorithm's name (mutexd run --algorithm ricartagrawala).
const Name = "ricartagrawala"

// Factory builds Ricart-Agrawala cores for a driver (pkg/mutex/algorithms).
var Factory = mutex.Factory{
	Name:       Name,
	Summary:    "Ricart-Agrawala: request with (Lamport time, ID) to all, replies deferred by the holder and by earlier requests",
	Guarantees: permission.Guarantees(permission.RicartAgrawala),
	// The notes' comparison table: 2(N-1) messages per entry, and as many
	// before the entry; a synchronisation delay of one message (the
	// holder's deferred reply).
	Cost: core.Cost{Text: "2(N-1)", Delay: "1",
		Messages: func(n int) (float64, float64) { return float64(2 * (n - 1)), float64(2 * (n - 1)) }},
	Kinds:       permission.Kinds(permission.RicartAgrawala),
	Params:      permission.Params,
	New:         New,
	StatusLines: permission.StatusLines,
	LockColumns: permission.LockColumns,
	LockCells:   permission.LockCells,
	FenceText:   permission.FenceText,
}

// New builds a member's core from a driver's environment and options.
func New(env core.Env, opt mutex.Options) (mutex.Algorithm, error) {
	return permission.NewFromEnv(permission.RicartAgrawala, env, opt)
}
