package transport

import (
	"context"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synclab/synclab/pkg/core"
)

// fabric is what differs between real sockets and the in-memory network:
// how datagrams leave, how a stream link connects, and how the sockets
// that feed the endpoint are shut. Everything else (the Packets channel,
// stream framing, link queues, backoff, counters, Close) is shared, so
// both implementations behave alike by construction.
type fabric interface {
	// send and sendMulticast ask the kernel for the datagram's transmit
	// stamp only when stamp is set: a stamp costs an error-queue read
	// after the send, and a wake-up of the socket's reader.
	send(to netip.AddrPort, b []byte, fin Finalizer, stamp bool) (TxStamp, error)
	sendMulticast(b []byte, fin Finalizer, stamp bool) (TxStamp, error)
	dial(ctx context.Context, to netip.AddrPort) (net.Conn, error)
	// shut closes the sockets so that their readers and the accept loop
	// return; it is called once, by Close.
	shut() error
}

// endpoint implements Endpoint on top of a fabric.
type endpoint struct {
	cfg     Config
	local   netip.AddrPort
	fab     fabric
	packets chan Packet
	hints   chan Hint
	ctx     context.Context // cancelled by Close: aborts dials, backoffs, deliveries
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	c       counters
	once    sync.Once

	slots    map[netip.Addr]int      // members per IP allowed to connect; nil: anyone
	senders  map[netip.AddrPort]bool // members' addresses, whose datagrams are read; nil: anyone's
	buffered atomic.Int64            // bytes held by partly read inbound frames

	mu      sync.Mutex
	closed  bool
	links   map[netip.AddrPort]*link
	inbound map[net.Conn]struct{}
	byIP    map[netip.Addr][]*inConn      // inbound connections per remote IP, oldest first
	orders  map[netip.AddrPort]*peerOrder // per sender (inboundKey): which connection may deliver
	gen     uint64                        // admitted inbound connections so far: each one's gen
	// lastSuperseded is the sender of the last superseded connection.
	lastSuperseded netip.AddrPort
	// superseded is, per sender (inboundKey), its superseded connections.
	superseded map[netip.AddrPort]*supersededRec
	// exactFrom: an inbound connection's From is its dialer's member
	// address (the in-memory fabric), not an ephemeral port.
	exactFrom bool
	rnd       *rand.Rand // seeds each link's jitter source

	now func() time.Time // ages queued stream frames (Config.now)
}

func newEndpoint(cfg Config, local netip.AddrPort) *endpoint {
	seed := cfg.Seed
	if seed == 0 {
		// Seeding only; every draw afterwards comes from the endpoint's
		// own source.
		seed = rand.Uint64()
	}
	ctx, cancel := context.WithCancel(context.Background())
	now := cfg.now
	if now == nil {
		now = time.Now
	}
	return &endpoint{
		now:     now,
		cfg:     cfg,
		local:   local,
		packets: make(chan Packet, PacketBuffer),
		hints:   make(chan Hint, HintBuffer),
		ctx:     ctx,
		cancel:  cancel,
		links:   make(map[netip.AddrPort]*link),
		inbound: make(map[net.Conn]struct{}),
		byIP:    make(map[netip.Addr][]*inConn),
		orders:  make(map[netip.AddrPort]*peerOrder),
		slots:   peerSlots(cfg.Peers),
		senders: peerAddrs(cfg.Peers),
		rnd:     rand.New(rand.NewPCG(seed, seed^0x5eed_1ab5_7a9e_0001)),
	}
}

// peerAddrs is the set of the members' addresses; nil: no filter.
func peerAddrs(peers []netip.AddrPort) map[netip.AddrPort]bool {
	if peers == nil {
		return nil
	}
	m := make(map[netip.AddrPort]bool, len(peers))
	for _, p := range peers {
		m[netip.AddrPortFrom(p.Addr().Unmap(), p.Port())] = true
	}
	return m
}

// udpStranger says (and counts) whether a datagram from `from` comes from
// no member's address: members send from the socket they listen on, so
// anything else is dropped before it is copied or delivered
// (Stats.UDPStrangers). A datagram from a member's address may still be
// forged (spoofed); the node checks that its sender is that member.
func (e *endpoint) udpStranger(from netip.AddrPort) bool {
	if e.senders == nil || e.senders[from] {
		return false
	}
	e.c.udpStrangers.Add(1)
	return true
}

// deliver hands p to the consumer, waiting while the channel is full,
// until the endpoint closes (false).
func (e *endpoint) deliver(p Packet) bool {
	select {
	case e.packets <- p:
		return true
	case <-e.ctx.Done():
		return false
	}
}

