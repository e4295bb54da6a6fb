// Package permission is the machinery of mutexd's permission-based mutual
// exclusion, the algorithms in which a member enters a critical section
// once every other member has let it: Ricart-Agrawala (the course notes';
// RicartAgrawalaFactory, mutexd's ricartagrawala) and Lamport's
// distributed mutex (the notes'; LamportFactory, mutexd's lamport), and
// the distributed bakery (the notes' adaptation of Lamport's bakery, which
// they reject for its cost; BakeryFactory, mutexd's bakery). One sans-IO
// Core runs any of them (Config.Variant): they share requests stamped
// with Lamport times, a failure detector, incarnations, fences and leases,
// and differ only in how a member answers (answer.go) and, for the
// bakery, in the two reads before its request (bakery.go, which says how
// its ticket is a Lamport time and why the rest below holds for it as for
// Ricart-Agrawala).
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
// ever answered and its fences after every fence it knew. The outcomes of
// a Ready whose promise is not on disk reach the driver only once it is
// (mutexcount.Hold): a member alone grants without a frame, on an
// incarnation a crash would forget.
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
//     its last request ended, and twice more at the busy spacing (the
//     idle tail: "Lease ends" counts on it), unless it asks again first:
//     its request goes to all, says busy, and spends the same leaves (it
//     is stamped after every answer it took), so a client that takes the
//     lock again at once costs no heartbeat round per entry. The notice is news of
//     an idleness that holds when it is sent (busy is read then); sent
//     later, it can only keep the others waiting longer: a member that
//     crashes within IdleNotice of its release is waited for DeadAfter,
//     not SuspectAfter.
//   - Two timeouts. A member with no unspent leave is suspected after
//     SuspectAfter (3.2 s with 1 s heartbeats: two heartbeats of stall, a
//     heartbeat, a margin); one that may hold by our leave after DeadAfter
//     (3.8 s with a 3 s lease). A suspected member is given up (no longer
//     waited for, its answers void, its leaves spent) only once a majority
//     confirms the silence ("Links", below): silence at one member alone
//     proves nothing.
//   - Leases end before DeadAfter. A grant and a renewal need the answers
//     of a majority (a grant) and a majority heard within FreshWindow, and
//     a lease never ends more than MaxLease after the last instant the
//     holder heard a majority (Core.leaseFrom caps it). A renewal waits
//     for a majority heard since it was asked (its heartbeat asks the
//     others to answer at once: a round trip, or up to a busy heartbeat
//     more when this member's beats left late and the answers count no
//     later than the last of them, countFor), so the cap costs it time
//     rather than lease; confirmed on the majority last heard, up to
//     FreshWindow old, it would lose up to that age, and a client renewing
//     every third of a short lease would see renewals that do not move its
//     end.
//     A grant may still lose up to a heartbeat (the answers it waited for
//     may be old); `mutexd lock` renews at once a grant that came with
//     less of its lease than its keeper needs. A member that holds or
//     asks beats every BusyHeartbeat (a fifth of the heartbeat), so the
//     others last heard a holder that crashed, stopped or was cut off at
//     most a busy heartbeat before it last heard a majority, or
//     BusyBeatsCovered of them if the last ones were lost: DeadAfter is
//     MaxLease and three busy heartbeats, padded for clock rates, plus the
//     margin (Config.MinDeadAfter). A crashed holder's lease ends on its
//     client's clock (mutexd lock counts its own) first.
//   - Rejoining before the others suspect. A member that heard no
//     majority for SuspectAfter less a heartbeat and the margin
//     (RejoinAfter, 2 s) takes itself for cut off (it voids the answers it
//     holds, and says so at WARN, EventCutOff); a frame counts toward that
//     majority at its kernel stamp, never later than this member's own
//     heartbeats sent by then allow ("Links" says why: a loop that ran
//     late, stalled for less than StallAfter, reads frames that came
//     while it sent nothing, and says so at WARN, EventLoopLate); one whose own
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
// heartbeat and one probe round later (ConfirmSlack, 10 ms, and a round
// trip), 3.6-3.8 s after the crash with the defaults, unless the majority
// vouches for the end of its leases ("Lease ends", below: then at that
// end and the margin, and never before SuspectAfter after its last
// heartbeat, 3.0-3.2 s after the crash with the defaults); a crashed member
// that held nothing by the waiter's leave SuspectAfter after its last
// heartbeat and a probe round later, 2.2-3.2 s after the crash (in
// Lamport's queue a request sent to the member after its last heartbeat
// is itself a leave, so then DeadAfter; so too for a member that crashed
// within IdleNotice of its release). Idle traffic: N-1 heartbeats a
// second per member (26 bytes, the extended form, to members of a build
// that reads it; 5 bytes to older ones, once one of their busy 5-byte
// heartbeats came, but for every eighth, and a 5-byte copy besides to a
// member heard sending 5-byte idle ones, in the idle tail and one in
// eight: "Links") and its N-1 acknowledgements of the others'
// ("Links" says why); a member that holds or asks sends
// five heartbeats (one in four asking for acknowledgements), and three
// more rounds once it stops (IdleNotice after, then two at the busy
// spacing; none if it asks again first).
//
// # Links: when a member may stop waiting for another
//
// The rules above assume that a failure shows to both sides alike, as a
// crash, a pause, or a partition into a majority and a minority does.
// One broken link does not: when A and B cannot talk and both still hear
// C, A's silence from B is also B's from A, and if each gave the other up
// on its own silence, both would grant at once (a majority of answers
// does not intersect in a vote here: the replies are permissions, not
// votes). Issue 29 measured exactly that: 11 overlapping critical
// sections with one link cut. So silence at one member is only a
// suspicion, and the rule for giving a member up is:
//
// A member X stops waiting for Y at time t only if it holds, from a
// majority M of the members (X among them, Y not), evidence that no
// member of M heard anything from Y, directly or through a relay, during
// one stretch [F, S] with S-F at least X's timeout for Y (DeadAfter if
// Y may hold by X's leave, else SuspectAfter), and S <= t.
//
// X gets that evidence by asking (link.go). ConfirmSlack after its own
// silence from Y reached the timeout, X sends every other member a probe
// (wire.PermProbe) at its time S; each answers how long it has heard
// nothing from Y (wire.PermProbeReply, echoing the probe's Lamport time).
// An answer that arrives at X's time q reporting a silence a was made
// after S (it echoes the probe) and no later than q, so the answerer
// heard nothing from Y from no later than q - a until at least S: X takes
// F as the latest of those beginnings over majority-1 answers (the
// earliest ones) and its own, the answerers' durations shrunk for clock
// rates (Config.unpad). No bound on message delay enters: a slow answer
// only moves F later. If the stretch is too short, X asks again when it
// could be long enough, else every RetryInterval; an answer of another
// probe counts for nothing; hearing Y by any path ends it all.
//
// Why Y cannot be in its critical section at t, nor enter one without X's
// leave: links fail both ways (a link that delivers one way delivers the
// other; the loss a working link has is what BusyBeatsCovered allows; a
// node whose configuration agreement refuses a member's frames withholds
// its core's frames from that member too, internal/node), so
// during [F+I, S], I being Y's heartbeat interval (a busy one, and the
// beats BusyBeatsCovered lets be lost, when Y holds by X's leave), Y
// hears no member of M directly either. The members Y hears directly are
// then outside M, fewer than a majority (Y's majority counts only frames
// that came directly: a relayed one proves nothing about the link).
//   - Y holds by X's leave (the DeadAfter case): every lease of Y's ends
//     at most MaxLease after the last instant Y heard a majority
//     (leaseFrom), and Y renews nothing without a fresh majority, so all
//     of them ended by F + I + MaxLease (padded), within DeadAfter - Margin
//     of F: before S, and Y stays out of its critical section until it
//     is granted again, which takes X's leave (X defers while it holds or
//     asks first) or X given up, below.
//   - Y does not (the SuspectAfter case): Y heard no majority from F + I
//     on, so it took itself for cut off RejoinAfter later (SuspectAfter -
//     a heartbeat - Margin: before S) and voided the answers it held; it
//     grants nothing cut off, and rejoins (startRejoin) before it asks or
//     answers again: it then treats every member as one that may hold
//     without its leave (lentBefore, DeadAfter) until that member says it
//     is idle after the rejoin. Or Y's own loop stopped (StallAfter), with
//     the same rejoin, or it crashed (RestartHold, the same rejoin).
//   - And Y cannot give X up in turn while X holds without Y's leave: in
//     either case Y was out (a stretch of DeadAfter is longer than one of
//     SuspectAfter), so it rejoined before it acted again, and after a
//     rejoin it waits for every member as for one that may hold without
//     its leave (DeadAfter) until that member says, after the rejoin,
//     that it is idle. Giving X up then takes a majority silent from X
//     for DeadAfter: by the first case with the roles swapped, X's leases
//     have ended by then.
//
// The first step (Y hears no member of M during [F+I, S]) needs Y to
// beat every I while it counts what it hears: the members of M last
// heard Y at F, so Y's beats after F + I reached none of them, and links
// fail both ways. A loop that runs late sends nothing: a host that
// stalled for less than StallAfter (which it does not take for a stall;
// nor a longer stall whose gap the frames read at its resume, stamped
// during it, hide), or was busy, reads on resuming the frames its kernel
// kept, stamped during the pause, while the others' silence from it
// began with its last beat before it; and the late beat it then sends
// may itself be lost (the link failed during the pause), while frames
// the others sent just before the failure still arrive after it.
// Counted as heard when read, they would keep Y from taking itself for
// cut off until RejoinAfter after it resumed, up to StallAfter later
// than the argument allows.
//
// So Y counts a frame heard directly toward its majority
// (Core.majorityHeard: the cut-off, grants, leases) by its receive stamp
// r, never by when it reads it, and no later than two bounds allow: its
// own beats sent by then (beats.go, countFor), and the last of its
// heartbeats the sender acknowledged (ackCap).
//
// The beats. Number Y's beats (its heartbeats and requests to all) sent
// by r - d, latest first, b(1), b(2), ..., where d is inFlight (a
// quarter of Margin, 50 ms), and let sp(i) be the spacing due after b(i)
// as Y's schedule stood when it left (the next beat's due time less
// b(i): a busy heartbeat, a heartbeat, the idle notice), and L(i) how
// late b(i) left (its time less the due time b(i+1) set; an early beat,
// a request, is not late). The frame counts at r, but no later than d
// after b(j) + sp(j) + ... + sp(1) + C(j), for j = 1 and for every j
// whose spacings sum to at most a heartbeat (five busy ones), where C(j)
// credits each of L(j-1), ..., L(1) up to ε (lateCredit, a tenth of
// Margin, 20 ms) and all of them up to C (lateCreditMax, a quarter of
// Margin, 50 ms). With beats on time each term is the next beat's due
// time, at or after r - d, and the frame counts at r: the rule costs
// nothing while the loop keeps time, nor while it is late by up to ε a
// beat (a loaded host; TestLateLoopLeaseShortfall). A beat later than
// that shortens every term across it by its lateness beyond the credit,
// so a frame stamped during a pause counts at most d + C after the beat
// then due, and so does one in flight across the late beat (stamped
// within d after it); the terms catch up once the beats since the gap
// span a heartbeat. (A loop late by δ > ε on every busy beat loses up to
// 5δ - C - d of each lease, 100 ms at δ = 40 ms; without the credit it
// lost 5δ - d, 50 ms at δ = 20 ms.)
//
// The acknowledgements. Y's heartbeats to all ask the others to
// acknowledge them (wire.PermHeartbeat's AckWanted and Ack): every idle
// one (the extended form, which every member of a build since the lease
// ends acknowledges), and at least every heartbeat less a busy one while
// busy (askDue; a heartbeat is due a heartbeat after the last ask at the
// latest, askBy). A member of a build older than the extended form
// refuses it (a sign of life only, which spends no leave), so Y sends
// its idle heartbeat to a member in the 5-byte form, asking nothing,
// once a busy heartbeat of that member's came in the 5-byte form, and in
// the extended form again once an extended frame of it comes; but the
// first idle heartbeat after the mark and every eighth since go extended
// anyway, once the idle tail is over (olderProbe). Anyone on a LAN
// without a key can forge a busy 5-byte heartbeat: one forged each way
// between two idle members of this build made each take the other for
// older, and idle, neither sent an extended frame again, so their frames
// counted uncapped until one was busy ("member 2 gave 1 up 343.67228ms
// after 1 was partitioned", TestForgedShortBusyStaysCapped, before). A
// member of this build acknowledges the extended heartbeat (an extended
// frame back), which undoes both marks within a heartbeat and a round
// trip. A member of an older build refuses it, a sign of life only, and
// stays marked (it sends no extended frame); its leaves were spent by the
// idle tail's 5-byte heartbeats, during which none goes. An idle
// 5-byte heartbeat marks nothing: members of this build send it to a
// member they take for older, and marking them back for it left two
// members of this build on the 5-byte form for good, their frames
// uncapped (review-perm6: a member whose frames were lost for its
// upgrade restart's hold); so an idle member of an older build gets the
// extended idle heartbeat and refuses it, a sign of life only, until it
// is busy once (TestIdleBeatsToIdleOlderBuild). So that it still spends
// Y's leaves (else, after Y crashes, it waits DeadAfter, not
// SuspectAfter, for them), Y sends a member that sent an idle 5-byte
// heartbeat since its last extended frame a 5-byte copy of each
// heartbeat of its idle tail and of every eighth idle heartbeat after,
// sent just before the extended one (shortCopies; a member of this build
// takes it as one more idle heartbeat, marking nothing, and still
// acknowledges the extended one: TestShortCopiesToIdleOlderBuild). Y says so once per member so
// taken (EventOlderBuild: at WARN when they are a majority of the others,
// whose heartbeats a renewal then waits for) and lists them in its status
// (Detail.Older) until they send an extended frame
// (TestOlderBuildSaid). A member of this build sends the 5-byte form
// only to a member it took for older, and leaves off at that member's
// first extended frame, which every member of this build sends when busy
// (a restart begins busy) and in every idle heartbeat to a member it does
// not take for older. A frame
// of a member that has acknowledged any counts no later than I + d after
// the last ask of Y's it acknowledged: it heard Y then
// (TestUnackedBeatsCutOff; a frame that carries an acknowledgement
// counts by the cap it raises).
//
// r is the time the node hands the frame with (core.Message.Time): the
// kernel's receive stamp, or, for a stream frame and for a datagram the
// kernel did not stamp (SO_TIMESTAMPNS refused, another OS: the daemon
// says so at WARN once per cause, rx_stamps_missing), the reader's clock
// right after its read; a frame handed with no time counts at the
// core's clock as it is stepped. No r is after the
// core's clock: a stamp moves the clock up to it (Core.observe). So the
// count depends only on r, the beats Y sent by r and the
// acknowledgements taken: the same for every interleaving of ticks and
// kept frames. The daemon promises none (its socket's reader hands
// datagrams to its loop 8 a read, and the loop, woken by its overdue
// timer, ticks whenever its channel is empty, before the kept frames,
// after them or amid them; sim.ResumeOrder, drawn at each resume in
// mutextest.HarshInterleaved). A frame stamped before every beat Y keeps
// (16; read that many beats after it came) counts for nothing.
//
// Why that is no later than F + I + d + C: the frame, of a member P of
// M, was sent at some σ no later than the failure (none sent after
// arrives) and at most d before r (a frame in flight longer than d as
// the link failed may count its excess late; the Margin covers it, as
// before). If P acknowledged an ask of Y's sent at a, P heard Y then,
// so F >= a, and the frame counts by a + I + d. Otherwise (P of a build
// that does not acknowledge, or none of its acknowledgements came yet:
// below) the beats bound it. Let b be Y's last beat that reached a
// member of M, no later than F. If b was sent after r - d, the frame
// counts at r, before b + d. Otherwise b is some b(j), and b(j-1), ...,
// b(1), all sent by σ, were lost on a link that still worked: at most
// BusyBeatsCovered-1 busy beats, so j is a term whose spacings sum to at
// most BusyBeatsCovered busy heartbeats (within I), and the frame counts
// by b(j) + I + d + C. A late beat is one beat in that numbering, never
// a stretch of lost time: the beats BusyBeatsCovered lets be lost are
// counted across a gap. Y then takes itself for cut off RejoinAfter
// after what it counted, not after it resumed: by F + SuspectAfter -
// (Margin - d - C), half the Margin before X could give it up. In the
// DeadAfter case the beats alone bound it (I there is BusyBeatsCovered
// busy heartbeats), and d + C is within the Margin of MinDeadAfter.
//
// An idle member's beats are the case the acknowledgements are for: it
// beats every heartbeat, and a working link may lose one or two in a
// row, after which, counted by its beats alone, it would count frames up
// to two heartbeats after M last heard it, and X could give it up before
// it took itself for cut off (TestLostIdleBeatsCutOffBeforeGivenUp:
// "member 2 gave 1 up 396.690645ms after 1 was partitioned", every seed,
// before the acknowledgements, which now keep 2 and 3 hearing 1 between
// its beats). What the link loses, nobody acknowledges: with 1's beat
// and its acknowledgement after it lost (two frames), and 1's beats just
// before the others', 1 would count their next beats up to two
// heartbeats after they last heard it, but not beyond the last ask they
// acknowledged and a heartbeat (TestLostBeatsAndAcksCutOffBeforeGivenUp,
// every frame of 1's lost for 2-2.9 s: without the cap "member 2 gave 1
// up 131.386236ms after 1 was partitioned"). The price: every member
// acknowledges every other member's idle heartbeat (N-1 frames a second
// more per member, idle traffic doubled: TestIdleTraffic), and a member
// whose asks or acknowledgements are lost twice in a row by every member
// of a majority takes itself for cut off and rejoins (safe, and a round
// of retries).
//
// Known not to hold yet (reviewed 2026-12-07):
//   - Frames of a member that acknowledged nothing yet (the first
//     heartbeat after this member started, or after that member was
//     heard sending a heartbeat of a build older than the extended form)
//     are counted by the beats alone, as above, where an idle member's
//     lost beats are not covered: for a round trip after a start, for
//     good with members of such a build (upgrade all), and, after a
//     busy 5-byte heartbeat forged without a key in the name of a member
//     that has acknowledged nothing in its current incarnation, as its
//     requests name it (one that has is not taken for older on a busy
//     5-byte heartbeat: a build changes only with a restart; a forged
//     request naming a new incarnation first gets round that),
//     until the extended heartbeat this member sends at its next idle
//     beat is acknowledged (a heartbeat and a round trip; every eighth
//     beat if that one is lost): a window of a round trip after each
//     restart of that member.
//   - A frame in flight longer than d when the link failed counts up to
//     its excess late (the Margin, 200 ms, of which d + C take half,
//     absorbs a LAN's).
//
// A crash, a pause, a partition of Y's minority: every member of the
// majority is as silent from Y as X, and answers so within a round trip,
// so recovery is a probe round slower than before. A single broken link
// A-B: C hears B, so A never gives B up (nor B A); each waits for the
// other, safely, however long the link stays broken. So that the lock
// keeps moving meanwhile, frames go around the broken link (relays,
// link.go): a request sent again for want of an answer also goes to two
// members that pass it on (wire.PermRelay; an answer to a frame that came
// that way goes back that way), and once a member has heard nothing
// directly from another for RelayAfter (1.5 heartbeats), all its frames
// for it, heartbeats included (one at once), go both ways, marked
// "unheard" (the other end then relays too: a link that fails one way
// only is bridged both ways). A relayed frame is stepped
// as its origin's: it keeps the failure detector from suspecting the
// origin and carries the requests, replies and releases (a handoff across
// the broken link costs two more hops; the first after the cut, at worst a
// RetryInterval: the resent request goes around, and the answer comes
// back around); it never counts toward the receiver's majority. A member that has heard nothing directly from another for
// SuspectAfter while its frames come through a relay logs the broken link
// at WARN (EventLinkDown, naming both ends) and shows it in status; one
// that stays silent here while others still hear it (relays failing too)
// logs EventUnconfirmed, at WARN, once, and is still waited for.
//
// What the relay costs: nothing while every link works; while one is
// broken, each frame between its ends is sent three times and passed on
// twice; a member that crashed is relayed to (heartbeats and resent
// requests, and passed on until the relay suspects it too) for the 2 s
// or so between RelayAfter and its confirmation. A relay can forge the
// frames it passes on, as any key holder can forge any frame (the node's
// doc); it cannot forge an answer to a probe from a member it is not: a
// lying member adds one answer, and X's own silence is still required.
//
// Limits. The argument needs that when a majority hears nothing from Y,
// Y hears no majority directly. Links that fail both ways give that, and
// so does one link failing one way only (the members at the other ends
// still hear Y, so nobody gives Y up; the relays, told by the "unheard"
// mark, carry the other direction). A member whose own sends all fail
// while it still receives (a host firewall dropping its output) does not:
// it keeps hearing a majority and renewing while the others, silent from
// it, give it up; the fence then protects the resource, as before this
// rule. A cluster of two never gives a member up (no third member to
// confirm), as it never could grant without both. In a cluster mixing this
// version with older ones, only members of this version answer probes
// and relay: a member of this version gives a silent one up only when
// enough of them confirm it (EventUnconfirmed says so); upgrade all.
//
// # Lease ends: stopping the wait at the end of a crashed holder's leases
//
// DeadAfter counts a holder's lease from its last heartbeat, because a
// waiter cannot know when the holder last renewed: a lease ends at most
// MaxLease after the holder last heard a majority, and that may be up to
// the moment it fell silent. etcd's lease, renewed in steps its server
// knows, ends 2-3 s after its holder dies. To do as well without
// weakening a lease, a holder tells the others when its leases end, and
// keeps its word (lease.go):
//
//   - Announcements. A busy heartbeat (the extended wire.PermHeartbeat)
//     says by when every lease its sender granted or renewed ends (EndMS,
//     from the frame's sending; never earlier than an earlier
//     announcement's end), whether a request of its waits (Pending), and
//     whether it is bounded (below). Receivers keep the newest one they
//     took, padded for clock rates, and acknowledge it when asked.
//   - Bounded renewals. A member that a majority (itself included) has
//     acknowledged once is bounded for the rest of its incarnation: it
//     confirms a renewal only up to the highest end a majority
//     acknowledged, announcing the renewal's end at once (a round trip;
//     the lease is counted from before the announcement, so the client,
//     which counts the time left from when it asked, never holds past
//     it). So every end it counts on is known to a majority, which meets
//     every majority a waiter asks. A grant is not delayed: it needs the
//     answers to a request, stamped after Y's earlier announcements, so a
//     member that took the request but no later announcement vouches for
//     nothing; the next announcement (Pending false) covers the lease.
//   - Covering. A member vouches for member Y's end when Y's newest
//     announcement it took is bounded, not Pending, and stamped after every
//     request frame of Y's it took, and it is neither cut off, rejoining,
//     nor unsure what Y was granted without it (lentBefore: a member Y
//     granted without, having given it up, was cut off or stalled, and
//     has rejoined since). In Ricart-Agrawala and the bakery a grant needs
//     every live member's answer to the request (the ticket read), so every
//     member of any majority took it, except one Y had given up. Not in
//     Lamport's queue: there a member may enter on another member's frame
//     stamped after its request (that member's own request, say) without
//     that member ever taking the request, so nobody vouches and Lamport
//     waits DeadAfter as before.
//   - The rule. A waiter X that gave Y leave (its timeout DeadAfter) and
//     vouches for Y's end probes, as in "Links", once silent from Y for
//     SuspectAfter; answers (the extended wire.PermProbeReply, sent to
//     members that send extended heartbeats) say, beside the silence,
//     whether the answerer vouches and how long until that end. If
//     majority-1 vouching answers, with X's own silence, show a stretch
//     [F, S] of SuspectAfter as "Links" requires, and the probe left (S)
//     once the latest end vouched for (X's own included), padded, and the
//     Margin had passed, X gives Y up. Answers to a probe that left
//     earlier only say when to ask again: at that end and the Margin. (A
//     member that vouched may hear Y after it answered and acknowledge a
//     renewal past that end, when a lease outlasts SuspectAfter: 500 ms
//     heartbeats, or a 5 s lease; only its answer to the later probe
//     shows it.) An end that, with the Margin, passes X's timeout for Y
//     (DeadAfter after Y's last frame, by which every lease Y may hold has
//     ended) is not waited for: Y is waited for DeadAfter as without an
//     announcement (an end of 2^31 ms, which a member, or anyone on a
//     cluster without a key, may announce, would otherwise hold the lock
//     for 24.8 days).
//
// Why Y holds nothing then, nor enters without X's leave: every lease Y
// granted before its latest bounded announcement taken by a member of
// the majority M ends by that end; every renewal since ends by an end a
// majority acknowledged, so one that a member of M took before it fell
// silent (and vouches for: its newest end is at least as late), and a
// lease that ended cannot be renewed: with no member of M hearing Y up to
// S, after the end vouched for, none acknowledged a renewal that runs
// past it; a grant
// since needs a request that every member of M, unless given up by Y,
// took, and then that member vouches for nothing (a member Y gave up was
// cut off or stalled and rejoined, and is unsure: lentBefore). A silence
// of SuspectAfter is still required: it is the SuspectAfter case of
// "Links", which shows that Y, if alive, took itself for cut off and
// rejoins before it asks or answers again, so it cannot give X up in turn
// while X holds without its leave. Its I is a heartbeat: X still lends to
// Y (it took no idle heartbeat of Y's since its leave), so Y was busy
// when X last heard it, and beat at the busy spacing then and for the
// idle tail after (its notice and two more): had X lost them all, more
// than BusyBeatsCovered-1 in a row, the link had failed, so Y last heard
// X at most BusyBeatsCovered busy heartbeats (0.6 s) after X last heard
// it, within a heartbeat; without the tail, a lost notice and the idle
// heartbeat a second after it let Y hear X two seconds on
// (TestLostIdleNoticeCutOffBeforeGivenUp). A loop that ran late is the
// rule above (TestShortStallCutOffBeforeGivenUp, with its tick before or
// amid the kept frames TestShortStallTickFirstCutOffBeforeGivenUp, a
// frame in flight across its late beat
// TestLateBeatInFlightCutOffBeforeGivenUp). That floor is a wait for safety, not
// for detection: a sign that Y's port closed proves nothing (anyone on
// the LAN can forge a reset), so it could not shorten it either.
//
// In a cluster whose majority runs an older mutexd (which refuses the
// extended heartbeat and never acknowledges), no member becomes bounded:
// renewals are confirmed on a majority heard since they were asked (the
// older members' own heartbeats, up to a heartbeat later: a wait
// mutexd's lease floor does not model, never a cut), announcements say
// unbounded, nobody vouches, and holders are waited for DeadAfter. A
// bounded member never goes back: if members are downgraded below a
// majority, its renewals wait for acknowledgements that do not come, it
// says so at WARN (EventRenewalUnacked) and its clients lose their
// leases; restarting it makes it unbounded again.
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
// made included), a busy one every request stamped before its oldest open
// one (PermHeartbeat.Oldest, unless a lease of an ended request may still
// run), a member answered about a lock it has no request of open disowns
// the answer at once (a Lamport release, or a Ricart-Agrawala reply or
// the bakery's ticket reply that asks for nothing: the request it never
// made ends a round trip after it was taken, while it asks), and idle
// entries are reclaimed (their fences
// kept in a floor). A relayed
// frame must be stamped no later than the frame that carries it (which the
// node bounded and merged: a relay adds no Lamport time), is passed on
// only for its own sender, once, never as a relay of a relay, and is then
// checked as any frame of its origin; an answer to a probe must be stamped
// after the probe it names and be about another member, and only answers
// to this member's last probe count.
//
// # Use
//
// A Core is a mutex.Algorithm: drive it like any core (Step; Tick when
// Deadline says so) and call Acquire, Renew and Release on the driver's
// goroutine; their answers are typed outcomes, drained with Outcomes, and
// events (lock_granted, lock_renewed, lock_lost, lock_released) for logs
// and hooks. Ready.State is the incarnation and the Lamport floor: persist
// it before sending (a promise). Shared requests are refused with
// mutex.ErrSharedUnsupported: every variant grants one holder at a time.
// RicartAgrawalaFactory, LamportFactory and BakeryFactory are the
// algorithms' lines in pkg/mutex/algorithms, for mutexd.
package permission
