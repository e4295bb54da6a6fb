// Package elect is what every leader election of synclab is to the rest of
// the system: the Elector interface a core implements, the typed leadership
// changes it reports, its typed status, and the factory table electd picks
// an algorithm from. pkg/elect/bully is the first implementation; Berkeley's
// master election (pkg/timesync/berkeley) takes any Elector.
//
// An Elector is a sans-IO core (core.Core) that says when it next needs
// Tick (core.Scheduler), and answers, at any moment between two inputs:
//
//   - Leader: who leads, in which term (terms only grow; an algorithm
//     without terms numbers its rounds);
//   - Role: follower, candidate or leader;
//   - Changes: what changed since the last call, as typed Change values
//     (the same changes the core reports as events, under the shared
//     names below, so that hooks and `electd watch` read the same for
//     every algorithm);
//   - Report: the typed Status `electd status` renders.
//
// Resign asks a leader to step down; every other operation is the
// algorithm's own business, driven by Step and Tick.
//
// # Events
//
// Every algorithm reports the same events, with the same arguments
// (Change.Event renders them, so they cannot drift):
//
//	election_started  this member started an election   term, reason
//	elected           this member became leader         leader, term
//	demoted           this member stopped leading       leader, term, reason
//	leader_elected    a leader is known (again)         leader, term
//	leader_changed    ... and it is another member      leader, term, previous
//	leader_lost       no leader is known any more       leader (the lost one), term, reason
//
// electd binds its hooks to them (--on-elected to elected, --on-demoted to
// demoted, --on-change to leader_elected and leader_lost) and sets
// ELECTD_ROLE, ELECTD_LEADER and ELECTD_TERM from the Elector.
//
// # Adding an algorithm
//
// One package under pkg/elect implementing Elector (embed an Announcer for
// the changes and events; pkg/liveness's Detector for failure detection;
// pkg/epoch for owned terms), exporting an Algorithm value, and one line in
// cmd/electd's table.
package elect
