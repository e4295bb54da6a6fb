// Package corefuzz drives a protocol core from fuzz input, the way an
// attacker and a bad disk would: the input is read as a program of
// choices (which frame, which extreme field values, a tick, a restart from
// the persisted state, a failed write), and a Driver acts on the core's
// Ready exactly as the daemon does. Each core's fuzz target (bully, the
// token ring, Berkeley, Maekawa and the majority quorum through VoteFrame) builds its frames from a Program and checks its
// invariants; the Driver checks the one they share: no message leaves
// while the promise it depends on is unsaved. The mutex cores' targets
// also share their clients (Clients, LockName, Mode), the growth of a
// life's fences (Fences, OnEvent, EventArg) and the metrics check
// (CheckMetrics), and their emulated peers: Driver.Deliver hands what the
// core sent to correct peers (each target's own answers, Voters for the
// voting locks), so that programs reach grants, and Inputs with MustReach
// let a plain test show that they do.
//
// It exists for tests only.
package corefuzz
