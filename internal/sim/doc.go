// Package sim is a deterministic discrete-event simulator for synclab
// clusters. It runs the same cores the daemons run, wrapped in the same
// internal/node framing layer (encode, transmit-time patch, MAC, decode,
// validation, replay window), over simulated links and drifting clocks, in
// virtual time.
//
// Everything is a function of one seed: there are no goroutines, no sleeps,
// no time.Now. Actions (ticks, packet arrivals) sit in a queue ordered by
// virtual time and then by the order they were scheduled, so the same seed
// gives the same event log and the same message trace, byte for byte
// (Digest), on every machine.
//
// # Model
//
//   - Each node has its own clock.Sim, driven by the simulator's virtual
//     true time, with the offset and drift of its clock.SimConfig. It ticks
//     at its core's deadlines (core.Scheduler), or every
//     Config.TickInterval of its own clock (a clock 100 ppm fast ticks 100
//     ppm more often in true time), applies its core's clock
//     adjustments, and stamps arrivals with clk.FromKernel(true arrival).
//     Its clock's error is known exactly: Clock(id).TrueOffset().
//   - Each directed link has a LinkConfig: delay, jitter (which reorders
//     datagrams), loss, duplication. Partition, Isolate and Cut break links
//     until Heal. Stream frames (Message.Stream, TCP) keep their order and are
//     lost only when their connection resets: a crash at either end or a cut.
//     A multicast frame is one copy per other node, each through its link.
//   - Crash stops a node (its Output.State, the "disk", survives); Restart
//     rebuilds its core from the disk under the next incarnation; Pause and
//     Resume model a stopped process (SIGSTOP) that wakes up with stale state
//     (SetSocketBuffer: its kernel keeps the datagrams that came meanwhile,
//     up to a socket buffer, read with their arrival stamps when it resumes;
//     SetResumeOrder: its first tick before them, after them or amid them,
//     as the daemon's loop may);
//     SetLate, a loaded host, whose loop gets the CPU late and then runs its
//     timer before it reads the frames that came meanwhile.
//   - A node's state writes take no time unless SetWriteLatency (or
//     SYNCLAB_SIM_WRITE_LATENCY, for every node of every test) says how
//     long, fixed or drawn from the seed: then a Ready with State or
//     Entries is carried out as the daemon's loop does today, blocked in
//     its write (its clock adjustments made before it; frames, ticks and
//     Do calls wait for it; a promise's frames leave after it; Advance
//     when it ends; a crash mid-write loses it),
//     and the node's own saves (node.Config.Save) take as long. With it, a
//     test shows what a slow disk does to a protocol (pkg/order's
//     TestSimSlowWritesSequencerChurn).
//   - Configuration agreement is off unless SetAgreement gives a node
//     one: then its node.Node runs internal/node's own agreement code, as
//     a daemon's does, nothing modelled apart. It announces its
//     configuration in frames that travel the links like any other (lost,
//     cut, kept by a paused node's kernel), holds its core back while it
//     starts (StartGrace at most) or stands in the minority (a Ready held
//     with nothing to send is not carried out: no Advance, no OnReady, as
//     in the daemon's loop; the node's own saves before it still block
//     the loop for their write time), refuses a differing member's frames, and
//     refuses a member incarnation's core frames until that incarnation's
//     announcement reached it (sent at its first tick, and again when a
//     receiver asks) or, from a node without agreement (an older build),
//     for three announce Intervals from the first frame the receiver heard
//     of it, then admits them unchecked. Its core sees
//     core.Message.Checked on the frames of the incarnation whose matching
//     configuration it heard, and on no other; without agreement, on none
//     (by default every node is unchecked, as in a cluster of older
//     builds). OnRefused reports each refused frame with the node's reason
//     (node.ErrConfigUnverified...). pkg/mutex's harness
//     (mutextest.Builds) runs clusters all agreeing or all older builds,
//     by the seed, and mixed when asked.
//
// # Walk-through: testing a core
//
// Example_walkthrough (walkthrough_test.go, compiled and run with the
// tests) is the whole story on a core small enough to read at a glance: a
// constructor per node (AddNode takes func(core.Env) core.Core, the same
// environment a daemon hands its core: ID, members, a seeded Rand, the
// node's Lamport clock, the persisted state), RunUntil a condition, an
// operator's action through Do (which drains the core's output like a
// tick), Partition and Heal, Crash and Restart from the disk, and the
// cores' events (EventsNamed). A real test runs that over many seeds
// (Seeds) and checks an oracle; pkg/elect/bully's and
// pkg/mutex/tokenring's sim tests are full-size ones.
//
// A core that says when it needs Tick (core.Scheduler) is ticked at its
// deadline, on its node's drifting clock, as the daemon's loop does; any
// other every TickInterval of its clock.
//
// s.Log() renders the event log (the cores' events and the simulator's own:
// sim.crash, sim.partition...) for failure messages and golden files;
// Trace() and Digest() are the message trace. testdata/ holds a golden
// scenario, regenerated with -rewrite when a change is intended.
//
// A failing seed prints "replay: go test ./pkg/... -run '^TestName$'
// -sim.seed=S" (the package comes first: go test stops reading packages at
// a flag it does not know); -sim.seeds=N runs more seeds. The flags are registered by this
// package when it is initialised, so any test binary importing sim has them.
package sim
