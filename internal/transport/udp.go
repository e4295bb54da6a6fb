package transport

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"time"
)

// udpSocket is one kernel-stamped UDP socket and how to read it.
type udpSocket struct {
	conn *net.UDPConn
	via  Via
	// connected: the socket talks to one peer (DialUDP): writes name no
	// address, and the peer's ICMP errors come back as read errors.
	connected bool
	// unstamped: why the kernel does not stamp this socket's datagrams
	// (SO_TIMESTAMPNS refused, another OS); empty: it does, and every
	// datagram should carry a stamp.
	unstamped string

	// Transmit stamps (enableTx): with them on, every send is followed by
	// a read of the socket's error queue, so sends are serialised.
	txMu sync.Mutex
	rc   syscall.RawConn // nil: no kernel transmit stamps
	txr  *txReader       // rc's error queue
	// txSent: stamped datagrams sent since the kernel's counter was last
	// zeroed (enableTx, resetTx), the counter value of the next one.
	txSent uint32
	// txStale: the counter could not be reset (resetTx): no stamp is
	// trusted until it is.
	txStale  bool
	stampIDs []int // writeBatch's, reused

	// Plain sends (no control message) of an unconnected socket go
	// through out, one sendmmsg for a batch (writeBatch).
	outMu sync.Mutex
	out   *batchIO // nil until the first
}

// enableTx turns on kernel transmit stamps, where the platform has them;
// without them sends still work, stamped in user space by their caller.
func (s *udpSocket) enableTx() {
	if rc, err := s.conn.SyscallConn(); err == nil && enableTxTimestamps(rc) == nil {
		s.rc, s.txr = rc, newTxReader(rc)
	}
}

// resetTx zeroes the kernel's stamp counter and txSent (txMu held), after
// a send that may have put them out of step: the kernel gives a stamped
// datagram its counter value before the send can fail (an OUTPUT rule's
// drop, a cgroup's egress filter: EPERM), and a datagram that sendmmsg
// stops at is tried again. Counted on, the stamp of each datagram would
// from then on go to a later one (an NTP server would hand one client
// the departure of another's answer). Stamps still queued are dropped.
func (s *udpSocket) resetTx() {
	if err := s.txr.reset(); err != nil {
		s.txStale = true // retried before the next stamped send
		return
	}
	s.txSent, s.txStale = 0, false
}

// listenUDP binds a UDP socket at addr with the address family of addr (so
// 127.0.0.1 is an AF_INET socket, never a dual-stack one) and turns on
// kernel receive timestamps where the platform has them.
func listenUDP(addr netip.AddrPort) (*udpSocket, error) {
	conn, err := net.ListenUDP(udpNetwork(addr.Addr()), net.UDPAddrFromAddrPort(addr))
	if err != nil {
		return nil, err
	}
	return newUDPSocket(conn, ViaUDP), nil
}

func newUDPSocket(conn *net.UDPConn, via Via) *udpSocket {
	s := &udpSocket{conn: conn, via: via, unstamped: "the socket is not a system socket"}
	if rc, err := conn.SyscallConn(); err == nil {
		// Failure is not fatal: the reader falls back to user-space
		// stamps and counts them, status shows the ratio, and each
		// packet says why (Packet.Unstamped).
		s.unstamped = ""
		if err := enableRxTimestamps(rc); err != nil {
			s.unstamped = "the socket refused kernel receive stamps (SO_TIMESTAMPNS): " + err.Error()
		}
	}
	return s
}

func udpNetwork(a netip.Addr) string {
	if a.Is4() || a.Is4In6() {
		return "udp4"
	}
	return "udp6"
}

