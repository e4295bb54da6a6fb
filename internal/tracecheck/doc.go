// Package tracecheck decides, from the protocol traces of every host of
// a run (internal/trace), whether the run kept the promises its daemon
// makes, and shows the smallest set of events that breaks one: `X trace
// check FILE...` for every daemon.
//
// Each daemon has its property set: mutexd's exclusion, fence order and
// lease ends (mutex.go); electd's one leader per term and, for the
// majority election, one leader at any instant (elect.go); orderd's one
// total order, FIFO, no duplicate, no invented message, causal delivery
// and one sequencer per term (order.go); timed's published error bounds
// against the truth of simulated clocks (timed.go). Check reads the files
// into one run (internal/diagram's Build: frames matched, happened-before
// rebuilt from the traces) and gives one Result per property: holds,
// violated, or cannot decide, each with why.
//
// Two events on different hosts are ordered in one of two ways only:
// happened-before (a chain of messages in the traces, which no clock can
// contradict), or their real times with both hosts' clock error bounds
// (a before b for certain when a.T + err(a) + err(b) <= b.T). The bound
// of an event is 0 on the simulator's ground-truth time (header clock
// "true") and on a simulated clock whose true offset the event records;
// else the clock's maximum error the event records (a synchronised
// clock); else the one Options.ClockBound assumes; an event whose bound
// is unknown is ordered by nothing but messages. Two intervals (two holds of
// one lock, two leaderships) overlap for certain only when each one's
// start is certainly before the other's end; when the bounds leave room
// either way the verdict is "cannot decide", never "violated": a checker
// that cries wolf on clock noise teaches nothing.
//
// A violation's Result carries its counterexample (Result.Events, the
// offending pair marked), and Draw writes the diagram cut to it with the
// pair highlighted. The verdicts of a Report map to an exit status
// (Report.Exit) the command returns.
package tracecheck
