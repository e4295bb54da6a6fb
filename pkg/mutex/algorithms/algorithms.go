// Package algorithms is the table of every mutual-exclusion algorithm
// mutexd can run: one line per algorithm. mutexd's --algorithm, its lab
// tests and `scripts/bench.sh mutex --algorithm all` all read this one
// table, so a new algorithm is one package implementing mutex.Algorithm
// and one line here.
package algorithms

import (
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/mutex/maekawa"
	"github.com/synclab/synclab/pkg/mutex/permission"
	"github.com/synclab/synclab/pkg/mutex/tokenring"
)

// All is every algorithm, in the order the docs and benchmarks list them.
var All = mutex.Registry{
	tokenring.Factory,
	central.Factory,
	central.TokenAskFactory,
	permission.RicartAgrawalaFactory,
	permission.LamportFactory,
	permission.BakeryFactory,
	maekawa.Factory,
	maekawa.MajorityFactory,
}

// Default is mutexd's --algorithm default.
const Default = "tokenring"
