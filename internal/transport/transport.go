package transport

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/synclab/synclab/pkg/core"
)

// Via says how a Packet arrived.
type Via uint8

// Ways a packet arrives. Append only: the values appear in status output.
const (
	ViaUDP       Via = iota // a unicast datagram on the member (or plain) UDP socket
	ViaMulticast            // a datagram to the configured multicast group
	ViaStream               // one length-prefixed frame from an inbound TCP connection
)

func (v Via) String() string {
	switch v {
	case ViaUDP:
		return "udp"
	case ViaMulticast:
		return "multicast"
	case ViaStream:
		return "stream"
	}
	return fmt.Sprintf("Via(%d)", uint8(v))
}

// Packet is one received datagram or stream frame.
type Packet struct {
	// From is the source address. For stream frames it is the remote
	// address of the inbound TCP connection: the peer's member IP (outbound
	// links bind to it) with an ephemeral port.
	From netip.AddrPort
	// Data is the payload, owned by the receiver.
	Data []byte
	// Time is the receive time on CLOCK_REALTIME: the kernel's stamp when
	// Kernel is true, else time.Now() right after the read returned.
	Time time.Time
	// Kernel reports whether Time is the kernel's receive stamp;
	// Unstamped, for a datagram whose Time is not, says why (for the
	// operator: a socket that refused SO_TIMESTAMPNS, a datagram the
	// kernel attached no stamp to); stream frames leave it empty (they
	// are never kernel-stamped: see the package doc).
	Kernel    bool
	Unstamped string
	// Via says which socket the packet came from.
	Via Via
}

// Hint is a sign that a peer's port closed: the outbound TCP link to it
// was closed or reset by the other end, or a connection to it was refused.
// It is a hint, never evidence (see core.Hint): anyone on the path can
// forge a reset.
type Hint struct {
	// Peer is the peer's member address (the link's address, as
	// SendStream was given it).
	Peer  netip.AddrPort
	Cause core.HintCause
	// Time is when the transport saw it, time.Now() (CLOCK_REALTIME).
	Time time.Time
}

// Finalizer is called immediately before the bytes are written, so that a
// transmit timestamp patched into b is as late as possible. It may append an
// authentication trailer and returns the bytes to write. A nil Finalizer
// writes b as is. It runs on the writing goroutine right before the
// syscall: in the caller's goroutine for datagrams, in the link's writer
// goroutine for stream frames. Returning nil drops the message (counted as
// a send error).
type Finalizer func(b []byte) []byte

// Endpoint is one node's network presence: a UDP socket at its member
// address, an optional multicast group, a TCP listener on the same address
// for inbound stream frames, and outbound TCP links to peers.
//
// All methods are safe for concurrent use.
type Endpoint interface {
	// Packets delivers every received datagram and stream frame. It is
	// closed once Close has stopped the readers.
	Packets() <-chan Packet
	// Send writes one UDP datagram from the member socket.
	Send(to netip.AddrPort, b []byte, fin Finalizer) error
	// SendMulticast writes one datagram to the configured group from the
	// member socket, so its source is this node's member address. It
	// returns ErrNoMulticast when no group is configured.
	SendMulticast(b []byte, fin Finalizer) error
	// SendStamped and SendMulticastStamped are Send and SendMulticast,
	// and then when the datagram left: the kernel's transmit stamp where
	// the socket has them (TxStamp.Kernel), else nothing (the caller keeps
	// the time it read in the Finalizer).
	SendStamped(to netip.AddrPort, b []byte, fin Finalizer) (TxStamp, error)
	SendMulticastStamped(b []byte, fin Finalizer) (TxStamp, error)
	// SendStream queues a frame on the outbound TCP link to the peer's
	// member address `to`, creating the link on first use. It never
	// blocks: when the link's bounded queue is full the frame is dropped
	// and ErrQueueFull returned. b is copied; fin runs on the link's
	// writer just before the frame is written.
	SendStream(to netip.AddrPort, b []byte, fin Finalizer) error
	// Hints delivers a Hint whenever an outbound link to a peer is closed
	// or reset by the peer, or a connection to it is refused or times
	// out. It never
	// blocks the transport: a hint the consumer has not taken when
	// HintBuffer are waiting is dropped and counted (Stats.HintsDropped).
	// It is closed once Close has stopped the link writers.
	Hints() <-chan Hint
	// LocalAddr is the member address actually bound (the port is filled
	// in when Config.Listen asked for port 0).
	LocalAddr() netip.AddrPort
	// Stats returns a snapshot of the counters.
	Stats() Stats
	// Superseding is Stats().Superseding, without the rest: cheap enough
	// to poll.
	Superseding() []PeerSuperseded
	// Close stops every goroutine and closes every socket; it returns once
	// they are gone. Later sends return ErrClosed.
	Close() error
}

