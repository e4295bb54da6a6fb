// Package maekawa is mutexd's voting-set mutual exclusion: Maekawa's
// algorithm (seed 004) on a sqrt(N) grid, made deadlock-free with
// Sanders' inquire, relinquish and failed, and, on the same core, the
// majority quorum of coordinators of seeds 000 and 001 (pkg/mutex/majority
// builds it). Both are sans-IO mutex.Algorithm cores on a mutex.Table,
// built to keep their promise through crashes, loss, pauses and restarts.
//
// # Voting sets
//
// The members, sorted by ID, fill a grid of ceil(sqrt N) columns row by
// row (the last row may be short). A member's voting set is a cross: its
// row and its column, itself included, about 2 sqrt(N) - 1 members (the
// notes' optimum K ~ sqrt(N) needs a projective plane, which exists for
// few N; the grid works for every N). Any two crosses meet, whichever row
// and column each takes (grid.go argues it; TestGridIntersection checks
// every pair for N = 1..64). A request is granted once every voter of its
// cross voted for it; a voter votes for one request at a time, so two
// requests never hold together.
//
// # Requests, and the notes' deadlock
//
// A request carries a priority, (Lamport time, member ID), the Lamport
// time taken from the node's clock (core.Env.Lamport) when the request
// starts and kept across its retries. A voter whose vote is taken queues
// the request by priority. The notes' algorithm stops there, and three
// members asking at once (V1 = {1,2}, V2 = {2,3}, V3 = {3,1}) each hold
// one vote and wait for the other for ever (testdata/scenarios/deadlock.txt
// replays it). Sanders' correction breaks every such cycle:
//
//	voter, vote taken by g, request r arrives:
//	  r first of all (before g and the queue)  -> inquire g (once)
//	  otherwise                                -> failed to r
//	requester, inquire from v:
//	  has a failed, or gave a vote back         -> relinquish v
//	  otherwise                                 -> keep it until a failed
//	                                               comes (then relinquish)
//	                                               or every vote did (enter)
//	voter, relinquish from g                    -> g back in the queue, vote
//	                                               for the first
//
// A request that cannot enter gives its votes to any request before it,
// so the request first of all in the cluster always gathers its cross.
//
// # Fences: committed at the cross
//
// Every voter remembers the highest fence it has seen for each lock. A
// vote (locked) carries it; a request with all its votes takes the fence
// one above the highest, and commits it: every voter of its cross records
// it (on disk) and acknowledges, and only then is the request granted.
// Any later request's cross shares a voter with this one, which had the
// fence before it could vote again, so fences grow strictly across the
// cluster and across restarts. Without the commit the holder's fence would
// be a maximum over voters some later cross need not meet (the voter that
// gave the maximum), and a holder that crashed before releasing would
// leave its fence unknown to everyone: the commit costs 2(K-1) frames per
// entry, 5(K-1) in all where the notes count 3(K-1) (TestMessagesPerEntry
// measures it).
//
// # Leases
//
// The holder's lease counts on its own clock from when it sent its commit;
// a voter keeps its vote for the lease, stretched for clock rates
// (MaxDriftPPM) and Margin, from when the commit arrived: later in real
// time, longer in duration. So a voter frees its vote only after the
// holder's lease has ended (or on its release), whatever the network did.
// A renewal is a round of renew frames to the cross; the table confirms it
// once every voter acknowledged, from when it was sent. A vote that is
// never committed ends after AttemptTimeout.
//
// # Failures
//
//	holder crashes or pauses:   its votes end with its lease; its fence
//	                            is at its cross: the next is above it
//	voter crashes:              pkg/liveness's Detector (DeadAfter) takes
//	                            it for down; a requester whose cross has a
//	                            dead member takes another, wholly alive:
//	                            the first wholly live row and column
//	                            (Grid.LiveSet). Any two crosses meet, so
//	                            this is as safe as the own cross. While
//	                            no row or no column is wholly alive,
//	                            requests wait (no_live_set)
//	voter restarts:             its votes and fences are on disk (Ready
//	                            with Promise before locked or commit_ok
//	                            leaves); one that had a vote outstanding
//	                            votes on that lock again only after a whole
//	                            stretched MaxLease
//	requester restarts:         its committed votes run out with their
//	                            lease (a new request never frees them);
//	                            its attempt numbers start at a random
//	                            point, so no old answer is taken for new
//	partition:                  a side with a whole row and a whole
//	                            column goes on; the other waits
//	loss:                       frames go on the members' TCP link; an
//	                            attempt that got no answer is given up
//	                            after a lease (its votes released) and
//	                            sent again with its priority
//
// A holder that pauses past its lease is not stopped by anything here: its
// fence is what protects the resource, which must refuse a fence lower
// than one it has seen.
//
// # The majority quorum (Config.Quorum > 0)
//
// Every member (or Config.Coordinators) is a coordinator; a request asks
// them all and needs Quorum > n/2 votes. A coordinator whose vote is taken
// denies at once instead of queueing; a request that cannot reach Quorum
// gives back what it got and retries after a randomized exponential
// backoff (BackoffBase to BackoffMax): two contenders that split the
// coordinators pick new delays each round, and collide again only when
// their draws fall within a round trip of each other, with a probability
// that halves as the window doubles. Shared requests (Config.Shared) take
// a coordinator's vote together; a coordinator that denied an exclusive
// request denies new shared ones for WriterWindow, so readers drain and
// the writer gets in. Config.Forgetful keeps votes in memory only: seed
// 000's loss of memory, for its P_v experiment (pkg/mutex/majority).
//
// # Frames that lie
//
// A Vote is decoded strictly (pkg/wire: op, mode, reserved bytes, fence at
// most MaxVoteFence, a valid lock name). A frame from a non-member is
// refused. Fences are believed only as far as MaxFenceStep above what the
// voter knows. A voter's table is bounded (MaxLocks; idle locks are
// folded into a persisted floor fence, so no fence goes back) and so is
// each member's share of it. An op that does not travel in a direction or
// a variant (a deny in Maekawa) is refused and counted. Without a cluster
// key any host can still vote in a member's name: the MAC is what makes a
// vote a member's.
//
// # Use
//
// Drive a Core like any core (Step, Tick at Deadline) and call Acquire,
// Renew and Release on the driver's goroutine; their answers are typed
// outcomes (mutex.Granted with fence and lease, Renewed, Lost, Released),
// also events for logs and hooks. Ready.State is the voter's table: persist
// it before sending when Promise is set. Factory builds Maekawa cores for
// mutexd; Stats counts the frames per op for the messages-per-entry
// figures.
package maekawa
