// Package majority is mutexd's majority quorum of coordinators (seeds 000
// and 001): n coordinators (every member), a lock held only with the
// votes of m > n/2 of them (m = floor(n/2)+1 here), each vote for a lease
// and with a fence, shared or exclusive. It is pkg/mutex/maekawa's voting
// core with Config.Quorum set (read that package for the protocol and its
// safety argument); this package is its Factory and the P_v experiment.
//
// # Unlike the notes, and unlike Redlock
//
// The notes' coordinators keep their grants in memory, and seed 000
// derives the probability that exclusion is violated when the
// coordinators in the intersection of two quorums restart and forget:
//
//	P_v = sum_{k=2m-n}^{n} C(m,k) P^k (1-P)^(m-k)
//
// with P the probability that one given coordinator fails and recovers
// within the window δt (failures independent; two quorums of m among n
// share at least k = 2m-n coordinators, and any k or more of the holder's
// m forgetting lets a second quorum form). Here a coordinator writes its
// vote and its fence to disk before it announces them, and one that
// restarts with a vote outstanding votes on that lock again only after a
// whole lease: no violation (pv_test.go measures both). And every vote
// carries a fence: the holder's is one above the highest of its quorum,
// recorded at all m before the grant (Redlock's majority of Redis locks
// has no fence, and no memory across a restart without fsync).
//
// # The P_v experiment
//
//	go test ./pkg/mutex/majority -run TestPvExperiment -v -pv.n 5 -pv.m 3 -pv.rate 0.5 -pv.hold 200ms
//	scripts/bench.sh pv [--n N] [--m M] [--rate R] [--hold D] [--acquisitions A]
//
// runs n coordinators and two clients that always want one lock, each
// coordinator crashed and restarted (down 5 ms) as a Poisson process of
// the rate, holds of δt, and counts violations (a grant while the other
// client holds) per acquisition, with votes in memory and on disk, beside
// the formula with P = 1 - exp(-rate δt). The measured rate sits a little
// below the formula: a forgotten vote helps the other client only if the
// coordinator is back, and the client's retry completes, before the
// holder releases.
package majority
