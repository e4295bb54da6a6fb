package transport

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Stream framing. Every frame on a TCP link is its length then its bytes:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Length (big endian, <= MaxStreamFrame)        |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Frame (Length bytes) ...                      |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// A connection carries frames one way only: the dialer writes, the
// acceptor reads. Two nodes that talk both ways hold two connections, so
// there is never a tie to break between simultaneous dials.
const frameHeaderLen = 4

// ErrBadFrame reports an inbound length prefix above MaxStreamFrame.
type ErrBadFrame struct {
	From   netip.AddrPort
	Length uint32
}

func (e *ErrBadFrame) Error() string {
	return fmt.Sprintf("transport: stream frame of %d bytes from %v exceeds %d", e.Length, e.From, MaxStreamFrame)
}

// readFrame reads one frame. It checks the prefix before allocating, so a
// hostile length costs nothing.
func readFrame(r io.Reader, from netip.AddrPort) ([]byte, error) {
	var hdr [frameHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxStreamFrame {
		return nil, &ErrBadFrame{From: from, Length: n}
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}

// serveInbound reads frames from an accepted connection until it fails or
// the endpoint closes. It owns conn.
func (e *endpoint) serveInbound(conn net.Conn, from netip.AddrPort) bool {
	e.mu.Lock()
	if e.closed || len(e.inbound) >= MaxInbound {
		full := !e.closed
		e.mu.Unlock()
		conn.Close()
		if full {
			e.c.inboundRefused.Add(1)
		}
		return false
	}
	e.inbound[conn] = struct{}{}
	e.wg.Add(1)
	e.mu.Unlock()
	e.c.inbound.Add(1)
	go func() {
		defer e.wg.Done()
		defer func() {
			conn.Close()
			e.mu.Lock()
			delete(e.inbound, conn)
			e.mu.Unlock()
			e.c.inbound.Add(-1)
		}()
		r := bufio.NewReader(conn)
		for {
			b, err := readFrame(r, from)
			now := time.Now()
			if err != nil {
				var bad *ErrBadFrame
				if errors.As(err, &bad) {
					e.c.badFrames.Add(1)
				}
				return
			}
			e.c.via[ViaStream].in(len(b))
			if !e.deliver(Packet{From: from, Data: b, Time: now, Via: ViaStream}) {
				return
			}
		}
	}()
	return true
}

// qframe is a frame waiting in a link's queue.
type qframe struct {
	b   []byte
	fin Finalizer
	at  time.Time
}

// link is the outbound stream to one peer: a bounded FIFO filled by
// SendStream and drained by one writer goroutine that connects lazily,
// backs off with jitter after failures, and reconnects after errors.
type link struct {
	e    *endpoint
	peer netip.AddrPort
	rnd  *rand.Rand // writer goroutine only
	wake chan struct{}

	mu        sync.Mutex
	q         []qframe
	connected bool
	dialed    bool // a dial has succeeded before: the next one is a reconnect
	sent      uint64
	lastErr   string
}

func newLink(e *endpoint, peer netip.AddrPort, rnd *rand.Rand) *link {
	return &link{e: e, peer: peer, rnd: rnd, wake: make(chan struct{}, 1)}
}

func (l *link) stats() LinkStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return LinkStats{Peer: l.peer, Connected: l.connected, Queued: len(l.q), Sent: l.sent, LastError: l.lastErr}
}

// purgeLocked drops frames older than MaxAge from the head (the oldest).
func (l *link) purgeLocked(now time.Time) {
	maxAge := l.e.cfg.Stream.MaxAge
	i := 0
	for i < len(l.q) && now.Sub(l.q[i].at) > maxAge {
		l.q[i] = qframe{}
		i++
	}
	if i > 0 {
		l.q = l.q[i:]
		l.e.c.staleDrops.Add(uint64(i))
	}
}

func (l *link) enqueue(b []byte, fin Finalizer) error {
	now := time.Now()
	l.mu.Lock()
	l.purgeLocked(now)
	if len(l.q) >= l.e.cfg.Stream.QueueLen {
		l.mu.Unlock()
		l.e.c.queueDrops.Add(1)
		return ErrQueueFull
	}
	// The caller may reuse b once SendStream returns.
	l.q = append(l.q, qframe{b: append([]byte(nil), b...), fin: fin, at: now})
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return nil
}

// pending reports whether a fresh frame is queued.
func (l *link) pending() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.purgeLocked(time.Now())
	return len(l.q) > 0
}

