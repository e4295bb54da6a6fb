// Package sdnotify implements the systemd notification protocol
// (sd_notify(3)) without libsystemd, for daemons run with Type=notify.
//
// systemd passes the address of its notification socket in NOTIFY_SOCKET: a
// unix datagram socket, either a file path or, when the value starts with
// '@', a name in the abstract namespace. A notification is one datagram of
// newline-separated VAR=value assignments. When NOTIFY_SOCKET is unset
// every function here is a no-op that reports sent=false, so the same
// binary runs under systemd, in a terminal and in tests.
//
// A daemon's life under systemd:
//
//	// after the sockets are open and the control API serves:
//	sdnotify.Ready()
//
//	// in the main loop, if the unit sets WatchdogSec=:
//	if iv, ok := sdnotify.WatchdogInterval(); ok {
//		t := time.NewTicker(iv / 2)
//		... case <-t.C: sdnotify.Watchdog()
//	}
//
//	// on SIGTERM, before the slow part of shutting down:
//	sdnotify.Stopping()
//
// The watchdog ping must come from the loop that does the daemon's work,
// not from a goroutine of its own: then a wedged loop stops the pings and
// systemd kills and restarts the daemon (Restart=on-failure).
//
// With NotifyAccess=main (synclab's units) systemd accepts notifications
// only from the service's main PID, which it reads from the datagram's
// credentials: hooks and other children cannot send them.
//
// The units in the repository's systemd/ directory are checked by this
// package's tests with systemd-analyze verify when it is installed.
package sdnotify
