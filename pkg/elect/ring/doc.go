// Package ring is the ring elections of the course notes as one sans-IO
// core with five variants, each an elect.Elector that electd runs
// (`electd run --algorithm NAME`):
//
//	ring-naive         the notes' "ring 1" (VoteEmMim / HabemosLider)
//	ring-idlist        the notes' "ring 2": a list collects the live IDs
//	chang-roberts      only higher IDs are passed on
//	franklin           bidirectional rounds, each deactivates >= half
//	fredrickson-lynch  the notes': ELECTION collects IDs, then COORDINATOR: 2N
//
// The variants differ only in what a member that suspects the leader
// sends and in what a member does with an election message (variants.go);
// what they share is here once: the logical ring, the acknowledged hop to
// the next live member, the owned terms, the announcement around the ring,
// and the leader's heartbeats after the election.
//
// # Use
//
// As bully's (see its package doc): build with New(env, cfg) or through an
// elect.Algorithm of this package, Step every ring frame, Tick when
// Deadline comes, and after each persist Ready.State before sending
// Ready.Messages, then Advance and drain Changes.
//
// # The ring
//
// Members form a logical ring, Config.Ring (by default ascending IDs): a
// member's successor is the next member. Every election or coordinator
// message moves one hop, to the next member that is not known to be dead,
// and the receiver acknowledges each hop (pkg/delivery's Outbox resends it,
// HopTries sends HopTimeout apart; a Filter makes a receiver act on one copy
// of it). A member that does not acknowledge is skipped (the notes: "if the
// successor is faulty, p skips it and passes to the next one") until it is
// heard from again or SkipFor passes; a leader this member suspects, or one
// that missed two heartbeats, gets one send, not HopTries. A member alone
// receives its own messages back, and elects itself; another's message
// with nobody left to take it is dropped. A member an election shows alive
// (listed, or announced as the winner) is not skipped.
//
// # Who leads
//
// Every variant elects the highest ID among the members that take part
// (the notes' ring 2 picks the smallest: a mirror image; we pick the
// highest like the others so that every algorithm elects the same member
// and failovers compare). A member that hears a leader below itself
// starts an election (it was skipped, or came back), so once messages get
// through, the highest live member leads, as with bully.
//
// # Terms
//
// The winner leads a term it owns (pkg/epoch: round<<32 | owner), the
// smallest one above every term the deciding member has seen: the member
// that decides the election (the winner itself in Chang-Roberts, Franklin
// and the naive ring; the member whose list came back in the list
// variants) computes it, and any member deciding the same election
// computes the same. A COORDINATOR announces it around the ring: each
// member moves to the term, follows its owner and passes the announcement
// on, until it reaches a member that already knew (the origin, or the
// leader's heartbeat got there first): N hops. A member only ever leads a
// term it owns, and accepts a leader for a term only from that term's
// owner (an announcement naming anyone else, or a heartbeat from anyone
// else, is refused as forged), so at most one member leads a term,
// whatever the network does. Terms are persisted before anything that
// carries them leaves (core.Durable, Ready.Promise), and before a member
// leads one (a member alone sends nothing a failed write would withhold:
// its leadership waits for Advance instead), in bully's state format, and admitted from the wire by pkg/epoch's pace (bully's
// TermBurst): a forged frame cannot push a member to the end of the term
// space. Messages of an older term are dropped (counted); their sender
// learns the newer term from the acknowledgement, which carries it. Within
// a term an election that times out (ElectionTimeout) starts a new attempt,
// and messages of an older attempt are dropped.
//
// # After the election
//
// The leader heartbeats every Heartbeat; a follower suspects it after
// LeaderTimeout plus Stagger for every member between itself and the
// leader, so the leader's predecessor (the next highest ID) starts the
// election, skipping the leader it suspects, and its message reaches the
// others before they time out: in Fredrickson-Lynch and Franklin a member
// that has seen an election does not start another, and the failover
// costs the notes' best case. An election message that
// reaches a live leader of its term that would win anyway goes no
// further: the leader tells its origin with a heartbeat (a false
// suspicion moves no term).
//
// # The naive ring's duplicate leader
//
// In the notes' ring 1 a candidate that receives a vote, anybody's, is
// elected: two members that suspect the leader at once each receive the
// other's vote and both lead (Config.Textbook runs it so, for the
// scenario). The real mode names the candidate in its vote: a candidate
// is elected only by its own vote coming back, withdraws when a higher
// candidate's vote passes, and drops a lower one's. Even in the textbook
// mode the two leaders lead different terms (each owns its own), and the
// lower-term one steps down at the other's first heartbeat.
//
// # What it cannot guarantee
//
// Like bully, rings have no quorum: each side of a partition elects its
// own leader, in different terms. When the partition heals the leaders
// hear each other's heartbeats, and the highest live member ends up
// leading in a term above both.
//
// # Resigning
//
// Resign sends a last heartbeat flagged "resign"; the resigner's successor
// starts an election at once and the resigner relays it without taking
// part, then follows the winner. It competes again once that leader
// fails, or if nobody took over within LeaderTimeout.
package ring
