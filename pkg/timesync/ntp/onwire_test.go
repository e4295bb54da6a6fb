package ntp

import (
	"errors"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/wire"
)

var serverSys = System{
	Stratum: 1, Precision: -20, RootDelay: 0, RootDispersion: us(100),
	ReferenceID: 0x47505300, // "GPS"
	Reference:   t0,
}

// roundTrip encodes and decodes p, as the daemon will.
func roundTrip(t *testing.T, p wire.NTPPacket) *wire.NTPPacket {
	t.Helper()
	b, err := p.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	var q wire.NTPPacket
	if err := q.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	return &q
}

// exchange runs one client/server exchange: the server is 100 ms ahead of
// the client, legs take 5 ms and 3 ms, the server holds 1 ms.
func exchange(t *testing.T, a *Association, clientT1 time.Time) (*wire.NTPPacket, time.Time) {
	t.Helper()
	req := roundTrip(t, a.Request(clientT1, 4, System{Precision: -20}))
	if req.Mode != wire.ModeClient || !req.Origin.IsZero() || !req.Receive.IsZero() {
		t.Fatalf("client request leaks state or has the wrong mode: %+v", req)
	}
	srvRecv := clientT1.Add(ms(105))
	rep, err := ServerReply(req, srvRecv, serverSys)
	if err != nil {
		t.Fatal(err)
	}
	rep.Transmit = wire.NTPTimeFromTime(srvRecv.Add(ms(1))) // the transport's stamp
	return roundTrip(t, rep), clientT1.Add(ms(9))
}

func TestClientExchange(t *testing.T) {
	a, err := NewAssociation(wire.ModeClient, us(1))
	if err != nil {
		t.Fatal(err)
	}
	rep, dst := exchange(t, a, t0)
	s, err := a.Receive(rep, dst)
	if err != nil {
		t.Fatal(err)
	}
	// offset = ((105-0) + (106-9))/2 = 101 ms (asymmetry 5 vs 3 ms costs
	// 1 ms); delay = 9 - 1 = 8 ms.
	if s.Offset != ms(101) || s.Delay != ms(8) || s.Time != dst {
		t.Errorf("sample %+v", s)
	}
	peer, ok := a.Peer()
	if !ok || peer.Stratum != 1 || peer.ReferenceID != serverSys.ReferenceID || peer.RootDispersion < us(99) {
		t.Errorf("peer %+v", peer)
	}
	// The same reply again: a duplicate.
	if _, err := a.Receive(rep, dst.Add(ms(1))); !errors.Is(err, ErrDuplicate) {
		t.Errorf("duplicate: %v", err)
	}
	// A different packet claiming to answer the same request: bogus
	// (each request is answered once).
	rep2 := *rep
	rep2.Transmit = rep2.Transmit.Add(ms(1))
	if _, err := a.Receive(&rep2, dst.Add(ms(2))); !errors.Is(err, ErrBogus) {
		t.Errorf("second answer: %v", err)
	}
}

func TestClientRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mangle func(p *wire.NTPPacket)
		want   error
	}{
		{"mode", func(p *wire.NTPPacket) { p.Mode = wire.ModeSymmetricActive }, ErrMode},
		{"version 0", func(p *wire.NTPPacket) { p.Version = 0 }, ErrVersion},
		{"version 5", func(p *wire.NTPPacket) { p.Version = 5 }, ErrVersion},
		{"zero transmit", func(p *wire.NTPPacket) { p.Transmit = 0 }, ErrZeroTransmit},
		{"zero origin", func(p *wire.NTPPacket) { p.Origin = 0 }, ErrZeroOrigin},
		{"wrong origin", func(p *wire.NTPPacket) { p.Origin++ }, ErrBogus},
		{"zero receive", func(p *wire.NTPPacket) { p.Receive = 0 }, ErrZeroTimestamp},
		{"leap 3", func(p *wire.NTPPacket) { p.Leap = wire.LeapNotInSync }, ErrUnsynchronized},
		{"stratum 16", func(p *wire.NTPPacket) { p.Stratum = 16 }, ErrStratum},
		{"root distance", func(p *wire.NTPPacket) { p.RootDispersion = wire.NTPShortFromDuration(2 * time.Second) }, ErrDistance},
	} {
		a, _ := NewAssociation(wire.ModeClient, us(1))
		rep, dst := exchange(t, a, t0)
		tc.mangle(rep)
		if _, err := a.Receive(rep, dst); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestKissOfDeath(t *testing.T) {
	a, _ := NewAssociation(wire.ModeClient, us(1))
	req := roundTrip(t, a.Request(t0, 4, System{}))
	kod := roundTrip(t, KissReply(req, t0.Add(ms(5)), "RATE"))
	_, err := a.Receive(kod, t0.Add(ms(10)))
	var kiss *KissError
	if !errors.As(err, &kiss) || kiss.Code != "RATE" || kiss.Stop() {
		t.Fatalf("got %v, want a RATE kiss", err)
	}
	// A forged kiss that does not echo our transmit timestamp is bogus,
	// not a kiss: it cannot make us stop.
	a.Request(t0.Add(time.Second), 4, System{})
	forged := *kod
	forged.Transmit = forged.Transmit.Add(ms(1))
	forged.ReferenceID = 0x44454e59 // "DENY"
	if _, err := a.Receive(&forged, t0.Add(time.Second+ms(5))); !errors.Is(err, ErrBogus) {
		t.Errorf("forged kiss: %v", err)
	}
}

// TestStratumZeroWithoutCode: an unsynchronised server that says stratum 0
// with leap 3 and no kiss code is unsynchronised, not a kiss-o'-death;
// stratum 0 with neither is an invalid stratum.
func TestStratumZeroWithoutCode(t *testing.T) {
	for _, tc := range []struct {
		leap uint8
		want error
	}{{wire.LeapNotInSync, ErrUnsynchronized}, {wire.LeapNone, ErrStratum}} {
		a, _ := NewAssociation(wire.ModeClient, us(1))
		req := roundTrip(t, a.Request(t0, 4, System{}))
		rep := roundTrip(t, KissReply(req, t0.Add(ms(5)), ""))
		rep.Leap = tc.leap
		_, err := a.Receive(rep, t0.Add(ms(10)))
		var kiss *KissError
		if !errors.Is(err, tc.want) || errors.As(err, &kiss) {
			t.Errorf("leap %d, stratum 0, no code: %v, want %v", tc.leap, err, tc.want)
		}
	}
}

// TestSymmetricStartup runs two symmetric peers that start at the same time
// and checks the org/rec bookkeeping: each one's first packet carries a
// zero origin (the other has sent nothing yet), both are refused but
// recorded, and from the next round on both compute samples.
func TestSymmetricStartup(t *testing.T) {
	a, _ := NewAssociation(wire.ModeSymmetricActive, us(1))
	b, _ := NewAssociation(wire.ModeSymmetricActive, us(1))
	const skew = 50 * time.Millisecond // B's clock is 50 ms ahead of A's
	const leg = 2 * time.Millisecond
	sysA, sysB := System{Stratum: 2, Precision: -20}, System{Stratum: 3, Precision: -20}
	// true time T; A reads T, B reads T+skew.
	T := t0
	pa := roundTrip(t, a.Request(T, 4, sysA))
	pb := roundTrip(t, b.Request(T.Add(skew), 4, sysB))
	if _, err := b.Receive(pa, T.Add(leg+skew)); !errors.Is(err, ErrZeroOrigin) {
		t.Fatalf("B's first receive: %v", err)
	}
	if _, err := a.Receive(pb, T.Add(leg)); !errors.Is(err, ErrZeroOrigin) {
		t.Fatalf("A's first receive: %v", err)
	}
	// One second later A polls again; its packet echoes B's transmit.
	T = T.Add(time.Second)
	pa = roundTrip(t, a.Request(T, 4, sysA))
	if pa.Origin != pb.Transmit {
		t.Fatalf("A's origin %v does not echo B's transmit %v", pa.Origin, pb.Transmit)
	}
	sb, err := b.Receive(pa, T.Add(leg+skew))
	if err != nil {
		t.Fatalf("B: %v", err)
	}
	// B's view: A is 50 ms behind. A held B's packet for 1 s - 2 ms
	// before answering; the formula removes that hold time.
	if sb.Offset != -skew || sb.Delay != 2*leg {
		t.Errorf("B's sample %+v, want offset -50ms delay 4ms", sb)
	}
	// B answers; A gets a sample too.
	T = T.Add(ms(10))
	pb = roundTrip(t, b.Request(T.Add(skew), 4, sysB))
	sa, err := a.Receive(pb, T.Add(leg))
	if err != nil {
		t.Fatalf("A: %v", err)
	}
	if sa.Offset != skew || sa.Delay != 2*leg {
		t.Errorf("A's sample %+v, want offset 50ms delay 4ms", sa)
	}
	if p, _ := a.Peer(); p.Stratum != 3 {
		t.Errorf("A's peer stratum %d", p.Stratum)
	}
	// The same packet again: a duplicate, refused before any state
	// changes.
	if _, err := a.Receive(pb, T.Add(leg+ms(1))); !errors.Is(err, ErrDuplicate) {
		t.Errorf("replay: %v", err)
	}
}

// TestSymmetricTimestampsKept: which of a peer's packets set the origin
// and receive timestamps our next packet echoes. Bogus packets do while
// nothing has answered our latest packet (only newer ones after the
// first); once one has, only newer answers replace it; our next packet
// starts over.
func TestSymmetricTimestampsKept(t *testing.T) {
	a, _ := NewAssociation(wire.ModeSymmetricActive, us(1))
	sys := System{Stratum: 2, Precision: -20}
	ours := roundTrip(t, a.Request(t0, 0, sys))
	pkt := func(origin wire.NTPTime, xmt time.Duration) *wire.NTPPacket {
		return &wire.NTPPacket{Version: 4, Mode: wire.ModeSymmetricActive, Stratum: 3,
			Origin: origin, Receive: ours.Transmit, Transmit: wire.NTPTimeFromTime(t0.Add(xmt))}
	}
	echoed := func() wire.NTPTime { return roundTrip(t, a.Request(t0.Add(time.Second), 0, sys)).Origin }
	// Two bogus packets: the newer one is kept, whatever the order.
	a.Receive(pkt(0, ms(20)), t0.Add(ms(21)))
	a.Receive(pkt(0, ms(10)), t0.Add(ms(22)))
	ours = roundTrip(t, a.Request(t0.Add(ms(30)), 0, sys))
	if ours.Origin != wire.NTPTimeFromTime(t0.Add(ms(20))) {
		t.Fatalf("echoed %v, want the newer bogus packet's transmit", ours.Origin)
	}
	// An answer displaces a newer bogus packet that came first, and a
	// bogus packet after the answer changes nothing.
	if _, err := a.Receive(pkt(0, time.Hour), t0.Add(ms(31))); !errors.Is(err, ErrZeroOrigin) {
		t.Fatal(err)
	}
	if _, err := a.Receive(pkt(ours.Transmit, ms(35)), t0.Add(ms(36))); err != nil {
		t.Fatalf("answer: %v", err)
	}
	if _, err := a.Receive(pkt(0, ms(40)), t0.Add(ms(41))); !errors.Is(err, ErrZeroOrigin) {
		t.Fatal(err)
	}
	// A second answer to the same packet: no sample, kept if newer.
	if _, err := a.Receive(pkt(ours.Transmit, ms(38)), t0.Add(ms(42))); !errors.Is(err, ErrBogus) {
		t.Fatalf("second answer: %v", err)
	}
	if got := echoed(); got != wire.NTPTimeFromTime(t0.Add(ms(38))) {
		t.Fatalf("echoed %v, want the newest answer's transmit (38 ms)", got)
	}
}

func TestSymmetricModes(t *testing.T) {
	if _, err := NewAssociation(wire.ModeServer, 1); !errors.Is(err, ErrMode) {
		t.Errorf("server association: %v", err)
	}
	p, _ := NewAssociation(wire.ModeSymmetricPassive, 1)
	pkt := roundTrip(t, p.Request(t0, 4, System{}))
	if _, err := p.Receive(pkt, t0); !errors.Is(err, ErrMode) {
		t.Errorf("passive to passive: %v", err)
	}
	pkt.Mode = wire.ModeServer
	if _, err := p.Receive(pkt, t0); !errors.Is(err, ErrMode) {
		t.Errorf("server packet to a peer: %v", err)
	}
}

func TestServerReply(t *testing.T) {
	req := &wire.NTPPacket{Version: 3, Mode: wire.ModeClient, Poll: 6, Transmit: wire.NTPTimeFromTime(t0)}
	rep, err := ServerReply(req, t0.Add(ms(3)), serverSys)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Version != 3 || rep.Mode != wire.ModeServer || rep.Poll != 6 || rep.Origin != req.Transmit ||
		rep.Receive != wire.NTPTimeFromTime(t0.Add(ms(3))) || rep.Stratum != 1 || rep.ReferenceID != serverSys.ReferenceID {
		t.Errorf("reply %+v", rep)
	}
	req.Mode = wire.ModeServer
	if _, err := ServerReply(req, t0, serverSys); !errors.Is(err, ErrMode) {
		t.Errorf("mode 4 request: %v", err)
	}
	req.Mode, req.Version = wire.ModeClient, 0
	if _, err := ServerReply(req, t0, serverSys); !errors.Is(err, ErrVersion) {
		t.Errorf("version 0 request: %v", err)
	}
	u := Unsynchronized(-20)
	if u.Leap != wire.LeapNotInSync || u.Stratum != 16 {
		t.Errorf("Unsynchronized %+v", u)
	}
}
