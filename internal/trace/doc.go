// Package trace is synclab's protocol trace, format version 1: one JSON
// Lines file per host (per daemon process, or per simulated node), a header
// line then one line per event (send, recv, local, drop), each with the
// host's real time, its Lamport time and its vector timestamp, and in a
// daemon's trace its clock's error bound while synchronised
// (max_error_ns) and a simulated clock's exact error (true_offset_ns),
// which `X trace check` (internal/tracecheck) orders events with. Daemons and
// the simulator write it; the diagram command (internal/diagram, `X trace
// draw`) reads any number of them and draws the run as the course notes
// draw one: a line per process, an arrow per message.
//
// The file format is the contract (the lead's TRACE-FORMAT.md, kept here in
// Header and Event): readers refuse other versions with a clear error, skip
// fields they do not know, and take a killed writer's partial last line for
// what it is. The Go API is internal: only synclab writes and reads it.
//
// Writer bounds a file (MaxBytes), then writes one last `truncated` line
// with the count of events it dropped. A Recorder is what internal/node
// calls at every send, receive, local event and drop; a nil Recorder is
// tracing off, and the node checks for nil before it builds anything, so
// tracing off costs one comparison per event. A DatagramRecorder also
// records the datagrams outside the cluster's frames (timed's NTP packets,
// identified by their transmit timestamps; `peer` names the other end),
// and a daemon outside any cluster (a plain NTP client or server) writes
// its trace as ID 0, without members and without vectors.
package trace