func (l *link) pop() (qframe, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.purgeLocked(time.Now())
	if len(l.q) == 0 {
		return qframe{}, false
	}
	f := l.q[0]
	l.q[0] = qframe{}
	l.q = l.q[1:]
	return f, true
}

func (l *link) setState(connected bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.connected = connected
	if err != nil {
		l.lastErr = err.Error()
	}
}

// backoff is the wait after the n-th consecutive failure: BackoffMin
// doubled per failure up to BackoffMax, then "equal jitter" (a uniform
// draw from the upper half) so peers that lost a common node do not redial
// it in lockstep.
func (l *link) backoff(n int) time.Duration {
	cfg := l.e.cfg.Stream
	d := cfg.BackoffMin
	for i := 1; i < n && d < cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, cfg.BackoffMax)
	if d <= 1 {
		return d
	}
	return d/2 + time.Duration(l.rnd.Int64N(int64(d/2)+1))
}

// run is the link's writer goroutine.
func (l *link) run() {
	defer l.e.wg.Done()
	ctx := l.e.ctx
	var (
		conn     net.Conn
		dead     <-chan struct{} // closed when the peer closes or resets
		failures int
	)
	drop := func(err error) {
		if conn != nil {
			conn.Close()
			<-dead // the watcher has returned: no goroutine outlives the conn
			conn, dead = nil, nil
		}
		l.setState(false, err)
	}
	defer drop(nil)
	for {
		if !l.pending() {
			select {
			case <-l.wake:
			case <-dead:
				drop(errors.New("connection closed by peer"))
			case <-ctx.Done():
				return
			}
			continue
		}
		if conn != nil {
			select {
			case <-dead:
				drop(errors.New("connection closed by peer"))
			default:
			}
		}
		if conn == nil {
			c, err := l.connect(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				l.e.c.dialErrs.Add(1)
				l.setState(false, err)
				failures++
				t := time.NewTimer(l.backoff(failures))
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return
				}
				continue
			}
			failures = 0
			conn, dead = c, l.watch(c)
			l.mu.Lock()
			if l.dialed {
				l.e.c.reconnects.Add(1)
			}
			l.dialed, l.connected = true, true
			l.mu.Unlock()
		}
		f, ok := l.pop()
		if !ok {
			continue
		}
		b, err := finalize(f.b, f.fin, MaxStreamFrame)
		if err != nil {
			// Error recorded before it is counted: whoever sees the count
			// also sees the reason.
			l.setState(true, err)
			l.e.c.sendErrs.Add(1)
			continue
		}
		if err := l.write(conn, b); err != nil {
			// The frame may be partly written: TCP gives at-most-once
			// here, and the protocols above retry what matters.
			drop(err)
			l.e.c.sendErrs.Add(1)
			continue
		}
		l.e.c.via[ViaStream].out(len(b))
		l.mu.Lock()
		l.sent++
		l.mu.Unlock()
	}
}

func (l *link) connect(ctx context.Context) (net.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, l.e.cfg.Stream.DialTimeout)
	defer cancel()
	return l.e.fab.dial(dctx, l.peer)
}

// write sends one frame. The deadline is what keeps a peer that stopped
// reading from blocking the link (and its queue) forever.
func (l *link) write(conn net.Conn, b []byte) error {
	var hdr [frameHeaderLen]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
	conn.SetWriteDeadline(time.Now().Add(l.e.cfg.Stream.WriteTimeout))
	bufs := net.Buffers{hdr[:], b}
	_, err := bufs.WriteTo(conn)
	return err
}

// watch reads the outbound connection, on which the peer never writes, so
// that a close or reset (peer restarted, keepalive expired) is noticed
// while the link is idle instead of costing the next frame. It also closes
// the connection when the endpoint closes, unblocking a pending write.
func (l *link) watch(conn net.Conn) <-chan struct{} {
	dead := make(chan struct{})
	stop := context.AfterFunc(l.e.ctx, func() { conn.Close() })
	l.e.wg.Add(1)
	go func() {
		defer l.e.wg.Done()
		defer close(dead)
		defer stop()
		var buf [512]byte
		for {
			if _, err := conn.Read(buf[:]); err != nil {
				return
			}
		}
	}()
	return dead
}
