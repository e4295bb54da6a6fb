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
// link holds), and:
//
//   - a member that hears no flood for LeaderTimeout, or whose round has
//     not ended within RoundTimeout, starts a new round (a round above
//     every round it has seen, owned by it: two members never start the
//     same one); a member joins any newer round it hears of, and discards
//     older rounds' messages;
//   - a round runs on the neighbours heard within a leader timeout when
//     it starts (the others are "silent"): the graph that answers. When a
//     silent neighbour is heard again, a new round takes it in;
//   - a member that hears a leader with a larger ID than its own, or two
//     leaders, starts a new round: Yo-Yo elects the smallest ID, so that
//     round did not see it.
//
// A partition that cuts the graph in two elects a leader on each side:
// the split brain the notes describe for Yo-Yo (the notes' example: the
// channel between 2 and 10 stops working). Each side's members say so
// in status (following different leaders); when the sides meet again the
// first member that hears the other side starts a round over the whole
// graph. For no split brain, use the majority election.
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
