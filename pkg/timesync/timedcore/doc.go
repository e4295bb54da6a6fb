// Package timedcore is timed's core: a small composite that runs the
// daemon's protocol parts side by side in one core.Core, because the daemon
// runs exactly one core per process.
//
//	                       +------------------------------+
//	synclab frames ------> | Cluster: liveness, or the    |
//	(Step)                 | Berkeley core (--mode        |
//	                       | berkeley)                    |
//	                       +------------------------------+
//	NTP datagrams          +------------------------------+
//	(StepDatagram) --+---> | Server: mode 3 requests,     |  its own sent
//	                 |     | and its sent mode-4 replies  |  reports too
//	                 |     +------------------------------+
//	                 +---> | Client: everything else      |
//	                       | (replies to our polls,       |
//	                       | symmetric peers), its sent   |
//	                       | polls                        |
//	                       +------------------------------+
//
// Frames go to the cluster core. Datagrams are routed by the NTP mode in
// their first byte: requests (mode 3) to the server, any other packet to
// the client when there is one; the daemon's reports of datagrams it wrote
// (Datagram.Local) go back to whoever sent them, the server for mode 4 and
// the client otherwise. With only one NTP part, it gets every datagram (and
// counts what it does not take). Cristian's frames share the NTP socket and
// start with the synclab magic (wire.IsFrame): time requests go to the
// server, time replies to the client (and the reports of our own sent
// frames the other way round). Tick reaches every part; Ready and Status
// merge theirs.
//
// Time: every part says when it needs Tick (core.Scheduler; New refuses
// one that does not), and Deadline is the earliest of theirs. A part may
// so be ticked early, for another's deadline; every part is correct when
// ticked at any time.
//
// The server advertises what the client's discipline knows (stratum, root
// delay and dispersion, leap, reference): the composite hands it over
// (server.SetSystem) at every Tick, and between ticks on a request that
// comes more than 10 ms after the last hand-over, so what the server says
// is never older than it was with a 10 ms tick. A server serving a group's
// time (server.Config.Group: Berkeley mode) gets the cluster part's bound
// relative to the group the same way (server.SetGroupError), and the
// composite hands every part the time the clock took its adjustments
// (core.Adjuster).
//
// Durable state is one file with a named section per part that keeps
// state (State: "cluster" for the Berkeley core's term and frequency,
// "client" for the client's frequency); a part hands its state over in
// its Ready as it would alone, the composite writes every part's newest,
// so two parts may change in one Ready. DecodeState reads the file once at
// start (a file from before sections is the one part's that persisted
// then, at most a section's 4096 bytes) and refuses an absurd one with an
// error wrapping core.ErrState; whatever it accepts, the composite writes
// back in a form it accepts again.
//
// Use:
//
//	saved, err := timedcore.DecodeState(env.State, timedcore.SectionClient)
//	ntpc, _ := client.New(cc) // then ntpc.Restore(saved.Part(timedcore.SectionClient))
//	srv, _ := server.New(server.Config{LocalStratum: 8})
//	c, _ := timedcore.New(timedcore.Config{Cluster: liveness, Server: srv, Client: ntpc, State: saved})
//	// the daemon drives c (cmd/timed's coreFactory does exactly this).
package timedcore
