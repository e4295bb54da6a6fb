// Package permission is the machinery of mutexd's permission-based mutual
// exclusion, the algorithms in which a member enters a critical section
// once every other member has let it: Ricart-Agrawala (the course notes';
// pkg/mutex/ricartagrawala) and Lamport's distributed mutex (the notes';
// pkg/mutex/lamport). One sans-IO Core runs either (Config.Variant): the
// two share requests stamped with Lamport times, a failure detector,
// incarnations, fences and leases, and differ only in how a member answers
// (answer.go).
//
// # The algorithms, as the notes give them
//
// A member that wants a lock stamps a request with its Lamport clock
// (Env.Lamport.Send: the stamp the others see, carried as the frame's
// Lamport time) and sends it to every other member, one frame each. The
// requests of a lock are ordered by (stamp, member ID).
//
// Ricart-Agrawala: a member that receives a request replies at once unless
// it holds the lock or asked for it first (its own request comes first in
// the order); then it defers the reply, keeping the request in its queue
// for that lock, and answers every deferred request when it leaves. A
// member enters once every other member replied: 2(N-1) messages per
// entry, and the next holder enters one message (the deferred reply) after
// the last one left.
//
// Lamport: a member that receives a request puts it in its queue for the
// lock and acknowledges it; a member enters when its own request heads its
// queue and it has received from every other member a message stamped
// after its request; it leaves by sending a release to every member, which
// takes its request out of their queues: 3(N-1) messages per entry.
//
// # FIFO channels, for Lamport's queue
//
// Lamport's algorithm requires FIFO channels: "a message from j stamped
// after my request" proves that j's earlier request, if any, is already in
// my queue only when j's messages arrive in the order j sent them. UDP does
// not keep that order, and loses frames. We get the same guarantee without
// holding frames back: every frame about a lock carries the sender's
// current request for it (a request carries itself, an acknowledgement its
// Want, a release "none", a requeue "none" stamped one below its new
// request), and a receiver takes a frame only if its Lamport time is above
// the newest frame it took from that member in that incarnation (stamps
// of one sender grow strictly). A late frame is
// dropped, counted as stale, and nothing is lost by dropping it: the newer
// frame already said where the sender stands. So "the newest frame from j
// is stamped after my request, and shows no earlier request of j" is
// exactly what FIFO delivery gives the textbook. Loss is repaired by asking
// again: a waiting member sends its request again to every live member
// whose answer (or, in Lamport's queue, word of the end of an earlier
// request) it has lacked for RetryInterval; answers are idempotent.
//
// # Fences
//
// A grant's fence is its request's place in the (stamp, ID) order:
// stamp<<16 | the requester's index among the members. When nobody fails,
// requests are granted in that order (a member that replied to a request
// has merged its stamp, so its own later request is stamped above; a
// member that asked first defers the later one), so fences grow strictly.
// Every frame carries the highest fence the sender knows of, and a member
// about to grant with a fence not above the highest it knows (which
// happens only after members were given up for dead, below) stamps its
// request anew, above it, and asks again.
//
// Across restarts: the core persists (core.Durable, a promise written
// before any frame that depends on it leaves) its incarnation and a floor
// of its Lamport clock, 2^16 above the clock and raised before the clock
// reaches it. A restarted member resumes its clock at the floor, above
// every stamp it sent or saw, so its requests come after every request it
// ever answered and its fences after every fence it knew.
//
// What a restart may reuse, and what not: no frame leaves stamped at or
// above the floor on disk (Ready raises the floor, floorChunk above the
// clock, whenever the clock comes within floorSlack of it, and the state
// is a promise: written before that Ready's frames leave), so every stamp
// at or above the persisted floor is unused and a restart may take any of
// them; none below it, which the last life may have sent. So one write
// reserves 2^16 stamps, nothing is written per request, and a request
// never waits for the disk. A stamp the last life only saw (a frame's
// Lamport time merged into its clock) may lie above the floor if it
// crashed before the raise was written; it acted on nothing that needed
// the write (no frame left), and the fences it heard of are heard again:
// every answer carries its sender's highest known fence, a grant waits for
// the answer of every live member, and a grant whose fence is not above
// the highest known is stamped anew (below).
//
// # What an entry costs, and what is not in its path
//
// An uncontended entry is the notes' messages and nothing else: the
// request to every other member and their answers (Lamport: and the
// release to all), no disk write and no other frame. The clock floor is
// a range reserved once per start (and raised once per 2^16 - 2^12
// ticks, a write per ten thousand entries or so), so no request waits for a
// write; no fence is persisted, as it is the request's place in the
// (stamp, ID) order, fixed by the stamp. Lamport's release is made after
// the client has its answer: Release holds it back, to the loop's next
// turn when another member's request for the lock is queued here (that
// member waits for it), else at most Config.ReleaseHold (5 ms) for this
// member's next request for the lock, with which it travels in one frame,
// wire.KindLamportRequeue: the release stamped one below the request, so a
// receiver takes the two in the order they were made. Any other call of
// the core makes it first, before any frame it makes. A release only lets
// the others in, so one that leaves later makes them wait longer and never
// lets one enter sooner; and none waits for a release held for the next
// request: a request that comes meanwhile is a frame, which makes the
// release leave before its acknowledgement (stamped after it), and the
// requester needed that acknowledgement anyway. A member that crashes
// before its release leaves is given up as one that crashed holding.
//
// Why a requeue, measured (scripts/bench.sh mutex-profile): on the lab's
// two cores, an entry's time is mostly the frames' (each send wakes a
// daemon), and a client taking the lock again at once found the previous
// entry's N-1 releases being written when its request was to go: Lamport's
// back-to-back entry was 0.4-0.5 ms behind Ricart-Agrawala's, and level
// with it with those frames taken out. A requeue carries both messages, so
// such an entry costs 3(N-1) messages of the notes in 2(N-1) frames, the
// same frames as Ricart-Agrawala's, and every other member wakes once for
// the release and the request.
//
// # Failures: what the notes leave out
//
// The textbook algorithms wait forever for a member that crashed. Each core
// embeds a liveness.Detector fed by every frame (every member sends a
// heartbeat, wire.KindPermHeartbeat, every HeartbeatInterval), and stops
// waiting for a silent member as soon as the member cannot hold a lock by
// its leave: a member needs every other member's leave to enter (a reply;
// in Lamport's queue a frame stamped after its request), so a member that
// was given none, or said since that it is done with it, holds nothing of
// ours.
//
//   - Leaves. A core notes, per lock and member, the Lamport time of the
//     last frame it sent that may count as a leave (Ricart-Agrawala: a
//     reply; Lamport: any frame about the lock). The leave is spent when
//     the member shows, in a frame stamped later, that it has no request
//     below it (its request, an answer's Want, a release), or says in a
//     heartbeat stamped later that it is idle (busy=false: no request,
//     nothing held, no lease of an earlier life or given up in a stall
//     that may still run at a client). Ricart-Agrawala has no release
//     message, so for its last holder the idle heartbeat is the news: a
//     member that said it was busy (in a heartbeat, or by sending a
//     request to all) says so IdleNotice (20 ms with 1 s heartbeats) after
//     its last request ended, unless it asks again first: its request
//     goes to all, says busy, and spends the same leaves (it is stamped
//     after every answer it took), so a client that takes the lock again
//     at once costs no heartbeat round per entry. The notice is news of
//     an idleness that holds when it is sent (busy is read then); sent
//     later, it can only keep the others waiting longer: a member that
//     crashes within IdleNotice of its release is waited for DeadAfter,
//     not SuspectAfter.
//   - Two timeouts. A member with no unspent leave is suspected after
//     SuspectAfter (3.2 s with 1 s heartbeats: two heartbeats of stall, a
//     heartbeat, a margin) and no longer waited for; one that may hold by
//     our leave after DeadAfter (3.8 s with a 3 s lease). Its answers are
//     void then, and its leaves spent.
//   - Leases end before DeadAfter. A grant and a renewal need the answers
//     of a majority (a grant) and a majority heard within FreshWindow, and
//     a lease never ends more than MaxLease after the last instant the
//     holder heard a majority (Core.leaseFrom caps it; up to a heartbeat
//     of a lease is the price). A member that holds or asks beats every
//     BusyHeartbeat (a fifth of the heartbeat), so the others last heard a
//     holder that crashed, stopped or was cut off at most a busy heartbeat
//     before it last heard a majority, or BusyBeatsCovered of them if the
//     last ones were lost: DeadAfter is MaxLease and three busy heartbeats,
//     padded for clock rates, plus the margin (Config.MinDeadAfter). A
//     crashed holder's lease ends on its client's clock (mutexd lock counts
//     its own) first.
//   - Rejoining before the others suspect. A member that heard no
//     majority for SuspectAfter less a heartbeat and the margin takes
//     itself for cut off (it voids the answers it holds); one whose own
//     loop stopped for StallAfter (two heartbeats) stalled: it gives up
//     what it held and answers nobody while those leases may still run at
//     its clients (holding nothing, it would answer at once), and takes a
//     new incarnation. Either rejoins, as a restarted member does: it
//     withdraws its requests and asks for nothing until it has heard every
//     member again (and a FreshWindow passed, so they heard it), or
//     SuspectAfter passed; its new requests are stamped after what the
//     others did meanwhile (their heartbeats carry their Lamport times).
//     The others may have granted without its leave meanwhile, so until
//     each says, after the rejoin, that it is idle, each is waited for
//     DeadAfter. So a member the others suspected has always rejoined, or
//     stopped, before it asks or answers again.
//   - Incarnations. A restarted member has a new incarnation (persisted);
//     the others drop its old requests (queued, deferred) and answers when
//     they see it, and refuse frames of an older one. A restarted member
//     answers nobody and asks for nothing for a lease (RestartHold): a
//     lease it granted before the crash may still run; its heartbeats say
//     busy meanwhile, and it waits DeadAfter for every member, as the
//     leaves of its last life are lost with it.
//
// Recovery: a crashed holder is given up DeadAfter after its last (busy)
// heartbeat, 3.6-3.8 s after the crash with the defaults; a crashed member
// that held nothing by the waiter's leave SuspectAfter after its last
// heartbeat, 2.2-3.2 s after the crash (in Lamport's queue a request sent
// to the member after its last heartbeat is itself a leave, so then
// DeadAfter; so too for a member that crashed within IdleNotice of its
// release). Idle traffic is unchanged: N-1 heartbeats of 5 bytes a second
// per member; a member that holds or asks sends five, and one more round
// IdleNotice after it stops (none if it asks again first).
//
// What this costs in safety: the rules assume a failure shows to both
// sides alike, as a crash, a pause, or a partition into a majority and a
// minority does. When one link fails while both its ends still hear a
// majority (A and B cannot talk, C hears both), A and B each take the other
// for dead after SuspectAfter, and both may grant at once: a majority of
// answers does not intersect in a vote here, as Ricart-Agrawala's replies
// are permissions, not votes. What protects the resource then is the fence
// (the two grants carry different fences; a resource that refuses a fence
// below one it has seen refuses the older holder's writes) and the lease.
// Guarantees lists crash, pause, partition (into a majority side and a
// minority, as mutex.Partition means it; the sim tests run a lone holder
// and a minority of two cut off) and loss; not every failure of links.
//
// # Frames that lie
//
// Every field is read as an attacker would: a request's stamp must not be
// above the Lamport time of the frame that carries it, nor a fence's stamp
// (the node bounds a frame's Lamport time by what a member can have
// reached since it was last heard, internal/node's LamportRate, so a
// forger moves clocks by 2^18 a second at most and the 47-bit stamps last
// 17 years of it); stamps end at wire.MaxPermStamp, where this member
// refuses new requests with ErrClockExhausted rather than wrap; an
// incarnation may move up by at most MaxIncarnationJump at once, and a
// forged one is undone by the member's next frame stamped after it
// (epoch.Life); frames of the other algorithm, of an older incarnation, or
// from non-members are refused and counted. Requests make entries in the
// lock table, bounded by MaxLocks: another member's frames at most its
// share (MaxLocks/2 split among the other members), so half the table is
// always this member's and nobody takes the others' room; a member's
// idle heartbeat ends every request of its stamped before it (one it never
// made included), and idle entries are reclaimed (their fences kept in a
// floor).
//
// # Use
//
// A Core is a mutex.Algorithm: drive it like any core (Step; Tick when
// Deadline says so) and call Acquire, Renew and Release on the driver's
// goroutine; their answers are typed outcomes, drained with Outcomes, and
// events (lock_granted, lock_renewed, lock_lost, lock_released) for logs
// and hooks. Ready.State is the incarnation and the Lamport floor: persist
// it before sending (a promise). Shared requests are refused with
// mutex.ErrSharedUnsupported: both algorithms grant one holder at a time.
package permission
