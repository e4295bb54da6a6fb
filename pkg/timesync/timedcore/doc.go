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
// (Datagram.Sent) go back to whoever sent them, the server for mode 4 and
// the client otherwise. With only one NTP part, it gets every datagram (and
// counts what it does not take). Cristian's frames share the NTP socket and
// start with the synclab magic (wire.IsFrame): time requests go to the
// server, time replies to the client (and the reports of our own sent
// frames the other way round). Tick reaches every part; Ready and Status
// merge theirs.
//
// Use:
//
//	srv, _ := server.New(server.Config{LocalStratum: 8})
//	c, _ := timedcore.New(timedcore.Config{Cluster: liveness, Server: srv})
//	// the daemon drives c; the discipline, once integrated, calls
//	// c.Server().SetSystem(...) after each clock update.
package timedcore