func (s *udpSocket) localAddr() netip.AddrPort {
	ap := s.conn.LocalAddr().(*net.UDPAddr).AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// readBatch is how many datagrams readLoop takes with one read
// (recvmmsg(2) on Linux): every datagram already queued, up to this many,
// so that answers that arrive together cost one wake-up of the reader.
const readBatch = 8

// readSlot holds the largest datagram: nothing a member sends is cut.
// The batch's buffer is reserved once; only what datagrams fill of it
// becomes resident.
const readSlot = MaxDatagram + 1

// readLoop reads datagrams until the socket is closed. skip, if set, drops
// a datagram by source before it is copied or counted as input (our own
// multicast, strangers), counting it itself. deliver blocks until the
// packet is taken or the owner is closing (false).
//
// It reads with batchIO: recvmmsg(2) through Go's netpoller (the goroutine
// parks on EAGAIN instead of holding a thread), every queued datagram at
// once, as a raw syscall (see batchIO.mmsg).
func (s *udpSocket) readLoop(c *counters, skip func(netip.AddrPort) bool, deliver func(Packet) bool) {
	in, err := newBatchIO(s.conn, udpNetwork(s.localAddr().Addr()) == "udp6", readBatch, readSlot)
	if err != nil {
		return // only a socket that is not a real one: nothing to read
	}
	for {
		batch, err := in.read(c, s.via, s.unstamped, skip)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if errors.Is(err, syscall.ECONNREFUSED) {
				// ICMP port unreachable from a connected socket's
				// peer: nothing listens there.
				c.refused.Add(1)
			}
			// Transient (e.g. ENOBUFS, a queued ICMP error): keep
			// reading, but do not spin if the error repeats.
			time.Sleep(time.Millisecond)
			continue
		}
		for _, p := range batch {
			p.Data = append([]byte(nil), p.Data...) // the consumer owns it
			if !deliver(p) {
				return
			}
		}
	}
}

// finalize runs fin on b and checks the result against limit.
func finalize(b []byte, fin Finalizer, limit int) ([]byte, error) {
	if fin != nil {
		b = fin(b)
		if b == nil {
			return nil, ErrDropped
		}
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%w: %d bytes > %d", ErrFrameTooLarge, len(b), limit)
	}
	return b, nil
}

// writeTo finalizes b and writes it to `to` as one datagram: the Finalizer
// runs in the caller's goroutine immediately before sendmsg(2). oob, if
// any, goes with it (txStampOOB asks for its transmit stamp).
func (s *udpSocket) writeTo(c *counters, via Via, to netip.AddrPort, b []byte, fin Finalizer, oob []byte) error {
	b, err := finalize(b, fin, MaxDatagram)
	if err == nil {
		to = netip.AddrPortFrom(to.Addr().Unmap(), to.Port())
		switch {
		case s.connected:
			_, _, err = s.conn.WriteMsgUDPAddrPort(b, oob, netip.AddrPort{})
		case oob == nil:
			_, err = s.writeBatch(c, via, []Datagram{{To: to, Data: b}}, nil)
			return err // counted
		default:
			_, _, err = s.conn.WriteMsgUDPAddrPort(b, oob, to)
		}
	}
	if err != nil {
		c.sendErrs.Add(1)
		if errors.Is(err, net.ErrClosed) {
			return ErrClosed
		}
		return err
	}
	c.via[via].out(len(b))
	return nil
}

