package transport

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// MemNetwork is an in-memory network of Endpoints for daemon-level tests
// without sockets. Endpoints opened on it share the real endpoint's queues,
// framing, link backoff and counters; only the wire differs:
//
//   - a datagram is delivered at once to the endpoint holding the
//     destination address, or silently lost (no such endpoint, address
//     down, or receiver's buffer full: counted as RxOverflow there);
//   - a multicast datagram reaches every other endpoint in the same group;
//   - a stream link is a net.Pipe: ordered, synchronous, with deadlines,
//     broken when either end closes or goes down.
//
// Receive times are time.Now() at delivery (Kernel false). A stream frame's
// From is the dialer's member address (real TCP shows an ephemeral port).
type MemNetwork struct {
	mu       sync.Mutex
	eps      map[netip.AddrPort]*memFabric
	down     map[netip.AddrPort]bool
	nextPort uint16
}

// NewMemNetwork returns an empty network.
func NewMemNetwork() *MemNetwork {
	return &MemNetwork{
		eps:      make(map[netip.AddrPort]*memFabric),
		down:     make(map[netip.AddrPort]bool),
		nextPort: 40000,
	}
}

// Open attaches an endpoint at cfg.Listen, which no open endpoint may hold
// (ErrAddrInUse). Port 0 picks a free port.
func (n *MemNetwork) Open(cfg Config) (Endpoint, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	local := cfg.Listen
	if local.Port() == 0 {
		for {
			n.nextPort++
			if n.nextPort == 0 {
				n.nextPort = 1024
			}
			local = netip.AddrPortFrom(cfg.Listen.Addr(), n.nextPort)
			if n.eps[local] == nil {
				break
			}
		}
	}
	if n.eps[local] != nil {
		return nil, fmt.Errorf("transport: mem %v: %w", local, ErrAddrInUse)
	}
	e := newEndpoint(cfg, local)
	e.exactFrom = true
	f := &memFabric{n: n, e: e, conns: make(map[*memConn]struct{})}
	e.fab = f
	n.eps[local] = f
	return e, nil
}

// SetDown takes addr off the network (down true) or puts it back. While
// down, datagrams to and from addr are silently lost, dials to and from it
// fail, and its stream connections are broken at once.
func (n *MemNetwork) SetDown(addr netip.AddrPort, down bool) {
	n.mu.Lock()
	n.down[addr] = down
	var broken []*memConn
	if f := n.eps[addr]; f != nil && down {
		for c := range f.conns {
			broken = append(broken, c)
		}
	}
	n.mu.Unlock()
	for _, c := range broken {
		c.Close()
	}
}

// memFabric is one endpoint's attachment to a MemNetwork.
type memFabric struct {
	n     *MemNetwork
	e     *endpoint
	conns map[*memConn]struct{} // guarded by n.mu; both ends of every pipe
}

// offerLocked delivers a datagram without blocking the sender: a full
// receiver loses it, like a full socket buffer. Called with n.mu held,
// which also guarantees the receiver's channel is still open (shut removes
// the endpoint under n.mu before its channel is closed).
func (f *memFabric) offerLocked(p Packet) {
	// Every sender holds n.mu and the consumer only takes, so a free slot
	// seen here is still free below. Counting before the send means the
	// counters already include a packet its receiver holds.
	if len(f.e.packets) == cap(f.e.packets) {
		f.e.c.rxOvf.Add(1)
		return
	}
	f.e.c.via[p.Via].in(len(p.Data))
	f.e.c.stamp(false)
	f.e.packets <- p
}

// The in-memory network has no kernel: its stamps are TxStamp{} and the
// caller keeps the time it read in the Finalizer.
func (f *memFabric) send(to netip.AddrPort, b []byte, fin Finalizer, _ bool) (TxStamp, error) {
	return TxStamp{}, f.sendUnicast(to, b, fin)
}

func (f *memFabric) sendMulticast(b []byte, fin Finalizer, _ bool) (TxStamp, error) {
	return TxStamp{}, f.sendGroup(b, fin)
}

func (f *memFabric) sendUnicast(to netip.AddrPort, b []byte, fin Finalizer) error {
	b, err := finalize(b, fin, MaxDatagram)
	if err != nil {
		f.e.c.sendErrs.Add(1)
		return err
	}
	f.e.c.via[ViaUDP].out(len(b))
	to = netip.AddrPortFrom(to.Addr().Unmap(), to.Port())
	n := f.n
	n.mu.Lock()
	defer n.mu.Unlock()
	dst := n.eps[to]
	if dst == nil || n.down[to] || n.down[f.e.local] || dst.e.udpStranger(f.e.local) {
		return nil
	}
	dst.offerLocked(Packet{From: f.e.local, Data: append([]byte(nil), b...), Time: time.Now(), Via: ViaUDP})
	return nil
}

func (f *memFabric) sendGroup(b []byte, fin Finalizer) error {
	b, err := finalize(b, fin, MaxDatagram)
	if err != nil {
		f.e.c.sendErrs.Add(1)
		return err
	}
	f.e.c.via[ViaMulticast].out(len(b))
	m := f.e.cfg.Multicast
	n := f.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down[f.e.local] {
		return nil
	}
	for addr, dst := range n.eps {
		dm := dst.e.cfg.Multicast
		if dm == nil || dm.Group != m.Group || n.down[addr] {
			continue
		}
		if dst == f {
			if m.Loopback {
				f.e.c.ownIgnored.Add(1)
			}
			continue
		}
		if dst.e.udpStranger(f.e.local) {
			continue
		}
		dst.offerLocked(Packet{From: f.e.local, Data: append([]byte(nil), b...), Time: time.Now(), Via: ViaMulticast})
	}
	return nil
}

func (f *memFabric) dial(ctx context.Context, to netip.AddrPort) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	refused := &net.OpError{Op: "dial", Net: "mem", Addr: net.TCPAddrFromAddrPort(to), Err: syscall.ECONNREFUSED}
	n := f.n
	n.mu.Lock()
	dst := n.eps[to]
	if dst == nil || n.down[to] || n.down[f.e.local] {
		n.mu.Unlock()
		return nil, refused
	}
	a, b := net.Pipe()
	ca := &memConn{Conn: a, f: f}
	cb := &memConn{Conn: b, f: dst}
	f.conns[ca] = struct{}{}
	dst.conns[cb] = struct{}{}
	n.mu.Unlock()
	// Outside n.mu: serveInbound takes the peer's lock and may close cb.
	// A peer closing meanwhile closes cb itself; our end then fails on
	// first use like a reset connection.
	if !dst.e.serveInbound(cb, f.e.local) {
		ca.Close()
		return nil, refused
	}
	return ca, nil
}

func (f *memFabric) shut() error {
	n := f.n
	n.mu.Lock()
	if n.eps[f.e.local] == f {
		delete(n.eps, f.e.local)
	}
	conns := make([]*memConn, 0, len(f.conns))
	for c := range f.conns {
		conns = append(conns, c)
	}
	n.mu.Unlock()
	// Closing our ends breaks the peers' ends too: their writers see the
	// peer gone and reconnect, as with a restarted process.
	for _, c := range conns {
		c.Close()
	}
	return nil
}

// memConn is one end of a pipe that forgets itself when closed.
type memConn struct {
	net.Conn
	f *memFabric
}

func (c *memConn) Close() error {
	n := c.f.n
	n.mu.Lock()
	delete(c.f.conns, c)
	n.mu.Unlock()
	return c.Conn.Close()
}
