package transport

import (
	"net/netip"

	"github.com/synclab/synclab/pkg/core"
	"sort"
	"sync/atomic"
	"time"
)

// Stats is a snapshot of an endpoint's counters. Counters only grow;
// Links is the current state of every outbound link.
type Stats struct {
	UDP       Traffic `json:"udp"`
	Multicast Traffic `json:"multicast"`
	Stream    Traffic `json:"stream"`

	// OwnMulticastIgnored counts our own multicast datagrams looped back
	// (IP_MULTICAST_LOOP) and dropped by the multicast reader.
	OwnMulticastIgnored uint64 `json:"own_multicast_ignored"`
	// KernelStamps and UserStamps count received datagrams by who stamped
	// them. Stream frames are always user-stamped and not counted here.
	KernelStamps uint64 `json:"kernel_stamps"`
	UserStamps   uint64 `json:"user_stamps"`
	// TxKernelStamps counts the sends that asked for the kernel's
	// transmit stamp (SendStamped) and found it right after the send. One
	// not found is said in its TxStamp (Missed), and counted once, by
	// the daemon that would have used it (errors: tx_stamp_missed): it
	// is left with the clock reading taken before the send, tens of
	// microseconds early under load (an NTP client's T1 early by L biases
	// its offset by +L/2).
	TxKernelStamps uint64 `json:"tx_kernel_stamps,omitempty"`
	// Hints counts the hints handed over (Endpoint.Hints) by cause;
	// HintsDropped those dropped because the consumer had not taken the
	// previous ones (HintBuffer).
	Hints        map[string]uint64 `json:"hints,omitempty"`
	HintsDropped uint64            `json:"hints_dropped,omitempty"`
	// SendErrors counts datagrams and frames that failed to be written
	// (including finalizer drops and oversized messages).
	SendErrors uint64 `json:"send_errors"`
	// QueueDrops counts frames refused with ErrQueueFull.
	QueueDrops uint64 `json:"queue_drops"`
	// StaleDrops counts queued frames dropped after StreamConfig.MaxAge.
	StaleDrops uint64 `json:"stale_drops"`
	// Reconnects counts successful dials of a link after its first.
	Reconnects uint64 `json:"reconnects"`
	// DialErrors counts failed connection attempts.
	DialErrors uint64 `json:"dial_errors"`
	// BadFrames counts inbound connections closed for an oversized
	// length prefix.
	BadFrames uint64 `json:"bad_frames"`
	// UDPStrangers counts datagrams on the member and group sockets from
	// addresses that are no member's (Config.Peers), dropped unread.
	UDPStrangers uint64 `json:"udp_strangers"`
	// InboundStrangers counts inbound connections from IPs that are no
	// member's (Config.Peers), reset before anything was read.
	InboundStrangers uint64 `json:"inbound_strangers"`
	// InboundEvicted counts a member IP's oldest connections closed for
	// a newer one past StreamConfig.PerPeerConns.
	InboundEvicted uint64 `json:"inbound_evicted"`
	// InboundSuperseded counts inbound connections reset because a newer
	// connection from the same member delivered a frame (one
	// Config.Supersedes passed, when set): the member redialled while the
	// older one was still open to this end (its link's write failed or
	// timed out, its host restarted or was cut off and the old connection
	// never closed here), or someone opened a connection from its IP. An
	// idle link's close is graceful and read first: it supersedes
	// nothing. SupersededFrames counts the frames of such connections
	// that began to reach this node and were dropped, not delivered after
	// the newer connection's: the one read, the one being read, those in
	// the reader's buffer and (Linux) in the kernel's receive queue; not
	// those still in the network or the sender's kernel (doc.go,
	// Streams). Streams stay ordered: a frame is never delivered after
	// one its sender sent later.
	InboundSuperseded uint64 `json:"inbound_superseded"`
	SupersededFrames  uint64 `json:"superseded_frames"`
	// NotSuperseding counts frames of a connection newer than its
	// sender's that Config.Supersedes refused: delivered, superseding
	// nothing (another cluster's member or a forger on a member's IP).
	NotSuperseding uint64 `json:"not_superseding,omitempty"`
	// LastSuperseded is where the last superseded connection came from
	// (the member's IP and the connection's port).
	LastSuperseded netip.AddrPort `json:"last_superseded,omitzero"`
	// Superseding is, per member, its superseded connections (those
	// of members ever superseded here), sorted by Peer.
	Superseding []PeerSuperseded `json:"superseding,omitempty"`
	// StreamTimeouts counts inbound connections closed because no frame
	// began within IdleTimeout or one did not end within FrameTimeout.
	StreamTimeouts uint64 `json:"stream_timeouts"`
	// StreamOverBudget counts inbound connections closed because their
	// frame would have taken the partly read frames past
	// MaxStreamBuffered.
	StreamOverBudget uint64 `json:"stream_over_budget"`
	// StreamBuffered is the bytes partly read inbound frames hold now.
	StreamBuffered int64 `json:"stream_buffered"`
	// Refused counts ICMP port unreachable errors seen by a connected
	// socket (DialUDP): the peer has nothing listening there.
	Refused uint64 `json:"refused,omitempty"`
	// Truncated counts datagrams longer than a batch reader's slot
	// (ServeUDP), dropped.
	Truncated uint64 `json:"truncated,omitempty"`
	// RxOverflow counts datagrams lost because the receiver was full
	// (the in-memory network's analogue of a full socket buffer; always 0
	// for real sockets, whose kernel drops are not visible here).
	RxOverflow uint64 `json:"rx_overflow"`
	// InboundRefused counts inbound connections closed because MaxInbound
	// were already open.
	InboundRefused uint64 `json:"inbound_refused"`
	// Inbound is the number of open inbound stream connections.
	Inbound int `json:"inbound"`
	// Links lists the outbound links, sorted by peer.
	Links []LinkStats `json:"links,omitempty"`
}