// Errors returned by the transport. Test with errors.Is.
var (
	// ErrClosed: the endpoint or socket has been closed.
	ErrClosed = errors.New("transport: closed")
	// ErrNoMulticast: SendMulticast without a configured group.
	ErrNoMulticast = errors.New("transport: no multicast group configured")
	// ErrQueueFull: the outbound link's queue is full; the frame was dropped.
	ErrQueueFull = errors.New("transport: stream queue full, frame dropped")
	// ErrFrameTooLarge: a frame exceeds MaxStreamFrame (or a datagram
	// exceeds MaxDatagram).
	ErrFrameTooLarge = errors.New("transport: frame too large")
	// ErrDropped: the Finalizer returned nil, so nothing was written.
	ErrDropped = errors.New("transport: finalizer dropped the message")
	// ErrAddrInUse: MemNetwork.Open on an address another endpoint holds.
	ErrAddrInUse = errors.New("transport: address already in use")
)

const (
	// MaxDatagram is the largest UDP payload read or written.
	MaxDatagram = 65507
	// MaxStreamFrame is the hard cap on a stream frame's length prefix: a
	// synclab frame, trailer included, is at most 65535 bytes. A larger
	// prefix means a broken or hostile peer: the connection is closed and
	// the bogus size is never allocated.
	MaxStreamFrame = 1 << 16
	// PacketBuffer is the capacity of the Packets channel. A reader that
	// finds it full waits (the kernel's socket buffer absorbs bursts
	// meanwhile) rather than dropping.
	PacketBuffer = 1024
	// MaxInbound bounds the open inbound stream connections of an
	// endpoint that does not know its peers (Config.Peers nil); the ones
	// beyond are closed at once (Stats.InboundRefused). With Peers, each
	// member's IP holds at most StreamConfig.PerPeerConns per member on it.
	MaxInbound = 256
	// HintBuffer is the capacity of the Hints channel.
	HintBuffer = 64
)

// Config configures an Endpoint.
type Config struct {
	// Listen is the member address: the UDP socket and the TCP listener
	// both bind it. Port 0 picks a free port for both. Required.
	Listen netip.AddrPort
	// Multicast, if set, joins a group. nil: no multicast.
	Multicast *MulticastConfig
	// Stream configures the TCP links. Zero fields take defaults.
	Stream StreamConfig
	// Peers are the other members' addresses. Datagrams from any other
	// address are dropped unread (members send from their member socket);
	// TCP connections from any other IP are closed before anything is read,
	// and the members always find a slot (see inbound.go). nil: any host
	// may send and connect, MaxInbound connections at most (tests, tools).
	Peers []netip.AddrPort
	// Seed seeds the backoff jitter (there is no package-global rand).
	// 0 picks a random seed.
	Seed uint64
	// Supersedes, if set, says whether a stream frame b from `from` is
	// one its consumer would accept as its sender's (a daemon: the
	// frame decodes, is of this cluster, names the member at that IP as
	// its sender and carries its MAC). A connection newer than the one
	// its sender last delivered on supersedes the older ones only with a
	// frame Supersedes passes; a frame it refuses is delivered all the
	// same, superseding nothing (the consumer refuses and counts it). So
	// a connection from a member's IP whose frames all fail (another
	// cluster's member, a forger without the key) never costs the
	// member its connection. It runs on the connection's reader, only
	// for such frames (not once the connection has superseded), and must
	// be safe for concurrent use. nil: every frame supersedes.
	Supersedes func(from netip.AddrPort, b []byte) bool

	// now reads the clock that ages queued stream frames (MaxAge); nil:
	// time.Now. A test seam: tests age a queue without waiting.
	now func() time.Time
}

// MulticastConfig names the group an Endpoint joins and how it sends to it.
// IPv4 only.
type MulticastConfig struct {
	// Group is the IPv4 multicast group address and port, e.g.
	// 239.255.77.1:7700. Required.
	Group netip.AddrPort
	// Interface names the interface the group is joined on and sent from
	// ("lo", "veth0"). Required: lab namespaces have no default route, so
	// the interface is always set on the sockets explicitly.
	Interface string
	// TTL is the IP TTL of sent datagrams, 0-255, taken literally: 1
	// (the usual choice, one LAN hop) or 0 (never leaves the host; enough
	// for several nodes on lo).
	TTL int
	// Loopback sets IP_MULTICAST_LOOP: needed when several nodes share a
	// host. The endpoint ignores (and counts) its own looped datagrams.
	Loopback bool
}

