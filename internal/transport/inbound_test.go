package transport

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"
)

// dialFrom connects to `to` from local IP ip.
func dialFrom(t *testing.T, ip string, to netip.AddrPort) *net.TCPConn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp4", to.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// closedByPeer says whether the endpoint closed c (within hangGuard: no
// test waits for a close that is timed to come anywhere near that).
func closedByPeer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(hangGuard))
	_, err := c.Read(make([]byte, 1))
	return err != nil && !isTimeout(err)
}

func writeFrame(t *testing.T, c net.Conn, payload string) {
	t.Helper()
	b := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	if _, err := c.Write(append(b, payload...)); err != nil {
		t.Fatal(err)
	}
}

// A connection from an IP that is no member's is closed before anything
// is read from it; the members' connections work.
func TestStrangersRefusedBeforeAnyRead(t *testing.T) {
	k := &kit{t: t, real: true}
	member := netip.MustParseAddrPort("127.0.0.11:7000")
	b := k.open(Config{Listen: k.addr(1), Peers: []netip.AddrPort{member}})
	for range 20 {
		// The reset may even beat the dial's return.
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.66")}}
		c, err := d.Dial("tcp4", b.LocalAddr().String())
		if err != nil {
			continue
		}
		c.Write([]byte{0, 0, 0, 6, 'f', 'o', 'r', 'g', 'e', 'd'})
		if !closedByPeer(c) {
			t.Fatal("a stranger's connection stayed open")
		}
		c.Close()
	}
	ok := dialFrom(t, "127.0.0.11", b.LocalAddr())
	writeFrame(t, ok, "hello")
	if p := recv(t, b, hangGuard); string(p.Data) != "hello" {
		t.Fatalf("member's frame: %q", p.Data)
	}
	eventually(t, hangGuard, "strangers counted", func() bool { return b.Stats().InboundStrangers == 20 })
	if st := b.Stats(); st.Stream.PacketsIn != 1 || st.Stream.BytesIn != 5 {
		t.Fatalf("strangers %d, stream in %+v", st.InboundStrangers, st.Stream)
	}
}

// However many connections a member IP opens (a student on a member's
// machine can open them from its IP), the member's newest always works:
// past PerPeerConns the oldest is closed. Members that share an IP get a
// quota each.
func TestMemberAlwaysGetsASlot(t *testing.T) {
	eachImpl(t, func(t *testing.T, k *kit) {
		m1 := netip.MustParseAddrPort("127.0.0.11:7000")
		peers := []netip.AddrPort{m1, netip.MustParseAddrPort("127.0.0.13:7000"), netip.MustParseAddrPort("127.0.0.13:7001")}
		b := k.open(Config{Listen: k.addr(1), Peers: peers, Stream: StreamConfig{PerPeerConns: 2}})
		if !k.real {
			// The in-memory network's connections are its endpoints'
			// links: one per (dialer, peer); here the real kit's
			// socket-level test says the rest.
			a := k.open(Config{Listen: m1})
			mustSend(t, a.SendStream(b.LocalAddr(), []byte("x"), nil))
			if p := recv(t, b, hangGuard); string(p.Data) != "x" {
				t.Fatalf("got %q", p.Data)
			}
			return
		}
		var idle []*net.TCPConn
		for range 10 {
			idle = append(idle, dialFrom(t, "127.0.0.11", b.LocalAddr()))
			time.Sleep(time.Millisecond) // accepted in order
		}
		eventually(t, hangGuard, "evictions", func() bool { return b.Stats().InboundEvicted == 8 })
		for i, c := range idle[:8] {
			if !closedByPeer(c) {
				t.Fatalf("connection %d of 10 from one member IP still open", i)
			}
		}
		writeFrame(t, idle[9], "newest")
		if p := recv(t, b, hangGuard); string(p.Data) != "newest" {
			t.Fatalf("got %q", p.Data)
		}
		// The newest delivered: the member's older one is superseded.
		if !closedByPeer(idle[8]) {
			t.Fatal("the member's older connection still open after the newest delivered")
		}
		// Two members on 127.0.0.13: four connections.
		var shared []*net.TCPConn
		for range 4 {
			shared = append(shared, dialFrom(t, "127.0.0.13", b.LocalAddr()))
		}
		for i, c := range shared {
			writeFrame(t, c, "s")
			if p := recv(t, b, hangGuard); string(p.Data) != "s" {
				t.Fatalf("shared IP connection %d: %q", i, p.Data)
			}
		}
		// Members that share an IP cannot be told apart: none supersedes
		// another.
		eventually(t, hangGuard, "superseded released", func() bool { return b.Stats().Inbound == 5 })
		if st := b.Stats(); st.InboundEvicted != 8 || st.InboundSuperseded != 1 || st.Inbound != 5 {
			t.Fatalf("evicted %d superseded %d inbound %d, want 8, 1 and 1+4", st.InboundEvicted, st.InboundSuperseded, st.Inbound)
		}
	})
}

