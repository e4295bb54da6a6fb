package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"
)

// stalledPeer listens where a link can dial, accepts one connection and
// reads nothing from it until read is closed; then it reads frames and
// sends each one's bytes on frames. It returns the address.
func stalledPeer(t *testing.T, read <-chan struct{}) (netip.AddrPort, <-chan []byte) {
	t.Helper()
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 12)})
	if err != nil {
		t.Fatal(err)
	}
	frames := make(chan []byte, 4096)
	done, stop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer close(frames)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		select {
		case <-read:
		case <-stop: // the test ended (failed) before it let the peer read
			return
		}
		r := bufio.NewReader(c)
		var hdr [frameHeaderLen]byte
		for {
			if _, err := io.ReadFull(r, hdr[:]); err != nil {
				return
			}
			b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
			if _, err := io.ReadFull(r, b); err != nil {
				return
			}
			frames <- b
		}
	}()
	t.Cleanup(func() {
		close(stop)
		ln.Close()
		// The accepted connection closes when the endpoint's does.
		<-done
	})
	return ln.Addr().(*net.TCPAddr).AddrPort(), frames
}

// bigFrame is frame i: its number, then bytes that say it, 60,000 in all
// (a few fill a socket's buffers).
func bigFrame(i int) []byte {
	b := make([]byte, 60000)
	binary.BigEndian.PutUint32(b, uint32(i))
	for j := 4; j < len(b); j++ {
		b[j] = byte(i + j)
	}
	return b
}

func checkBigFrame(t *testing.T, want int, b []byte) {
	t.Helper()
	if len(b) != 60000 || int(binary.BigEndian.Uint32(b)) != want {
		n := -1
		if len(b) >= 4 {
			n = int(binary.BigEndian.Uint32(b))
		}
		t.Fatalf("frame %d: got %d bytes numbered %d", want, len(b), n)
	}
	for j := 4; j < len(b); j++ {
		if b[j] != byte(want+j) {
			t.Fatalf("frame %d: byte %d is %d, want %d: frames interleaved", want, j, b[j], byte(want+j))
		}
	}
}

// shortFabric dials connections whose non-waiting writes take only what a
// test allows, and whose waiting writes (the link writer's) the test can
// hold: a socket that fills in the middle of a frame, at the moment the
// test chooses.
type shortFabric struct {
	fabric
	mu    sync.Mutex
	limit int           // bytes TryWrite takes from now on; < 0: all
	gate  chan struct{} // while not nil, Write waits until it is closed
	held  chan struct{} // a value per Write held
}

func (f *shortFabric) dial(ctx context.Context, to netip.AddrPort) (net.Conn, error) {
	c, err := f.fabric.dial(ctx, to)
	if err != nil {
		return nil, err
	}
	return &shortConn{Conn: c, f: f}, nil
}

// short makes TryWrite take limit bytes at most, and holds the writer's
// writes until the returned function is called.
func (f *shortFabric) short(limit int) (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limit, f.gate = limit, make(chan struct{})
	gate := f.gate
	return func() {
		f.mu.Lock()
		f.limit, f.gate = -1, nil
		f.mu.Unlock()
		close(gate)
	}
}

type shortConn struct {
	net.Conn
	f *shortFabric
}

func (c *shortConn) TryWrite(b []byte) (int, error) {
	c.f.mu.Lock()
	if c.f.limit >= 0 && len(b) > c.f.limit {
		b = b[:c.f.limit]
	}
	c.f.mu.Unlock()
	return c.Conn.Write(b) // a few bytes, to a peer that reads: no wait
}

func (c *shortConn) Write(b []byte) (int, error) {
	c.f.mu.Lock()
	gate := c.f.gate
	c.f.mu.Unlock()
	if gate != nil {
		c.f.held <- struct{}{}
		<-gate
	}
	return c.Conn.Write(b)
}

