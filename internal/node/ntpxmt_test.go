package node

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/server"
	"github.com/synclab/synclab/pkg/wire"
)

// TestNTPTransmitStampsDistinct: NTP packets a node stamps with one clock
// reading (the answers of one datagram batch share it; a simulated node's
// sends of one instant too) leave with distinct transmit timestamps, each
// within a few units of the reading, so no two of them share a trace frame
// ID ("frame ntp:... sent twice") and no client drops one as a duplicate.
// A reading far behind the last stamp (the clock set back) is used as it
// is: the stamps never run ahead of the clock.
func TestNTPTransmitStampsDistinct(t *testing.T) {
	n, _ := newNode(t, 1, nil)
	stamp := func(at time.Time) wire.NTPTime {
		t.Helper()
		req := make([]byte, wire.NTPHeaderLen)
		req[0] = 4<<3 | byte(wire.ModeServer)
		b := n.FinishAnswer(Send{To: netip.MustParseAddrPort("127.0.0.50:40000"), Data: req, Datagram: true, NTPStamp: true}, at)
		return wire.NTPTime(binary.BigEndian.Uint64(b[wire.NTPXmtOffset:]))
	}
	seen := map[string]bool{}
	reading := wire.NTPTimeFromTime(t0)
	for i := range 64 {
		xmt := stamp(t0)
		if id := trace.NTPFrameID(xmt); seen[id] {
			t.Fatalf("answer %d of one batch: frame %s again", i, id)
		} else {
			seen[id] = true
		}
		if d := xmt - reading; d > 128 {
			t.Fatalf("answer %d: transmit time %d units after the reading, want at most 128", i, d)
		}
		if xmt&1 != 0 {
			t.Fatalf("answer %d: transmit time %x is odd", i, xmt)
		}
	}
	if later := t0.Add(time.Microsecond); stamp(later) != wire.NTPTimeFromTime(later)&^1 {
		t.Errorf("a later reading is not used as it is")
	}
	if back := t0.Add(-time.Second); stamp(back) != wire.NTPTimeFromTime(back)&^1 {
		t.Errorf("a clock set back by 1 s: stamp not the reading (stamps must not run ahead of the clock)")
	}
}

// TestRFC5905ClientNotInterleaved: an RFC 5905 client (ntpd) sends our
// last transmit timestamp as origin. timed's server takes a request for
// one in interleaved form by an odd origin (its receive timestamps are
// odd), so its transmit timestamps must be even: they were the clock
// reading, odd about half the time, and then about half of such a
// client's requests were taken for interleaved ones (a ring slot each, an
// older client's stamp evicted, the stamped write, counted unknown).
func TestRFC5905ClientNotInterleaved(t *testing.T) {
	srv, err := server.New(server.Config{LocalStratum: 8, RateLimit: server.RateLimit{Interval: -1}})
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(Config{ID: 1, Members: members, Cluster: "lab", Incarnation: 1}, srv)
	if err != nil {
		t.Fatal(err)
	}
	peer := netip.MustParseAddrPort("127.0.0.99:123")
	var org wire.NTPTime
	odd := 0
	for i := range 40 {
		req, _ := (&wire.NTPPacket{Version: 4, Mode: wire.ModeClient, Origin: org, Receive: wire.NTPTime(1000 + i), Transmit: wire.NTPTime(5000 + i)}).AppendBinary(nil)
		at := t0.Add(time.Duration(i)*time.Second + time.Duration(i)*time.Nanosecond)
		s, handled, err := n.Answer(Inbound{From: peer, Data: req, Time: at, Datagram: true}, make([]byte, 0, 128))
		if !handled || err != nil || s.Data == nil {
			t.Fatalf("request %d: %+v, %v, %v", i, s, handled, err)
		}
		if s.TxStamp {
			t.Errorf("request %d (origin %x, our last transmit timestamp) taken for one in interleaved form", i, org)
		}
		written := at.Add(time.Millisecond + time.Duration(i)*time.Nanosecond)
		if wire.NTPTimeFromTime(written)&1 == 1 {
			odd++
		}
		b := n.FinishAnswer(s, written)
		org = wire.NTPTime(binary.BigEndian.Uint64(b[wire.NTPXmtOffset:]))
		if s.TxStamp {
			srv.AnswerSent(core.Datagram{Addr: peer, Data: b, Time: written, Local: true})
		}
	}
	if odd == 0 {
		t.Fatal("no clock reading was odd: the test shows nothing")
	}
	if st := srv.Report().Interleaved; st.Saved != 0 || st.Unknown != 0 {
		t.Errorf("interleaved status %+v; want nothing saved, nothing unknown", st)
	}
}