// Every read has a deadline: a connection that begins no frame is closed
// after IdleTimeout, one that stalls inside a frame after FrameTimeout, and
// the bytes it held are given back.
//
// Each deadline is tested on an endpoint where the other one is an hour,
// so a close within the test can only be the deadline under test: no two
// timers race, and the host's speed only decides how long the test takes.
func TestInboundDeadlines(t *testing.T) {
	k := &kit{t: t, real: true}
	t.Run("FrameTimeout", func(t *testing.T) {
		const frameTimeout = 200 * time.Millisecond
		b := k.open(Config{Listen: k.addr(1), Stream: StreamConfig{IdleTimeout: time.Hour, FrameTimeout: frameTimeout}})
		stalled := dialFrom(t, "127.0.0.11", b.LocalAddr())
		hdr := binary.BigEndian.AppendUint32(nil, 60000)
		start := time.Now()
		stalled.Write(append(hdr, make([]byte, 30000)...))
		// (That the bytes are counted while held is TestInboundBudget's:
		// here they are held for only 200 ms, which a loaded host's poll
		// can miss.)
		if !closedByPeer(stalled) {
			t.Fatal("a stalled frame's connection stayed open")
		}
		if d := time.Since(start); d < frameTimeout {
			t.Errorf("stalled frame closed %v after it began, before FrameTimeout %v", d, frameTimeout)
		}
		eventually(t, hangGuard, "timeout counted, bytes given back", func() bool {
			st := b.Stats()
			return st.StreamTimeouts == 1 && st.StreamBuffered == 0 && st.Inbound == 0
		})
	})
	t.Run("IdleTimeout", func(t *testing.T) {
		const idleTimeout = 300 * time.Millisecond
		b := k.open(Config{Listen: k.addr(1), Stream: StreamConfig{IdleTimeout: idleTimeout, FrameTimeout: time.Hour}})
		start := time.Now()
		idle := dialFrom(t, "127.0.0.11", b.LocalAddr())
		if !closedByPeer(idle) {
			t.Fatal("an idle connection stayed open")
		}
		if d := time.Since(start); d < idleTimeout {
			t.Errorf("idle connection closed after %v, before IdleTimeout %v", d, idleTimeout)
		}
		eventually(t, hangGuard, "timeout counted", func() bool {
			st := b.Stats()
			return st.StreamTimeouts == 1 && st.Inbound == 0
		})
	})
}

// Partly read frames hold MaxStreamBuffered bytes at most, all
// connections together; the connection that would take more is closed.
func TestInboundBudget(t *testing.T) {
	k := &kit{t: t, real: true}
	b := k.open(Config{Listen: k.addr(1)})
	n := MaxStreamBuffered/MaxStreamFrame + 8
	var conns []*net.TCPConn
	for range n {
		c := dialFrom(t, "127.0.0.11", b.LocalAddr())
		hdr := binary.BigEndian.AppendUint32(nil, MaxStreamFrame)
		c.Write(append(hdr, make([]byte, MaxStreamFrame-100)...))
		conns = append(conns, c)
	}
	eventually(t, hangGuard, "over budget", func() bool { return b.Stats().StreamOverBudget >= 8 })
	if st := b.Stats(); st.StreamBuffered > MaxStreamBuffered {
		t.Fatalf("%d bytes buffered, budget %d", st.StreamBuffered, MaxStreamBuffered)
	}
	for _, c := range conns {
		c.Close()
	}
	eventually(t, hangGuard, "all given back", func() bool { return b.Stats().StreamBuffered == 0 })
}