// Traffic counts one way of sending and receiving.
type Traffic struct {
	PacketsIn  uint64 `json:"packets_in"`
	BytesIn    uint64 `json:"bytes_in"`
	PacketsOut uint64 `json:"packets_out"`
	BytesOut   uint64 `json:"bytes_out"`
}

// LinkStats is the state of one outbound stream link.
type LinkStats struct {
	Peer      netip.AddrPort `json:"peer"`
	Connected bool           `json:"connected"`
	Queued    int            `json:"queued"`
	Sent      uint64         `json:"sent"`
	LastError string         `json:"last_error,omitempty"`
}

type traffic struct {
	packetsIn, bytesIn, packetsOut, bytesOut atomic.Uint64
}

func (t *traffic) in(n int)  { t.packetsIn.Add(1); t.bytesIn.Add(uint64(n)) }
func (t *traffic) out(n int) { t.packetsOut.Add(1); t.bytesOut.Add(uint64(n)) }
func (t *traffic) snapshot() Traffic {
	return Traffic{t.packetsIn.Load(), t.bytesIn.Load(), t.packetsOut.Load(), t.bytesOut.Load()}
}

// counters are updated lock-free from every goroutine of an endpoint.
type counters struct {
	via                                                [3]traffic // indexed by Via
	ownIgnored, kernel, user, sendErrs, queueDrops     atomic.Uint64
	staleDrops, reconnects, dialErrs, badFrames, rxOvf atomic.Uint64
	inboundRefused, inboundStrangers, inboundEvicted   atomic.Uint64
	inboundSuperseded, supersededFrames                atomic.Uint64
	notSuperseding                                     atomic.Uint64
	udpStrangers                                       atomic.Uint64
	streamTimeouts, overBudget                         atomic.Uint64
	truncated, refused                                 atomic.Uint64
	txKernel                                           atomic.Uint64
	hints                                              [core.HintDialTimeout + 1]atomic.Uint64 // indexed by core.HintCause (the last one + 1)
	hintsDropped                                       atomic.Uint64
	inbound                                            atomic.Int64
}

func (c *counters) stamp(kernel bool) {
	if kernel {
		c.kernel.Add(1)
	} else {
		c.user.Add(1)
	}
}