// goRun starts fn as one of the endpoint's goroutines, unless closing.
func (e *endpoint) goRun(fn func()) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		fn()
	}()
	return true
}

func (e *endpoint) Packets() <-chan Packet { return e.packets }
func (e *endpoint) Hints() <-chan Hint     { return e.hints }

// hint hands a hint about peer over without waiting (see Endpoint.Hints).
func (e *endpoint) hint(peer netip.AddrPort, cause core.HintCause) {
	if e.ctx.Err() != nil {
		return // closing: our own close, not the peer's
	}
	e.c.hints[cause].Add(1)
	select {
	case e.hints <- Hint{Peer: peer, Cause: cause, Time: time.Now()}:
	default:
		e.c.hintsDropped.Add(1)
	}
}
func (e *endpoint) LocalAddr() netip.AddrPort { return e.local }

func (e *endpoint) Send(to netip.AddrPort, b []byte, fin Finalizer) error {
	_, err := e.sendUnicast(to, b, fin, false)
	return err
}

func (e *endpoint) SendStamped(to netip.AddrPort, b []byte, fin Finalizer) (TxStamp, error) {
	return e.sendUnicast(to, b, fin, true)
}

func (e *endpoint) sendUnicast(to netip.AddrPort, b []byte, fin Finalizer, stamp bool) (TxStamp, error) {
	if e.ctx.Err() != nil {
		return TxStamp{}, ErrClosed
	}
	return e.fab.send(to, b, fin, stamp)
}

func (e *endpoint) SendMulticast(b []byte, fin Finalizer) error {
	_, err := e.sendGroup(b, fin, false)
	return err
}

func (e *endpoint) SendMulticastStamped(b []byte, fin Finalizer) (TxStamp, error) {
	return e.sendGroup(b, fin, true)
}

func (e *endpoint) sendGroup(b []byte, fin Finalizer, stamp bool) (TxStamp, error) {
	if e.cfg.Multicast == nil {
		return TxStamp{}, ErrNoMulticast
	}
	if e.ctx.Err() != nil {
		return TxStamp{}, ErrClosed
	}
	return e.fab.sendMulticast(b, fin, stamp)
}

func (e *endpoint) SendStream(to netip.AddrPort, b []byte, fin Finalizer) error {
	to = netip.AddrPortFrom(to.Addr().Unmap(), to.Port())
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return ErrClosed
	}
	l := e.links[to]
	if l == nil {
		l = newLink(e, to, rand.New(rand.NewPCG(e.rnd.Uint64(), e.rnd.Uint64())))
		e.links[to] = l
		e.wg.Add(1)
		go l.run()
	}
	e.mu.Unlock()
	return l.enqueue(b, fin)
}

func (e *endpoint) Stats() Stats {
	st := e.c.snapshot()
	st.StreamBuffered = e.buffered.Load()
	e.mu.Lock()
	st.LastSuperseded = e.lastSuperseded
	for _, l := range e.links {
		st.Links = append(st.Links, l.stats())
	}
	e.mu.Unlock()
	st.Superseding = e.Superseding()
	sortLinks(st.Links)
	return st
}

func (e *endpoint) Superseding() []PeerSuperseded {
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.superseded) == 0 {
		return nil
	}
	out := make([]PeerSuperseded, 0, len(e.superseded))
	for k, r := range e.superseded {
		out = append(out, r.stats(k, now))
	}
	slices.SortFunc(out, func(a, b PeerSuperseded) int { return a.Peer.Compare(b.Peer) })
	return out
}

// supersededRec returns the record of sender key's superseded
// connections, made on first use. Under e.mu.
func (e *endpoint) supersededRec(key netip.AddrPort) *supersededRec {
	r := e.superseded[key]
	if r == nil {
		if e.superseded == nil {
			e.superseded = map[netip.AddrPort]*supersededRec{}
		}
		r = &supersededRec{}
		e.superseded[key] = r
	}
	return r
}

func (e *endpoint) Close() error {
	err := ErrClosed
	e.once.Do(func() {
		e.mu.Lock()
		e.closed = true
		e.cancel()
		conns := make([]net.Conn, 0, len(e.inbound))
		for c := range e.inbound {
			conns = append(conns, c)
		}
		e.mu.Unlock()
		err = e.fab.shut()
		for _, c := range conns {
			c.Close()
		}
		// Link writers notice the cancelled context and close their
		// connections themselves.
		e.wg.Wait()
		close(e.packets)
		close(e.hints)
	})
	return err
}