// writeBatch writes ds (finalized, unconnected socket) with as few
// sendmmsg(2) calls as it takes, as raw syscalls (see batchIO.mmsg), and
// counts what it sent and what failed. With stamps (len(ds) long), the
// datagrams with Stamp ask the kernel for their transmit stamps, found in
// the error queue after the write (where the socket has them on, enableTx).
func (s *udpSocket) writeBatch(c *counters, via Via, ds []Datagram, stamps []TxStamp) (int, error) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	stamping := false
	if stamps != nil {
		clear(stamps)
		stamping = s.rc != nil && slices.ContainsFunc(ds, func(d Datagram) bool { return d.Stamp })
	}
	var ids []int // ids[k]: the datagram that took stamp counter value first+k
	var first uint32
	if stamping {
		// The error queue and its counter are the socket's: the client's
		// stamped sends (writeStamped) wait.
		s.txMu.Lock()
		defer s.txMu.Unlock()
		if s.txStale {
			s.resetTx()
		}
		first = s.txSent
		ids = s.stampIDs[:0]
	}
	if s.out == nil {
		w, err := newBatchIO(s.conn, udpNetwork(s.localAddr().Addr()) == "udp6", BatchSize, 0)
		if err != nil {
			c.sendErrs.Add(uint64(len(ds)))
			return 0, err
		}
		s.out = w
	}
	var stampedIDs *[]int
	if stamping {
		stampedIDs = &ids
	}
	n, err := s.out.write(c, via, ds, stampedIDs)
	if errors.Is(err, net.ErrClosed) {
		err = ErrClosed
	}
	if stamping {
		s.txSent += uint32(len(ids))
		// After a stamped datagram that did not go, only the stamps of
		// those sent before it are where they are expected.
		trusted := len(ids)
		if s.out.broken {
			trusted = s.out.trusted
		}
		ahead := s.txr.read(first, ids, trusted, stamps)
		if ahead && !s.out.broken || s.txStale {
			// The kernel's counter was already ahead before this batch
			// (a failure no write reported): no stamp of it is known to
			// be its own.
			for _, i := range ids {
				stamps[i] = TxStamp{}
			}
		}
		if ahead || s.out.broken {
			s.resetTx()
		}
		for _, i := range ids {
			if stamps[i].Kernel {
				c.txKernel.Add(1)
			} else {
				stamps[i].Missed = true
			}
		}
		s.stampIDs = ids[:0]
	} else if stamps != nil {
		for i, d := range ds {
			stamps[i].Missed = d.Stamp && txStampsOffered
		}
	}
	return n, err
}

// writeStamped is writeTo, and then the kernel's transmit stamp of the
// datagram where the socket has them on (enableTx).
func (s *udpSocket) writeStamped(c *counters, via Via, to netip.AddrPort, b []byte, fin Finalizer) (TxStamp, error) {
	if s.rc == nil {
		// Where the kernel offers transmit stamps, a socket that could
		// not turn them on (SO_TIMESTAMPING refused: a sandbox, an old
		// kernel) misses every one: reported as such, so that the
		// daemon says so (a WARN and status), not silently early.
		if err := s.writeTo(c, via, to, b, fin, nil); err != nil {
			return TxStamp{}, err
		}
		return TxStamp{Missed: txStampsOffered}, nil
	}
	s.txMu.Lock()
	defer s.txMu.Unlock()
	if s.txStale {
		s.resetTx()
	}
	if err := s.writeTo(c, via, to, b, fin, txStampOOB); err != nil {
		// The datagram may have taken a counter value all the same.
		s.resetTx()
		return TxStamp{}, err
	}
	// OPT_ID numbers the datagrams the socket asked stamps for since the
	// counter was zeroed, from 0: every one of them is sent here or in
	// writeBatch. The queue is drained after every send: unread stamps
	// would count against the receive buffer and crowd out real packets.
	id := s.txSent
	s.txSent++
	var st [1]TxStamp
	if s.txr.read(id, firstOnly, 1, st[:]) || s.txStale {
		st[0] = TxStamp{}
		s.resetTx()
	}
	if st[0].Kernel {
		c.txKernel.Add(1)
	}
	return TxStamp{Time: st[0].Time, Kernel: st[0].Kernel, Missed: !st[0].Kernel}, nil
}

// firstOnly is txReader.read's ids for one datagram.
var firstOnly = []int{0}

// UDPConn is a plain kernel-stamped UDP socket outside any Endpoint: timed
// serves and queries NTP on one (--serve ADDR). Its packets carry Via
// ViaUDP. It is safe for concurrent use.
type UDPConn struct {
	sock    *udpSocket
	packets chan Packet // nil when served (ServeUDP)
	done    chan struct{}
	wg      sync.WaitGroup
	c       counters
	once    sync.Once
}

