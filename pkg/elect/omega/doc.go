// Package omega is the eventual leader election (Ω) of the course notes, for the
// crash-recovery, partially synchronous (GST) model, as a sans-IO core
// (an elect.Elector: `electd run --algorithm omega`).
//
// # The algorithm (the notes' pseudo-code)
//
//	Init:            Leader <- none; incarnation <- 1; store(incarnation)
//	Upon recovery:   Leader <- none; retrieve(incarnation); incarnation++;
//	                 store(incarnation)
//	every Heartbeat: send (heartbeat, incarnation) to every member
//	Upon receive(heartbeat, inc) from j:
//	                 Candidates <- Candidates - (j, e) + (j, inc)
//	Upon Interval:   NewLeader <- the candidate with the lowest incarnation,
//	                 then the lowest ID
//	                 if NewLeader != Leader: Interval++ (the ◇P detector)
//	                 Leader <- NewLeader; Candidates <- {}
//
// The incarnation is the whole durable state (elect.Word, version 'O'):
// it is written before the first heartbeat of a life leaves (Ready.Promise),
// so a process that keeps crashing carries a growing incarnation and is
// chosen after every process that crashed less: it cannot end up leader
// while it keeps crashing (eventual accuracy), and since the choice is
// deterministic over the same candidates, all correct processes choose the
// same one once the system is synchronous (eventual agreement).
//
// # Where this core deviates from the notes, and why
//
//   - Heartbeats are sent every Heartbeat, and the candidate set is
//     collected over a separate window, Interval (>= Heartbeat, initially
//     LeaderTimeout). In the notes one timer does both: a receiver whose
//     window equals the sender's period misses the sender whenever jitter
//     moves a heartbeat across a window boundary, and suspects a live
//     leader about every other window until the interval has grown past
//     the jitter. The window is what grows, by Step: the timeout of the
//     classical ◇P implementation.
//   - The window grows at a mistake, not at every leader change: when a
//     leader this member lost to silence is heard again in the life it
//     was trusted in (it was alive, and the window too short for it). A
//     leader that crashed is heard again, if ever, in a later life, and
//     its loss grows nothing. In the notes every change grows the window,
//     so each real crash a member lived through made its next failover
//     slower: the members of a large cluster, rarely restarted, lived
//     through all of them (at 64 members failover grew from 0.9 to 1.6 s
//     over ten successive kills, where a 5-member cluster, each of whose
//     members was restarted every five, stayed under 1 s:
//     docs/benchmarks/2026-12-06-omega64-failover.md). Eventual accuracy
//     is kept: every false suspicion of a correct leader is followed by
//     its heartbeats once the system is synchronous, and grows the
//     window, until the window holds them.
//   - Only the members that contend heartbeat to all: the leader, a member
//     before its first choice, and a member whose leader fell silent (a
//     follower's ask, next, goes to its leader alone). A follower
//     chose its leader over itself, so its heartbeats could change no
//     one's choice; the notes' processes all send all the time, N(N-1)
//     frames a period for the cluster (80,640 a second at 64 members and
//     50 ms), here the leader's N-1 (Aguilera et al.'s communication-
//     efficient Ω does the same). What it costs: a follower whose leader
//     fell silent has heard none of the other followers, so it cannot
//     choose at once as the notes' process does. It probes: the member
//     it ranks first after the lost leader (the successor) chooses
//     itself at once and heartbeats, the others listen and follow it as
//     soon as they hear it. A leader heard in a new life (restarted
//     within a window) is lost the same way: its new incarnation ranks
//     it after the others, and a window that heard only the leader and
//     this member would otherwise make every follower choose itself. If the successor is down too, after one more
//     window and a heartbeat period they contest as at the start: a
//     member heartbeats until it hears a better candidate, and chooses
//     the best it heard at the end of one more such period. A failover
//     takes as long as the notes' when one member crashes, and two
//     windows longer when the successor is down too; a large cluster is
//     never flooded with every member's heartbeats at once. A follower's silence is no sign of a crash:
//     status says when each member was last heard, not whether it is up.
//   - A follower asks before it counts a window without its leader
//     (Config.Ask, electd's default): in the window's last Asks x Ask it
//     sends the leader a heartbeat of its own, to it alone, every Ask,
//     and a leader answers a heartbeat of a member that trusts it with
//     one of its own, to that member alone (at most Asks at once and one
//     more every Ask after that, to each member: a member's replayed or
//     forged heartbeats cannot make the leader send without bound). In the notes a window that
//     heard nothing of the leader suspects it; here it does only if the
//     asks went unanswered too, and a window whose end a stalled Tick
//     overran closes only after its asks, sent then, had a round trip. With two
//     heartbeats a window (electd's 200 / 400 ms) a window loses both to
//     5% loss about once in 400; without asks the successor would then
//     choose itself, and back, two leader changes. At rest, with nothing
//     lost, a follower asks nothing. The notes' Interval++ is Step, at
//     most 50 ms whatever the heartbeat (FromOptions), so that at sparse
//     heartbeats a run of mistakes slows failover no faster than at dense
//     ones.
//   - With asks, a follower that hears another member claim the lead (a
//     heartbeat naming its sender as leader: the successor, whose window
//     lost the leader) while its own leader is overdue (not heard for a
//     heartbeat and the asks' span, and as much more as its window grew
//     at mistakes) asks the leader at once and closes
//     its window after the asks' span: unanswered, it follows the
//     claimant then, not at its own window's end, up to a window later.
//     A failover then ends an ask span after the successor's claim,
//     however many followers there are; before, it ended with the latest
//     of the N-1 followers' windows. A claim while the leader is heard on
//     time is ignored, and a live leader answers the first ask.
//   - The window grows up to MaxInterval, not without bound: an operator
//     must be able to say how long a dead leader may stay trusted. ◇P's
//     guarantee holds when MaxInterval exceeds the post-GST delay bound
//     plus a heartbeat, as it does on a LAN by orders of magnitude.
//   - A member counts itself a candidate with its own incarnation (in the
//     notes a process sends its heartbeat to every process of S, itself
//     included).
//   - The first choice after a start is not a leader change (there was no
//     leader to suspect).
//   - A heartbeat of an older incarnation than one already heard from its
//     sender is discarded (counted stale): in the notes' pseudo-code a late
//     heartbeat of an older life would be added beside the newer one, and
//     could make a recovering process look like it never crashed.
//   - Ω has no terms. The term this core reports is the leader's
//     incarnation and ID as an owned epoch (incarnation<<32 | leader): it
//     names one life of one leader, the same at every member that chose it,
//     and changes whenever the leader changes; it grows as long as leaders
//     are replaced by members that crashed at least as often.
//
// Resign is refused (elect.ErrCannotResign): the leader is the result of
// a rule every member applies, not a role it can hand over.
package omega
