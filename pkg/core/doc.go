// Package core is the contract between a sans-IO protocol core (bully,
// token ring, NTP, Berkeley, the liveness detector...) and whatever drives
// it: the daemon loop on a real host, or the simulator.
//
// A core is a deterministic state machine. It is fed decoded, validated
// messages with their receive times (Step, StepDatagram) and the passage of
// time (Tick, with the local clock's reading), and it never performs I/O.
// It counts time in durations of that clock, never in ticks: it says when
// it next needs Tick (Scheduler's Deadline), and the driver sleeps until
// then, so an idle daemon wakes only for its own heartbeats and timeouts.
// Tick may come at any time, early, late or after a long sleep (a paused
// host), and a core stays correct: it acts on what is due at now. (A core
// that does not implement Scheduler is ticked at a fixed interval, as all
// were before.)
//
// A core is built from an Env, the same under the daemon and the
// simulator: its ID and members, the clock's reading, a seeded Rand, the
// node's Lamport clock and its persisted state, which it decodes itself
// (refusing an absurd one with an error wrapping ErrState, which the
// daemon names the file of).
//
// Whatever it wants done it leaves in its Ready: messages to send, clock
// adjustments, state to persist, events to report. The driver drains Ready
// after every Step and Tick and acts on it in this order:
//
//  1. apply Ready.Adjustments to the clock, and tell the core when the
//     clock took them (Adjuster.Adjusted, the clock's reading after):
//     before the write, which may take long on a slow disk, since a
//     clock discipline counts its slew from the tick that decided it and
//     its bound would trust a correction the clock had not begun; nothing
//     of an adjustment depends on the write, promise or not;
//  2. persist Ready.State atomically, or append Ready.Entries to the core's
//     log (before any message that depends on it leaves the host: a term
//     or a fence must never be announced and then forgotten by a crash);
//     if the write fails and Ready.Promise is set, send none of this
//     Ready's messages;
//  3. tell the core whether the write succeeded (Advancer.Advance); if it
//     failed, withheld the messages and nothing of it can be read back,
//     let a core that can take back what the write promised its callers
//     (Withdrawer.Withdraw: orderd's sends, answered "not sent");
//  4. send Ready.Messages and Ready.Datagrams (without Promise, a driver
//     may send them before the write, after the adjustments);
//  5. log and count Ready.Events, run hooks.
//
// A core with durable state keeps it pending until Advance confirms it
// (Durable does the bookkeeping, as etcd raft's RawNode does between Ready
// and Advance): after a failed write it hands the state over again, as a
// promise, with every Ready, so nothing that depends on unsaved state leaves
// in a later Ready either.
//
// # A snapshot and a log
//
// Most cores' durable state is a few numbers (a term, a generation), and
// State carries it whole. A core whose state is large and changes a
// little at a time (orderd's streams, queues and replicated log) hands
// over Ready.Entries instead: records of what changed, which the driver
// appends to a log after the last State, the snapshot. The daemon keeps
// them in one file of checksummed records after the snapshot file and
// makes a whole batch durable with one fdatasync: it steps the core with
// every frame and control call already waiting before it takes the Ready
// (group commit), so under load one write covers many steps, and no
// message of any of them leaves before it. A Ready with State starts the
// log afresh: the core asks for one when its log has outgrown the
// snapshot, and Durable.ReadyLog makes sure it does after any failed
// write (a record builds on the one before it, which may be lost or
// torn). On a restart the core gets the snapshot as Env.State and the
// records after it as Env.Log; a torn or corrupt tail (a crash in the
// middle of an append) has been cut, counted and logged by the driver,
// and none of the cut records was ever confirmed to the core, so nothing
// it promised is lost. The simulator keeps a node's records beside its
// disk the same way.
//
// Framing, sequence numbers, Lamport stamping, authentication and replay
// protection are not a core's business: internal/node does them, identically
// under the daemon and the simulator. Logical time is the node's too: one
// Lamport stamp per logical send (a core that needs its own takes it from
// Env.Lamport and sets Message.Lamport), and vector timestamps when a core
// asks for them (VectorUser) or tracing turns them on (Message.Vector).
//
// What every core repeats lives here once: Durable (state between Ready and
// Advance), Earliest (the deadline of a core made of parts), Bugs (an
// encoding of the core's own message that fails is a bug, counted and
// reported as an EventBug event, never a panic) and ErrorLabels (a Step
// error to one of a bounded set of counter labels). The package Example
// is a whole core in a few lines.
//
// A core may also export metrics of its own by implementing MetricsWriter:
// the daemon calls it on the same goroutine as Step and Tick and serves
// what it wrote on its Prometheus endpoint, beside the metrics every daemon
// has. A core never renders or serves them itself.
package core