// BatchSize is how many datagrams a ServeUDP reader takes per read, and
// WriteBatch per write (recvmmsg and sendmmsg on Linux).
const BatchSize = 32

// Datagram is one datagram for WriteBatch.
type Datagram struct {
	To   netip.AddrPort
	Data []byte
	// Stamp asks WriteBatchStamped for the kernel's transmit stamp of
	// this datagram (WriteBatch ignores it).
	Stamp bool
}

// serveSlot bounds a datagram read by ServeUDP: NTP packets (48 bytes, a
// MAC, extension fields of NTS) and synclab frames fit many times over;
// a longer datagram is truncated by the kernel and dropped (counted as a
// receive error).
const serveSlot = 2048

// ServeUDP binds a UDP socket at addr like ListenUDP, but has no Packets
// channel: its reader calls serve with each batch of datagrams it reads
// (up to BatchSize with one recvmmsg(2) on Linux), on its own goroutine,
// and reads nothing more until serve returns. The packets' Data alias the
// reader's buffers: they are valid only until serve returns (copy what
// must be kept). So a server answers on the goroutine that read the
// requests, without handing each one over: what recvmmsg and sendmmsg
// (WriteBatch) save is then not spent on wakeups. A datagram longer than
// 2 KiB is dropped and counted (Stats.Truncated).
func ServeUDP(addr netip.AddrPort, serve func(batch []Packet)) (*UDPConn, error) {
	if !addr.IsValid() {
		return nil, errors.New("transport: ServeUDP needs an address")
	}
	s, err := listenUDP(addr)
	if err != nil {
		return nil, err
	}
	reader, err := newBatchIO(s.conn, udpNetwork(addr.Addr()) == "udp6", BatchSize, serveSlot)
	if err != nil {
		s.conn.Close()
		return nil, err
	}
	u := &UDPConn{sock: s, done: make(chan struct{})}
	s.enableTx()
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		for {
			batch, err := reader.read(&u.c, ViaUDP, s.unstamped, nil)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				// Transient (ENOBUFS, a queued ICMP error): keep
				// reading, but do not spin if the error repeats.
				select {
				case <-u.done:
					return
				case <-time.After(time.Millisecond):
				}
				continue
			}
			if len(batch) > 0 {
				serve(batch)
			}
		}
	}()
	return u, nil
}

// WriteBatch writes every datagram of ds as it is (no Finalizer, no
// transmit stamp), with as few syscalls as the platform allows (sendmmsg
// on Linux), and returns how many were written. A datagram that cannot be
// sent is skipped and counted; the first error is returned once the others
// are written.
func (u *UDPConn) WriteBatch(ds []Datagram) (int, error) {
	return u.sock.writeBatch(&u.c, ViaUDP, ds, nil)
}

// WriteBatchStamped is WriteBatch, and then the kernel's transmit stamp of
// each datagram with Stamp in stamps[i] (len(ds) long; the others zero):
// Kernel when found, Missed when the socket asked for it and found none
// (or could not ask: a socket without transmit stamps where the platform
// has them). An NTP server in interleaved mode sends these stamps in its
// next answers.
func (u *UDPConn) WriteBatchStamped(ds []Datagram, stamps []TxStamp) (int, error) {
	if len(stamps) != len(ds) {
		return 0, errors.New("transport: WriteBatchStamped needs one stamp slot per datagram")
	}
	return u.sock.writeBatch(&u.c, ViaUDP, ds, stamps)
}

// ListenUDP binds a UDP socket at addr (port 0 picks one) with kernel
// receive timestamps on, and starts reading it.
func ListenUDP(addr netip.AddrPort) (*UDPConn, error) {
	if !addr.IsValid() {
		return nil, errors.New("transport: ListenUDP needs an address")
	}
	s, err := listenUDP(addr)
	if err != nil {
		return nil, err
	}
	return readUDP(s), nil
}

