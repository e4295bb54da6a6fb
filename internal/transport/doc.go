// Package transport is the only code in synclab that opens sockets or
// stamps packet times. A daemon sees one Endpoint per node:
//
//	receive                                        Endpoint
//	UDP member socket  (Listen)     --recvmmsg, kernel stamp-+
//	UDP group socket   (Group)      --recvmmsg, kernel stamp-+--> Packets() --> daemon loop
//	TCP listener       (Listen)     --frames, user stamp-----+
//
//	send                                  right before the syscall
//	Send(to, b, fin)            --------> fin(b) --> member socket --> to
//	SendMulticast(b, fin)       --------> fin(b) --> member socket --> Group
//	SendStream(to, b, fin) --> link queue --> writer: dial, fin(b), write --> to (TCP)
//
// # One channel in
//
// Every received datagram and stream frame arrives on Packets() as a Packet
// carrying its source, its bytes (owned by the receiver), how it came (Via)
// and its receive time. Readers wait when the channel (PacketBuffer) is
// full, leaving the backlog in the kernel's socket buffers, instead of
// dropping; Close unblocks them.
//
// # Few syscalls, no scheduler round trips
//
// A daemon idles between frames, and on a small VM a hop's cost is mostly
// thread wake-ups, not work. So a UDP reader takes every datagram already
// queued with one recvmmsg(2), and plain sends leave with sendmmsg(2),
// both with MSG_DONTWAIT as raw syscalls: they never sleep (Go's netpoller
// parks the reader on EAGAIN), so the runtime need not enter its syscall
// state, which would wake its monitor thread (asleep while the daemon
// idles) for nearly every frame and let it hand the P of a long veth send
// to another thread (batchIO.mmsg).
//
// # Who stamps what, and how precisely
//
// Datagrams are stamped by the kernel: SO_TIMESTAMPNS makes Linux record
// CLOCK_REALTIME when the packet enters the stack, read back with recvmsg
// as an SCM_TIMESTAMPNS control message (Packet.Kernel true). On the lab
// machines that stamp precedes time.Now() after Go's read by p50 15-20 us
// and p99 0.1-0.5 ms (LAB-NOTES), and kernel stamps cut the p99 of offset
// estimates from up to 1.7 ms to at most 0.35 ms; so they are what timed's
// NTP and Cristian arithmetic runs on. When the kernel gives no stamp
// (another OS, the option refused) the reader stamps time.Now() right after
// the read and counts it (Stats.UserStamps), so status shows the quality of
// every estimate. Stream frames are always user-stamped: TCP delivers a
// byte stream, not packets, and no protocol times over it.
//
// The transmit side has no kernel stamp to wait for: instead the caller
// passes a Finalizer, which the transport calls immediately before the
// write syscall, in the writing goroutine (the caller's for datagrams, the
// link writer's for stream frames, possibly long after SendStream returned).
// The Finalizer patches the transmit timestamp into the bytes and may append
// an authentication trailer over them, so the MAC covers the final stamp.
//
// # Members only
//
// With Config.Peers (the daemon always sets it), a datagram on the member or
// group socket from an address that is no member's is dropped before it is
// copied (Stats.UDPStrangers): members send from the socket they listen
// on. A stranger's flood of 64 KiB datagrams then costs the daemon no
// memory at all (mutexd stayed at 11 MB RSS through ~700,000 of them in
// 5 s, against 24 MB when every datagram was copied and handed over). The
// node still checks that a datagram from a member's address claims that
// member: a spoofed address gets past this filter.
//
// # Multicast
//
// The group socket binds the group address and port with SO_REUSEADDR and
// SO_REUSEPORT, so several nodes on one host (the rootless demo: five nodes
// on 127.0.0.x, multicast on lo) each receive every datagram, and joins the
// group on the named interface. Sends go out of the unicast member socket
// with IP_MULTICAST_IF set to that interface (lab namespaces have no default
// route), the configured TTL and IP_MULTICAST_LOOP: the datagram's source is
// then the node's unique member address, which is how the reader recognises
// and drops (and counts) its own looped copies.
//
// # Streams
//
// SendStream queues a frame on the link to a peer's member address. Each
// link has a bounded FIFO and one writer goroutine that dials lazily (from
// the member IP, with TCP_NODELAY), backs off exponentially with seeded
// jitter after failures, writes length-prefixed frames under a write
// deadline (a peer that stops reading is disconnected, never blocks
// anyone), drops frames older than MaxAge, and redials after errors. A full
// queue refuses the frame at once with ErrQueueFull. Connections carry
// frames one way: the acceptor only reads, the dialer only writes (and
// watches for the peer's close so a restarted peer is noticed while idle).
// Delivery is ordered and at most once. A link idle for half the
// IdleTimeout closes itself and dials again for its next frame.
//
// Ordered holds across reconnects too: a frame is never delivered after
// one its link sent later. A link writes on one connection at a time; a
// write that fails or times out (WriteTimeout) resets the connection
// (SO_LINGER 0: its kernel discards what it still holds instead of
// sending it after the next connection's frames) before the link dials
// again. The acceptor reads each connection with its own reader, and once
// a newer connection from a member has delivered a frame, it delivers
// nothing more from that member's older connections: it resets them and
// drops what they still held (Stats.InboundSuperseded, SupersededFrames).
// SupersededFrames counts every frame of a superseded connection that
// began to reach this node and was not delivered: the one its reader
// held, the one it was reading, those complete or begun in its reader's
// buffer, and (Linux) those in the kernel's receive queue, read without
// waiting before the reset (up to 8 MiB). Not counted: the frames still
// in the network or the sender's kernel when the connection was reset
// (they meet the reset), and elsewhere than Linux the kernel's queue.
// A receiver stalled long enough for a write to it to time out so loses
// the frames then in flight (and one that has not read a link's last
// frames when the link, idle, closed and dialed again for a new one loses
// those): at most once, never out of order. A graceful close loses
// nothing by itself: only a newer connection's frame supersedes. The
// acceptor tells members apart by IP (the dialer's port is ephemeral), so
// it orders only the connections from an IP that Config.Peers gives to
// one member: without Peers, or for an IP members share (a cluster on
// 127.0.0.1), connections are not ordered against each other and may
// reorder across a reconnect as before (ordering them by IP had two
// members on one IP reset each other's live connections at almost every
// frame: review-order). Give each member its own IP.
//
// The transport cannot authenticate a connection, so whether a newer
// connection's frame may supersede is the consumer's (Config.Supersedes,
// asked only for the frames of a connection that has not superseded yet:
// a member's steady stream pays nothing; BenchmarkStreamPingPongMembers
// asks it twice in 20,000 exchanges, and with it and the counting of a
// superseded connection's backlog BenchmarkStreamPingPong's CPU per
// exchange was 37.4 us against 36.9 before, the members' variant 37.9
// against 38.5: medians of six alternated runs at load averages 7 to
// 22, within their noise). A daemon passes only a frame
// the node would take for the member's: of its cluster, in the name of
// the member at that IP, with its key's MAC (internal/daemon,
// memberFrame). A connection whose frames fail (another cluster's member
// on this port, a member this node does not list on a shared host, a
// forger without the key) then supersedes nothing: its frames are
// delivered for the node to refuse and count (Stats.NotSuperseding); the
// member's connection is left alone unless such connections fill the
// member IP's PerPeerConns slots, when the oldest, the member's, is
// evicted (InboundEvicted, its unread frames lost uncounted), as any
// connections from its IP would. One whose frames pass (a second
// daemon of the member started by hand on its host; a replay of the
// member's recorded frames; without a key, anyone) resets the member's
// connection at its frames, and the member's redial resets it in turn:
// both lose frames. Without Supersedes every frame supersedes: anyone who
// opens a connection from a member's IP supersedes the member's current
// connection with its first frame, costing the member the frames still
// unread on it and a redial, whose first frame supersedes the stranger's
// in turn. Repeated, that was cheaper than evicting the member's
// connection (PerPeerConns connections a redial) or a forged reset (raw
// sockets, the connection's sequence numbers): a forged connection every
// 10 ms cost a member streaming 2,000 frames at 0.5 ms 41 frames and 222
// redials (by eviction 1 and 56), every 1 ms 126 and 813 (4 and 438):
// never its stream (review-order).
//
// Stats.Superseding keeps, per member, its superseded connections, the
// frames they lost and when the last was; Thrashing says more than
// SupersedeThrash were within SupersedeWindow (10 in a minute), which a
// restart (one) or write timeouts (one per WriteTimeout of stall at most)
// do not reach and two processes resetting each other's connections do;
// it clears once a window passes without. The daemons say it at WARN and
// in status (docs/operations.md).
//
// A dead peer (its host down or cut off, so nothing answers) is noticed by
// the dialer within 4*KeepAlive: with data in flight by TCP_USER_TIMEOUT,
// idle by keepalive, which probes after 2*KeepAlive of silence and gives
// up after two probes KeepAlive apart. Only the dialer probes: the
// acceptor only reads, and drops a connection that begins no frame within
// IdleTimeout. A healthy idle link so costs a probe and its ACK every
// 2*KeepAlive: half what both ends probing every KeepAlive cost (a probe
// received restarts the other end's wait, so the ends took turns: one
// exchange per KeepAlive, measured 0.8 segments per open link per second
// at 5 s, 0.4 now; the links a busy spell opened stay up a minute).
//
// A peer whose process dies (SIGKILL included) has its sockets closed by
// its kernel at once: the watcher sees the FIN or RST and the next dial is
// refused. Each is handed to the consumer as a Hint on the Hints channel
// (stream_closed, dial_refused; dial_timeout for a connection nobody
// answered, as through a firewall that drops it), never blocking the link (a hint nobody
// takes is dropped and counted), so that a core may probe the peer at
// once instead of waiting for its timeout. A hint is not evidence: a
// live peer's link closes for reasons of its own, and anyone on the path
// can forge a reset. ICMP errors for datagrams (port or host unreachable)
// are not turned into hints yet: the member socket does not set
// IP_RECVERR, so the kernel reports them on an unconnected socket to
// nobody (connected sockets count them as Stats.Refused).
//
// The accepting side is bounded against anyone on the LAN (inbound.go):
// with Config.Peers, a connection from an IP that is no member's is reset
// before anything is read; a member IP holds at most PerPeerConns
// connections per member on it, a newer one closing its oldest, so a member
// always gets a slot (and a member's older connections are reset once a
// newer one delivered, above); every read has a deadline (IdleTimeout before a frame,
// FrameTimeout within one); a length prefix above MaxStreamFrame (64 KiB)
// closes the connection, and below it a frame's buffer grows only as its
// bytes arrive, all partly read frames together holding MaxStreamBuffered
// bytes at most. Each refusal has its counter in Stats.
//
// # Testing without sockets
//
// MemNetwork provides Endpoints with the same queues, framing, backoff and
// counters over an in-memory wire (net.Pipe for streams), plus SetDown to
// take an address off the network; the package's behavioural tests run
// against both. ListenUDP gives a plain kernel-stamped UDP socket for
// traffic outside the member protocol (timed's NTP service).
package transport
