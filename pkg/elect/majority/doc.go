// Package majority is a leader election without split brain, as a sans-IO
// core (an elect.Elector: `electd run --algorithm majority`). It is seed
// 001's remedy for split brain, "only accept a leader whose votes carry
// more than half of the system's weight", with the notes' terms (an older
// term's messages are discarded) and their stability rule (uninterrupted
// uptime counts), made safe in real time with leases.
//
// # The algorithm
//
// Every member has a vote weight (Config.Members; electd's --priorities
// are the weights, absent members weigh 1); every member must be given the
// same weights.
//
//   - A member that knows no leader and is bound by no promise stands: it
//     claims the next term it owns (pkg/epoch: round<<32 | its ID,
//     persisted before anything carrying it leaves), votes for itself and
//     asks every member for its vote (VOTE_REQUEST). It wins when the
//     yes votes carry more than half the total weight (pkg/quorum), asks
//     the silent members again after VoteTimeout, and gives up after three
//     tries or as soon as it cannot win, freeing its voters (RELEASE).
//   - A vote is a promise: a member that grants one (VOTE) or renews a
//     leader's lease (LEASE_GRANT) is bound to that member and grants
//     nothing to anybody else until Lease + Margin has passed on its own
//     clock since the request came. A member knows one holder at a time,
//     whatever the term.
//   - The leader believes it leads until Lease - Margin after it sent the
//     request (vote request, then every renewal: LEASE_RENEW every Renew)
//     whose grants carry a majority. When that time comes without a newer
//     majority, it steps down (demoted, reason lease_expired) and frees its
//     voters.
//
// # Why two members never both believe they lead
//
// Assume every clock runs at the true rate within ρ = MaxDriftPPM (100
// ppm) and is never stepped: electd runs this election on the steady
// clock (the oscillator, app.SteadyClock), which neither a step of the
// system clock nor timed's slewing (up to 8%) moves. A leader's belief, from a request sent at true time s, ends by
// s + (Lease-Margin)/(1-ρ). Each voter of that majority granted after s,
// and is bound until at least s + (Lease+Margin)/(1+ρ): no earlier,
// because Margin >= 2·Lease·ρ (Config.validate refuses less). Any other
// candidate needs a majority too, so one of those voters; it cannot grant
// before its promise runs out, so the other candidate's belief starts
// after the first one's ended. A member that restarts has forgotten its
// promises: one that finds state on disk (it may have voted) grants
// nothing for Lease + Margin after it starts. A paused leader (SIGSTOP)
// wakes past its lease and steps down before it acts: every input first
// checks the lease (Leads(now) is the belief itself, on the local clock).
// The Margin also covers a loop that acts late on a lease's end (a busy
// host): the leader's belief ends on its clock whether its loop ran or
// not, but a hook or a status read made in a loop that was stalled by more
// than Margin - Lease·ρ may still say "leader" after that instant.
//
// Terms make each term's leader unique (owned terms: only their owner can
// lead them, once), and discard older terms' requests and replies. A term
// is on disk before anything carrying it leaves (core.Durable), and
// before its winner leads it: a member that wins on its own vote (alone,
// or a weight that is a majority by itself) sends nothing a failed write
// would withhold, so its win waits for Advance (unsavedWin) and is taken
// at the next Tick if the request still gives it, its lease still ahead;
// a leader that moves above a newer term (reassert) announces it only
// once it is written. Else a restart would read the older term and claim
// the same one again: one fencing token for two leaderships. A
// voter bound to a leader refuses a newer term's candidate without taking
// its term, so a member that came back from the minority side does not
// depose a leader whose lease holds; the leader, told of the newer term,
// moves its own leadership above it (reassert) and goes on renewing there.
//
// # The minority side
//
// A leader cut off with less than half the weight cannot renew: it steps
// down at its lease's end, and the members with it cannot elect anybody.
// Their status says so (phase "no leader: no majority (last election:
// votes of weight 2 [1 2] of 5, need 3)"), and `electd leader` prints it.
// The majority side elects about Lease + Margin after it last heard the
// old leader, which had stopped believing by then.
//
// # Stability: uptime
//
// The notes' stable election weighs a member's uninterrupted uptime. The
// vote weights themselves must not move (both sides would count "more
// than half" of different totals), so uptime weighs on who stands and who
// is helped: (1) a sitting leader is never challenged while its renewals
// arrive (its voters are bound); (2) when nobody leads, a member waits one
// Stagger for every member it heard within a lease that has run longer
// than it, plus a random part of one: the longest-running member stands
// first; (3) a voter refuses (verdict "uptime") a candidate that has run
// for less than itself by more than a lease: a member that just restarted
// (uptime ~0) cannot take leadership from long-running members that are
// free to stand, and one that keeps crashing never leads while stable
// members are there. Requests and replies carry the sender's uptime in
// milliseconds.
//
// # The standing order
//
// For (2) every member must know the others' uptimes before the leader
// dies, or every survivor stands within one Stagger, the votes split and
// the stability rule refuses all but one candidate (3-6 candidacies per
// failover before this). So the leader, which hears every voter's uptime
// in its grants, announces in each renewal the standing order: its voters
// heard within a lease, longest-running first (uptimes rounded to a
// Stagger, then by ID). After the leader is gone the member at rank r
// stands Margin + r·Stagger after its promise ran out, with no random
// part: the first stands alone, wins in one round of 2(N-1) messages, and
// every later one is bound to it before its turn comes (while the delays
// stay under a Stagger). A member the order leaves out stands after every
// ranked one; one that knows no order from the last two leases falls back
// on the uptimes it heard itself plus a random part of a Stagger. The
// order only decides who asks first: a forged or stale one costs
// candidacies, never safety, which rests on the votes and the leases.
//
// # Durations
//
// DefaultLANConfig: Renew 100 ms, Lease 400 ms, Margin 25 ms, VoteTimeout
// 50 ms, Stagger 30 ms: a dead leader is replaced about 450-600 ms after
// its last renewal. electd maps --heartbeat to Renew, --leader-timeout to
// Lease, --answer-timeout to VoteTimeout (FromOptions).
//
// They assume fast disks: a candidate's requests leave once its term is
// written, and its vote timeout runs from then; each vote leaves once its
// voter's write of the term ends. Writes longer than Stagger let the next
// member stand before the first is heard (candidacies collide), and
// writes beyond three VoteTimeouts end every candidacy before its votes
// come: raise --answer-timeout above the write time (docs/electd.md).
package majority
