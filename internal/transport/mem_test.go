package transport

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

func slicesSort(d []time.Duration) { slices.Sort(d) }

func TestMemAddressInUse(t *testing.T) {
	n := NewMemNetwork()
	a, err := n.Open(Config{Listen: mustAP("127.0.0.1:7000")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Open(Config{Listen: mustAP("127.0.0.1:7000")}); !errors.Is(err, ErrAddrInUse) {
		t.Fatalf("second open: %v", err)
	}
	a.Close()
	b, err := n.Open(Config{Listen: mustAP("127.0.0.1:7000")})
	if err != nil {
		t.Fatalf("reopen after close: %v", err)
	}
	b.Close()
}

func TestMemSetDown(t *testing.T) {
	n := NewMemNetwork()
	k := &kit{t: t, mem: n}
	a := k.open(Config{Listen: k.addr(0), Stream: StreamConfig{BackoffMin: 5 * time.Millisecond, BackoffMax: 10 * time.Millisecond}})
	b := k.open(Config{Listen: k.addr(1)})
	mustSend(t, a.SendStream(b.LocalAddr(), []byte("s1"), nil))
	recv(t, b, hangGuard)

	n.SetDown(b.LocalAddr(), true)
	mustSend(t, a.Send(b.LocalAddr(), []byte("lost"), nil))
	mustSend(t, b.Send(a.LocalAddr(), []byte("lost"), nil))
	eventually(t, hangGuard, "stream broken by SetDown", func() bool { return !a.Stats().Links[0].Connected })
	mustSend(t, a.SendStream(b.LocalAddr(), []byte("s2"), nil))
	quiet(t, b, 50*time.Millisecond)
	quiet(t, a, 20*time.Millisecond)
	if a.Stats().DialErrors == 0 {
		t.Fatal("dials to a down address must fail")
	}

	n.SetDown(b.LocalAddr(), false)
	if p := recv(t, b, hangGuard); string(p.Data) != "s2" {
		t.Fatalf("after heal: %q", p.Data)
	}
	mustSend(t, a.Send(b.LocalAddr(), []byte("back"), nil))
	if p := recv(t, b, hangGuard); string(p.Data) != "back" {
		t.Fatalf("after heal: %q", p.Data)
	}
}

// A full receiver loses datagrams (never blocks the sender), as a full
// socket buffer does.
func TestMemOverflow(t *testing.T) {
	k := &kit{t: t, mem: NewMemNetwork()}
	a := k.open(Config{Listen: k.addr(0)})
	b := k.open(Config{Listen: k.addr(1)})
	for range PacketBuffer + 5 {
		mustSend(t, a.Send(b.LocalAddr(), []byte("x"), nil))
	}
	if st := b.Stats(); st.RxOverflow != 5 || st.UDP.PacketsIn != PacketBuffer {
		t.Fatalf("overflow %d in %d", st.RxOverflow, st.UDP.PacketsIn)
	}
}

// Example shows the shape a daemon loop uses: one channel in, sends with a
// finalizer out. It runs on the in-memory network; Open has the same API on
// real sockets.
func Example() {
	net := NewMemNetwork()
	a, _ := net.Open(Config{Listen: mustAP("127.0.0.1:7001")})
	b, _ := net.Open(Config{Listen: mustAP("127.0.0.2:7001")})
	defer a.Close()
	defer b.Close()

	// A datagram whose last byte is patched just before the write.
	a.Send(b.LocalAddr(), []byte("hello?"), func(p []byte) []byte {
		p[len(p)-1] = '!'
		return p
	})
	p := <-b.Packets()
	fmt.Println(p.Via, p.From, string(p.Data))

	// A frame on b's TCP link to a: queued, ordered, reconnecting.
	b.SendStream(a.LocalAddr(), []byte("over the link"), nil)
	p = <-a.Packets()
	fmt.Println(p.Via, p.From, string(p.Data))
	// Output:
	// udp 127.0.0.1:7001 hello!
	// stream 127.0.0.2:7001 over the link
}
