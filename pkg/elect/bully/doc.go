// Package bully is the bully leader election (Garcia-Molina) as a sans-IO
// core, with terms so that a leader's authority can be checked and fenced.
// It is an elect.Elector: electd runs it (`electd run --algorithm bully`,
// the default), and timed's Berkeley mode elects its master with it
// (pkg/timesync/berkeley takes any Elector and defaults to this one), as
// do orderd's sequencer (pkg/order) and mutexd's central coordinator
// (pkg/mutex/central), each reserving its claims (Config.Reserve). The
// token ring regenerates a lost token with its own owned generations.
//
// # Use
//
// Build a core from the driver's environment, whose State is what the
// previous run persisted (nil at the first start), and drive it like any
// core.Core:
//
//	env := core.Env{ID: 3, Members: ids, Now: clock.Now(), Rand: rnd, State: disk}
//	b, err := bully.New(env, bully.DefaultLANConfig()) // starts an election at once
//	for {
//		// Step every received election frame; Tick when b.Deadline()
//		// comes (any time is correct: early does nothing, late acts
//		// once); after each:
//		rd := b.Ready()
//		// 1. persist rd.State (atomically) if non-nil, 2. send rd.Messages,
//		// 3. log rd.Events; then b.Advance(saved) and drain b.Changes().
//	}
//
// b.Leader() says who leads and in which term; b.Resign(now) makes the
// leader step down; b.Report() is the status (elect.Status, with bully's
// Detail). Every timeout of Config is a time.Duration used as given.
//
// # The algorithm
//
// Members are ranked by (Priority, ID), higher wins. The member ranked
// highest among the live ones must lead:
//
//   - A node that starts, or whose leader falls silent for the leader
//     timeout, sends ELECTION to every member ranked above it and waits
//     AnswerTimeout.
//   - A member that gets an ELECTION from below answers it (ANSWER, the
//     notes' OK). A candidate that gets an ANSWER stops and waits for the
//     COORDINATOR; if none comes within CoordinatorTimeout it starts
//     over.
//   - A candidate that hears no ANSWER declares itself: it claims a new term
//     and broadcasts COORDINATOR, then a leader heartbeat every
//     Heartbeat.
//   - A node that hears a leader ranked below itself bullies it: it starts
//     an election, which it (or a member above it) wins.
//
// Two changes keep messages low. The member just below the leader times out
// first (Config.Stagger), asks nobody (the only member above it is the
// dead leader) and claims at once: the notes' best case, no ELECTION and
// N-2 COORDINATOR deliveries, is the usual failover. And a follower that
// answers an ELECTION does not start its own, as the notes' version does:
// it either has a live leader (which the candidate asked too, and which
// answers with a COORDINATOR) or is already waiting for the outcome of an
// election run above it; its own timers cover the case where that fails.
// The worst case, every member starting at once, costs the notes'
// (N-1)+(N-2)+...+1 ELECTIONs and as many ANSWERs, plus N-1 COORDINATOR
// deliveries.
//
// # Terms
//
// Every message carries the sender's term (in the frame header). A node's
// term is the highest it has seen; it never goes down, and it is written to
// Ready.State, which the driver persists before sending the messages that
// carry it, so a restart never goes back; it stays pending until the driver
// confirms the write (Advance), and a driver that cannot write sends none of
// a Ready that carries an unsaved term. A term is created only by a claim:
// an election that ends up finding the sitting leader alive (a false
// suspicion) changes nobody's term.
//
// Terms are owned (see TermOwner): the low 32 bits of a term name the only
// member that may lead it. A node claims the smallest term above every term
// it has seen that it owns, and rejects a COORDINATOR or heartbeat from any
// member but the term's owner (ErrForgedClaim).
//
// A term read from the wire is admitted by pkg/epoch's rule before it moves
// this node's (Step refuses it otherwise, counted as term_absurd or
// term_too_fast): at most TermBurst rounds above this node's at once, then
// no faster than one round per member per answer timeout, and never in the
// last TermBurst rounds of the space (LastTermRound), which nobody claims.
// One forged frame can therefore no longer push a node to the end of the
// term space, where it could never claim again; a node that really gets
// there says so (EventTermsExhausted) and follows. New refuses a persisted
// term CheckTerm refuses.
//
// A claim of an older term by the very leader a follower follows in a newer
// one cannot be honest (a leader never goes back): the newer claim was not
// the leader's. The follower sends the leader an ELECTION in its term, as
// bully does when it sees a newer term, and the leader takes the cluster
// back above it.
//
// Messages of an older term are not acted upon, but their sender is behind
// and is told: the leader answers any of them with a COORDINATOR of its
// current term, and any member answers a stale ELECTION with an ANSWER. A
// deposed leader that comes back (after a pause or a partition) thus learns
// the current term; it steps down if the current leader outranks it, and
// otherwise takes over by the bully rule, in a term above the current one.
//
// # Safety: at most one leader per term
//
// A node leads term T only if it claimed T, and it claims only terms it owns
// (low bits = its ID), so no other node can lead T. It never claims T twice:
// it claims above every term it has seen, and its term is persisted before
// the COORDINATOR leaves, so after a crash it restarts at T or above; with
// Config.Reserve (every daemon sets it) T was persisted ahead, as the reservation beside
// the term it followed, and a restarted node claims above the reservation
// (state.go). A claim the confirmed reservation does not cover (its write
// failed, or the term moved since) is not made, nor reported, until a
// write covers it: a leadership the disk never held would be led again
// after a restart, with the same term. A node accepts a leader for T only from T's owner. This holds whatever the
// network does (loss, duplication, reordering, partitions) and whatever the
// timeouts are: it is an invariant of the term arithmetic, not of timing.
// The simulation tests check it over hundreds of random schedules.
//
// # What it cannot guarantee
//
// Bully decides "dead" by timeouts, which a partition or a long pause cannot
// tell from a crash. Each side of a partition elects its own leader, in
// different terms: two nodes may each believe they lead at the same real
// instant (split brain). Terms are what makes this safe to build on: a
// resource that remembers the highest term it has seen and refuses requests
// stamped with a lower one (a fence) accepts only the newest leader. When
// the partition heals, the leaders hear each other and the highest-ranked
// live member ends up leading, in a term above both, with every live member
// following it.
//
// Likewise the highest-ranked live member is the leader only once messages
// get through: a member whose ELECTIONs are all lost claims leadership
// although a higher-ranked one is alive, and is bullied out when the latter
// hears it.
//
// # Resigning
//
// Resign makes the leader send a last heartbeat flagged "resign" and step
// down. The member ranked next below it takes over at once. The resigner
// yields: it follows the new leader even if it outranks it, and keeps quiet
// to ELECTIONs that would otherwise stop a member ranked above that leader
// from winning. It competes normally again once its leader fails, or if
// nobody took over within the leader timeout (it was alone).
//
// # Time
//
// Timers are deadlines on the local clock, not tick counts. The follower's
// patience with its leader is a liveness.Detector's, with each member's
// timeout LeaderTimeout plus its stagger: any frame of the current term
// from a member is a sign of life (a stale one is not: it may be a forged
// claim). A role timer found later than its whole length (the process was
// stopped, or started long after it was built) waits once more from then,
// counted as overslept, instead of acting on a silence it did not listen to.
//
// # Hints
//
// With Config.HintProbe set (mutexd's central coordinator sets it;
// electd and orderd with --hint-probe, with Watch), a follower acts on a
// hint that its leader's port closed (Core.Hint, core.Hint: the transport
// saw its link to the leader closed or reset, or a connection refused, as
// it does at once when the leader's process dies): it sends the leader a LEADER_PROBE at once and
// every HintProbe after, HintProbes in all, and gives it up HintProbe
// after the last (plus its stagger) if none was answered; any frame of
// the leader's term that arrived after the hint ends it. A hint is no
// evidence (anyone on the LAN can forge a TCP reset or an ICMP error): the
// probes' silence is. One follower takes at most one hint about its leader
// per LeaderTimeout. With Watch, a leader that answered after a connection
// to its port was refused has a port that refuses TCP (a firewall, a
// UDP-only port mapping): the follower warns (leader_port_refused) and
// ignores refused connections to it until its link is seen open or it
// claims a new term.
//
// # Events
//
// The shared events of pkg/elect (election_started, elected and demoted
// describe this node; leader_elected, leader_changed and leader_lost the
// leader it knows), rendered by elect.Change so that every algorithm's read
// the same, plus terms_exhausted, leader_port_closed (a leader given up
// on a hint) and leader_port_refused (at WARN: a live leader's TCP port
// refuses connections, so the hint cannot work).
package bully
