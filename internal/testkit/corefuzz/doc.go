// Package corefuzz drives a protocol core from fuzz input, the way an
// attacker and a bad disk would: the input is read as a program of
// choices (which frame, which extreme field values, a tick, a restart from
// the persisted state, a failed write), and a Driver acts on the core's
// Ready exactly as the daemon does. Each core's fuzz target (the
// elections, the mutex cores, Berkeley, the NTP client, orderd's core)
// builds its frames from a Program and checks its invariants; the Driver
// checks the one they share: no message leaves while the promise it
// depends on is unsaved. The mutex cores' targets also share their
// clients (Clients, LockName, Mode), the growth of a life's fences
// (Fences, OnEvent, EventArg) and the metrics check (CheckMetrics), and
// their emulated peers: Driver.Deliver hands what the core sent to correct
// peers (each target's own answers, Voters for the voting locks), so that
// programs reach grants, and Inputs with MustReach let a plain test show
// that they do.
//
// # What a program costs
//
// A fuzzer finds only what it executes, and go test -fuzz pays for each
// new input twice: it runs it, and (when it covers something new) it
// minimizes it, running the target once per candidate, up to the square
// of the input's length times, for as long as -fuzzminimizetime (60 s by
// default) while nothing else is fuzzed. So a target keeps an execution
// near 0.1 ms and its programs short:
//
//   - each target bounds its programs' steps (a constant beside it: 100
//     to 150 steps, about 500 to 1000 bytes of input; 300 and 400 where
//     the core's deeper states take that long), and reaches depth from
//     its stored corpus (testdata/fuzz: programs chosen for what they
//     cover, grants, new terms, snapshots) rather than from long random
//     programs;
//   - the checks that cost as much as the core's whole state (its status
//     report, its metrics, the bounds of its tables) run once per
//     program, at its end (Driver.Inspect): every state a program passes
//     through is the last state of that program cut short there, itself
//     a program, so no reachable state escapes them;
//   - checks that compare a state with the one before it (a term, a
//     floor, a promise that must not go back) stay after every step, read
//     through accessors that build nothing.
//
// Bench runs a target as a benchmark (go test -bench BenchmarkFuzz...),
// and scripts/fuzz.sh runs every target for a bounded time at -parallel
// 1, printing its executions per second.
//
// It exists for tests only.
package corefuzz
