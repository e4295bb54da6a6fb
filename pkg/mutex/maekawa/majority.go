package maekawa

import (
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/wire"
)

// MajorityQuorum is the quorum mutexd's majority uses with n
// coordinators: the smallest majority, floor(n/2)+1.
func MajorityQuorum(n int) int { return n/2 + 1 }

// MajorityFactory builds majority-quorum cores for a driver (mutexd run
// --algorithm majority; pkg/mutex/algorithms): every member a
// coordinator, quorum floor(n/2)+1, votes and fences on disk, shared
// locks offered.
var MajorityFactory = mutex.Factory{
	Name:       MajorityName,
	Summary:    "a majority quorum of coordinators (m > n/2), each vote for a lease and a fence, shared or exclusive; writers queue, a restarted coordinator abstains for a lease",
	Guarantees: (&Config{Quorum: 1}).Guarantees(),
	// The notes give the algorithm, not a price: request to the n
	// coordinators, m grants, release to the n. Here every coordinator
	// answers and records a fence as it votes, 3(n-1) uncontended; each of
	// the m-1 that recorded less than the highest (a stale proposal) adds a
	// commit and its ack, and a shared request commits at all m-1;
	// contention adds failed, inquire and relinquish, and a denied reader
	// retries: no upper bound.
	Cost: core.Cost{Text: "3n (request and release to n, m grants)", Delay: "2",
		Messages: func(n int) (float64, float64) {
			return float64(2*(n-1) + MajorityQuorum(n) - 1), -1
		}},
	Kinds: []wire.Kind{wire.KindHeartbeat, wire.KindQuorumLock},
	Params: []mutex.Param{{Name: ParamAttemptTimeout, Default: DefaultLANConfig().AttemptTimeout,
		Usage: "how long a round of votes and fence commit may take before the request gives back what it got and retries; a queued request asks again this often"}},
	New: func(env core.Env, opt mutex.Options) (mutex.Algorithm, error) {
		return NewFromEnv(env, opt, MajorityQuorum(len(env.Members)))
	},
	StatusLines: StatusLines,
	LockColumns: []string{"Voted for", "Queue", "Request"},
	LockCells:   LockCells,
}