// An outbound link idle for half the IdleTimeout closes itself, and its
// next frame dials again (not counted as a reconnection after a failure).
//
// Two real timers, the link's and the acceptor's, are never raced: the
// acceptor here waits an hour, so a connection that ends within the test
// was ended by the link. That the link's wait is shorter than the
// acceptor's when both are configured alike is linkIdle's, checked without
// a clock; that the link waits that long at least is checked here (a timer
// never fires early).
func TestIdleLinkClosesItself(t *testing.T) {
	if c := (StreamConfig{IdleTimeout: time.Second}); c.linkIdle() >= c.IdleTimeout || c.linkIdle() <= 0 {
		t.Fatalf("an outbound link idles %v, the acceptor %v: the link must close first", c.linkIdle(), c.IdleTimeout)
	}
	eachImpl(t, func(t *testing.T, k *kit) {
		linkCfg := StreamConfig{IdleTimeout: time.Second}
		a := k.open(Config{Listen: k.addr(0), Stream: linkCfg})
		b := k.open(Config{Listen: k.addr(1), Stream: StreamConfig{IdleTimeout: time.Hour}})
		start := time.Now()
		mustSend(t, a.SendStream(b.LocalAddr(), []byte("one"), nil))
		recv(t, b, hangGuard)
		eventually(t, hangGuard, "idle link closed", func() bool {
			return !a.Stats().Links[0].Connected && b.Stats().Inbound == 0
		})
		if d := time.Since(start); d < linkCfg.linkIdle() {
			t.Errorf("the link closed %v after its frame, before its idle time %v", d, linkCfg.linkIdle())
		}
		mustSend(t, a.SendStream(b.LocalAddr(), []byte("two"), nil))
		if p := recv(t, b, hangGuard); string(p.Data) != "two" {
			t.Fatalf("got %q", p.Data)
		}
		if st := a.Stats(); st.Reconnects != 0 || st.SendErrors != 0 || b.Stats().StreamTimeouts != 0 {
			t.Fatalf("reconnects %d send errors %d, acceptor timeouts %d", st.Reconnects, st.SendErrors, b.Stats().StreamTimeouts)
		}
	})
}

// Datagrams from an address that is no member's are dropped unread, on
// the member socket and on the group socket alike; the members' arrive.
func TestUDPStrangersDropped(t *testing.T) {
	eachImpl(t, func(t *testing.T, k *kit) {
		group := testGroup(t)
		mc := func() *MulticastConfig {
			return &MulticastConfig{Group: group, Interface: "lo", TTL: 0, Loopback: true}
		}
		member := k.open(Config{Listen: k.addr(0), Multicast: mc()})
		stranger := k.open(Config{Listen: k.addr(2), Multicast: mc()})
		b := k.open(Config{Listen: k.addr(1), Multicast: mc(), Peers: []netip.AddrPort{member.LocalAddr()}})
		mustSend(t, stranger.Send(b.LocalAddr(), []byte("forged"), nil))
		mustSend(t, stranger.SendMulticast([]byte("forged"), nil))
		mustSend(t, member.Send(b.LocalAddr(), []byte("u"), nil))
		mustSend(t, member.SendMulticast([]byte("m"), nil))
		got := map[string]bool{}
		for range 2 {
			p := recv(t, b, hangGuard)
			if p.From != member.LocalAddr() {
				t.Fatalf("a stranger's datagram %q from %v was delivered", p.Data, p.From)
			}
			got[string(p.Data)] = true
		}
		quiet(t, b, 50*time.Millisecond)
		if st := b.Stats(); !got["u"] || !got["m"] || st.UDPStrangers != 2 || st.UDP.PacketsIn+st.Multicast.PacketsIn != 2 {
			t.Fatalf("got %v; strangers %d, in %d+%d", got, st.UDPStrangers, st.UDP.PacketsIn, st.Multicast.PacketsIn)
		}
	})
}
