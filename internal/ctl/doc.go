// Package ctl is synclab's control API: HTTP with JSON bodies on a unix
// socket, served by every daemon and used by every CLI subcommand (`timed
// status`, `mutexd lock`, `electd watch`...). The CLI is a thin client of
// the daemon, never a second implementation (the model is tailscale's
// ipn/localapi).
//
// # Server
//
// A daemon listens, registers its endpoints, serves, and closes on the way
// out:
//
//	s, err := ctl.Listen("/run/timed/control.sock", ctl.ListenOptions{Group: "synclab"})
//	if err != nil { ... }                   // *InUseError if a live daemon serves it
//	s.Handle("GET", "/v1/status", func(r *http.Request) (any, error) {
//		return status, nil                    // JSON, 200
//	})
//	s.Handle("POST", "/v1/locks/{name}", func(r *http.Request) (any, error) {
//		var req lockRequest
//		if err := ctl.Decode(r, &req); err != nil {
//			return nil, err                     // 400 / 413 with a clear message
//		}
//		... return nil, ctl.Conflict("lock db is held by node 3")
//	})
//	s.HandleStream("GET", "/v1/watch", func(r *http.Request, send func(any) error) error {
//		for { select { case <-r.Context().Done(): return nil; case e := <-ch: send(e) } }
//	})
//	go s.Serve()
//	defer s.Close()
//
// Handlers return a value (JSON-encoded, 200; nil answers 204) or an error.
// An *Error (BadRequest, NotFound, Conflict, Timeout, Unavailable...) picks
// the status and a machine-readable code; the body is
//
//	{"error": "lock db is held by node 3", "code": "conflict"}
//
// Any other error is a 500 "internal" with the error's text. There is no
// server-wide request timeout: a blocking call (a lock acquire) takes its
// deadline from the request and watches r.Context(), which ends when the
// client disconnects or the server closes.
//
// Streams are newline-delimited JSON (application/x-ndjson), flushed per
// object, for as long as the client stays. An error after the first object
// travels in the HTTP trailer Ctl-Error, so the stream's objects and its
// final error never share a channel.
//
// Close is graceful: it stops accepting, cancels streams at once, lets other
// in-flight requests finish for ListenOptions.Grace (2 s), then cancels them
// (they answer 503 "the daemon is shutting down"), removes the socket file
// and releases the lock.
//
// # The socket file
//
// Listen creates the parent directory if needed (0755). A socket file left
// by a crashed daemon (nobody answers on it) is removed; a live one makes
// Listen fail with "another daemon is already serving PATH"; anything that
// is not a socket is never touched. Two daemons starting at the same time
// are serialised by an flock on PATH.lock, which is left in place.
//
// # Access control
//
// Two layers, both must agree:
//
//  1. The file: mode 0660 (ListenOptions.Mode), owned by the daemon's user,
//     and by ListenOptions.Group when set. The kernel refuses connect() to
//     anyone else with EACCES.
//  2. The peer: on every connection the server reads the client's
//     credentials from the kernel (SO_PEERCRED for uid/gid/pid,
//     SO_PEERGROUPS for supplementary groups) and admits only uid 0, the
//     daemon's own uid, and, when a group is configured, processes whose
//     primary or supplementary groups include it. Others get 403 "forbidden"
//     naming their uid. This layer holds even if the file's mode is
//     loosened, and it covers the moment between the socket's creation and
//     its chmod. Handlers can read the caller's credentials with PeerOf
//     (mutexd records the PID of a lock's holder).
//
// On systems without SO_PEERCRED every request is refused: the server fails
// closed rather than trust the file mode alone.
//
// Request bodies are limited to ListenOptions.MaxBodyBytes (1 MiB): larger
// ones answer 413 "too_large".
//
// # Client
//
//	c := ctl.NewClient(path, "timed")
//	var st Status
//	err := c.Get(ctx, "/v1/status", &st)
//	err = c.Post(ctx, "/v1/locks/db", lockRequest{...}, &grant)
//	err = c.Stream(ctx, "/v1/watch", func(obj json.RawMessage) error { ... })
//
// A call is written and its answer read on the caller's goroutine, over a
// connection the client keeps from one call to the next (keep one Client
// per daemon for as long as you call it): no connect per call, and no
// goroutine handoff, which on a 2-vCPU VM halved a local call (net/http's
// client: ~0.2 ms p50 for a GET on the socket; this one: ~0.09 ms). The
// server's side is net/http's.
//
// Errors are meant to be printed as they are, and inspected with errors.Is
// and errors.As:
//
//   - errors.Is(err, ErrUnreachable): no daemon answers (a *ConnectError):
//     "cannot reach the daemon at /run/timed/control.sock: no such socket
//     (is "timed run" running? use --control PATH to pick another daemon)".
//   - errors.Is(err, ErrPermission): the kernel or the daemon refused the
//     caller; the message suggests the control group.
//   - errors.As(err, &e *Error): the daemon's own answer, with its status,
//     code and message.
//   - errors.Is(err, context.DeadlineExceeded or context.Canceled): the
//     caller's context ended first.
package ctl
