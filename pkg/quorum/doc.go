// Package quorum is vote counting and quorum probing for sans-IO cores,
// after etcd-io/raft's quorum package (learned from, not copied).
//
// A Tally counts yes and no votes of members, each with a weight (1 in a
// plain majority), and says whether the vote is Won (the yes votes are more
// than half the total weight), Lost (the yes votes plus every vote not yet
// cast cannot be), or Pending. Any two sets that each hold more than half of
// the weight share a member: that is the whole safety argument of a
// majority, weighted or not (issue 16's weighted election, issue 15's
// majority-quorum lock). Unanimous voters need every yes. The token ring
// counts its promises with a majority Tally; Maekawa and Ricart-Agrawala
// count their votes and replies themselves, because a Tally only adds
// votes: a Maekawa vote can be relinquished and given again (Sanders'
// inquire), and the replies a Ricart-Agrawala request waits for shrink
// when a member is given up while it waits.
//
// A Probe asks a set of members one question under a nonce, collects their
// answers, asks again the ones that stay silent (at most Tries sends in
// all, one Timeout apart), and is over when every asked member answered or
// the last try timed out. It exposes its Deadline, so a core folds it into
// its own; it never sends anything itself: Start and Tick say whom to ask.
// The token ring's locate, prepare, check and vouch are Probes.
package quorum
