package transport

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
)

// The acceptor's rule, on the in-memory fabric (whose From is the dialer's
// member address): once a newer connection from a member has delivered a
// frame, the member's older connections are reset and deliver nothing
// more; another member's connection is untouched.
//
// A forger that opens a connection from the member's address (the
// transport cannot authenticate it) supersedes the member's connection
// with its first frame, costing the member that connection's backlog and
// a redial, never more: the member's next connection is newer and
// supersedes the forger's in turn.
func TestStreamNewerConnectionSupersedesOlder(t *testing.T) {
	k := &kit{t: t, mem: NewMemNetwork()}
	b := k.open(Config{Listen: k.addr(1)})
	be := b.(*endpoint)
	m, other := mustAP("127.0.0.11:7000"), mustAP("127.0.0.12:7000")
	dial := func(from netip.AddrPort) net.Conn { return pipeInbound(t, be, from) }
	want := func(s string) { t.Helper(); wantFrame(t, b, s) }
	old := dial(m)
	writeFrame(t, old, "old-1")
	want("old-1")
	o := dial(other)
	cur := dial(m)
	writeFrame(t, cur, "new-1")
	want("new-1")
	if !closedByPeer(old) {
		t.Fatal("the older connection is still open after the newer delivered")
	}
	writeFrame(t, o, "other")
	want("other")

	forged := dial(m)
	writeFrame(t, forged, "forged")
	want("forged") // the node, not the transport, refuses it
	if !closedByPeer(cur) {
		t.Fatal("the member's connection survived the forger's newer one")
	}
	redial := dial(m) // the member's link redials
	writeFrame(t, redial, "new-2")
	want("new-2")
	if !closedByPeer(forged) {
		t.Fatal("the forger's connection survived the member's redial")
	}
	writeFrame(t, redial, "new-3")
	want("new-3")
	if st := b.Stats(); st.InboundSuperseded != 3 {
		t.Fatalf("superseded %d, want 3", st.InboundSuperseded)
	}
}

// The same on real sockets: a connection opened from a member's IP by
// someone else (the transport cannot tell) supersedes the member's link
// with its first frame; the member's link sees the reset, redials, and its
// next frame supersedes the stranger's connection. The member loses what
// its old connection still held (nothing here) and a redial, not its
// stream.
func TestStreamStrangerFromMemberIPCostsOneRedial(t *testing.T) {
	k := &kit{t: t, real: true}
	a := k.open(Config{Listen: k.addr(0)})
	b := k.open(Config{Listen: k.addr(1), Peers: []netip.AddrPort{a.LocalAddr()}}) // as a daemon: its members known
	to := b.LocalAddr()
	mustSend(t, a.SendStream(to, []byte("m-1"), nil))
	if p := recv(t, b, hangGuard); string(p.Data) != "m-1" {
		t.Fatalf("got %q", p.Data)
	}
	f := dialFrom(t, a.LocalAddr().Addr().String(), to)
	writeFrame(t, f, "forged")
	if p := recv(t, b, hangGuard); string(p.Data) != "forged" {
		t.Fatalf("got %q", p.Data)
	}
	eventually(t, hangGuard, "the member's link reset", func() bool {
		ls := a.Stats().Links
		return len(ls) == 1 && !ls[0].Connected
	})
	mustSend(t, a.SendStream(to, []byte("m-2"), nil))
	if p := recv(t, b, hangGuard); string(p.Data) != "m-2" {
		t.Fatalf("got %q", p.Data)
	}
	if !closedByPeer(f) {
		t.Fatal("the stranger's connection survived the member's redial")
	}
	mustSend(t, a.SendStream(to, []byte("m-3"), nil))
	if p := recv(t, b, hangGuard); string(p.Data) != "m-3" {
		t.Fatalf("got %q", p.Data)
	}
	if st, as := b.Stats(), a.Stats(); st.InboundSuperseded != 2 || as.Reconnects != 1 || st.LastSuperseded.Addr() != a.LocalAddr().Addr() {
		t.Fatalf("superseded %d (want the member's, then the stranger's), the last from %v, member reconnects %d", st.InboundSuperseded, st.LastSuperseded, as.Reconnects)
	}
}

// A member's older connection holds frames already read (in its reader's
// buffer, one in hand waiting for room in Packets) when its newer one
// delivers: whichever reader goes first, no frame is delivered after one
// sent later and every frame of the newer connection is delivered.
func TestStreamSupersededBacklogNeverLate(t *testing.T) {
	for i := range 30 {
		k := &kit{t: t, mem: NewMemNetwork()}
		b := k.open(Config{Listen: k.addr(1)})
		be := b.(*endpoint)
		m := mustAP("127.0.0.11:7000")
		dial := func() net.Conn { return pipeInbound(t, be, m) }
		frames := func(names ...string) []byte {
			var w []byte
			for _, s := range names {
				w = binary.BigEndian.AppendUint32(w, uint32(len(s)))
				w = append(w, s...)
			}
			return w
		}
		filler := 0
		for full := false; !full; {
			select {
			case be.packets <- Packet{From: mustAP("127.0.0.99:1"), Data: []byte("filler")}:
				filler++
			default:
				full = true
			}
		}
		old, cur := dial(), dial()
		// One write each: the reader takes it all into its buffer (the
		// pipe's write returns once read), then waits to deliver.
		if _, err := old.Write(frames("1", "2", "3")); err != nil {
			t.Fatal(err)
		}
		if _, err := cur.Write(frames("4", "5")); err != nil {
			t.Fatal(err)
		}
		var got []string
		for len(got) == 0 || got[len(got)-1] != "5" {
			p := recv(t, b, hangGuard)
			if string(p.Data) != "filler" {
				got = append(got, string(p.Data))
			}
		}
		for j := 1; j < len(got); j++ {
			if got[j] <= got[j-1] {
				t.Fatalf("run %d: delivered %v: out of order", i, got)
			}
		}
		// The older reader, superseded, drops the frame in its hand
		// and what its buffer still holds, and counts both: every frame
		// of the older connection not delivered.
		n := len(got) - 2
		want := uint64(3 - n)
		// The older reader may not have had its turn yet: once it has
		// returned, nothing more may come.
		old.Close()
		eventually(t, hangGuard, "the older reader gone", func() bool { return b.Stats().Inbound == 1 })
		for more := true; more; {
			select {
			case p := <-b.Packets():
				t.Fatalf("run %d: %q delivered after %v", i, p.Data, got)
			default:
				more = false
			}
		}
		if st := b.Stats(); got[n] != "4" || st.SupersededFrames != want {
			t.Fatalf("run %d: delivered %v, %d dropped from the older connection, want 4 and 5 last, %d dropped", i, got, st.SupersededFrames, want)
		}
		if i < 3 {
			t.Logf("run %d: delivered %v, dropped %d (after %d fillers)", i, got, want, filler)
		}
	}
}

// pipeInbound hands endpoint e a connection from `from` over a pipe, as
// its acceptor would, and returns the dialling end.
func pipeInbound(t *testing.T, e *endpoint, from netip.AddrPort) net.Conn {
	t.Helper()
	a, c := net.Pipe()
	t.Cleanup(func() { a.Close() })
	if !e.serveInbound(c, from) {
		t.Fatal("not admitted")
	}
	return a
}

// wantFrame fails unless the next frame b delivers is s.
func wantFrame(t *testing.T, b Endpoint, s string) {
	t.Helper()
	if p := recv(t, b, hangGuard); string(p.Data) != s {
		t.Fatalf("got %q, want %q", p.Data, s)
	}
}