func (c *counters) snapshot() Stats {
	return Stats{
		UDP:                 c.via[ViaUDP].snapshot(),
		Multicast:           c.via[ViaMulticast].snapshot(),
		Stream:              c.via[ViaStream].snapshot(),
		OwnMulticastIgnored: c.ownIgnored.Load(),
		KernelStamps:        c.kernel.Load(),
		UserStamps:          c.user.Load(),
		SendErrors:          c.sendErrs.Load(),
		QueueDrops:          c.queueDrops.Load(),
		StaleDrops:          c.staleDrops.Load(),
		Reconnects:          c.reconnects.Load(),
		DialErrors:          c.dialErrs.Load(),
		BadFrames:           c.badFrames.Load(),
		RxOverflow:          c.rxOvf.Load(),
		InboundRefused:      c.inboundRefused.Load(),
		UDPStrangers:        c.udpStrangers.Load(),
		InboundStrangers:    c.inboundStrangers.Load(),
		InboundEvicted:      c.inboundEvicted.Load(),
		InboundSuperseded:   c.inboundSuperseded.Load(),
		SupersededFrames:    c.supersededFrames.Load(),
		NotSuperseding:      c.notSuperseding.Load(),
		StreamTimeouts:      c.streamTimeouts.Load(),
		StreamOverBudget:    c.overBudget.Load(),
		Truncated:           c.truncated.Load(),
		Refused:             c.refused.Load(),
		TxKernelStamps:      c.txKernel.Load(),
		Inbound:             int(c.inbound.Load()),
		Hints:               c.hintCounts(),
		HintsDropped:        c.hintsDropped.Load(),
	}
}

func (c *counters) hintCounts() map[string]uint64 {
	var m map[string]uint64
	for _, cause := range core.HintCauses {
		if n := c.hints[cause].Load(); n > 0 {
			if m == nil {
				m = map[string]uint64{}
			}
			m[cause.String()] = n
		}
	}
	return m
}

func sortLinks(ls []LinkStats) {
	sort.Slice(ls, func(i, j int) bool { return ls[i].Peer.Compare(ls[j].Peer) < 0 })
}

// SupersedeWindow and SupersedeThrash tell a member's connections being
// superseded now and then from a steady stream of them: more than
// SupersedeThrash within SupersedeWindow is thrashing
// (PeerSuperseded.Thrashing). A member that restarts, or whose host
// was cut off, supersedes at most its one connection left open here; one
// whose write times out (this node stalled, or the network) supersedes
// one per WriteTimeout (1 s) of stall at most, so thrashing takes ten
// seconds of such stalls in a minute. Another process dialling from the
// member's IP (a second daemon of the member on its host; without
// Config.Supersedes, or with frames it passes, also a member this node
// does not list on a shared host, another cluster's member on this port,
// a forger) supersedes at every frame of either: tens to hundreds a
// minute.
const (
	SupersedeWindow = time.Minute
	SupersedeThrash = 10
)

// PeerSuperseded is one member's superseded connections: what
// Stats.InboundSuperseded and SupersededFrames count, for its IP.
type PeerSuperseded struct {
	// Peer is the member's IP (port 0), or its member address where the
	// dialer's address is its own (the in-memory fabric).
	Peer        netip.AddrPort `json:"peer"`
	Connections uint64         `json:"connections"`
	Frames      uint64         `json:"frames"`
	// Last is when the last one was superseded (the endpoint's clock).
	Last time.Time `json:"last"`
	// Recent counts those within SupersedeWindow before the snapshot,
	// up to SupersedeThrash+1.
	Recent int `json:"recent"`
	// Thrashing: Recent is above SupersedeThrash. It clears once a
	// window passes with at most SupersedeThrash.
	Thrashing bool `json:"thrashing,omitempty"`
}

// supersededRec is what an endpoint keeps of one sender's superseded
// connections: totals, and the times of the last SupersedeThrash+1.
type supersededRec struct {
	conns, frames uint64
	times         [SupersedeThrash + 1]time.Time // a ring, conns%len the next slot
}

func (r *supersededRec) note(now time.Time) {
	r.times[r.conns%uint64(len(r.times))] = now
	r.conns++
}

func (r *supersededRec) stats(peer netip.AddrPort, now time.Time) PeerSuperseded {
	p := PeerSuperseded{Peer: peer, Connections: r.conns, Frames: r.frames}
	if r.conns > 0 {
		p.Last = r.times[(r.conns-1)%uint64(len(r.times))]
	}
	for i, t := range r.times {
		if uint64(i) < r.conns && now.Sub(t) < SupersedeWindow {
			p.Recent++
		}
	}
	p.Thrashing = p.Recent > SupersedeThrash
	return p
}
