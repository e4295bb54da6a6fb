// Package algorithms is the table of every election algorithm electd can
// run: one line per algorithm. electd's --algorithm, its lab tests and
// `scripts/bench.sh elect --algorithm all` all read this one table, so a
// new algorithm is one package implementing elect.Elector and one line
// here.
package algorithms

import (
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/elect/majority"
	"github.com/synclab/synclab/pkg/elect/omega"
	"github.com/synclab/synclab/pkg/elect/ring"
	"github.com/synclab/synclab/pkg/elect/yoyo"
)

// All is every algorithm, in the order the docs and benchmarks list them.
var All = []elect.Algorithm{
	bully.Algorithm,
	ring.NaiveAlgorithm,
	ring.IDListAlgorithm,
	ring.ChangRobertsAlgorithm,
	ring.FranklinAlgorithm,
	ring.FredricksonLynchAlgorithm,
	majority.Algorithm,
	omega.Algorithm,
	yoyo.Algorithm,
}

// Default is electd's --algorithm default.
const Default = "bully"
