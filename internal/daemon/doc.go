// Package daemon is the one run loop every synclab daemon uses.
//
// A Daemon owns a core (wrapped in an internal/node.Node), a network endpoint
// (internal/transport), a clock (pkg/clock), the state directory and the
// control socket (internal/ctl). One goroutine, the loop, does everything
// that touches the core:
//
//	packet   -> clock.FromKernel(stamp) -> node.Receive (decode, validate, Step)
//	ticker   -> node.Tick(clock.Now())
//	ctl call -> Do(fn) runs fn on the loop
//	then     -> node.Ready(): persist state, adjust the clock, send, emit events
//
// Everything else runs beside the loop and never blocks it: transport readers
// and TCP writers (bounded queues), the control API (it reaches the core only
// through Do), event watchers (a slow one loses events, counted), hooks (one
// goroutine, in order, each bounded by a timeout), the metrics endpoint.
//
// Durability: the state directory is locked (flock) for the daemon's life;
// the core's state is written atomically (temp file, fsync, rename, fsync of
// the directory) before any message of the same Ready leaves; if that write
// fails the messages are withheld and counted, so a term or fence is never
// announced and then forgotten. Each start raises a persisted incarnation that
// prefixes every frame sequence number; the epochs of the members' frames
// the node accepted are saved too (state file "epochs", written by the
// node's Save before it accepts a member's new epoch), so that frames
// recorded before a restart are refused after it.
//
// Security: a node with other members needs Keys, or Insecure said
// explicitly (ErrNoKey otherwise); an insecure daemon warns at start and its
// status says so. The endpoint lets only the members' IPs connect over TCP.
//
// Lifecycle: New validates and prepares; Run binds sockets, notifies systemd
// (READY, WATCHDOG at half the configured interval, from the loop itself so a
// stuck loop stops the pings, STOPPING) and returns when its context ends.
package daemon
