package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// kit opens endpoints on one implementation. The behavioural tests are
// written once against a kit and run on real loopback sockets and on the
// in-memory network.
type kit struct {
	t    *testing.T
	real bool
	mem  *MemNetwork
}

func (k *kit) open(cfg Config) Endpoint {
	k.t.Helper()
	ep, err := k.tryOpen(cfg)
	if err != nil {
		k.t.Fatalf("open %v: %v", cfg.Listen, err)
	}
	k.t.Cleanup(func() { ep.Close() })
	return ep
}

func (k *kit) tryOpen(cfg Config) (Endpoint, error) {
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if k.real {
		return Open(cfg)
	}
	return k.mem.Open(cfg)
}

// addr is node i's member address: distinct loopback IPs, as in the
// rootless demo (several nodes on 127.0.0.x).
func (k *kit) addr(i int) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, byte(10 + i)}), 0)
}

// deadAddr is an address where nothing listens: connection refused.
func (k *kit) deadAddr() netip.AddrPort {
	k.t.Helper()
	a := netip.MustParseAddrPort("127.0.0.99:0")
	if !k.real {
		return netip.AddrPortFrom(a.Addr(), 9)
	}
	ln, err := net.ListenTCP("tcp4", net.TCPAddrFromAddrPort(a))
	if err != nil {
		k.t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).AddrPort()
}

func eachImpl(t *testing.T, fn func(t *testing.T, k *kit)) {
	t.Run("real", func(t *testing.T) { fn(t, &kit{t: t, real: true}) })
	t.Run("mem", func(t *testing.T) { fn(t, &kit{t: t, mem: NewMemNetwork()}) })
}

// hangGuard bounds every wait for something that comes in milliseconds on
// a quiet host: a guard against a hang, never the thing tested, and long
// enough that a loaded host (tens of runnable threads per CPU) never
// reaches it while the code works.
const hangGuard = time.Minute

// recv waits for one packet.
func recv(t *testing.T, ep Endpoint, within time.Duration) Packet {
	t.Helper()
	select {
	case p, ok := <-ep.Packets():
		if !ok {
			t.Fatal("packets channel closed")
		}
		return p
	case <-time.After(within):
		t.Fatalf("%v: no packet within %v", ep.LocalAddr(), within)
	}
	panic("unreachable")
}

// quiet asserts that nothing arrives for d.
func quiet(t *testing.T, ep Endpoint, d time.Duration) {
	t.Helper()
	select {
	case p := <-ep.Packets():
		t.Fatalf("%v: unexpected packet %q from %v via %v", ep.LocalAddr(), p.Data, p.From, p.Via)
	case <-time.After(d):
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(within)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stampFinalizer patches time.Now() into the first 8 bytes, as a protocol
// patches its transmit timestamp.
func stampFinalizer(b []byte) []byte {
	out := append([]byte(nil), b...)
	binary.BigEndian.PutUint64(out, uint64(time.Now().UnixNano()))
	return out
}

func patched(b []byte) time.Time { return time.Unix(0, int64(binary.BigEndian.Uint64(b))) }

// testGroup is a multicast group and port unlikely to collide with other
// tests running on the same host at the same time.
func testGroup(t *testing.T) netip.AddrPort {
	r := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(time.Now().UnixNano())))
	a := netip.AddrFrom4([4]byte{239, 255, byte(1 + r.IntN(250)), byte(1 + r.IntN(250))})
	return netip.AddrPortFrom(a, uint16(20000+r.IntN(30000)))
}

// settleGoroutines waits until the goroutine count is back to base.
func settleGoroutines(t *testing.T, base int) {
	t.Helper()
	var n int
	for end := time.Now().Add(hangGuard); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if n = runtime.NumGoroutine(); n <= base {
			return
		}
	}
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	t.Fatalf("goroutines: %d after close, %d before\n%s", n, base, buf)
}

func mustSend(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func frame(i int) []byte { return fmt.Appendf(nil, "frame-%06d", i) }

func mustAP(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func newEndpointRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed)) }

// closeWithin closes ep, failing the test if Close has not returned within
// d: a hang guard, far above what any Close here takes, far below what a
// Close that waited for the hour-long backoffs and writes of these tests
// would.
func closeWithin(t *testing.T, ep Endpoint, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- ep.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("close: %v", err)
		}
	case <-time.After(d):
		t.Fatalf("Close has not returned after %v", d)
	}
}

// held makes an endpoint's stream links stop where a test says, until
// release: in their dials (a peer that does not answer), or in every
// write on the connections they dial (a peer that stopped reading). It
// says when a link has stopped there, so the test acts while it is stuck,
// for as long as the test wants, on either implementation.
type held struct {
	fabric
	dials   bool          // hold the dials, else the writes
	entered chan struct{} // one value per dial or write held
	gate    chan struct{} // closed by release
}

// holdDials and holdWrites install held on ep; call them before ep's
// first SendStream (the links' goroutines, which dial and write, start
// with it).
func holdDials(ep Endpoint) *held  { return hold(ep, true) }
func holdWrites(ep Endpoint) *held { return hold(ep, false) }

func hold(ep Endpoint, dials bool) *held {
	e := ep.(*endpoint)
	h := &held{fabric: e.fab, dials: dials, entered: make(chan struct{}, 1024), gate: make(chan struct{})}
	e.fab = h
	return h
}

// wait blocks until the gate opens (true) or done closes (false).
func (h *held) wait(done <-chan struct{}) bool {
	h.entered <- struct{}{}
	select {
	case <-h.gate:
		return true
	case <-done:
		return false
	}
}

// stopped waits until a link is held.
func (h *held) stopped(t *testing.T) {
	t.Helper()
	select {
	case <-h.entered:
	case <-time.After(hangGuard):
		t.Fatal("the link never reached the point where it is held")
	}
}

func (h *held) release() { close(h.gate) }

func (h *held) dial(ctx context.Context, to netip.AddrPort) (net.Conn, error) {
	if h.dials && !h.wait(ctx.Done()) {
		return nil, ctx.Err()
	}
	c, err := h.fabric.dial(ctx, to)
	if err != nil || h.dials {
		return c, err
	}
	return &heldConn{Conn: c, h: h, closed: make(chan struct{})}, nil
}

type heldConn struct {
	net.Conn
	h      *held
	once   sync.Once
	closed chan struct{}
}

func (c *heldConn) Write(b []byte) (int, error) {
	if !c.h.wait(c.closed) {
		return 0, net.ErrClosed
	}
	return c.Conn.Write(b)
}

func (c *heldConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// fillQueue sends frames from..q-1 to `to`, which must be queued, then frame
// q, which must be dropped (ErrQueueFull), failing the test if a call
// fails otherwise or if they have not all returned within 30 s: a
// SendStream that waited for a held link would not return.
func fillQueue(t *testing.T, ep Endpoint, to netip.AddrPort, from, q int) {
	t.Helper()
	sent := make(chan error, 1)
	go func() {
		for i := from; i < q; i++ {
			if err := ep.SendStream(to, frame(i), nil); err != nil {
				sent <- fmt.Errorf("frame %d: %w", i, err)
				return
			}
		}
		if err := ep.SendStream(to, frame(q), nil); !errors.Is(err, ErrQueueFull) {
			sent <- fmt.Errorf("frame %d: %v, want ErrQueueFull", q, err)
			return
		}
		sent <- nil
	}()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(hangGuard):
		t.Fatal("SendStream blocked while the link was held")
	}
}
