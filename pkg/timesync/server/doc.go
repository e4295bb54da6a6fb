// Package server is timed's NTP server: a sans-IO core (core.Core) that
// answers RFC 5905 client requests (mode 3) with server replies (mode 4),
// so that chronyd, ntpdig, beevik/ntp, `timed query` and timed's own client
// core can measure a clock against this host.
//
// # Use
//
// The daemon feeds every packet of its NTP socket (`timed run --serve
// ADDR`) to StepDatagram, with Datagram.Time set to the local clock's
// reading of the kernel receive stamp, and writes what Ready returns,
// patching the transmit timestamp just before the write (NTPStamp):
//
//	srv, err := server.New(server.Config{LocalStratum: 8})
//	...
//	srv.StepDatagram(core.Datagram{Addr: from, Data: pkt, Time: rx})
//	for _, d := range srv.Ready().Datagrams { write(d) }
//	srv.Tick(now) // every tick: expires idle rate-limit entries
//
// The clock discipline tells the server what to advertise with SetSystem
// (an ntp.System: leap, stratum, reference ID and time, root delay and
// dispersion, precision). Until it does, and whenever it reports an
// unsynchronised clock, the server says leap 3, stratum 16 ("do not use
// me"), or, with Config.LocalStratum, leap 0 at that stratum with reference
// ID "LOCL": chrony's `local stratum N`, how a lab's master clock serves
// without an upstream. Its root dispersion is Config.LocalError, how far
// the administrator vouches its time is from true time (0: this clock is
// declared the reference, as chrony's is), so that the clients' bounds,
// relative to the primary reference, cover it. A group's agreed time
// (Config.Group: Berkeley mode) is nobody's reference: it is served at
// LocalStratum only with a LocalError, and the member's bound relative to
// the group (SetGroupError) added; otherwise unsynchronised.
//
// # Broadcasts
//
// With Config.Broadcast (timed run --broadcast ADDR) the server is also an
// RFC 5905 broadcast server: at the first Tick and then every Interval on a
// fixed schedule (Deadline names the next) it leaves in Ready a mode-5
// packet to the broadcast address or multicast group (BroadcastPacket: the
// system variables, no origin or receive timestamp, the poll of the
// interval), stamped at the write and signed with Broadcast.KeyID, or
// unsigned with Broadcast.Insecure only (RFC 8633). Its clients calibrate
// their delay with ordinary requests, which it answers as any.
//
// # Reply rules
//
//   - Only mode 3, versions 3 and 4, from a unicast source with a port, is
//     answered; the version is echoed. Everything else is dropped and
//     counted by reason in Status().Dropped (mode 6 and 7 in particular:
//     control queries are amplification vectors).
//   - A reply is never longer than its request (no extension fields; a MAC
//     only when the request had a valid one), so the server amplifies
//     nothing.
//   - Symmetric keys (a chrony key file): a request with a valid MAC gets a
//     reply signed with the same key; one with an unknown key or a bad MAC
//     gets a crypto-NAK. See StepDatagram for the transmit timestamp of
//     signed replies.
//   - Rate limiting per source address: a token bucket (RateLimit.Burst
//     requests at once, one per RateLimit.Interval on average). A client
//     over its limit gets a RATE kiss-o'-death at most once per
//     RateLimit.KissInterval and is otherwise ignored. The table is bounded
//     (least recently heard evicted) and idle entries expire on Tick, so a
//     flood of spoofed sources cannot grow memory.
//
// The core reads no clock and does no I/O: the same code runs under the
// daemon and the simulator.
package server
