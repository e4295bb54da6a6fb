// Package daemon is the one run loop every synclab daemon uses.
//
// A Daemon owns a core (wrapped in an internal/node.Node), a network endpoint
// (internal/transport), a clock (pkg/clock), the state directory and the
// control socket (internal/ctl). Whoever holds the daemon's mutex touches the
// core, one thing at a time: the loop, for everything but the datagram
// socket,
//
//	packet   -> clock.FromKernel(stamp) -> node.Receive (decode, validate, Step)
//	ticker   -> node.Tick(clock.Now())
//	ctl call -> Do(fn) runs fn on the loop
//	then     -> node.Ready(): adjust the clock, persist state, send, emit
//	            events (a state write that promises nothing after the sends:
//	            the frames do not wait for the disk)
//	and      -> a deadline the step made due, no frame waiting: ticked in
//	            the same step
//
// and the datagram socket's reader (timed's NTP socket), which serves a
// batch of datagrams at once: those the core answers on the spot
// (core.Answerer: NTP and Cristian requests) are answered in one write with
// their transmit times written right before it, the others are stepped and
// the core's Ready acted on, as the loop would. A server then answers
// without a wakeup of the loop per request.
//
// The clock is adjusted before the Ready's state is written, whatever the
// Ready promises, and the truetime page republished with it: a slew, a
// frequency or a step never waits for the disk. A clock discipline counts
// its slew and its frequency from the tick that decided them; made after
// a slow fdatasync (200 ms), they left the clock on the old plan while the
// core's model counted the new one as under way (the simulator, whose
// oracle reads the bound at every instant, saw the truth fall outside it
// mid-write; Adjusted re-anchors the slew afterwards, not the frequency).
// An adjustment depends on nothing the write holds (a failed write's are
// applied all the same), so nothing is lost by making it first; a crash
// during the write leaves the clock adjusted and the state as it was.
//
// A slew a core decides at a tick is planned from the tick's clock reading;
// what the clock's slew in progress absorbed between that reading and the
// moment the daemon applies the new one (more than a tick when the host is
// busy) is taken off it, so the clock ends where the core planned.
//
// A daemon with no ID and no members runs outside any cluster: no member
// socket, only its datagram socket (timed keeping time over NTP alone).
//
// Everything else runs beside them and never blocks them: transport readers
// and TCP writers (bounded queues), the control API (it reaches the core only
// through Do), event watchers (a slow one loses events, counted), hooks (one
// goroutine, in order, each bounded by a timeout), the metrics endpoint.
//
// Durability: the state directory is locked (flock) for the daemon's life;
// the core's state is written atomically (temp file, fsync, rename, fsync of
// the directory) before any message of the same Ready leaves; if that write
// fails the messages are withheld and counted, so a term or fence is never
// announced and then forgotten. A failed write that cannot be read back
// (it failed before its rename, wrote nothing, or was cut off again,
// durably) lets a core take back what it promised the calls of that Ready
// (core.Withdrawer): DoSaved then answers ErrWithdrawn ("nothing was done,
// ever") instead of ErrNotSaved ("kept, may still happen"), counted as
// calls_withdrawn. A call whose turn of the loop ends with the node
// stepping back (a frame of the same batch, or the tick after it) is not
// done either: the core, held back, is not drained, and DoSaved answers
// HeldError (Dropped, ErrWithdrawn, once the core is rebuilt from its
// disk without it), never nil. Each start raises a persisted incarnation that
// prefixes every frame sequence number; the epochs of the members' frames
// the node accepted are saved too (state file "epochs", written by the
// node's Save before it accepts a member's new epoch), so that frames
// recorded before a restart are refused after it.
//
// Security: a node with other members needs Keys, or Insecure said
// explicitly (ErrNoKey otherwise); an insecure daemon warns at start and its
// status says so. The endpoint lets only the members' IPs connect over TCP.
// A newer connection from a member's IP supersedes its older ones (the
// transport keeps the member's frames in order) only with a frame the
// node would take for the member's (memberFrame: this cluster's, in that
// member's name, with the key's MAC): another cluster's member or a
// forger on that IP supersedes nothing (though more than
// transport.DefaultPerPeerConns of its connections evict the member's, as
// before). More than
// transport.SupersedeThrash supersedes of one member within
// transport.SupersedeWindow (another process sending in its name from its
// IP) are said at WARN (condition superseded, at most once a minute) and
// in status (Superseding) while they last (superseded.go).
//
// Configuration agreement (internal/node, Config.Agreement): the binary
// names its algorithm and the parameters that must agree. After every
// step the daemon writes the node's notices (a member whose configuration
// differs, frames from a member's address that fail authentication,
// forgeries, a member unheard for long) at WARN, rate-limited per
// condition and member: the first at once, then one line per ten seconds
// with a count (alerts.go). When the node steps back the daemon logs why,
// stops the core and builds it again from the state directory (as a
// restart would: no leadership, grant or sequencer's place of the old run
// survives), reports EventSteppedBack (and the binary's StepBackEvents:
// electd's demoted and leader_lost, so that hooks run) and holds it;
// control calls that make the core act (DoActive: a lock, a send, a
// resignation) are refused with 503 "stepped_back" meanwhile, and wait
// for the end of the start. When the configurations agree again it
// reports EventAgreementRestored and the core runs.
//
// The whole lab in one table (cluster.go, GET /v1/cluster, `X status
// --cluster`): ClusterStatus has the node ask every member
// (node.QueryCluster), waits until every member answered or its deadline
// passed (the loop wakes it after the step that brought the last answer),
// then makes one row per member: from its answer (standing, build,
// uptime, clock and the offset measured with the query, the binary's
// facts from Config.ClusterFacts), or, for a member that did not answer,
// from configuration agreement's view of it (what differs, authenticated
// or not, failures) with when it was last heard and why it may not have
// answered. Complete says that every member answered and agrees.
//
// Slow writes: a write of the core's state over SlowPersist is a WARN
// (slow_persist) and is counted in status (Persist). The loop sends
// nothing while it writes, a leader's heartbeats included, so a write
// longer than the leader timeout makes the others elect again: a new term
// in the core's events ("term") within SlowTermWindow of a write at least
// that long (Agreement.LeaderTimeout; SlowPersist when unknown), one that
// ended before the term's Ready (not the term's own write), is a second
// WARN (slow_persist_elections) that ties the leader change to the disk,
// counted in status too, the last one shown for SlowTermShown
// (slowterm.go).
//
// Lifecycle: New validates and prepares; Run binds sockets, notifies systemd
// (READY, WATCHDOG at half the configured interval, from the loop itself so a
// stuck loop stops the pings, STOPPING) and returns when its context ends.
package daemon
