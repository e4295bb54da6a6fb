package ring

import (
	"fmt"
	"math"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
)

// The ring elections' entries in the election factory table. Costs are
// messages of one election at n members as the notes count them (reliable
// links: no acknowledgements, no resends), the announcement around the
// ring (N hops) included.
var (
	NaiveAlgorithm = algorithm(Naive,
		"the notes' ring 1: suspecting members send a vote around the ring; only a candidate's own vote elects it",
		// The notes: a candidate's vote goes round (N), then the
		// announcement (N); with every member a candidate at most N(N+1)/2
		// votes survive to be passed on.
		core.Cost{Text: "2N (one candidate), N(N+1)/2+N (all at once)",
			Messages: func(n int) (float64, float64) { return float64(2 * n), float64(n*(n+1)/2 + n) }})
	IDListAlgorithm = algorithm(IDList,
		"the notes' ring 2: every suspecting member sends a list that collects every live ID; the highest leads",
		// The notes: "n processes suspect at once: n^2 messages".
		core.Cost{Text: "2N (one initiator), N^2+N (all suspect)",
			Messages: func(n int) (float64, float64) { return float64(2 * n), float64(n*n + n) }})
	ChangRobertsAlgorithm = algorithm(ChangRoberts,
		"Chang-Roberts: IDs go round, only higher ones are passed on; the ID that comes back has won",
		core.Cost{Text: "O(N log N) average, O(N^2) worst",
			Messages: func(n int) (float64, float64) { return float64(2 * n), float64(n*(n+1)/2 + n) }})
	FranklinAlgorithm = algorithm(Franklin,
		"Franklin: bidirectional rounds, each deactivates at least half of the active members",
		// 2N messages a round, at most ceil(log2 N)+1 rounds, then the
		// announcement.
		core.Cost{Text: "O(N log N): 2N per round, <= ceil(log2 N)+1 rounds",
			Messages: func(n int) (float64, float64) {
				if n < 2 {
					return float64(2*n + n), float64(2*n + n)
				}
				rounds := math.Ceil(math.Log2(float64(n))) + 1
				return float64(4*n + n), float64(2*n)*rounds + float64(n)
			}})
	FredricksonLynchAlgorithm = algorithm(FredricksonLynch,
		"Fredrickson-Lynch (the notes'): one ELECTION collects the live IDs around the ring, then one COORDINATOR",
		core.Cost{Text: "2N", Messages: func(n int) (float64, float64) { return float64(2 * n), float64(2 * n) }})
)

func algorithm(v Variant, summary string, cost core.Cost) elect.Algorithm {
	return elect.Algorithm{
		Name:       v.String(),
		Summary:    summary,
		Cost:       cost,
		Kinds:      ringKinds,
		Guarantees: elect.WithoutQuorum,
		New: func(env core.Env, o elect.Options) (elect.Elector, error) {
			for id, p := range o.Priorities {
				if p != 0 {
					return nil, fmt.Errorf("%v compares member IDs: priorities (member %d: %d) are bully's; leave them out", v, id, p)
				}
			}
			return New(env, FromOptions(v, o))
		},
	}
}
