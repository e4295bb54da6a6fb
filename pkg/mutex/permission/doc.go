// Package permission is the machinery of mutexd's permission-based mutual
// exclusion, the algorithms in which a member enters a critical section
// once every other member has let it: Ricart-Agrawala (seeds 002, 004;
// pkg/mutex/ricartagrawala) and Lamport's distributed mutex (seed 004;
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
// Want, a release "none"), and a receiver takes a frame only if its Lamport
// time is above the newest frame it took from that member in that
// incarnation (stamps of one sender grow strictly). A late frame is
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
// of its Lamport clock, 2^24 above the clock and raised before the clock
// reaches it. A restarted member resumes its clock at the floor, above
// every stamp it sent or saw, so its requests come after every request it
// ever answered and its fences after every fence it knew.
//
// # Failures: what the notes leave out
//
// The textbook algorithms wait forever for a member that crashed. Each core
// embeds a liveness.Detector: a member silent for DeadAfter (any frame is a
// sign of life; every member sends a heartbeat, wire.KindHeartbeat, every
// HeartbeatInterval) is no longer waited for, and the answers it gave are
// void. That is only safe if a member given up cannot still hold or grant,
// so four rules go with it:
//
//   - A majority. A member grants only when the members that answered,
//     with itself, are a majority, and it heard a majority within
//     FreshWindow; a renewal needs the same fresh majority. A member on
//     the minority side of a partition grants and renews nothing.
//   - Leases end before the others give up. DeadAfter is at least the
//     longest lease, padded for clock rates, plus FreshWindow, a heartbeat
//     and a margin (Config.MinDeadAfter; 5.7 s with a 3 s lease and 1 s
//     heartbeats). A holder cut off from the others stops renewing within
//     FreshWindow of the last time it heard them, and its lease ends before
//     they stop waiting for it. A crashed holder's lease ends on its
//     client's clock (mutexd lock counts its own) before the others go on.
//   - Rejoining. A member that may have been given up (it heard no
//     majority for DeadAfter less a heartbeat and the margin, its own loop
//     stalled for half of DeadAfter, or it restarted) rejoins: it voids the
//     answers it holds, withdraws its requests, and asks for nothing until
//     it has heard every member again (and a FreshWindow passed, so they
//     heard it), or DeadAfter passed. Its new requests are stamped after
//     the Lamport times of everything the others did meanwhile (their
//     heartbeats carry them). A stalled member also gives up what it held
//     (Lost, "stalled") and takes a new incarnation.
//   - Incarnations. A restarted member has a new incarnation (persisted);
//     the others drop its old requests (queued, deferred) and answers when
//     they see it, and refuse frames of an older one. A restarted member
//     answers nobody and asks for nothing for a lease (RestartHold): a
//     lease it granted before the crash may still run.
//
// What this costs in safety: the rules assume a failure shows to both
// sides alike, as a crash, a pause, or a partition into a majority and a
// minority does. When one link fails while both its ends still hear a
// majority (A and B cannot talk, C hears both), A and B each take the other
// for dead after DeadAfter, and both may grant at once: a majority of
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
// (the node bounds a frame's Lamport time to 2^40 above its clock); stamps
// end at wire.MaxPermStamp, where this member refuses new requests with
// ErrClockExhausted rather than wrap; an incarnation may move up by at
// most MaxIncarnationJump at once; frames of the other algorithm, of an
// older incarnation, or from non-members are refused and counted; only a
// Lamport request makes an entry in the lock table, bounded by MaxLocks,
// and idle entries are reclaimed (their fences kept in a floor).
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