// TestDirectWriteTailBeforeQueued: frames SendStream writes itself on the
// idle link, one the socket took only part of, and frames queued behind
// that part (while the link's writer is stuck writing it) arrive whole
// and in order.
func TestDirectWriteTailBeforeQueued(t *testing.T) {
	read := make(chan struct{})
	close(read)
	peer, frames := stalledPeer(t, read)
	k := &kit{t: t, real: true}
	a := k.open(Config{Listen: k.addr(0), Stream: StreamConfig{QueueLen: 64, MaxAge: time.Hour, WriteTimeout: time.Hour}})
	e := a.(*endpoint)
	f := &shortFabric{fabric: e.fab, limit: -1, held: make(chan struct{}, 16)}
	e.fab = f
	sent := func() uint64 { return a.Stats().Links[0].Sent }
	// Frame 0 connects the link (through the queue: nothing to write on
	// yet); frames 1-3 are SendStream's own, counted before it returns.
	mustSend(t, a.SendStream(peer, bigFrame(0), nil))
	eventually(t, hangGuard, "frame 0 written", func() bool {
		st := a.Stats()
		return len(st.Links) == 1 && st.Links[0].Sent == 1
	})
	for i := 1; i <= 3; i++ {
		mustSend(t, a.SendStream(peer, bigFrame(i), nil))
		if got := sent(); got != uint64(i+1) {
			t.Fatalf("frame %d: %d sent when SendStream returned, want %d (written by the caller)", i, got, i+1)
		}
	}
	// Frame 4 finds room for 100 bytes: the rest is the writer's, whose
	// write waits; frames 5-7 queue behind it.
	release := f.short(100)
	mustSend(t, a.SendStream(peer, bigFrame(4), nil))
	if got := sent(); got != 4 {
		t.Fatalf("frame 4, partly written: %d sent, want 4", got)
	}
	select {
	case <-f.held:
	case <-time.After(hangGuard):
		t.Fatal("the writer never took the frame's tail")
	}
	for i := 5; i <= 7; i++ {
		mustSend(t, a.SendStream(peer, bigFrame(i), nil))
	}
	if q := a.Stats().Links[0].Queued; q != 3 {
		t.Fatalf("%d frames queued behind the partly written one, want 3", q)
	}
	release()
	for i := 0; i <= 7; i++ {
		select {
		case b, ok := <-frames:
			if !ok {
				t.Fatalf("the connection ended before frame %d", i)
			}
			checkBigFrame(t, i, b)
		case <-time.After(hangGuard):
			t.Fatalf("frame %d never arrived", i)
		}
	}
	eventually(t, hangGuard, "every frame counted as sent", func() bool { return sent() == 8 })
	if st := a.Stats(); st.SendErrors != 0 || st.StaleDrops != 0 {
		t.Fatalf("send errors %d, stale drops %d, want none", st.SendErrors, st.StaleDrops)
	}
}

