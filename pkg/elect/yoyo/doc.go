// Package yoyo is the Yo-Yo leader election of the course notes (Santoro's
// minimum finding) on any connected topology, as a sans-IO core (an
// elect.Elector: `electd run --algorithm yoyo --topology 1-2,2-3,...`).
// Members talk to their neighbours only; the smallest ID leads.
//
// # The algorithm, as the notes give it
//
// A round (an owned epoch, pkg/epoch, persisted before it is sent) runs:
//
//   - Phase 1 (orientation): every member sends its ID to its neighbours
//     (HELLO) and marks each edge from the smaller ID to the larger.
//     Sources are the local minima, sinks the local maxima.
//   - Phase 2, YO- (values down the DAG): a source sends its ID on its
//     out-edges; an internal member or a sink waits for a value on every
//     in-edge and takes the smallest, m; an internal member sends m on its
//     out-edges.
//   - Phase 2, -YO (votes up): a sink votes YES up the in-edges that
//     brought m and NO up the others; an internal member waits for a vote
//     on every out-edge, and votes YES up the edges that brought m only if
//     every vote it got was YES, NO otherwise. Every edge a NO travels is
//     flipped ("N inverts the edge it travels"), so a source that got a NO
//     is a source no more. The iteration repeats.
//   - Pruning: of several in-edges that brought the same value, all but
//     one are pruned; a member left with a single edge, an in-edge, is a
//     leaf and prunes it. The prune travels with the vote. The last
//     source, with every edge pruned, leads.
//
// The leader floods its leadership over the topology (LEADER, relayed
// once by each member to every neighbour), and repeats it every
// Heartbeat as its heartbeat: each edge carries it both ways, so every
// member hears each neighbour every heartbeat.
//
// # Beyond the notes: failures
//
// The notes' Yo-Yo assumes no failure. Here the election messages travel
// on the members' TCP links (Message.Stream: ordered, not lost while the
// link holds, unless a node refuses or withholds them: configuration
// agreement's cut, which the repeats below carry over), and:
//
//   - a member that hears no flood for LeaderTimeout, or whose round has
//     not ended within RoundTimeout, starts a new round (a round above
//     every round it has seen, owned by it: two members never start the
//     same one); a member joins any newer round it hears of, and discards
//     older rounds' messages;
//   - a round runs on the neighbours heard within a leader timeout when
//     it starts (the others are "silent"): the graph that answers. When a
//     silent neighbour is heard again, a new round takes it in;
//   - while a round runs, each member repeats, every Heartbeat and as
//     datagrams, what it sent each neighbour in it (its hello, this
//     iteration's value, its last vote): the round's keepalive, since no
//     leader floods, and its way past a message late on the link (a TCP
//     segment or SYN lost: up to a second under 20% loss). A neighbour
//     whose hello is missing counts as silent only once it has not been
//     heard for a leader timeout and for four heartbeats in the round
//     (half a heartbeat for the leader whose flood stopped, so that a
//     failover stays one short round). Before, half a heartbeat for all:
//     under 20% loss at one member, its late hello left it out of the
//     round, and then started another round that left it out again (19
//     rounds in 15 s, the leader demoted three times, the slow member
//     leading alone meanwhile: issue 29);
//   - a member that hears a leader with a larger ID than its own, or two
//     leaders, starts a new round: Yo-Yo elects the smallest ID, so that
//     round did not see it.
//
// What Yo-Yo promises here is an eventual election: once the graph is
// connected and its links carry messages (loss included), every member
// follows the smallest ID in one round, and then stays with it (a slow
// or lossy link is no reason for a new round). It does not promise one
// leader at every instant: a partition that cuts the graph in two elects
// a leader on each side, the split brain the notes describe for Yo-Yo
// (the notes' example: the channel between 2 and 10 stops working), and
// a member cut off from all its neighbours leads itself for as long as it
// is. Each side's members say so in status
// (following different leaders); when the sides meet again the first
// member that hears the other side starts a round over the whole graph.
// For no split brain, use the majority election.
//
// The topology must be connected and name members only (New refuses a
// disconnected or malformed one); every member must be given the same
// one: HELLO carries its digest (CRC-32C), and a neighbour with another
// is refused.
//
// Status shows the round, the iteration, this member's place in the DAG
// (source, internal, sink, pruned), each edge's orientation, and the
// election messages it sent in the round.
package yoyo
