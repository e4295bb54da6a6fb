// Package majority is mutexd's majority quorum of coordinators (the course
// notes'): n coordinators (every member), a lock held only with the
// votes of m > n/2 of them (m = floor(n/2)+1 here), each vote for a lease
// and with a fence, shared or exclusive. It is pkg/mutex/maekawa's voting
// core with Config.Quorum set (read that package for the protocol and its
// safety argument); this package is its Factory and the P_v experiment.
//
// # Unlike the notes, and unlike Redlock
//
// The notes' coordinators keep their grants in memory, and the notes
// derives the probability that exclusion is violated when the
// coordinators in the intersection of two quorums restart and forget:
//
//	P_v = sum_{k=2m-n}^{n} C(m,k) P^k (1-P)^(m-k)
//
// with P the probability that one given coordinator fails and recovers
// within the window δt (failures independent; two quorums of m among n
// share at least k = 2m-n coordinators, and any k or more of the holder's
// m forgetting lets a second quorum form). Here a coordinator also keeps
// its votes in memory only (no disk write per vote), but one that
// restarts votes on nothing for a whole stretched lease after it starts:
// every vote it forgot has ended by then, so no violation (pv_test.go
// measures it beside the notes' coordinators and beside votes written to
// disk). And every vote carries a fence, recorded at all m before the
// holder can use it; fences are era<<32 | a count, the era written once
// per start, so they grow across restarts too (Redlock's majority of
// Redis locks has no fence, and no memory across a restart without
// fsync). Writers wait in the coordinators' queues (Sanders' inquire,
// relinquish and failed keep them from deadlocking), so a released lock
// goes to the next writer within a round trip.
//
// # The P_v experiment
//
//	go test ./pkg/mutex/majority -run TestPvExperiment -v -pv.n 5 -pv.m 3 -pv.rate 0.5 -pv.hold 200ms
//	scripts/bench.sh pv [--n N] [--m M] [--rate R] [--hold D] [--acquisitions A]
//
// runs n coordinators and two clients that always want one lock, each
// coordinator crashed and restarted (down 5 ms) as a Poisson process of
// the rate, holds of δt, and counts violations (a grant while the other
// client holds) per acquisition, in three arms (-pv.arms): votes
// forgotten and given again at once (the notes' coordinators), forgotten
// but no vote for a lease after a restart (mutexd's default), and
// written to disk before each locked (Config.PersistVotes), beside the
// formula with P = 1 - exp(-rate δt). The measured rate of the first arm
// sits below the formula: a forgotten vote helps the other client only
// if the coordinator is back, and the client has asked it again (its
// waiting request is repeated every AttemptTimeout), before the holder
// releases. The other two arms measure 0.
package majority
