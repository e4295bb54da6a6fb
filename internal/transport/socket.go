package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/synclab/synclab/internal/rawsock"
)

// sockets is the real fabric: the member UDP socket (unicast in and out,
// multicast out), the group socket (multicast in), the TCP listener.
type sockets struct {
	e      *endpoint
	ucast  *udpSocket
	mcast  *udpSocket // nil without multicast
	group  netip.AddrPort
	ln     *net.TCPListener
	dialer net.Dialer
}

// Open binds the member address (UDP and TCP), joins the multicast group
// if configured, and starts the readers and the accept loop.
func Open(cfg Config) (Endpoint, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &sockets{}
	var err error
	// With port 0 the UDP socket picks the port and TCP must get the same
	// one; another process may hold it for TCP, so try a few times.
	for attempt := 0; ; attempt++ {
		if s.ucast, err = listenUDP(cfg.Listen); err != nil {
			return nil, fmt.Errorf("transport: udp %v: %w", cfg.Listen, err)
		}
		addr := s.ucast.localAddr()
		s.ln, err = net.ListenTCP(tcpNetwork(addr.Addr()), net.TCPAddrFromAddrPort(addr))
		if err == nil {
			break
		}
		s.ucast.conn.Close()
		if cfg.Listen.Port() != 0 || attempt == 8 || !errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("transport: tcp %v: %w", addr, err)
		}
	}
	// Transmit stamps on the member socket: a core that measures time
	// with its frames (Berkeley) learns when they really left.
	s.ucast.enableTx()
	local := s.ucast.localAddr()
	if m := cfg.Multicast; m != nil {
		if err := s.openMulticast(m, local); err != nil {
			s.ucast.conn.Close()
			s.ln.Close()
			return nil, err
		}
	}
	e := newEndpoint(cfg, local)
	s.e, e.fab = e, s
	s.dialer = net.Dialer{
		Control: func(_, _ string, rc syscall.RawConn) error {
			// Best effort: without it keepalive still notices an idle
			// dead peer.
			setUserTimeout(rc, 4*cfg.Stream.KeepAlive)
			return nil
		},
		KeepAliveConfig: dialKeepAlive(cfg.Stream.KeepAlive),
	}
	if !local.Addr().IsUnspecified() {
		// Dial from the member IP, so the acceptor sees which member a
		// connection comes from even when several share a host.
		s.dialer.LocalAddr = &net.TCPAddr{IP: local.Addr().AsSlice()}
	}
	e.goRun(func() { s.ucast.readLoop(&e.c, e.udpStranger, e.deliver) })
	if s.mcast != nil {
		// Our own datagrams come back when IP_MULTICAST_LOOP is on; the
		// member address is unique, so the source identifies them.
		skip := func(from netip.AddrPort) bool {
			if from == local {
				e.c.ownIgnored.Add(1)
				return true
			}
			return e.udpStranger(from)
		}
		e.goRun(func() { s.mcast.readLoop(&e.c, skip, e.deliver) })
	}
	e.goRun(s.accept)
	return e, nil
}

func tcpNetwork(a netip.Addr) string {
	if a.Is4() {
		return "tcp4"
	}
	return "tcp6"
}