// DialUDP is ListenUDP for talking to one peer, remote, from local (port
// 0 picks one; an unspecified address lets the kernel pick the source): a
// connected socket, which only that peer's datagrams reach, and on which
// the peer's ICMP port unreachable is seen (Stats.Refused), so that a
// client can tell "nothing listens there" from silence. Sends go to
// remote whatever address they name.
func DialUDP(local, remote netip.AddrPort) (*UDPConn, error) {
	if !remote.IsValid() {
		return nil, errors.New("transport: DialUDP needs a remote address")
	}
	var laddr *net.UDPAddr
	if local.IsValid() {
		laddr = net.UDPAddrFromAddrPort(netip.AddrPortFrom(local.Addr().Unmap(), local.Port()))
	}
	remote = netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port())
	conn, err := net.DialUDP(udpNetwork(remote.Addr()), laddr, net.UDPAddrFromAddrPort(remote))
	if err != nil {
		return nil, err
	}
	s := newUDPSocket(conn, ViaUDP)
	s.connected = true
	return readUDP(s), nil
}

// readUDP starts reading s into a Packets channel.
func readUDP(s *udpSocket) *UDPConn {
	u := &UDPConn{sock: s, packets: make(chan Packet, PacketBuffer), done: make(chan struct{})}
	s.enableTx()
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		s.readLoop(&u.c, nil, func(p Packet) bool {
			select {
			case u.packets <- p:
				return true
			case <-u.done:
				return false
			}
		})
	}()
	return u
}

// Packets delivers the received datagrams; it is closed by Close. It is
// nil for a socket served by a function (ServeUDP).
func (u *UDPConn) Packets() <-chan Packet { return u.packets }

// Send writes one datagram to `to`; fin runs right before the write. It
// asks for no transmit stamp: use SendStamped to learn when it left.
func (u *UDPConn) Send(to netip.AddrPort, b []byte, fin Finalizer) error {
	return u.sock.writeTo(&u.c, ViaUDP, to, b, fin, nil)
}

// TxStamp is when a datagram left: the kernel's software transmit stamp
// (Kernel true, CLOCK_REALTIME: convert it with clock.Clock.FromKernel), or
// nothing when the kernel gave none (Kernel false: use the time read in
// the Finalizer). Missed says the socket asked the kernel for the stamp
// and found none right after the send (the caller counts it: the daemon's
// tx_stamp_missed);
// a socket without transmit stamps (the in-memory network, other
// systems) leaves it false.
type TxStamp struct {
	Time   time.Time
	Kernel bool
	Missed bool
}

// SendStamped is Send, and then the kernel's transmit stamp of the datagram
// where it has one. An NTP client uses it for T1 (chrony does the same):
// the clock read in the Finalizer precedes the departure by the whole
// sendmsg path, tens of microseconds on a loaded host, and half of that
// would bias every offset. Stamped sends on one UDPConn are serialised.
func (u *UDPConn) SendStamped(to netip.AddrPort, b []byte, fin Finalizer) (TxStamp, error) {
	return u.sock.writeStamped(&u.c, ViaUDP, to, b, fin)
}

// LocalAddr is the bound address.
func (u *UDPConn) LocalAddr() netip.AddrPort { return u.sock.localAddr() }

// Stats returns the socket's counters (UDP, stamps, send errors).
func (u *UDPConn) Stats() Stats { return u.c.snapshot() }

// Close closes the socket and returns once the reader has stopped.
func (u *UDPConn) Close() error {
	err := ErrClosed
	u.once.Do(func() {
		close(u.done)
		err = u.sock.conn.Close()
		u.wg.Wait()
		if u.packets != nil {
			close(u.packets)
		}
	})
	return err
}
