// Package diagram draws synclab traces (internal/trace, one file per host)
// as the course notes draw a run: a space-time diagram with one horizontal
// line per process, an arrow per message, events labelled with their
// Lamport or vector times.
//
// Build merges the files, matches every receive to its send by the frame
// ID, and lays the events out in happened-before order: the relation is
// rebuilt from the traces themselves (each process's own order, and every
// send before its receives), which is exactly what vector clocks encode, so
// the drawing holds even where a trace carries no vectors; the recorded
// Lamport and vector times are the labels. An event's column is the length
// of the longest causal chain before it, so every arrow points right and
// concurrent events share columns; real time is the secondary axis (the
// bottom scale, and the HTML page's real-time layout). The frames of one
// logical send (a broadcast over unicast: one Lamport stamp) share one
// column and fan out.
//
// A drawing tells the protocol's story first: the heartbeats (kinds of
// class heartbeat in the wire registry) are folded away by default, with
// the columns they took (FoldCol: points a heartbeat orders still go left
// to right), and shown on request (Options.Heartbeats, the page's
// switch); FromFirstEvent starts a run at its first protocol event. Lines
// are labelled with the hosts' names (HostNames, else the traces' hosts
// where they tell members apart, else "member N"), and time labels and
// event names are placed clear of every arrowhead (geom.go; the page
// does the same with the browser's text boxes).
//
// Three outputs: SVG (deterministic, for reports and golden files),
// a self-contained HTML page (inline script and style, no network:
// hover for an event's fields and times, filter by process, kind and time
// window, click an event for its happened-before cone, concurrent events
// marked), and the ShiViz log format (GoVector's `host {clock}` line then
// the event's text), which ShiViz parses with its default expression.
package diagram
