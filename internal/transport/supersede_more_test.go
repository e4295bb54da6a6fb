package transport

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestRefusedConnectionsEvictOnlyBySlots: connections from a member's IP
// whose frames Config.Supersedes refuses (another cluster's member, a
// forger without the key) supersede nothing; but DefaultPerPeerConns of
// them fill the IP's slots and evict the member's live connection (admit,
// before anything is read), as any connections from its IP would: the
// docs say so (review-supersede: they said such connections cost the
// member nothing).
func TestRefusedConnectionsEvictOnlyBySlots(t *testing.T) {
	k := &kit{t: t, real: true}
	member := mustAP("127.0.0.11:7000")
	accept := func(_ netip.AddrPort, b []byte) bool { return !strings.HasPrefix(string(b), "forged") }
	b := k.open(Config{Listen: k.addr(1), Peers: []netip.AddrPort{member}, Supersedes: accept})
	cur := dialFrom(t, "127.0.0.11", b.LocalAddr())
	writeFrame(t, cur, "m-1")
	if p := recv(t, b, hangGuard); string(p.Data) != "m-1" {
		t.Fatalf("got %q", p.Data)
	}
	for i := range DefaultPerPeerConns {
		f := dialFrom(t, "127.0.0.11", b.LocalAddr())
		writeFrame(t, f, fmt.Sprint("forged-", i))
		if p := recv(t, b, hangGuard); string(p.Data) != fmt.Sprint("forged-", i) {
			t.Fatalf("got %q", p.Data)
		}
	}
	st := b.Stats()
	t.Logf("not superseding %d, superseded %d, evicted %d", st.NotSuperseding, st.InboundSuperseded, st.InboundEvicted)
	if st.InboundSuperseded != 0 || st.NotSuperseding < DefaultPerPeerConns || st.InboundEvicted != 1 {
		t.Fatalf("%d connections whose every frame Supersedes refuses: superseded %d, not superseding %d, evicted %d; want 0, at least %d, 1 (the slots' rule)",
			DefaultPerPeerConns, st.InboundSuperseded, st.NotSuperseding, st.InboundEvicted, DefaultPerPeerConns)
	}
	if !closedByPeer(cur) {
		t.Fatal("the member's connection still open: evicted, it is closed")
	}
}

// TestSupersedeNoLeak (review-supersede): no goroutine or fd leak per superseded connection
// (real sockets, each superseded connection with a backlog in the kernel
// when the next one delivers): after 200 supersedes, one reader left,
// goroutines and fds back to where they were.
func TestSupersedeNoLeak(t *testing.T) {
	k := &kit{t: t, real: true}
	member := mustAP("127.0.0.11:7000")
	b := k.open(Config{Listen: k.addr(1), Peers: []netip.AddrPort{member}, Supersedes: func(netip.AddrPort, []byte) bool { return true }})
	fds := func() int { es, _ := os.ReadDir("/proc/self/fd"); return len(es) }
	base, fd0 := runtime.NumGoroutine(), fds()
	var conns []net.Conn
	const n = 200
	for i := range n {
		c := dialFrom(t, "127.0.0.11", b.LocalAddr())
		writeFrame(t, c, fmt.Sprint("f", i))
		for range 3 {
			writeFrame(t, c, strings.Repeat("x", 2000))
		}
		for {
			if p := recv(t, b, hangGuard); string(p.Data) == fmt.Sprint("f", i) {
				break
			}
		}
		conns = append(conns, c)
	}
	eventually(t, hangGuard, "superseded readers gone", func() bool { return b.Stats().Inbound == 1 })
	for _, c := range conns[:n-1] {
		c.Close()
	}
	st := b.Stats()
	t.Logf("superseded %d, frames dropped %d", st.InboundSuperseded, st.SupersededFrames)
	if st.InboundSuperseded != n-1 {
		t.Fatalf("superseded %d, want %d", st.InboundSuperseded, n-1)
	}
	settleGoroutines(t, base+2)
	if got := fds(); got > fd0+2 {
		t.Fatalf("fds %d, were %d", got, fd0)
	}
}

// TestSupersedeOrderUnderBacklog (review-supersede): order across many supersedes with backlogs (real
// sockets, woken readers): once connection i's first frame is delivered,
// no frame of an older connection is delivered; every older frame is
// delivered or counted dropped.
func TestSupersedeOrderUnderBacklog(t *testing.T) {
	k := &kit{t: t, real: true}
	member := mustAP("127.0.0.11:7000")
	b := k.open(Config{Listen: k.addr(1), Peers: []netip.AddrPort{member}, Stream: StreamConfig{PerPeerConns: 200},
		Supersedes: func(netip.AddrPort, []byte) bool { return true }})
	const n, per = 100, 6
	newest, delivered := -1, 0
	check := func(p Packet) {
		var c, j int
		fmt.Sscanf(string(p.Data[:9]), "%04d-%04d", &c, &j)
		if c < newest {
			t.Fatalf("frame %d of connection %d delivered after connection %d's", j, c, newest)
		}
		newest = max(newest, c)
		delivered++
	}
	pay := strings.Repeat("x", 3000)
	for i := range n {
		c := dialFrom(t, "127.0.0.11", b.LocalAddr())
		defer c.Close()
		for j := range per {
			writeFrame(t, c, fmt.Sprintf("%04d-%04d%s", i, j, pay))
		}
		// take one or two, leave the rest to race the next connection
		for range 1 + i%2 {
			check(recv(t, b, hangGuard))
		}
	}
	eventually(t, hangGuard, "one reader left", func() bool { return b.Stats().Inbound == 1 })
	for {
		select {
		case p := <-b.Packets():
			check(p)
			continue
		case <-time.After(500 * time.Millisecond):
		}
		break
	}
	st := b.Stats()
	t.Logf("delivered %d, counted dropped %d, sent %d; superseded %d, evicted %d", delivered, st.SupersededFrames, n*per, st.InboundSuperseded, st.InboundEvicted)
	if uint64(delivered)+st.SupersededFrames != n*per {
		t.Fatalf("delivered %d + counted dropped %d != sent %d", delivered, st.SupersededFrames, n*per)
	}
}
