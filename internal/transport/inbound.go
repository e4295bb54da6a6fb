package transport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/synclab/synclab/internal/rawsock"
)

// Inbound TCP is where a stranger on the LAN can cost a daemon memory and a
// member its connection, so everything about it is bounded:
//
//   - Only members connect. With Config.Peers set, a connection from an IP
//     that is no member's is closed (reset) as soon as it is accepted,
//     before anything is read (Stats.InboundStrangers).
//   - Members always get a slot. Each member IP may hold PerPeerConns
//     connections (times the members that share it); a new one beyond
//     that closes the IP's oldest (Stats.InboundEvicted), so a member that
//     reconnects while the kernel still holds its dead connection, or
//     while someone else on its host holds connections from its IP, is
//     never refused.
//   - A member's older connections deliver nothing once a newer one has
//     delivered a frame: they are reset (Stats.InboundSuperseded), so a
//     member's frames are never delivered out of order across its
//     reconnects (peerOrder).
//   - Every read has a deadline: IdleTimeout for the first byte of a frame,
//     FrameTimeout for the rest of it once begun (Stats.StreamTimeouts).
//   - A length prefix allocates nothing by itself: above MaxStreamFrame it
//     closes the connection (Stats.BadFrames); below it, the frame's buffer
//     grows (doubling) only as its bytes arrive, and all partly read frames
//     together hold at most MaxStreamBuffered bytes: a connection that
//     would need more is closed (Stats.StreamOverBudget).

// MaxStreamBuffered bounds the bytes held by partly read inbound frames,
// all connections together: 64 full-size frames.
const MaxStreamBuffered = 64 * MaxStreamFrame

// firstChunk is the most a frame's buffer starts with, whatever its prefix
// says.
const firstChunk = 4 << 10

// inConn is one accepted connection.
type inConn struct {
	conn  net.Conn
	from  netip.AddrPort
	at    time.Time // accepted
	gen   uint64    // admission order: a later connection has a higher gen
	key   netip.AddrPort
	order *peerOrder // nil: its sender is not told apart (an IP members share)
	gone  bool       // under endpoint.mu: superseded (picked by supersede)

	dl    sync.Mutex // orders the reader's deadlines against wake
	woken bool       // under dl: superseded; its reader's deadline is past
}

// setDeadline sets the read deadline at t unless the connection was
// superseded: then its deadline stays past, so that its reader, woken,
// counts what it held (dropSuperseded) instead of waiting for more.
func (ic *inConn) setDeadline(t time.Time) {
	ic.dl.Lock()
	if !ic.woken {
		ic.conn.SetReadDeadline(t)
	}
	ic.dl.Unlock()
}

// wake makes the reader of a superseded connection return from its read
// at once.
func (ic *inConn) wake() {
	ic.dl.Lock()
	ic.woken = true
	ic.conn.SetReadDeadline(time.Unix(1, 0))
	ic.dl.Unlock()
}

func (ic *inConn) isWoken() bool {
	ic.dl.Lock()
	defer ic.dl.Unlock()
	return ic.woken
}

// peerOrder keeps one sender's frames in the order it sent them across its
// connections. A link writes on one connection at a time and dials the next
// only after giving up the last (reset), so every frame of an older
// connection was sent before any of a newer one. Each connection has its
// own reader; they deliver under mu, and once a connection has delivered a
// frame nothing more is delivered from the sender's older ones: their
// frames are dropped (Stats.SupersededFrames) and they are reset
// (Stats.InboundSuperseded). The frames lost are an older connection's
// backlog, which "at most once" allows.
type peerOrder struct {
	mu     sync.Mutex // held across a delivery
	newest uint64     // under mu: gen of the newest connection that delivered
	refs   int        // under endpoint.mu: connections registered
}