// openMulticast binds the group socket and joins the group on the named
// interface, then points the member socket's multicast sends at that
// interface.
func (s *sockets) openMulticast(m *MulticastConfig, local netip.AddrPort) error {
	ifi, err := net.InterfaceByName(m.Interface)
	if err != nil {
		return fmt.Errorf("transport: multicast interface %q: %w", m.Interface, err)
	}
	// Every node on the host binds the same group:port, so allow sharing.
	// Binding the group address (not 0.0.0.0) keeps unicast to that port
	// and other groups out of this socket.
	conn, err := listenGroup(m.Group)
	if err != nil {
		return fmt.Errorf("transport: multicast bind %v: %w", m.Group, err)
	}
	group := &net.UDPAddr{IP: m.Group.Addr().AsSlice()}
	if err := ipv4.NewPacketConn(conn).JoinGroup(ifi, group); err != nil {
		conn.Close()
		return fmt.Errorf("transport: join %v on %s: %w", m.Group.Addr(), m.Interface, err)
	}
	// Namespaces have no default route: without IP_MULTICAST_IF a send
	// fails with "network is unreachable".
	out := ipv4.NewPacketConn(s.ucast.conn)
	if err := out.SetMulticastInterface(ifi); err != nil {
		conn.Close()
		return fmt.Errorf("transport: IP_MULTICAST_IF %s: %w", m.Interface, err)
	}
	if err := out.SetMulticastTTL(m.TTL); err != nil {
		conn.Close()
		return fmt.Errorf("transport: IP_MULTICAST_TTL %d: %w", m.TTL, err)
	}
	if err := out.SetMulticastLoopback(m.Loopback); err != nil {
		conn.Close()
		return fmt.Errorf("transport: IP_MULTICAST_LOOP: %w", err)
	}
	s.mcast = newUDPSocket(conn, ViaMulticast)
	s.group = m.Group
	return nil
}

func (s *sockets) send(to netip.AddrPort, b []byte, fin Finalizer, stamp bool) (TxStamp, error) {
	return s.write(ViaUDP, to, b, fin, stamp)
}

func (s *sockets) sendMulticast(b []byte, fin Finalizer, stamp bool) (TxStamp, error) {
	return s.write(ViaMulticast, s.group, b, fin, stamp)
}

func (s *sockets) write(via Via, to netip.AddrPort, b []byte, fin Finalizer, stamp bool) (TxStamp, error) {
	if stamp {
		return s.ucast.writeStamped(&s.e.c, via, to, b, fin)
	}
	return TxStamp{}, s.ucast.writeTo(&s.e.c, via, to, b, fin, nil)
}

func (s *sockets) dial(ctx context.Context, to netip.AddrPort) (net.Conn, error) {
	c, err := s.dialer.DialContext(ctx, tcpNetwork(to.Addr()), to.String())
	if err != nil {
		return nil, err
	}
	// Go sets TCP_NODELAY by default; say so, since a frame held back by
	// Nagle would be a late protocol message.
	c.(*net.TCPConn).SetNoDelay(true)
	return rawsock.Wrap(c), nil // writes that wake no monitor thread
}

// dialKeepAlive is the dialing end's keepalive: a link idle for
// 2*keep is probed, and dropped after two probes a keep apart go
// unanswered, so a dead idle peer is noticed after 4*keep, as one with
// data in flight is (TCP_USER_TIMEOUT). A healthy idle link costs a probe
// and its ACK every 2*keep: half of what both ends probing every keep
// cost (they took turns, each probe restarting the other end's wait).
func dialKeepAlive(keep time.Duration) net.KeepAliveConfig {
	return net.KeepAliveConfig{Enable: true, Idle: 2 * keep, Interval: keep, Count: 2}
}

func (s *sockets) accept() {
	for {
		c, err := s.ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of descriptors or a transient failure: pause
				// rather than spin.
				t := time.NewTimer(10 * time.Millisecond)
				select {
				case <-s.e.ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
			continue
		}
		// The accepting end only reads: a dead dialer costs it nothing
		// but a slot until IdleTimeout (or a newer connection of the
		// member), so it does not probe (Go's accept turns keepalive on).
		c.SetKeepAlive(false)
		ap := c.RemoteAddr().(*net.TCPAddr).AddrPort()
		// Reads that wake no monitor thread (internal/rawsock).
		s.e.serveInbound(rawsock.Wrap(c), netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
	}
}

func (s *sockets) shut() error {
	err := s.ucast.conn.Close()
	if s.mcast != nil {
		err = errors.Join(err, s.mcast.conn.Close())
	}
	return errors.Join(err, s.ln.Close())
}
