// Package clock is how synclab reads and corrects time: physical clocks
// behind one interface, and the logical clocks the coordination protocols
// order events with.
//
// # Physical clocks
//
// A Clock is read (Now, FromKernel for packet receive stamps) and corrected
// (Slew, Step, SetFrequency, SetSync); State reports the discipline. Cores
// never touch a clock: a servo returns Adjustment values in its Ready, and
// the driver applies them with Apply, so the same core runs on a real host
// and in the simulator.
//
//	core (pure) --Ready.Adjustments--> Apply(clock, adj) --> Sim or System
//
// Sim is a simulated clock driven by a true-time source: true time plus an
// offset that moves at drift + wander + frequency correction + slew rate,
// piecewise linear and exact. In the simulator the source is the virtual
// clock; in a daemon started with
//
//	timed run --clock sim --sim-offset 250ms --sim-drift 40
//
// it is time.Now, so every host of a lab (which all share the one real
// clock) gets its own wrong clock, and Sim.TrueOffset is its exact error:
// timed status --json reports it as true_offset_ns, the ground truth tests
// and the demo grade synchronisation against. Sim never touches the system
// clock and needs no privilege.
//
// System is the host's CLOCK_REALTIME on Linux, disciplined with
// clock_adjtime(2) the way chrony does it: frequency through the PLL
// frequency (±500 ppm) plus the tick length (±10%); steps through
// ADJ_SETOFFSET (never backwards unless allowed); small slews through the
// kernel's single-shot slew (500 µs/s); large slews at up to 83,333 ppm
// through a temporary tick+frequency rate that a timer ends, the measured
// remainder going to the single-shot slew. Reading (State) needs no
// privilege; adjusting needs CAP_SYS_TIME, and the kernel's EPERM becomes
// ErrPermission with the advice to run with --clock sim or --no-adjust.
// SystemOptions.ReadOnly (--no-adjust) refuses every write with
// ErrReadOnly. Every kernel request is built by a pure function and tested
// as such: no test ever writes the clock. Call System.Close before exit.
//
// # Logical clocks
//
// Lamport is a scalar logical clock (Tick, Send, Receive; Advance and
// Witness for the course notes' periodic-clock formulation) and LamportLess
// the total order (stamp, then member ID) that Lamport's and Ricart-
// Agrawala's mutual exclusion use. Vector is a vector clock keyed by member
// ID; Compare tells Before, After, Equal or Concurrent, which a scalar
// clock cannot. Vectors have a canonical fixed-offset binary encoding
// (AppendBinary / UnmarshalBinary) for the wire.
package clock
