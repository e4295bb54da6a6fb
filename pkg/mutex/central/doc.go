// Package central is mutexd's central coordinator (seeds 000, 001, 002 and
// 004): one elected member keeps a FIFO queue per lock and grants it,
// exclusive or shared, as a sans-IO core built to keep its promise through
// crashes of the coordinator and of members, pauses, partitions and loss.
//
// # The notes' algorithm
//
//	member                 coordinator
//	  | -- request -------------> |   lock free: grant at once;
//	  | <------------- grant ---- |   held: queue the request (FIFO)
//	  |   ... critical section ...|
//	  | -- release -------------> |   grant the head of the queue
//
// Three messages per entry (none at the coordinator itself), and two
// between one holder's release and the next one's grant. A lock is
// exclusive or shared (seed 002): the leading run of shared requests is
// granted together; a waiting exclusive request stops later shared ones
// from joining (no writer starvation), and the queue is FIFO otherwise.
//
// # The coordinator is elected
//
// The coordinator is the leader of an election (any elect.Elector:
// Config.Election; bully with its LAN defaults by default), run inside this
// core like Berkeley's master election (its frames are stepped into it, its
// state kept inside this core's). A member follows the leader of the
// newest term it knows, and only it: grants, renewals, refusals and beats
// from anyone else, or of another term, are refused and counted.
//
// # Leases, counted from before the grant
//
// Every grant carries a lease. A member counts it from when it sent the
// frame the grant echoes (a stamp of its own: its request, or its latest
// sync), never from the grant's arrival; the coordinator counts it from its
// own sending, padded by the clocks' drift bound. A grant slow on the wire
// can only shorten the lease at the member, so it always ends first there.
// Renewals go through the member to the coordinator (CentralRenew, answered
// with the renewal's own stamp echoed). The member's client (mutexd lock)
// counts its lease from before its request and renewals, so it gives up
// (and kills its command) before the member's lease ends, and the member's
// before the coordinator's.
//
// # Support: no two coordinators grant at once
//
// Bully alone can elect two leaders (each side of a partition elects
// one). So the coordinator grants and renews only while a majority, itself
// included, supports it: every BeatInterval it sends a beat; each member
// that follows it answers with a sync echoing the beat; a support dates
// from the sending of the beat it answers, and counts for ConfirmWindow. A
// member answers only the coordinator it follows, and follows only the
// newest term it knows.
//
// # Takeover: the queue, the fences, and the wait
//
// A member that starts following a new coordinator sends it a sync at
// once: every request it has, waiting ones and held ones (with the grant's
// fence and the lease left). That is the re-announcement the new
// coordinator rebuilds its queue from: waiting requests are queued in the
// order they arrive, held grants of older terms are installed as holders
// until their lease ends. Syncs keep coming, one per beat, and reconcile
// the queue continuously: a lost request is queued; a grant the sync shows
// as not arrived is made anew with a newer fence (the member refuses a
// grant whose echo predates a sync that listed the request as waiting, so
// the older one can never arrive after the newer one, or after a later
// grant of the lock, ended); a lost release is noticed (a request up to
// the member's last one that it no longer lists is gone).
//
// Fences are derived from the coordinator's term: round<<40 | rank<<32 |
// count, where round is the term's round, rank the term owner's index
// among the (sorted) member IDs, and count numbers the grants within the
// term from 1. Terms are owned epochs ordered by (round, owner), and rank
// orders owners exactly as their IDs do, so every fence of a term is above
// every fence of any older term, on every member, with no disk write per
// grant and no need to learn the old coordinator's last fence (which died
// with it). A member coordinates a term in one run only: it persists the
// last term it coordinated before granting in it, and never coordinates it
// again after a restart (its count is lost; the election claims a newer
// term at every start anyway). If the election wavers within a run and
// makes it lead the same term again, it resumes numbering where it stopped,
// with a full hold. Why not "the highest fence re-announced, plus one"? A grant
// whose holder crashed before re-announcing it would be forgotten, and its
// fence given twice.
//
// The new coordinator must not grant while a lease an older coordinator
// granted may still run. It waits Hold = ConfirmWindow + MaxLease (padded
// by 2 x MaxDriftPPM, plus HoldMargin) from the moment a majority of the
// members (itself included) joined its term, and only then grants. Why
// that is enough: the old coordinator granted or renewed only with the
// support of a majority echoing a beat sent at most ConfirmWindow earlier.
// That majority and the new one share a member, which answered the old
// beat before it joined the new term (it answers only the coordinator it
// follows), so before the new majority was complete: every old grant was
// made before majorityAt + ConfirmWindow and ends before majorityAt +
// ConfirmWindow + MaxLease, the Hold's end. A majority is required to
// grant at all, so a coordinator cut off in a minority stops granting and
// renewing within ConfirmWindow, and its holders' leases run out.
//
// The wait is skipped when every member joined the term and none started
// less than a lease ago: then every old lease was re-announced and is in
// the queue as a holder (a member refuses grants of older terms once it
// joined), and nobody can hold one it could not re-announce. After the
// Hold, a re-announced grant of an older term is ignored (it has ended).
//
// # Failures
//
//	coordinator crashes:        the election picks another member; every
//	                            member re-sends what it waits for and
//	                            holds; the Hold; grants resume with fences
//	                            of the new term
//	member crashes holding:     its lease ends at the coordinator, which
//	                            then grants the next in the queue; its
//	                            waiting requests are dropped after
//	                            DeadAfter without a sync
//	member restarts:            a new incarnation (persisted, raised at
//	                            every start): the coordinator drops the
//	                            old run's waiting requests at its first
//	                            frame, and keeps the old run's grants until
//	                            their leases end
//	coordinator paused:         its supports go stale: it neither grants
//	                            nor renews; the others elect a new one
//	                            (which waits out the Hold); when it wakes
//	                            it follows the newer term
//	partition:                  the side with a majority goes on after a
//	                            Hold; the other grants nothing
//	loss, duplication:          member frames travel on the TCP link in
//	                            order; every sync repairs what was lost
//
// A lease is the protection while everything works; the fence is the
// protection when a holder does not know it lost its lock (a pause longer
// than its lease): the resource must refuse a fence below one it has seen.
//
// # Frames that lie
//
// Every field is read as an attacker would write it. Grants must come from
// the coordinator followed, in its term, for this member's incarnation,
// with a fence of that term, the lease that was asked, and an echo of a
// stamp this member really sent; renewals must name the grant's fence.
// A sync cannot install a holder with a fence of the current term it was
// not granted, nor a lease longer than MaxLease, nor more requests than the
// member's share of the queue (MaxQueue/2 split among the other members);
// absurd counts are refused by the decoder before anything is allocated.
// Everything refused is counted ("rejected_REASON", "sync_*"), never a
// panic.
//
// # Use
//
// The core is a mutex.Algorithm: drive it like any core (Step, Tick at
// Deadline, Ready, Advance) and call Acquire, Renew and Release on the
// driver's goroutine; answers are typed outcomes (mutex.Granted with the
// term as Epoch, Renewed, Lost, Released), also reported as events. Ready.State
// holds the incarnation, the last term coordinated and the election's
// state: persist it before sending (the first Ready carries the raised
// incarnation as a promise). Factory builds it from a driver's Env and
// mutex.Options (--lease, --confirm-window).
package central