// TestDirectWriteNeverWaits: a peer that stops reading never holds up
// SendStream, which writes on the idle link itself: when the socket is
// full it hands the rest to the writer (whose write waits an hour here)
// and queues, until the queue refuses.
func TestDirectWriteNeverWaits(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("writes without waiting are Linux's raw sockets'")
	}
	read := make(chan struct{})
	defer close(read)
	peer, _ := stalledPeer(t, read)
	k := &kit{t: t, real: true}
	// Nothing gives up on the peer within the hour (the write deadline,
	// TCP_USER_TIMEOUT at 4 KeepAlives): a SendStream that waited for it
	// would not return before the guard.
	a, err := k.tryOpen(Config{Listen: k.addr(0), Stream: StreamConfig{QueueLen: 4, MaxAge: time.Hour, WriteTimeout: time.Hour, KeepAlive: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	mustSend(t, a.SendStream(peer, bigFrame(0), nil))
	eventually(t, hangGuard, "frame 0 written", func() bool {
		st := a.Stats()
		return len(st.Links) == 1 && st.Links[0].Sent == 1
	})
	sent := make(chan error, 1)
	go func() {
		for i := 1; i < 1000; i++ {
			if err := a.SendStream(peer, bigFrame(i), nil); err != nil {
				if errors.Is(err, ErrQueueFull) {
					err = nil
				}
				sent <- err
				return
			}
		}
		sent <- errors.New("1000 frames taken with the peer not reading")
	}()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(hangGuard):
		t.Fatal("SendStream waited for a peer that stopped reading")
	}
	if st := a.Stats(); st.Links[0].Sent < 2 || st.SendErrors != 0 {
		t.Fatalf("%d frames written, %d send errors: want frames written by SendStream itself before the socket filled, and no error", st.Links[0].Sent, st.SendErrors)
	}
	closeWithin(t, a, hangGuard)
}

// TestIdleCloseCountsFromTheLastFrame: the writer, asleep while
// SendStream writes, closes the link only when no frame has left for
// linkIdle, however it was written.
func TestIdleCloseCountsFromTheLastFrame(t *testing.T) {
	e := newEndpoint(Config{Stream: StreamConfig{IdleTimeout: 2 * time.Hour}}, mustAP("127.0.0.1:1"))
	l := newLink(e, mustAP("127.0.0.1:2"), e.rnd)
	l.conn = &writesConnTry{}
	l.lastOut = time.Now()
	if l.idleOut() {
		t.Fatal("idle out just after a frame left")
	}
	if left := l.idleLeft(); left <= 0 || left > time.Hour {
		t.Fatalf("idle left %v just after a frame, want up to an hour", left)
	}
	l.lastOut = time.Now().Add(-time.Hour - time.Second)
	if left := l.idleLeft(); left != 0 {
		t.Fatalf("idle left %v an hour after the last frame, want 0", left)
	}
	if !l.idleOut() || l.conn != nil {
		t.Fatal("not idle out an hour after the last frame, or SendStream still writes on it")
	}
}

// writesConnTry is a connection SendStream could write on.
type writesConnTry struct{}

func (writesConnTry) TryWrite(b []byte) (int, error) { return len(b), nil }

// recordTry is a connection SendStream writes on that keeps the bytes,
// taking at most limit of a write (< 0: all).
type recordTry struct {
	got   []byte
	limit int
}

func (c *recordTry) TryWrite(b []byte) (int, error) {
	if c.limit >= 0 && len(b) > c.limit {
		b = b[:c.limit]
	}
	c.got = append(c.got, b...)
	return len(b), nil
}

// TestTailBeforeQueue: while a frame's tail waits for the writer,
// SendStream queues (it writes nothing on the connection) and the writer
// takes the tail before the frames queued behind it; once all are
// written, SendStream writes again.
func TestTailBeforeQueue(t *testing.T) {
	cfg := Config{Listen: mustAP("127.0.0.1:1")}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	e := newEndpoint(cfg, cfg.Listen)
	l := newLink(e, mustAP("127.0.0.1:2"), e.rnd)
	c := &recordTry{limit: -1}
	l.conn = c
	mustSend(t, l.enqueue(frame(1), nil))
	c.limit = 10
	mustSend(t, l.enqueue(frame(2), nil))
	if l.sent != 1 || len(c.got) != 2*frameHeaderLen+len(frame(1))+10-frameHeaderLen {
		t.Fatalf("sent %d, %d bytes on the connection: want frame 1 and 10 bytes of frame 2", l.sent, len(c.got))
	}
	c.limit = -1
	wrote := len(c.got)
	mustSend(t, l.enqueue(frame(3), nil))
	mustSend(t, l.enqueue(frame(4), nil))
	if len(c.got) != wrote || len(l.q) != 2 {
		t.Fatalf("%d bytes written and %d frames queued behind the tail, want none and 2", len(c.got)-wrote, len(l.q))
	}
	f, ok := l.next()
	if want := l.frame(frame(2))[10:]; !ok || !f.tail || !bytes.Equal(f.b, want) || f.size != len(frame(2)) {
		t.Fatalf("the writer took %q (tail %v, size %d), want frame 2's tail %q", f.b, f.tail, f.size, want)
	}
	l.done(f.size)
	for _, want := range []int{3, 4} {
		f, ok := l.next()
		if !ok || f.tail || !bytes.Equal(f.b, frame(want)) {
			t.Fatalf("the writer took %q (tail %v), want frame %d", f.b, f.tail, want)
		}
		l.done(len(f.b))
	}
	if f, ok := l.next(); ok {
		t.Fatalf("the writer took %q after the queue, want nothing", f.b)
	}
	wrote = len(c.got)
	mustSend(t, l.enqueue(frame(5), nil))
	if l.sent != 5 || len(c.got) != wrote+frameHeaderLen+len(frame(5)) {
		t.Fatalf("sent %d, %d bytes written: want frame 5 written by SendStream", l.sent, len(c.got)-wrote)
	}
}
