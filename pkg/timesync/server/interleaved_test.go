package server

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/ntp"
	"github.com/synclab/synclab/pkg/wire"
)

// xlDriver plays the daemon and the network for a server and its clients:
// the server is 100 ms ahead of every client, a request takes 5 ms to
// arrive, the server answers 1 ms after it came, and its answers leave
// lag after the time it would write into them (its send path).
type xlDriver struct {
	t   *testing.T
	s   *Server
	lag time.Duration
}

const xlAhead = 100 * time.Millisecond

// exchange sends a's request at client time t1 from addr and returns the
// answer as it arrives, when, and the datagram the server handed over.
func (x *xlDriver) exchange(a *ntp.Association, addr netip.AddrPort, t1 time.Time) (*wire.NTPPacket, time.Time, core.Datagram) {
	x.t.Helper()
	req := a.Request(t1, 0, ntp.System{Precision: -20})
	b, err := req.AppendBinary(nil)
	if err != nil {
		x.t.Fatal(err)
	}
	return x.send(b, addr, t1)
}

func (x *xlDriver) send(b []byte, addr netip.AddrPort, t1 time.Time) (*wire.NTPPacket, time.Time, core.Datagram) {
	x.t.Helper()
	recv := t1.Add(xlAhead + 5*time.Millisecond)
	ans, handled, err := x.s.Answer(core.Datagram{Addr: addr, Data: b, Time: recv}, nil)
	if !handled || err != nil || ans.Data == nil {
		x.t.Fatalf("no answer: %v %v", handled, err)
	}
	written := recv.Add(time.Millisecond)
	data := append([]byte(nil), ans.Data...)
	if ans.NTPStamp {
		// Even, as the daemon writes it (node.ntpXmt).
		binary.BigEndian.PutUint64(data[wire.NTPXmtOffset:], uint64(wire.NTPTimeFromTime(written)&^1))
	}
	left := written.Add(x.lag)
	if ans.TxStamp {
		x.s.AnswerSent(core.Datagram{Addr: addr, Data: data, Time: left, Local: true})
	}
	var p wire.NTPPacket
	if err := p.UnmarshalBinary(data); err != nil {
		x.t.Fatal(err)
	}
	return &p, left.Add(-xlAhead + 3*time.Millisecond), ans
}

