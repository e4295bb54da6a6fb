package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/synclab/synclab/pkg/core"
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
	wbuf []byte     // writer goroutine only: write's buffer, reused (writeBufKeep)
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
	now := l.e.now()
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
	l.purgeLocked(l.e.now())
	return len(l.q) > 0
}

func (l *link) pop() (qframe, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.purgeLocked(l.e.now())
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
			if err != nil {
				// A failed or timed-out write: reset, so that the
				// kernel discards what it still holds instead of
				// sending it after the frames of the next
				// connection (the acceptor also refuses an older
				// connection's frames once a newer one delivered).
				reset(conn)
			} else {
				conn.Close()
			}
			<-dead // the watcher has returned: no goroutine outlives the conn
			conn, dead = nil, nil
		}
		l.setState(false, err)
	}
	defer drop(nil)
	// A link idle for linkIdle closes itself, so it is never the acceptor
	// that closes it just as a frame leaves.
	idle := time.NewTimer(time.Hour)
	idle.Stop()
	defer idle.Stop()
	for {
		if !l.pending() {
			if conn != nil {
				idle.Reset(l.e.cfg.Stream.linkIdle())
			}
			select {
			case <-l.wake:
			case <-dead:
				l.closedByPeer(drop)
			case <-idle.C:
				drop(nil)
				l.mu.Lock()
				l.dialed = false // the next dial is not a reconnect after a failure
				l.mu.Unlock()
			case <-ctx.Done():
				return
			}
			idle.Stop()
			continue
		}
		if conn != nil {
			select {
			case <-dead:
				l.closedByPeer(drop)
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
				var ne net.Error
				switch {
				case errors.Is(err, syscall.ECONNREFUSED):
					// Nothing listens at the peer's port: its
					// process is gone, or a forged reset says so.
					l.e.hint(l.peer, core.HintDialRefused)
				case errors.As(err, &ne) && ne.Timeout():
					// Nothing answered: a firewall that drops
					// connection attempts, or a host that is down.
					// The consumer decides what it is worth (a
					// link it means to keep open never opens).
					l.e.hint(l.peer, core.HintDialTimeout)
				}
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

// closedByPeer drops the connection the peer closed or reset, and hands
// the consumer a hint: a process that dies (SIGKILL included) has its
// sockets closed by the kernel at once, so this is usually the first sign
// of a dead peer, long before any timeout.
func (l *link) closedByPeer(drop func(error)) {
	drop(errors.New("connection closed by peer"))
	l.e.hint(l.peer, core.HintStreamClosed)
}

// linkIdle is how long an outbound link stays connected without a frame to
// send: half the IdleTimeout after which the acceptor (configured alike)
// closes a connection that begins no frame.
func (c StreamConfig) linkIdle() time.Duration { return c.IdleTimeout / 2 }

func (l *link) connect(ctx context.Context) (net.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, l.e.cfg.Stream.DialTimeout)
	defer cancel()
	return l.e.fab.dial(dctx, l.peer)
}

// write sends one frame. The deadline is what keeps a peer that stopped
// reading from blocking the link (and its queue) forever.
func (l *link) write(conn net.Conn, b []byte) error {
	// One write, header and frame together: one segment, one system call,
	// from the link's buffer: no allocation per frame once it has grown
	// to the link's frames.
	n := frameHeaderLen + len(b)
	buf := l.wbuf
	if cap(buf) < n {
		buf = make([]byte, 0, (n+writeBufRound-1)/writeBufRound*writeBufRound)
		if cap(buf) <= writeBufKeep { // a rare large frame: not held for the link's life
			l.wbuf = buf
		}
	}
	buf = buf[:n]
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[frameHeaderLen:], b)
	conn.SetWriteDeadline(time.Now().Add(l.e.cfg.Stream.WriteTimeout))
	_, err := conn.Write(buf)
	return err
}

// A link's write buffer grows in steps of writeBufRound bytes and is kept
// up to writeBufKeep: the frames of the protocols are far smaller, and a
// larger one (a snapshot, a trace chunk) is written from a buffer of its
// own rather than holding up to MaxStreamFrame per peer.
const (
	writeBufRound = 512
	writeBufKeep  = 16 << 10
)

// watch reads the outbound connection, on which the peer never writes, so
// that a close or reset (peer restarted, keepalive expired) is noticed
// while the link is idle instead of costing the next frame. It also closes
// the connection when the endpoint closes, unblocking a pending write. Its
// reads have a deadline like every other; one that passes only means the
// peer is quiet, as it should be. A peer that writes is broken or hostile:
// the connection is dropped.
func (l *link) watch(conn net.Conn) <-chan struct{} {
	dead := make(chan struct{})
	stop := context.AfterFunc(l.e.ctx, func() { conn.Close() })
	l.e.wg.Add(1)
	go func() {
		defer l.e.wg.Done()
		defer close(dead)
		defer stop()
		var buf [1]byte
		for {
			conn.SetReadDeadline(time.Now().Add(l.e.cfg.Stream.IdleTimeout))
			_, err := conn.Read(buf[:])
			if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
				return
			}
		}
	}()
	return dead
}
