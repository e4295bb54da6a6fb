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
//     every member's trace, each host's line labelled with its name
//     (Config.HostNames): this host's, which the server turns on for as
//     long as it runs, in files of the daemon's traces directory that it
//     rotates and removes (or reads the trace an operator already
//     started, and leaves it alone); and each other member's, which the
//     server asks its daemon for at every draw (GET /v1/cluster/trace:
//     the daemon pages through the member's trace window over the
//     cluster protocol, internal/node's KindTraceQuery and
//     KindTraceChunk, signed like every frame when a key is set; the
//     member keeps that window in memory, turned on by the first query
//     and off when nobody asked for a while). The server keeps each
//     member's window (at most two windows' worth, at most MaxEvents
//     events) and asks only for what is new. A member that does not
//     answer (down, an older build, refusing: the daemon says which it
//     can tell) is drawn as a line "NAME (not answering traces)" and
//     listed under the diagram with the cause. The window is the last
//     Config.Window on this host's clock; another member's event is in
//     it if its time, give or take the error bound its host recorded
//     (the checker's), may be: a member whose clock runs ahead beyond
//     its bound has its later events left out and said so
//     (MemberView.Ahead), rather than moving the window off everyone
//     else's;
//  3. the verdicts of the trace checker (internal/tracecheck) over that
//     window, every member's events together (each host's clock error
//     bound orders events across hosts).
//
// The server is read-only: it answers GET and HEAD only, and the state
// it changes is the trace window of this host's daemon and, through it,
// the other members' in-memory windows. The trace exchange's own frames,
// and the page's status queries, are left out of the drawing.
//
// The loops (Server.Run) are the driver; the handlers (Server.Handler)
// read the latest snapshot, so that a page never waits on the daemon.
package web
