package transport

import (
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
)

// nextHint waits for the endpoint's next hint.
func nextHint(t *testing.T, ep Endpoint) Hint {
	t.Helper()
	select {
	case h := <-ep.Hints():
		return h
	case <-time.After(hangGuard):
		t.Fatal("no hint")
	}
	return Hint{}
}

// TestHintPeerClosed: a peer whose process closes its sockets (as the
// kernel does for a SIGKILLed one) is named at once by a hint on the
// link's address, stream_closed; a frame sent to it afterwards finds the
// port closed, dial_refused. Both are counted. An idle link closing
// itself, and the endpoint's own Close, say nothing.
func TestHintPeerClosed(t *testing.T) {
	eachImpl(t, func(t *testing.T, k *kit) {
		a := k.open(Config{Listen: k.addr(0)})
		b, err := k.tryOpen(Config{Listen: k.addr(1)})
		if err != nil {
			t.Fatal(err)
		}
		addr := b.LocalAddr()
		mustSend(t, a.SendStream(addr, []byte("hello"), nil))
		recv(t, b, hangGuard)
		select {
		case h := <-a.Hints():
			t.Fatalf("hint %+v while the peer lives", h)
		default:
		}
		b.Close()
		if h := nextHint(t, a); h.Peer != addr || h.Cause != core.HintStreamClosed || h.Time.IsZero() {
			t.Fatalf("hint %+v, want stream_closed for %v", h, addr)
		}
		mustSend(t, a.SendStream(addr, []byte("to nobody"), nil))
		if h := nextHint(t, a); h.Peer != addr || h.Cause != core.HintDialRefused {
			t.Fatalf("hint %+v, want dial_refused for %v", h, addr)
		}
		st := a.Stats()
		if st.Hints["stream_closed"] != 1 || st.Hints["dial_refused"] < 1 || st.HintsDropped != 0 {
			t.Fatalf("hint counts %v, dropped %d", st.Hints, st.HintsDropped)
		}
		closeWithin(t, a, hangGuard)
		for h := range a.Hints() {
			if h.Cause != core.HintDialRefused {
				t.Fatalf("hint %+v after the refusals", h)
			}
		}
	})
}

// TestHintsNeverBlock: a consumer that takes no hints costs the transport
// nothing but the hints beyond HintBuffer, dropped and counted.
func TestHintsNeverBlock(t *testing.T) {
	e := newEndpoint(Config{Listen: mustAP("127.0.0.1:1")}, mustAP("127.0.0.1:1"))
	for range HintBuffer + 3 {
		e.hint(mustAP("127.0.0.2:7"), core.HintDialRefused)
	}
	if st := e.c.snapshot(); st.Hints["dial_refused"] != HintBuffer+3 || st.HintsDropped != 3 {
		t.Fatalf("counts %v, dropped %d", st.Hints, st.HintsDropped)
	}
	e.cancel()
	e.hint(mustAP("127.0.0.2:7"), core.HintStreamClosed)
	if st := e.c.snapshot(); st.Hints["stream_closed"] != 0 {
		t.Fatalf("a hint while closing: %v", st.Hints)
	}
}

// silentListener listens on loopback with an accept queue of one that it
// fills and never accepts from: the kernel drops every further SYN, as a
// firewall that drops connection attempts does, and a dial to it times
// out. It returns its address.
func silentListener(t *testing.T) netip.AddrPort {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 98}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 98}), uint16(sa.(*syscall.SockaddrInet4).Port))
	// Fill the queue: these connect (the kernel completes the handshake
	// while the queue has room), the next do not.
	for i := 0; i < 2; i++ {
		c, err := net.DialTimeout("tcp4", addr.String(), 200*time.Millisecond)
		if err != nil {
			break
		}
		t.Cleanup(func() { c.Close() })
	}
	return addr
}

// TestHintDialTimeout: a frame for a peer whose port drops connection
// attempts is a dial_timeout hint once the dial times out (real sockets:
// the in-memory twin has no such peer), counted by cause.
func TestHintDialTimeout(t *testing.T) {
	k := &kit{t: t, real: true}
	a := k.open(Config{Listen: k.addr(0), Stream: StreamConfig{DialTimeout: 100 * time.Millisecond}})
	addr := silentListener(t)
	mustSend(t, a.SendStream(addr, []byte("to a dropped port"), nil))
	if h := nextHint(t, a); h.Peer != addr || h.Cause != core.HintDialTimeout {
		t.Fatalf("hint %+v, want dial_timeout for %v", h, addr)
	}
	if st := a.Stats(); st.Hints["dial_timeout"] < 1 {
		t.Fatalf("hint counts %v: want dial_timeout counted", st.Hints)
	}
}