// StreamConfig configures the TCP links. Zero fields take the defaults in
// brackets.
type StreamConfig struct {
	// QueueLen bounds each link's queue in frames [256].
	QueueLen int
	// MaxAge: frames queued longer are dropped unsent and counted [5s].
	MaxAge time.Duration
	// DialTimeout bounds one connection attempt [1.5s]: past the kernel's
	// first SYN retransmit (at 1 s), so that one lost SYN or SYN-ACK
	// costs a late connection, not a timed-out dial (a dial_timeout hint):
	// measured over 4,000 dials across a lab bridge at 5% loss on both
	// hosts, 17.2% timed out at 1 s, 1.8% at 1.5 s.
	DialTimeout time.Duration
	// BackoffMin and BackoffMax bound the wait between failed attempts,
	// doubled per failure, with jitter [50ms, 2s].
	BackoffMin, BackoffMax time.Duration
	// WriteTimeout: a peer that stops reading for this long is
	// disconnected, so a slow peer never blocks anyone [1s].
	WriteTimeout time.Duration
	// KeepAlive paces the dialing end's TCP keepalive: a link idle for
	// 2*KeepAlive is probed, and dropped after two unanswered probes
	// KeepAlive apart; so a dead peer is noticed after about 4*KeepAlive,
	// whether the link is idle (keepalive probes) or has data in flight
	// (TCP_USER_TIMEOUT) [5s]. The accepting end, which only reads, does
	// not probe: it drops a connection that begins no frame within
	// IdleTimeout.
	KeepAlive time.Duration
	// IdleTimeout: an inbound connection that begins no frame for this
	// long is closed; an outbound link idle for half of it closes itself
	// first (and dials again for its next frame) [2m].
	IdleTimeout time.Duration
	// FrameTimeout: once a frame has begun, all of it must arrive within
	// this, or the connection is closed [5s].
	FrameTimeout time.Duration
	// PerPeerConns is how many inbound connections one member may hold; a
	// newer one closes its oldest [4]. A member needs one; the others
	// cover reconnections the kernel has not yet seen die.
	PerPeerConns int
}

// Defaults for StreamConfig.
const (
	DefaultQueueLen     = 256
	DefaultMaxAge       = 5 * time.Second
	DefaultDialTimeout  = 1500 * time.Millisecond
	DefaultBackoffMin   = 50 * time.Millisecond
	DefaultBackoffMax   = 2 * time.Second
	DefaultWriteTimeout = time.Second
	DefaultKeepAlive    = 5 * time.Second
	DefaultIdleTimeout  = 2 * time.Minute
	DefaultFrameTimeout = 5 * time.Second
	DefaultPerPeerConns = 4
)

// withDefaults fills zero fields and rejects contradictions.
func (c StreamConfig) withDefaults() (StreamConfig, error) {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.QueueLen == 0 {
		c.QueueLen = DefaultQueueLen
	}
	def(&c.MaxAge, DefaultMaxAge)
	def(&c.DialTimeout, DefaultDialTimeout)
	def(&c.BackoffMin, DefaultBackoffMin)
	def(&c.BackoffMax, DefaultBackoffMax)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	def(&c.KeepAlive, DefaultKeepAlive)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	def(&c.FrameTimeout, DefaultFrameTimeout)
	if c.PerPeerConns == 0 {
		c.PerPeerConns = DefaultPerPeerConns
	}
	switch {
	case c.QueueLen < 0:
		return c, fmt.Errorf("transport: stream QueueLen %d < 0", c.QueueLen)
	case c.PerPeerConns < 0:
		return c, fmt.Errorf("transport: stream PerPeerConns %d < 0", c.PerPeerConns)
	case c.MaxAge < 0 || c.DialTimeout < 0 || c.BackoffMin < 0 || c.WriteTimeout < 0 || c.KeepAlive < 0 || c.IdleTimeout < 0 || c.FrameTimeout < 0:
		return c, errors.New("transport: negative stream duration")
	case c.BackoffMax < c.BackoffMin:
		return c, fmt.Errorf("transport: stream BackoffMax %v < BackoffMin %v", c.BackoffMax, c.BackoffMin)
	}
	return c, nil
}

func (c *Config) validate() error {
	if !c.Listen.IsValid() {
		return errors.New("transport: Config.Listen is required")
	}
	c.Listen = netip.AddrPortFrom(c.Listen.Addr().Unmap(), c.Listen.Port())
	var err error
	if c.Stream, err = c.Stream.withDefaults(); err != nil {
		return err
	}
	if m := c.Multicast; m != nil {
		if !m.Group.Addr().Is4() || !m.Group.Addr().IsMulticast() || m.Group.Port() == 0 {
			return fmt.Errorf("transport: multicast group %v: want an IPv4 multicast address with a port", m.Group)
		}
		if m.Interface == "" {
			return errors.New("transport: multicast needs an Interface (e.g. lo)")
		}
		if m.TTL < 0 || m.TTL > 255 {
			return fmt.Errorf("transport: multicast TTL %d out of range 0-255", m.TTL)
		}
		if a := c.Listen.Addr(); !a.Is4() || a.IsUnspecified() {
			// The member address is also how our own looped datagrams
			// are recognised, so it must be one specific address.
			return fmt.Errorf("transport: multicast needs a specific IPv4 member address, have %v", c.Listen)
		}
	}
	return nil
}

// noStampAttached is why a datagram of a socket with kernel receive
// stamps on has none (Packet.Unstamped).
const noStampAttached = "the kernel attached no receive stamp to the datagram"
