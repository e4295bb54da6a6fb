package lamport

import (
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/permission"
)

// Name is the algorithm's name (mutexd run --algorithm lamport).
const Name = "lamport"

// Factory builds cores of Lamport's distributed mutex for a driver
// (pkg/mutex/algorithms).
var Factory = mutex.Factory{
	Name:       Name,
	Summary:    "Lamport's distributed mutex: a queue ordered by (Lamport time, ID) at every member, request, ack and release to all",
	Guarantees: permission.Guarantees(permission.Lamport),
	// The notes: 3(N-1) messages per entry (N-1 requests, N-1 acks, N-1
	// releases); the next holder enters one message (the release) after
	// the last one left.
	Cost: core.Cost{Text: "3(N-1)", Delay: "1",
		Messages: func(n int) (float64, float64) { return float64(3 * (n - 1)), float64(3 * (n - 1)) }},
	Kinds:       permission.Kinds(permission.Lamport),
	Params:      permission.Params,
	New:         New,
	StatusLines: permission.StatusLines,
	LockColumns: permission.LockColumns,
	LockCells:   permission.LockCells,
	FenceText:   permission.FenceText,
}

// New builds a member's core from a driver's environment and options.
func New(env core.Env, opt mutex.Options) (mutex.Algorithm, error) {
	return permission.NewFromEnv(permission.Lamport, env, opt)
}