// inboundKey is who sent on a connection from `from`, as far as the
// transport can tell: the member's IP when one member has it, the address
// itself when it is the member's (the in-memory fabric). ok false: members
// share the IP and their connections cannot be told apart, so none is
// ordered against another.
func (e *endpoint) inboundKey(from netip.AddrPort) (netip.AddrPort, bool) {
	if e.exactFrom {
		return from, true
	}
	if e.slots == nil || e.slots[from.Addr()] != 1 {
		// Not known to be one member's IP: no membership (Config.Peers
		// nil: every IP would be one sender, and two members on one IP
		// reset each other's live connections at almost every frame,
		// review-order), or members share it.
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(from.Addr(), 0), true
}

// peerSlots counts how many members share each IP: their connections may
// hold that many times PerPeerConns slots. nil: no membership filter.
func peerSlots(peers []netip.AddrPort) map[netip.Addr]int {
	if peers == nil {
		return nil
	}
	m := make(map[netip.Addr]int, len(peers))
	for _, p := range peers {
		m[p.Addr().Unmap()]++
	}
	return m
}

// admit decides, before anything is read, whether an accepted connection
// from `from` may be served. It registers it (and evicts the IP's oldest
// connection if the IP is at its limit) or returns false, having counted
// why; the caller then closes conn.
func (e *endpoint) admit(conn net.Conn, from netip.AddrPort) (*inConn, bool) {
	ip := from.Addr()
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, false
	}
	limit := MaxInbound
	if e.slots != nil {
		n := e.slots[ip]
		if n == 0 {
			e.mu.Unlock()
			e.c.inboundStrangers.Add(1)
			return nil, false
		}
		limit = n * e.cfg.Stream.PerPeerConns
	}
	var evicted *inConn
	switch held := e.byIP[ip]; {
	case e.slots == nil && len(e.inbound) >= MaxInbound:
		e.mu.Unlock()
		e.c.inboundRefused.Add(1)
		return nil, false
	case len(held) >= limit:
		evicted = held[0]
		e.byIP[ip] = held[1:]
	}
	e.gen++
	ic := &inConn{conn: conn, from: from, at: time.Now(), gen: e.gen}
	if key, ok := e.inboundKey(from); ok {
		po := e.orders[key]
		if po == nil {
			po = &peerOrder{}
			e.orders[key] = po
		}
		po.refs++
		ic.key, ic.order = key, po
	}
	e.inbound[conn] = struct{}{}
	e.byIP[ip] = append(e.byIP[ip], ic)
	e.wg.Add(1)
	e.mu.Unlock()
	if evicted != nil {
		e.c.inboundEvicted.Add(1)
		// Its reader notices, unregisters it (if still registered) and
		// returns.
		reset(evicted.conn)
	}
	e.c.inbound.Add(1)
	return ic, true
}

// release unregisters a connection whose reader has returned.
func (e *endpoint) release(ic *inConn) {
	ip := ic.from.Addr()
	e.mu.Lock()
	delete(e.inbound, ic.conn)
	held := e.byIP[ip]
	for i, c := range held {
		if c == ic {
			e.byIP[ip] = append(held[:i:i], held[i+1:]...)
			break
		}
	}
	if len(e.byIP[ip]) == 0 {
		delete(e.byIP, ip)
	}
	if po := ic.order; po != nil {
		if po.refs--; po.refs == 0 && e.orders[ic.key] == po {
			delete(e.orders, ic.key)
		}
	}
	e.mu.Unlock()
	e.c.inbound.Add(-1)
}

