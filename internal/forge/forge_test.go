package forge

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/testenv"
	"github.com/synclab/synclab/pkg/wire"
)

func TestFrameDecodesAndSeals(t *testing.T) {
	key := wire.Key{ID: 7, Secret: make([]byte, wire.MinKeyLen)}
	h := wire.Header{Kind: wire.KindCoordinator, Cluster: wire.ClusterID("synclab"), Sender: 3, Receiver: 2,
		Term: 0xffffffff00000003, Seq: 0xffffffffffffff00, Lamport: ^uint64(0)}
	for _, k := range []*wire.Key{nil, &key} {
		b, err := Frame(h, wire.Coordinator{}, k)
		if err != nil {
			t.Fatal(err)
		}
		var f wire.Frame
		if err := f.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		if f.Term != h.Term || f.Seq != h.Seq || f.Lamport != h.Lamport || f.Sender != 3 {
			t.Fatalf("header %+v, want %+v", f.Header, h)
		}
		var keys []wire.Key
		if k != nil {
			keys = []wire.Key{*k}
		}
		if err := wire.NewValidator(h.Cluster, 2, keys).Validate(&f, b); err != nil {
			t.Fatalf("a forged frame with the right key is indistinguishable from a real one, yet: %v", err)
		}
	}
}

func TestSendSpoofedUDP(t *testing.T) {
	testenv.RequireRoot(t, "forge: spoofing needs a raw socket")
	l, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	to := l.LocalAddr().(*net.UDPAddr).AddrPort()
	src := netip.MustParseAddrPort("127.0.0.99:4242")
	if err := SendSpoofedUDP(src, to, []byte("not from here")); err != nil {
		t.Fatal(err)
	}
	l.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 100)
	n, from, err := l.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatalf("spoofed datagram never arrived: %v", err)
	}
	if string(buf[:n]) != "not from here" || from.Addr().Unmap() != src.Addr() || from.Port() != src.Port() {
		t.Fatalf("got %q from %s, want it from %s", buf[:n], from, src)
	}
}