func xleaveClient(t *testing.T) *ntp.Association {
	t.Helper()
	a, err := ntp.NewAssociation(wire.ModeClient, time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.EnableInterleaved(rand.New(rand.NewPCG(3, 4)).Uint64); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestInterleavedServer: timed's client in interleaved mode against timed's
// server. The first answer is basic (the request names no answer); the
// second is basic but its stamp is kept; from the third on each answer
// carries the stamp of the one before, written nowhere by the driver, and
// the client's offset no longer carries the send path.
func TestInterleavedServer(t *testing.T) {
	const lag = 50 * time.Microsecond
	x := &xlDriver{t: t, s: newServer(t, Config{LocalStratum: 8}), lag: lag}
	a := xleaveClient(t)
	for i := range 6 {
		t1 := t0.Add(time.Duration(i) * time.Second)
		rep, dst, ans := x.exchange(a, clientAddr, t1)
		if rep.Receive&1 != 1 {
			t.Errorf("answer %d: receive timestamp %x is not odd", i, rep.Receive)
		}
		s, err := a.Receive(rep, dst)
		switch i {
		case 0:
			if ans.TxStamp || !ans.NTPStamp || err != nil {
				t.Errorf("answer 0: stamp %v, patched %v, %v; want a plain basic answer", ans.TxStamp, ans.NTPStamp, err)
			}
		case 1:
			if !ans.TxStamp || !ans.NTPStamp || err != nil || s.Offset != xlAhead+time.Millisecond-lag/2 {
				t.Errorf("answer 1: stamp %v, patched %v, %v, offset %v; want basic (offset 1 ms - lag/2 off), its stamp kept", ans.TxStamp, ans.NTPStamp, err, s.Offset)
			}
		case 2:
			if !ans.TxStamp || ans.NTPStamp {
				t.Errorf("answer 2: stamp %v, patched %v; want interleaved, not patched", ans.TxStamp, ans.NTPStamp)
			}
		default:
			// offset = ((105 ms) + (T3' - T4))/2 where the answer left
			// 1 ms + lag after T2 and arrived 3 ms later: 101 ms, the
			// 2 ms asymmetry of the legs costing 1 ms, the lag nothing.
			if err != nil || s.Offset != xlAhead+time.Millisecond || s.Time.After(dst.Add(-time.Second/2)) {
				t.Errorf("answer %d: %+v, %v; want offset 101ms of the exchange before", i, s, err)
			}
		}
	}
	st := x.s.Report().Interleaved
	if st.Answers != 4 || st.Unknown != 1 || st.Kept != 1 || st.Saved != 5 || st.Evicted != 0 {
		t.Errorf("status %+v", st)
	}
}

// TestInterleavedServerAttacks reads each field of an interleaved request as
// a forger would write it.
func TestInterleavedServerAttacks(t *testing.T) {
	// ready returns a server holding a stamp for clientAddr's next
	// request, and that request.
	ready := func(t *testing.T) (*xlDriver, []byte) {
		x := &xlDriver{t: t, s: newServer(t, Config{LocalStratum: 8}), lag: 20 * time.Microsecond}
		a := xleaveClient(t)
		for i := range 2 {
			t1 := t0.Add(time.Duration(i) * time.Second)
			rep, dst, _ := x.exchange(a, clientAddr, t1)
			a.Receive(rep, dst)
		}
		req := a.Request(t0.Add(2*time.Second), 0, ntp.System{})
		b, _ := req.AppendBinary(nil)
		return x, b
	}
	t.Run("another address", func(t *testing.T) {
		x, b := ready(t)
		other := netip.MustParseAddrPort("10.77.0.9:123")
		if _, _, ans := x.send(b, other, t0.Add(2*time.Second)); !ans.NTPStamp {
			t.Error("another address got the client's stamp")
		}
		if _, _, ans := x.send(b, clientAddr, t0.Add(2*time.Second)); ans.NTPStamp {
			t.Error("the client lost its stamp to another address's request")
		}
	})
	t.Run("another port", func(t *testing.T) {
		// chronyd sends each request from a new port: the host counts.
		x, b := ready(t)
		if _, _, ans := x.send(b, netip.AddrPortFrom(clientAddr.Addr(), 50000), t0.Add(2*time.Second)); ans.NTPStamp {
			t.Error("the client's request from another port got no interleaved answer")
		}
	})
	t.Run("replay", func(t *testing.T) {
		x, b := ready(t)
		if _, _, ans := x.send(b, clientAddr, t0.Add(2*time.Second)); ans.NTPStamp {
			t.Fatal("no interleaved answer")
		}
		if _, _, ans := x.send(b, clientAddr, t0.Add(3*time.Second)); !ans.NTPStamp {
			t.Error("a stamp was given out twice")
		}
	})
	t.Run("version 3", func(t *testing.T) {
		x, b := ready(t)
		b[0] = b[0]&^0x38 | 3<<3
		if _, _, ans := x.send(b, clientAddr, t0.Add(2*time.Second)); !ans.NTPStamp || ans.TxStamp {
			t.Errorf("NTPv3: stamp %v patched %v; want a basic answer, nothing kept", ans.TxStamp, ans.NTPStamp)
		}
	})
	t.Run("RFC 5905 client", func(t *testing.T) {
		// ntpd's client sends our last transmit timestamp as origin and
		// its receive time: never a stamp of ours, often even.
		x := &xlDriver{t: t, s: newServer(t, Config{LocalStratum: 8})}
		var org wire.NTPTime
		for i := range 20 {
			p := wire.NTPPacket{Version: 4, Mode: wire.ModeClient, Origin: org, Receive: wire.NTPTime(1000 + i), Transmit: wire.NTPTime(5000 + i)}
			b, _ := p.AppendBinary(nil)
			rep, _, ans := x.send(b, clientAddr, t0.Add(time.Duration(i)*time.Second))
			if !ans.NTPStamp {
				t.Fatalf("request %d got an interleaved answer", i)
			}
			org = rep.Transmit
		}
		if st := x.s.Report().Interleaved; st.Answers != 0 || st.Saved != 0 || st.Unknown != 0 {
			t.Errorf("%+v; want no request taken for one in interleaved form", st)
		}
	})
	t.Run("flood", func(t *testing.T) {
		// Twice as many forged clients as the ring holds, each in
		// interleaved form: memory stays bounded, the oldest stamps go,
		// and the client whose stamp went gets a basic answer.
		x, b := ready(t)
		for i := range 2 * InterleavedStamps {
			p := wire.NTPPacket{Version: 4, Mode: wire.ModeClient, Origin: wire.NTPTime(2*i + 1), Receive: 7, Transmit: 9}
			fb, _ := p.AppendBinary(nil)
			addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 78, byte(i >> 8), byte(i)}), 123)
			x.send(fb, addr, t0.Add(2*time.Second+time.Duration(i)*time.Microsecond))
		}
		st := x.s.Report().Interleaved
		if st.Kept != InterleavedStamps || st.Evicted != st.Saved-InterleavedStamps || len(x.s.xl.index) != InterleavedStamps {
			t.Errorf("after the flood: %+v (index %d)", st, len(x.s.xl.index))
		}
		if _, _, ans := x.send(b, clientAddr, t0.Add(3*time.Second)); !ans.NTPStamp {
			t.Error("an evicted stamp was given out")
		}
	})
}