// reset closes a connection with a RST rather than a FIN where it can:
// nothing waits in FIN_WAIT for a peer that may never answer.
func reset(conn net.Conn) {
	if tc, ok := rawsock.Unwrap(conn).(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// serveInbound admits an accepted connection and reads frames from it until
// it fails or the endpoint closes. It owns conn. It reports whether the
// connection was admitted.
func (e *endpoint) serveInbound(conn net.Conn, from netip.AddrPort) bool {
	ic, ok := e.admit(conn, from)
	if !ok {
		reset(conn)
		return false
	}
	go func() {
		defer e.wg.Done()
		defer e.release(ic)
		defer conn.Close()
		fr := frameReader{r: bufio.NewReader(conn), conn: conn, ic: ic, from: from, e: e}
		for {
			b, err := fr.next()
			now := time.Now()
			if err != nil {
				if ic.isWoken() {
					// Superseded while reading: not a timeout.
					e.dropSuperseded(ic, &fr, 0)
					return
				}
				var bad *ErrBadFrame
				switch {
				case errors.As(err, &bad):
					e.c.badFrames.Add(1)
				case errors.Is(err, errOverBudget):
					e.c.overBudget.Add(1)
				case errors.Is(err, os.ErrDeadlineExceeded):
					e.c.streamTimeouts.Add(1)
				}
				return
			}
			e.c.via[ViaStream].in(len(b))
			delivered, superseded := e.deliverInOrder(ic, Packet{From: from, Data: b, Time: now, Via: ViaStream})
			if superseded {
				e.dropSuperseded(ic, &fr, 1)
				return
			}
			if !delivered {
				return
			}
		}
	}()
	return true
}

// deliverInOrder delivers p, read from ic, unless a newer connection of
// the same sender has delivered a frame (superseded). The first frame a
// connection delivers that Config.Supersedes passes resets its sender's
// older connections.
func (e *endpoint) deliverInOrder(ic *inConn, p Packet) (delivered, superseded bool) {
	po := ic.order
	if po == nil {
		return e.deliver(p), false
	}
	po.mu.Lock()
	defer po.mu.Unlock()
	switch {
	case po.newest > ic.gen:
		return false, true
	case po.newest < ic.gen:
		if e.cfg.Supersedes != nil && !e.cfg.Supersedes(p.From, p.Data) {
			// Not the sender's, as the consumer will find: delivered for
			// it to refuse and count, superseding nothing.
			e.c.notSuperseding.Add(1)
			return e.deliver(p), false
		}
		po.newest = ic.gen
		e.supersede(ic)
	}
	return e.deliver(p), false
}

// supersede wakes the readers of the connections of ic's sender older
// than ic: each counts what it still holds, drops it and resets its
// connection (dropSuperseded). It notes them for the sender
// (Stats.Superseding).
func (e *endpoint) supersede(ic *inConn) {
	var older []*inConn
	now := e.now()
	e.mu.Lock()
	for _, c := range e.byIP[ic.from.Addr()] {
		if c.order == ic.order && c.gen < ic.gen && !c.gone {
			c.gone = true
			older = append(older, c)
			e.lastSuperseded = c.from
			e.supersededRec(ic.key).note(now)
		}
	}
	e.mu.Unlock()
	for _, c := range older {
		e.c.inboundSuperseded.Add(1)
		c.wake()
	}
}

// dropSuperseded counts the frames a superseded connection still holds
// (inHand: the one its reader read and did not deliver; the one it was
// reading, begun; those complete or begun in its reader's buffer and in
// the kernel's receive queue, read without waiting), drops them and
// resets the connection. Frames still on the way (in the network, in the
// sender's kernel) are lost uncounted: they arrive to a reset.
func (e *endpoint) dropSuperseded(ic *inConn, fr *frameReader, inHand uint64) {
	fc := fr.cut
	if n := fr.r.Buffered(); n > 0 {
		b, _ := fr.r.Peek(n)
		fc.feed(b)
	}
	drainQueued(ic.conn, fc.feed)
	n := inHand + fc.frames
	e.c.supersededFrames.Add(n)
	if ic.order != nil {
		e.mu.Lock()
		e.supersededRec(ic.key).frames += n
		e.mu.Unlock()
	}
	reset(ic.conn)
}

// drainMax bounds what dropSuperseded reads from a superseded
// connection's kernel queue to count its frames: more than a receive
// buffer holds.
const drainMax = 8 << 20

// frameCount counts the frames begun in a byte stream, which may start
// inside a frame (its state then says where) and end anywhere.
type frameCount struct {
	frames uint64
	hdr    int // header bytes seen of the frame begun (0: none)
	n      [frameHeaderLen]byte
	left   int  // body bytes still to come of the current frame
	bad    bool // a length above MaxStreamFrame: the rest is not frames
}

func (fc *frameCount) feed(b []byte) {
	for len(b) > 0 && !fc.bad {
		if fc.left > 0 {
			k := min(fc.left, len(b))
			fc.left -= k
			b = b[k:]
			continue
		}
		if fc.hdr == 0 {
			fc.frames++
		}
		fc.n[fc.hdr] = b[0]
		fc.hdr++
		b = b[1:]
		if fc.hdr == frameHeaderLen {
			fc.hdr = 0
			l := binary.BigEndian.Uint32(fc.n[:])
			if l > MaxStreamFrame {
				fc.bad = true
			}
			fc.left = int(l)
		}
	}
}

var errOverBudget = errors.New("transport: inbound stream buffers over budget")

// frameReader reads the frames of one inbound connection under deadlines
// and the endpoint's buffer budget.
type frameReader struct {
	r    *bufio.Reader
	conn net.Conn // nil: no deadlines (tests reading from a buffer)
	ic   *inConn  // nil: not an accepted connection (deadlines set directly)
	from netip.AddrPort
	e    *endpoint // nil: no budget
	// cut is where the last frame was cut off, when next failed within
	// one: that frame, begun, and how much of it was still to come.
	cut frameCount
}

func (fr *frameReader) deadline(d time.Duration) {
	if fr.conn == nil || d <= 0 {
		return
	}
	t := time.Now().Add(d)
	if fr.ic != nil {
		fr.ic.setDeadline(t)
		return
	}
	fr.conn.SetReadDeadline(t)
}

// next reads one frame. It waits up to IdleTimeout for a frame to begin
// (io.EOF if the peer closes in between), then up to FrameTimeout for all
// of it.
func (fr *frameReader) next() ([]byte, error) {
	var idle, whole time.Duration
	if fr.e != nil {
		idle, whole = fr.e.cfg.Stream.IdleTimeout, fr.e.cfg.Stream.FrameTimeout
	}
	if fr.r.Buffered() == 0 {
		fr.deadline(idle)
	}
	var hdr [frameHeaderLen]byte
	if _, err := fr.r.ReadByte(); err != nil {
		return nil, err
	}
	fr.r.UnreadByte()
	fr.deadline(whole)
	if k, err := io.ReadFull(fr.r, hdr[:]); err != nil {
		if k > 0 {
			fr.cut = frameCount{frames: 1, hdr: k, n: hdr}
		}
		return nil, unexpected(err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxStreamFrame {
		return nil, &ErrBadFrame{From: fr.from, Length: n}
	}
	// The buffer grows as the bytes come, never to more than twice what
	// arrived: a prefix that promises much and delivers little holds
	// little.
	var b []byte
	held := 0
	defer func() { fr.unreserve(held) }()
	for len(b) < int(n) {
		if len(b) == cap(b) {
			grow := min(int(n), max(firstChunk, 2*cap(b))) - cap(b)
			if !fr.reserve(grow) {
				fr.cut = frameCount{frames: 1, left: int(n) - len(b)}
				return nil, errOverBudget
			}
			held += grow
			nb := make([]byte, len(b), cap(b)+grow)
			copy(nb, b)
			b = nb
		}
		k, err := fr.r.Read(b[len(b):cap(b)])
		b = b[:len(b)+k]
		if err != nil && len(b) < int(n) {
			fr.cut = frameCount{frames: 1, left: int(n) - len(b)}
			return nil, unexpected(err)
		}
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// unexpected turns an end of stream inside a frame into ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (fr *frameReader) reserve(n int) bool {
	if fr.e == nil {
		return true
	}
	if fr.e.buffered.Add(int64(n)) > MaxStreamBuffered {
		fr.e.buffered.Add(-int64(n))
		return false
	}
	return true
}

func (fr *frameReader) unreserve(n int) {
	if fr.e != nil && n > 0 {
		fr.e.buffered.Add(-int64(n))
	}
}

// readFrame reads one frame from r without deadlines or budget (tests,
// fuzzing).
func readFrame(r *bufio.Reader, from netip.AddrPort) ([]byte, error) {
	fr := frameReader{r: r, from: from}
	return fr.next()
}

// ErrBadFrame reports an inbound length prefix above MaxStreamFrame.
type ErrBadFrame struct {
	From   netip.AddrPort
	Length uint32
}

func (e *ErrBadFrame) Error() string {
	return fmt.Sprintf("transport: stream frame of %d bytes from %v exceeds %d", e.Length, e.From, MaxStreamFrame)
}
