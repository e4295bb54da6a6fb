package diagram

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/wire"
)

// TestPeerFromPackets: a client's trace alone draws its NTP server: the
// reply's receive and transmit timestamps place the server's receive of
// the request and its send of the reply on a line of its own, in the
// server's clock; a request never answered stays a stub; a second trace
// of the same exchange from the server itself replaces the drawn line.
func TestPeerFromPackets(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ntp := func(mode uint8, org, rec, xmt time.Time) []byte {
		p := wire.NTPPacket{Version: 4, Mode: mode, Stratum: 2, Transmit: wire.NTPTimeFromTime(xmt)}
		if !org.IsZero() {
			p.Origin, p.Receive = wire.NTPTimeFromTime(org), wire.NTPTimeFromTime(rec)
		}
		b, err := p.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ev := func(at time.Time, kind string, data []byte, peer string) trace.Event {
		k, frame, fields := trace.NTPFields(data)
		if k != kind {
			t.Fatalf("kind %s, want %s", k, kind)
		}
		e := trace.Event{T: at, Kind: k, Frame: frame, Fields: fields, Peer: peer}
		if kind == "ntp_client" {
			e.Ev = trace.EvSend
		} else {
			e.Ev = trace.EvRecv
		}
		return e
	}
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	server := "192.0.2.1:123"
	// Server clock 40 ms behind: t2 and t3 read 40 ms less.
	client := &trace.File{Name: "client", Header: trace.Header{Version: 1, Daemon: "timed", Host: "c"}, Events: []trace.Event{
		ev(ms(0), "ntp_client", ntp(3, time.Time{}, time.Time{}, ms(0)), server),
		ev(ms(2), "ntp_server", ntp(4, ms(0), ms(-39), ms(-38)), server),
		ev(ms(1000), "ntp_client", ntp(3, time.Time{}, time.Time{}, ms(1000)), server), // lost
	}}
	d, err := Build([]*trace.File{client})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Procs) != 2 || d.label(0) != "ntp "+server && d.label(1) != "ntp "+server {
		t.Fatalf("lines %+v", d.Procs)
	}
	arrows, stubs := 0, 0
	for _, m := range d.Messages {
		switch {
		case m.Send >= 0 && m.Recv >= 0:
			arrows++
			if d.Groups[d.Events[m.Send].Group].Col >= d.Groups[d.Events[m.Recv].Group].Col {
				t.Errorf("%s drawn backwards", m.Frame)
			}
		case m.Recv < 0:
			stubs++
		}
	}
	if arrows != 2 || stubs != 1 {
		t.Errorf("%d arrows and %d stubs, want 2 (request, reply) and 1 (the lost request)", arrows, stubs)
	}
}
