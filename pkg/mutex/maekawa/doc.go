// Package maekawa is mutexd's voting-set mutual exclusion: Maekawa's
// algorithm (the course notes') on a sqrt(N) grid, made deadlock-free with
// Sanders' inquire, relinquish and failed, and, on the same core, the
// majority quorum of coordinators of the notes (MajorityFactory
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
// # Fences: proposed with the request, recorded as the votes are given
//
// Every voter remembers the highest fence it has seen for each lock, and
// every grant's fence must be above the fence of every grant before it,
// across the cluster and across restarts. Any two quorums (crosses, or
// majorities) share a voter; the argument is that this voter knew the
// earlier grant's fence before it could vote for the later request, and
// the later request's fence is above everything its voters know.
//
// An exclusive request proposes its fence: one above the highest this
// member knows for the lock (its own voter's entry, and what earlier
// attempts of the request were told), or, if that is higher, a clock
// reading in milliseconds within the same era (requester.go, clockFence):
// the fastest clock among its own and those of the live members it hears,
// each read from a frame's transmit time against its arrival
// (clusterClock). A voter that votes for it records a fence for the lock
// before its locked leaves: the proposal if it is above everything the
// voter knows, else one above the voter's own fence; it offers what it
// recorded, and says so (wire.Vote.Recorded). The request's fence is the
// highest offer of its quorum, top. A voter that recorded top has it; the
// others are sent a commit of top, record it and acknowledge, and only
// then is the request granted. When every vote recorded top (the usual
// case: the proposal was current) no commit is sent: 3(K-1) frames per
// entry, request, locked and release, the notes' count; each voter that
// recorded less costs 2 frames more (the commit and its ack). A release
// carries the fence too.
//
// Why fences grow: let G be a grant on fence f and G' a later grant of
// the lock, and v a voter both quorums share. By G's grant v had a fence
// of at least f (recorded as it voted, or committed while its vote was
// still G's: a commit for a vote that ended is refused). v votes for one
// exclusive request at a time, and a vote G held on lasts until G's
// release or its lease's end (it "may hold": next section), so v's vote
// that G' holds on was given after that, when v's fence was at least f;
// a vote v gave G' before G's and then took back (relinquish) is not one
// G' holds on until it is given again. v's offer to G' is above its
// fence: top for G' is above f. A holder that dies without releasing
// leaves f recorded where the next quorum meets it; a plain maximum over
// the quorum, recorded nowhere, would lose it with the holder (the voter
// that gave the maximum need not be in the next quorum). A voter that
// restarted between the two has a floor above every fence it recorded
// before (below, the era).
//
// The proposal is only a hint: a voter records it only above everything
// it knows, so a stale one (this member's own voter missed the last
// grants; a clock behind the others') costs the commit at the voters that
// knew more, never a fence out of order. The clock is what keeps it
// current when the member's own voter missed the last grant, as when the
// lock moves to a member outside the last holder's cross, or when grants
// went by while the request waited in queues: every member proposes from
// about the same clock, the fastest (heartbeats and votes keep each
// member's view of it current), so a grant proposed from it is below the
// proposal of a request made later in real time by more than a one-way
// delay, however far apart the members' own clocks run. A member taken
// for down no longer counts (a dead fast clock would hold proposals ahead
// of real time), nor a clock more than 2^31 ms ahead (a reading modulo
// 2^32 would look like one from before). The reading is taken modulo 2^32 ms
// (the count's width; it wraps every 49.7 days): after a wrap, a lock
// used before it proposes from its fence alone until some member's
// restart opens a new era. A voter that gives a vote back (relinquish)
// and gives it again offers the same fence if nothing was recorded
// meanwhile, so that the offers of a quorum still agree.
// TestMessagesPerEntry counts the entries of each kind, and docs/mutexd.md
// gives the split.
//
// Shared requests propose nothing and always commit: readers are voted
// for together, so a proposal recorded by a voter would not say in which
// order two readers' grants came. Readers that hold together share one
// fence (a resource keeps the highest fence it has seen and refuses a
// lower one, so two readers on f1 < f2 could not both use it): a voter
// whose committed votes include readers offers a reader their fence, and
// accepts a reader's commit only of that fence; otherwise it offers one
// above its own, and accepts a commit only above its fence. Two readers
// whose grants overlap committed at a voter both majorities share, each
// while the other's vote was committed there, so they hold the same
// fence; the first reader of a group commits above the fence of every
// grant that ended before it began (the argument above), and a writer's
// offer is above the readers' fence recorded at the voter it shares with
// them. A reader refused (it was offered two fences) gives up and asks
// again.
//
// Leases when votes were recorded: the holder counts its lease from when
// its requests left, plus the shortest time any of its voters says it
// kept the request queued before voting (the locked's wait, taken at the
// slowest clock rate), whether or not some voters were sent a commit;
// each voter keeps a recorded vote for the stretched lease from when it
// voted, and a committed one from when the commit came, both later (next
// section's argument, with "sent the commit" read as "sent the request,
// and the voter waited that long"). When that start is more than a
// sixteenth of the lease ago (a vote given at once, the others after a
// wait in queues), the request commits top at every voter instead, and
// the lease counts from the commit.
//
// Nothing of this is written to disk per vote or per fence. A fence is
// era<<32 | a count (pkg/epoch's layout, as the token ring's fences are
// round<<40 | a count). A voter's era is on disk, written once per start
// (the last run's plus one, before anything leaves) and again only when
// it records a fence of a newer era than its own (some member restarted;
// the write is a promise: no commit_ok leaves before it). A voter that
// starts in era E+1 knows every lock at (E+1)<<32, above every fence it
// recorded in its last run (their eras are at most E, on disk). So after
// a restart it still has every fence it acknowledged, as a bound from
// above: the argument of the last paragraphs holds across restarts. A
// first start is era 0 (fences are clock readings, or 1, 2, 3, ... where
// a clock lags, until some member restarts).
// An era read from a frame is admitted as pkg/epoch admits epochs: at
// most 2^16 eras above the voter's at once, regained at one a second, so
// a forged fence cannot run a lock out of numbers.
//
// # Leases
//
// After a commit round, the holder's lease counts on its own clock from
// when it sent its commit; a voter keeps its vote for the lease,
// stretched for clock rates (MaxDriftPPM) and Margin, from when the
// commit arrived: later in real time, longer in duration. So a voter
// frees its vote only after the holder's lease has ended (or on its
// release), whatever the network did; for votes recorded as they were
// given the same holds from the request (above). A renewal is a round of renew frames to the
// quorum; the table confirms it once every voter acknowledged, from when
// it was sent. A vote that may not be held (neither recorded nor
// committed) lasts as long as its request may collect, and ends at once
// when its member is taken for down.
//
// A grant is reported only at a reading of the clock (a Tick, or a
// client's call), never on the receive stamp of the frame that completed
// it: a loop that reads the last locked or commit_ok late (a host too busy
// to run it, a process paused with the frames in its kernel) would
// otherwise report a lease that had ended before the report. Completed in
// Step, the request waits in phase entering for the Tick its Deadline asks
// for at once; then, if its lease (counted as above, never from the
// reading) has ended, its votes are released and it asks again after its
// backoff (retries_lease_spent, grants_late, mutex.EventGrantLate).
//
// # Recovery after a holder's crash
//
// A crashed holder's lock is free once every vote it could hold on has
// ended, and, in Maekawa, once the waiter has left the dead member out of
// its cross (the dead member's own voter is in the cross of every member
// of its row and its column). Both overlap the lease; nothing is added
// after it:
//
//   - A recorded vote is kept for the stretched lease from when it was
//     given, and no longer. Its requester may enter on it without a
//     commit only within a sixteenth of the lease of its votes' start
//     (decide, voteStart), which is before this vote; later it must
//     commit here, and a commit that comes after the vote ended is
//     refused. So the vote still outlasts every lease its requester could
//     have counted on it (the argument of "Leases"). It was kept for
//     collectTimeout as well (MaxLease + AttemptTimeout, the time its
//     requester may go on collecting), 0.47 s past the stretched lease by
//     default: the whole excess of a recovery over the lease when the
//     holder crashed before its first renewal. A requester that is still
//     collecting when its recorded vote ends loses that vote and gives up
//     at its own deadline, which follows within AttemptTimeout less the
//     stretch: a liveness cost under heavy contention only.
//   - A committed or renewed vote ends a stretched lease after the commit
//     or the renewal arrived, as before.
//   - The majority quorum asks every coordinator and holds with any
//     Quorum: a granted request's release goes at once to those that have
//     not answered it (withdraw; it waits in their queues behind another
//     vote or a restart's hold), not at its end. Left queued, it was voted
//     for once such a coordinator was free, that recorded vote kept a
//     stretched lease, and after a crash of the holder the next request
//     could wait a lease more for it (5.95 s instead of 3.03 in
//     TestWithdrawnAtGrant; the lab's 4.5-5.8 s recoveries with a
//     coordinator restarted less than a lease before). The frame is the
//     one the release sent later: an entry still costs 3(n-1). Should
//     that release be lost (a connection reset at the grant), the
//     coordinator votes for the request once free, and no one would
//     release that vote: the requester answers a vote that waited in the
//     queue past the grant (beyond Margin: not one that crossed the
//     release) with a release, whether it still holds or has ended
//     (TestLostWithdraw: 2.93 s instead of 5.96).
//   - Maekawa's detector (DeadAfter) only decides which cross a requester
//     asks and which queued requests a voter drops: a member taken for
//     down wrongly costs a request its place, never exclusion (any two
//     crosses meet, and a vote that may be held is kept whatever its
//     member's state). So DeadAfter is a choice of speed against false
//     suspicions, not safety; mutexd takes 3 heartbeats (ConfigFor), no
//     longer than the stretched lease at the defaults: the waiter
//     leaves the dead holder out 3 s after the holder's last frame (a
//     renewal, a heartbeat), by the time its votes end if that frame was
//     its grant's or a renewal's, at most DeadAfter after the crash (a
//     heartbeat since: past the votes by as much as that heartbeat came
//     after the grant or the last renewal, about a lease without
//     renewals, under a renewal period with them). It was 3.5
//     heartbeats.
//
// TestRecoveryAtLeaseEnd holds the first and the last point to the
// lease's end and the stretch (3.026 s after the grant for a crash before
// the holder's next frame, Maekawa DeadAfter after the holder's last
// frame otherwise), TestWithdrawnAtGrant and TestLostWithdraw the third;
// the oracles of TestOracle and TestMajorityOracle hold exclusion and
// fences under crashes, pauses, partitions and loss as before.
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
//	                            requests wait (no_live_set), looking
//	                            again every AttemptTimeout
//	voter restarts:             it has forgotten its votes and its queue;
//	                            it votes on nothing until a whole stretched
//	                            MaxLease after it started (below), and its
//	                            new era puts every lock above its old
//	                            fences; requesters that waited in its
//	                            queue ask it again (refresh, every
//	                            AttemptTimeout while they collect)
//	requester restarts:         its committed votes run out with their
//	                            lease (a new request never frees them);
//	                            its attempt numbers start at a random
//	                            point, so no old answer is taken for new
//	partition:                  a side with a whole row and a whole
//	                            column goes on; the other waits. A
//	                            majority is neither needed nor enough:
//	                            at 5 members (grid 1 2 3 / 4 5) only 4
//	                            of the ten 3/2 splits leave such a side
//	                            ({1,2,3}, {1,4,5}, {2,4,5}, {3,4,5}); in
//	                            the 6 others nothing is granted until the
//	                            heal, then within 3.5 heartbeats (an 8 s
//	                            split cost 10.5 s in the simulator, 12.7
//	                            s in issue 29's lab run). Where a side
//	                            goes on, up to a lease and 3.5
//	                            heartbeats pass before it grants (7 s,
//	                            pkg/mutex/algorithms TestSimAvailability)
//	loss:                       frames go on the members' TCP link, at
//	                            most once (a reset link loses them, and
//	                            so does configuration agreement's refusal
//	                            or withholding, with the link up); a
//	                            collecting request asks the voters it
//	                            lacks again every AttemptTimeout; an
//	                            attempt that got no answer is given up
//	                            after a lease (its votes released) and
//	                            sent again with its priority: a lost
//	                            locked costs that (TestLostLockedCostsCollect;
//	                            a voter does not say it again: the
//	                            requester cannot tell a copy from the
//	                            vote, and one that came after the
//	                            requester gave the vote back gave two
//	                            holders); a lost release, renewal,
//	                            failed or inquire is not sent again: a
//	                            vote whose release was lost is kept until
//	                            its lease ends (TestLostReleaseCostsLease)
//
// # Why a voter that forgot its votes cannot hand a lock out twice
//
// (The argument of pkg/elect/majority, for votes instead of leaders.)
// Clocks run at rates within MaxDriftPPM (rho) of true time. A holder
// counts its lease L from when it sent its commit (true time s; when its
// votes were recorded as they were given, from its request plus the
// voters' wait: the same argument with s the earliest instant any of its
// votes began), and believes it
// holds until at most s + L/(1-rho). Each voter of its quorum recorded
// the fence after s and keeps the vote for stretch(L) =
// L(1+2rho) + Margin on its clock: until at least s + stretch(L)/(1+rho),
// which is later. A voter that crashed and restarted meanwhile has lost
// the vote; it started after s (it voted, or acknowledged the commit,
// before it crashed), and votes on nothing for stretch(MaxLease) after its start:
// not before s + stretch(L)/(1+rho) either. So no second cross can be
// complete while the first holder believes it holds, whether or not its
// voters forgot. The rule costs availability only: a restarted voter
// abstains for about 3 s (its requests wait in its queue). It needs the
// state directory to tell a restart from a first start: a voter that
// finds no state (first start, or a wiped --state-dir) votes at once.
// Config.Forgetful drops the rule (the notes' coordinators, their
// P_v), Config.PersistVotes writes each vote instead (a disk write per
// entry; a restart then abstains only on the locks it had voted on).
//
// A holder that pauses past its lease is not stopped by anything here: its
// fence is what protects the resource, which must refuse a fence lower
// than one it has seen.
//
// # The majority quorum (Config.Quorum > 0)
//
// mutexd's majority (MajorityFactory) is the notes' majority quorum of
// coordinators: every member a coordinator, a lock held only with the
// votes of m = floor(n/2)+1 of them (MajorityQuorum), each vote for a
// lease and with a fence, shared or exclusive. Every member (or
// Config.Coordinators) is a coordinator; a request asks
// them all and needs Quorum > n/2 votes. A coordinator queues exclusive
// requests as a Maekawa voter does, with Sanders' inquire, relinquish and
// failed (a request that asks n and needs any m still has, at each
// coordinator, either the vote or a place in the queue, and the request
// first of all gathers its votes as in Maekawa); a released vote goes to
// the next request at once, so a handoff costs the release and a locked,
// not a retry timer. Votes beyond the quorum are given back as they come.
// Shared requests (Config.Shared) take a coordinator's vote together and
// never wait in a queue: a coordinator that has an exclusive vote out or
// an exclusive request queued denies them, and a denied reader gives back
// what it got and retries after a randomized exponential backoff
// (BackoffBase to BackoffMax); so readers never hold votes while they
// wait (no deadlock with writers), and a queued writer stops new readers
// (no writer starvation). Readers together share one fence ("Fences"): a
// reader's commit of any other fence than the readers' already holding
// at a coordinator is refused there, and the reader retries.
//
// # The majority quorum, unlike the notes and unlike Redlock
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
// every vote it forgot has ended by then, so no violation (majority_pv_test.go
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
//	go test ./pkg/mutex/maekawa -run TestPvExperiment -v -pv.n 5 -pv.m 3 -pv.rate 0.5 -pv.hold 200ms
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
// also events for logs and hooks. Ready.State is the voter's era (and,
// with PersistVotes, its outstanding votes): persist it before sending
// when Promise is set; the outcomes of such a Ready are handed over only
// once it is written (mutexcount.Hold: a voter of one votes for itself
// without a frame, on an era a crash would forget, and its clock-proposed
// fences hide that only while the clock goes forward). Factory builds Maekawa cores for
// mutexd, MajorityFactory the majority quorum's; Stats counts the frames per op for the messages-per-entry
// figures.
package maekawa