// TestInterleavedServerAllocs: answering in interleaved mode allocates
// nothing once the table is warm (the fast path's promise): a client whose
// every request names the answer before (a stamp taken, a stamp kept) and
// a forger whose every request names none (a stamp kept, never taken: the
// ring turns over three times, evicting). No rate limit, and a new time
// per request: with the default limit, all but 9 of the requests from
// one address at one instant were dropped before the interleaved path.
func TestInterleavedServerAllocs(t *testing.T) {
	x := &xlDriver{t: t, s: newServer(t, Config{LocalStratum: 8, RateLimit: RateLimit{Interval: -1}})}
	forger := netip.MustParseAddrPort("10.77.0.66:123")
	buf := make([]byte, 0, 128)
	req := make([]byte, 0, wire.NTPHeaderLen)
	var rx wire.NTPTime // the receive timestamp of our last answer to the client
	i := 0
	serve := func(from netip.AddrPort, origin wire.NTPTime) {
		i++
		at := t0.Add(time.Duration(i) * time.Microsecond)
		p := wire.NTPPacket{Version: 4, Mode: wire.ModeClient, Origin: origin, Receive: 7, Transmit: 9}
		req, _ = p.AppendBinary(req[:0])
		ans, _, err := x.s.Answer(core.Datagram{Addr: from, Data: req, Time: at}, buf)
		if err != nil || !ans.TxStamp {
			t.Fatalf("request %d: %v, stamp wanted %v", i, err, ans.TxStamp)
		}
		x.s.AnswerSent(core.Datagram{Addr: from, Data: ans.Data, Time: at.Add(time.Millisecond)})
		if from == clientAddr {
			rx = wire.NTPTime(binary.BigEndian.Uint64(ans.Data[wire.NTPXmtOffset-8:]))
		}
	}
	pair := func() {
		serve(clientAddr, rx)
		serve(forger, wire.NTPTime(2*i+1))
	}
	serve(clientAddr, 1) // the first names no answer
	// Fill the ring: from then on its slots alternate between the
	// client's (taken, empty) and the forger's (kept), and each pair
	// evicts one of the forger's stamps, so that an allocation on any of
	// the paths shows in every run (AllocsPerRun's average is rounded
	// down).
	const warm = InterleavedStamps
	for range warm {
		pair()
	}
	before := x.s.Report().Interleaved
	const runs = 2 * InterleavedStamps
	allocs := testing.AllocsPerRun(runs, pair)
	if allocs > 0 {
		t.Errorf("%v allocations per pair of interleaved requests", allocs)
	}
	// AllocsPerRun runs the function once more to warm up.
	st := x.s.Report().Interleaved
	if n := uint64(runs + 1); st.Answers-before.Answers != n || st.Evicted-before.Evicted != n || st.Unknown-before.Unknown != n {
		t.Errorf("status %+v, before the runs %+v; want %d more interleaved answers, evicted and unknown", st, before, n)
	}
}
