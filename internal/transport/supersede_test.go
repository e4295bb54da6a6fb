package transport

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// The thrash rule, both sides (SupersedeWindow, SupersedeThrash): a
// member that restarts supersedes its one connection left open; one whose
// writes time out (WriteTimeout, 1 s) supersedes at most one a second, and
// ten seconds of that in a minute is still no thrash; an eleventh within
// the minute is. A window with no more clears it.
func TestSupersedeThrashRule(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	peer := mustAP("127.0.0.11:0")
	var restart supersededRec
	restart.note(t0)
	if p := restart.stats(peer, t0); p.Thrashing || p.Recent != 1 || !p.Last.Equal(t0) {
		t.Fatalf("a restart's one supersede: %+v, want recent 1 and no thrash", p)
	}
	var timeouts supersededRec
	for i := range SupersedeThrash {
		timeouts.note(t0.Add(time.Duration(i) * DefaultWriteTimeout))
	}
	now := t0.Add(SupersedeThrash * DefaultWriteTimeout)
	if p := timeouts.stats(peer, now); p.Thrashing || p.Recent != SupersedeThrash {
		t.Fatalf("%d write timeouts a WriteTimeout apart: %+v, want no thrash", SupersedeThrash, p)
	}
	// Another ten seconds of timeouts, but in the next minute: the
	// first ten have left the window.
	for i := range SupersedeThrash {
		timeouts.note(t0.Add(SupersedeWindow + time.Duration(i)*DefaultWriteTimeout))
	}
	if p := timeouts.stats(peer, t0.Add(SupersedeWindow+SupersedeThrash*DefaultWriteTimeout)); p.Thrashing || p.Connections != 2*SupersedeThrash {
		t.Fatalf("ten timeouts in each of two minutes: %+v, want no thrash", p)
	}
	// A second process on the member's IP: a supersede at each frame of
	// either, here one every 100 ms.
	var thrash supersededRec
	for i := range SupersedeThrash + 1 {
		thrash.note(t0.Add(time.Duration(i) * 100 * time.Millisecond))
	}
	last := t0.Add(SupersedeThrash * 100 * time.Millisecond)
	if p := thrash.stats(peer, last); !p.Thrashing || p.Recent != SupersedeThrash+1 || !p.Last.Equal(last) {
		t.Fatalf("%d supersedes in a second: %+v, want thrashing", SupersedeThrash+1, p)
	}
	if p := thrash.stats(peer, t0.Add(SupersedeWindow-time.Millisecond)); !p.Thrashing {
		t.Fatalf("all within the window: %+v, want thrashing", p)
	}
	if p := thrash.stats(peer, t0.Add(SupersedeWindow)); p.Thrashing {
		t.Fatalf("the first out of the window, %d left in it: %+v, want no thrash", SupersedeThrash, p)
	}
	if p := thrash.stats(peer, last.Add(SupersedeWindow)); p.Thrashing || p.Recent != 0 || p.Connections != SupersedeThrash+1 {
		t.Fatalf("a window after the last: %+v, want cleared, the totals kept", p)
	}
}

// The rule on an endpoint (in-memory fabric, a fake clock): a process
// that dials from a member's address again and again supersedes its own
// connections, one per new connection's first frame; Stats.Superseding
// says so for that member (frames dropped included), and clears a window
// after it stops. Another member's entry is untouched.
func TestSupersedeThrashStats(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	k := &kit{t: t, mem: NewMemNetwork()}
	b := k.open(Config{Listen: k.addr(1), now: clock})
	be := b.(*endpoint)
	m, other := mustAP("127.0.0.11:7000"), mustAP("127.0.0.12:7000")
	dial := func(from netip.AddrPort) net.Conn { return pipeInbound(t, be, from) }
	o := dial(other)
	writeFrame(t, o, "other")
	recv(t, b, hangGuard)
	var prev net.Conn
	for i := range SupersedeThrash + 1 {
		c := dial(m)
		writeFrame(t, c, fmt.Sprint("f", i))
		if p := recv(t, b, hangGuard); string(p.Data) != fmt.Sprint("f", i) {
			t.Fatalf("got %q", p.Data)
		}
		if prev != nil && !closedByPeer(prev) {
			t.Fatalf("connection %d not reset by connection %d's frame", i-1, i)
		}
		if i == SupersedeThrash-1 {
			if ps := b.Superseding(); len(ps) != 1 || ps[0].Thrashing || ps[0].Connections != SupersedeThrash-1 {
				t.Fatalf("after %d supersedes: %+v, want %d and no thrash", SupersedeThrash-1, ps, SupersedeThrash-1)
			}
		}
		prev = c
		advance(time.Second)
	}
	// SupersedeThrash+1 connections, each superseded by the next: not
	// yet more than SupersedeThrash.
	eventually(t, hangGuard, "the superseded readers gone", func() bool { return b.Stats().Inbound == 2 })
	st := b.Stats()
	if len(st.Superseding) != 1 || st.Superseding[0].Peer != m || st.Superseding[0].Thrashing || st.Superseding[0].Connections != SupersedeThrash {
		t.Fatalf("superseding %+v, want member %v, %d connections, no thrash", st.Superseding, m, SupersedeThrash)
	}
	// One more: SupersedeThrash+1 within 11 s.
	c := dial(m)
	writeFrame(t, c, "last")
	recv(t, b, hangGuard)
	closedByPeer(prev)
	p := b.Superseding()[0]
	if !p.Thrashing || p.Recent != SupersedeThrash+1 {
		t.Fatalf("%+v, want thrashing", p)
	}
	advance(SupersedeWindow)
	if p := b.Superseding()[0]; p.Thrashing || p.Connections != SupersedeThrash+1 {
		t.Fatalf("a window after it stopped: %+v, want cleared", p)
	}
}

