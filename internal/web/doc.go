// Package web is the live lab page of every daemon (`X web`): a small
// HTTP server on loopback, separate from the daemon, that reads the lab
// through the daemon's control socket and serves one self-contained page
// (script, style and data embedded; nothing fetched from elsewhere) that
// updates itself over server-sent events.
//
// What the page shows, in this order:
//
//  1. the lab's table, as `X status --cluster` prints it (one row per
//     member, answered or not, agreeing or not, the daemon's own
//     columns), refreshed every Config.Every and at once on each of the
//     daemon's events (a leader change, a grant), with each member's
//     clock offset and error bound over the last minute as a small chart;
//  2. a space-time diagram (internal/diagram) of the last Config.Window of
//     this host's trace: the server turns tracing on for as long as it
//     runs, in files of the daemon's traces directory that it rotates and
//     removes (or reads the trace an operator already started, and leaves
//     it alone);
//  3. the verdicts of the trace checker (internal/tracecheck) over that
//     window.
//
// The server is read-only: it answers GET and HEAD only, and the one
// state it changes is the trace window of this host's daemon. The other
// members' traces are not drawn: the cluster protocol carries status
// queries (internal/node, KindStatusQuery) but no trace control, and no
// trace contents; the diagram is this host's view: its sends, receives
// and protocol events on its one line.
//
// The loops (Server.Run) are the driver; the handlers (Server.Handler)
// read the latest snapshot, so that a page never waits on the daemon.
package web