// A superseded connection's frames are counted, not only the one its
// reader held: those in its reader's buffer and in the kernel's receive
// queue too (real sockets). Whichever reader goes first, every frame of
// the older connection is either delivered or counted dropped.
func TestSupersededBacklogCounted(t *testing.T) {
	for run := range 5 {
		k := &kit{t: t, real: true}
		member := mustAP("127.0.0.11:7000")
		b := k.open(Config{Listen: k.addr(1), Peers: []netip.AddrPort{member}})
		be := b.(*endpoint)
		for full := false; !full; {
			select {
			case be.packets <- Packet{From: mustAP("127.0.0.99:1"), Data: []byte("filler")}:
			default:
				full = true
			}
		}
		const n = 10
		old := dialFrom(t, member.Addr().String(), b.LocalAddr())
		for i := range n {
			writeFrame(t, old, fmt.Sprintf("a%d%s", i, strings.Repeat(".", 4<<10)))
		}
		cur := dialFrom(t, member.Addr().String(), b.LocalAddr())
		writeFrame(t, cur, "b0")
		delivered := 0
		for {
			p := recv(t, b, hangGuard)
			if s := string(p.Data); s == "b0" {
				break
			} else if s[0] == 'a' {
				delivered++
			}
		}
		if !closedByPeer(old) {
			t.Fatal("the older connection not reset")
		}
		eventually(t, hangGuard, "the older reader gone", func() bool { return b.Stats().Inbound == 1 })
		st := b.Stats()
		t.Logf("run %d: %d of the older connection's frames delivered, %d counted dropped", run, delivered, st.SupersededFrames)
		if uint64(delivered)+st.SupersededFrames != n || st.InboundSuperseded != 1 {
			t.Fatalf("run %d: %d delivered + %d counted dropped, want %d; superseded %d", run, delivered, st.SupersededFrames, n, st.InboundSuperseded)
		}
		if ps := st.Superseding; len(ps) != 1 || ps[0].Frames != st.SupersededFrames || ps[0].Peer != netip.AddrPortFrom(member.Addr(), 0) {
			t.Fatalf("per member: %+v", ps)
		}
	}
}

// frameCount counts the frames begun in a stream cut anywhere.
func TestFrameCount(t *testing.T) {
	var w []byte
	for _, s := range []string{"abc", "", "defgh"} {
		w = append(w, byte(0), 0, 0, byte(len(s)))
		w = append(w, s...)
	}
	for cut := 0; cut <= len(w); cut++ {
		for split := 0; split <= cut; split++ {
			var fc frameCount
			fc.feed(w[:split])
			fc.feed(w[split:cut])
			want := uint64(0)
			for _, start := range []int{0, 7, 11} {
				if cut > start {
					want++
				}
			}
			if fc.frames != want {
				t.Fatalf("cut at %d (split %d): %d frames, want %d", cut, split, fc.frames, want)
			}
		}
	}
	fc := frameCount{frames: 1, left: 2} // a frame cut off with 2 bytes to come
	fc.feed([]byte{'x', 'y', 0, 0})
	if fc.frames != 2 {
		t.Fatalf("%d frames, want the cut one and one begun", fc.frames)
	}
}

// With Config.Supersedes, a newer connection from a member's address
// whose frames it refuses (another cluster's member on this port, a
// forger without the key) supersedes nothing: its frames are delivered
// for the consumer to refuse, the member's connection keeps delivering,
// and the member's next connection supersedes the refused one as any
// older connection.
func TestSupersedesRefusedFramesCostNothing(t *testing.T) {
	k := &kit{t: t, mem: NewMemNetwork()}
	accept := func(_ netip.AddrPort, b []byte) bool { return !strings.HasPrefix(string(b), "forged") }
	b := k.open(Config{Listen: k.addr(1), Supersedes: accept})
	be := b.(*endpoint)
	m := mustAP("127.0.0.11:7000")
	dial := func() net.Conn { return pipeInbound(t, be, m) }
	want := func(s string) { t.Helper(); wantFrame(t, b, s) }
	cur := dial()
	writeFrame(t, cur, "m-1")
	want("m-1")
	forged := dial()
	for i := range 3 {
		writeFrame(t, forged, fmt.Sprint("forged-", i))
		want(fmt.Sprint("forged-", i))
		writeFrame(t, cur, fmt.Sprint("m-", i+2))
		want(fmt.Sprint("m-", i+2))
	}
	if st := b.Stats(); st.InboundSuperseded != 0 || st.NotSuperseding != 3 {
		t.Fatalf("superseded %d, not superseding %d, want 0 and 3", st.InboundSuperseded, st.NotSuperseding)
	}
	redial := dial()
	writeFrame(t, redial, "m-5")
	want("m-5")
	if !closedByPeer(cur) || !closedByPeer(forged) {
		t.Fatal("the member's redial left an older connection open")
	}
	if st := b.Stats(); st.InboundSuperseded != 2 {
		t.Fatalf("superseded %d, want the member's old connection and the refused one", st.InboundSuperseded)
	}
}
