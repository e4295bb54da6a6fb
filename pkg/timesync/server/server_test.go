package server

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/ntp"
	"github.com/synclab/synclab/pkg/wire"
)

var (
	clientAddr = netip.MustParseAddrPort("10.77.0.2:40123")
	// t0 is the server's local receive time of the first request.
	t0 = time.Date(2026, 11, 22, 9, 0, 0, 123456789, time.UTC)
	// t1 is the client's transmit time, in the client's request.
	t1 = wire.NTPTime(0xecc8_d5a0_1234_5678)
)

func request(version, mode uint8) []byte {
	p := wire.NTPPacket{Version: version, Mode: mode, Poll: 6, Precision: -24, Transmit: t1}
	b, err := p.AppendBinary(nil)
	if err != nil {
		panic(err)
	}
	return b
}

func newServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// one steps a datagram and returns the single reply (failing otherwise).
func one(t *testing.T, s *Server, d core.Datagram) (core.Datagram, wire.NTPPacket) {
	t.Helper()
	if err := s.StepDatagram(d); err != nil {
		t.Fatalf("StepDatagram: %v", err)
	}
	out := s.Ready().Datagrams
	if len(out) != 1 {
		t.Fatalf("%d replies, want 1", len(out))
	}
	var p wire.NTPPacket
	if err := p.UnmarshalBinary(out[0].Data); err != nil {
		t.Fatal(err)
	}
	if out[0].Addr != d.Addr {
		t.Errorf("reply to %v, want %v", out[0].Addr, d.Addr)
	}
	if len(out[0].Data) > len(d.Data) {
		t.Errorf("reply of %d bytes to a request of %d", len(out[0].Data), len(d.Data))
	}
	return out[0], p
}

// TestGoldenReply pins every byte of the reply of an unsynchronised server
// and of a local-stratum one to a v4 request and to a v3 request.
func TestGoldenReply(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		version uint8
		want    string // hex of the 48-byte reply before the transmit patch
	}{
		{
			// LI 3, VN 4, mode 4; stratum 16; poll 6 echoed; precision
			// -20; root delay/dispersion 0; refid "INIT"; reference 0;
			// origin = the request's transmit; receive = t0 made odd
			// (interleaved mode tells our receive timestamps by it);
			// transmit placeholder = t0.
			name: "unsynchronised v4", version: 4,
			want: "e41006ec" + "00000000" + "00000000" + "494e4954" + "0000000000000000" +
				"ecc8d5a012345678" + "eead2d9000000001" + "eead2d9000000000",
		},
		{
			// LI 0, VN 3 echoed; stratum 8; refid "LOCL"; reference = t0.
			name: "local stratum 8 v3", cfg: Config{LocalStratum: 8, Precision: -23}, version: 3,
			want: "1c0806e9" + "00000000" + "00000000" + "4c4f434c" + "eead2d9000000000" +
				"ecc8d5a012345678" + "eead2d9000000000" + "eead2d9000000000",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, tc.cfg)
			recv := t0.Truncate(time.Second) // whole seconds keep the fraction readable
			d, _ := one(t, s, core.Datagram{Addr: clientAddr, Data: request(tc.version, wire.ModeClient), Time: recv})
			if !d.NTPStamp {
				t.Error("a plain reply must ask for the transmit timestamp to be patched")
			}
			if got := hex.EncodeToString(d.Data); got != tc.want {
				t.Errorf("reply\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestReplyFields(t *testing.T) {
	upstream := netip.MustParseAddr("10.77.0.1")
	ref := t0.Add(-3 * time.Second)
	for _, tc := range []struct {
		name  string
		cfg   Config
		sys   *SystemState
		check func(t *testing.T, p wire.NTPPacket)
	}{
		{"unsynchronised", Config{}, nil, func(t *testing.T, p wire.NTPPacket) {
			if p.Leap != wire.LeapNotInSync || p.Stratum != 16 || wire.RefIDText(p.ReferenceID) != "INIT" {
				t.Errorf("leap %d stratum %d refid %q", p.Leap, p.Stratum, wire.RefIDText(p.ReferenceID))
			}
		}},
		{"local stratum", Config{LocalStratum: 8}, nil, func(t *testing.T, p wire.NTPPacket) {
			if p.Leap != wire.LeapNone || p.Stratum != 8 || wire.RefIDText(p.ReferenceID) != "LOCL" || p.Reference != wire.NTPTimeFromTime(t0) {
				t.Errorf("leap %d stratum %d refid %q reference %v", p.Leap, p.Stratum, wire.RefIDText(p.ReferenceID), p.Reference.Time())
			}
		}},
		{"local stratum 1 with a refid", Config{LocalStratum: 1, RefID: wire.RefIDFromText("GPS")}, nil, func(t *testing.T, p wire.NTPPacket) {
			if p.Stratum != 1 || wire.RefIDText(p.ReferenceID) != "GPS" {
				t.Errorf("stratum %d refid %q", p.Stratum, wire.RefIDText(p.ReferenceID))
			}
		}},
		{"synchronised to an upstream", Config{LocalStratum: 8}, &SystemState{
			Leap: wire.LeapNone, Stratum: 3, ReferenceID: wire.RefIDFromAddr(upstream), Reference: ref,
			RootDelay: 1500 * time.Microsecond, RootDispersion: 250 * time.Microsecond, Precision: -22,
		}, func(t *testing.T, p wire.NTPPacket) {
			if p.Leap != 0 || p.Stratum != 3 || RefIDString(p.Stratum, p.ReferenceID) != "10.77.0.1" || p.Precision != -22 {
				t.Errorf("leap %d stratum %d refid %s precision %d", p.Leap, p.Stratum, RefIDString(p.Stratum, p.ReferenceID), p.Precision)
			}
			if p.Reference != wire.NTPTimeFromTime(ref) {
				t.Errorf("reference %v, want %v", p.Reference.Time(), ref)
			}
			if d := p.RootDelay.Duration() - 1500*time.Microsecond; d < -16*time.Microsecond || d > 16*time.Microsecond {
				t.Errorf("root delay %v", p.RootDelay.Duration())
			}
			if d := p.RootDispersion.Duration() - 250*time.Microsecond; d < -16*time.Microsecond || d > 16*time.Microsecond {
				t.Errorf("root dispersion %v", p.RootDispersion.Duration())
			}
		}},
		{"discipline lost its sources: local stratum again", Config{LocalStratum: 8}, &SystemState{
			Leap: wire.LeapNotInSync, Stratum: 16,
		}, func(t *testing.T, p wire.NTPPacket) {
			if p.Leap != 0 || p.Stratum != 8 {
				t.Errorf("leap %d stratum %d", p.Leap, p.Stratum)
			}
		}},
		{"unsynchronised state without local stratum", Config{}, &SystemState{
			Leap: wire.LeapNone, Stratum: 0, ReferenceID: wire.RefIDFromAddr(upstream),
		}, func(t *testing.T, p wire.NTPPacket) {
			// Stratum 0 on the wire would be a kiss-o'-death.
			if p.Leap != wire.LeapNotInSync || p.Stratum != 16 {
				t.Errorf("leap %d stratum %d", p.Leap, p.Stratum)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, tc.cfg)
			if tc.sys != nil {
				if err := s.SetSystem(*tc.sys); err != nil {
					t.Fatal(err)
				}
			}
			_, p := one(t, s, core.Datagram{Addr: clientAddr, Data: request(4, wire.ModeClient), Time: t0})
			if p.Mode != wire.ModeServer || p.Version != 4 || p.Poll != 6 {
				t.Errorf("mode %d version %d poll %d", p.Mode, p.Version, p.Poll)
			}
			if p.Origin != t1 || p.Receive != wire.NTPTimeFromTime(t0) {
				t.Errorf("origin %x receive %v: want %x and %v", p.Origin, p.Receive.Time(), t1, t0)
			}
			tc.check(t, p)
		})
	}
}

func TestSetSystemRefusesBadLeap(t *testing.T) {
	s := newServer(t, Config{})
	if err := s.SetSystem(SystemState{Leap: 4, Stratum: 2}); !errors.Is(err, ErrSystem) {
		t.Fatalf("SetSystem(leap 4) = %v, want ErrSystem", err)
	}
	if sys := s.System(t0); sys.Stratum != 16 {
		t.Errorf("state changed by a refused SetSystem: %+v", sys)
	}
}

func TestDrops(t *testing.T) {
	withMAC := func(n int) []byte { return append(request(4, wire.ModeClient), make([]byte, n)...) }
	for _, tc := range []struct {
		name   string
		data   []byte
		addr   netip.AddrPort
		reason string
		err    error
	}{
		{"empty", nil, clientAddr, "short", ErrMalformed},
		{"47 bytes", request(4, wire.ModeClient)[:47], clientAddr, "short", ErrMalformed},
		{"not a multiple of 4", withMAC(2), clientAddr, "bad_length", ErrMalformed},
		{"digest too short", withMAC(12), clientAddr, "bad_length", ErrMalformed},
		{"version 2", request(2, wire.ModeClient), clientAddr, "bad_version", ErrVersion},
		{"version 5", request(5, wire.ModeClient), clientAddr, "bad_version", ErrVersion},
		{"mode 0", request(4, wire.ModeReserved), clientAddr, "mode_reserved", ErrMode},
		{"mode 1", request(4, wire.ModeSymmetricActive), clientAddr, "mode_symmetric_active", ErrMode},
		{"mode 2", request(4, wire.ModeSymmetricPassive), clientAddr, "mode_symmetric_passive", ErrMode},
		{"mode 4", request(4, wire.ModeServer), clientAddr, "mode_server", ErrMode},
		{"mode 5", request(4, wire.ModeBroadcast), clientAddr, "mode_broadcast", ErrMode},
		{"mode 6 (ntpq)", request(2, wire.ModeControl), clientAddr, "mode_control", ErrMode},
		{"mode 7 (monlist)", request(2, wire.ModePrivate), clientAddr, "mode_private", ErrMode},
		{"port 0", request(4, wire.ModeClient), netip.MustParseAddrPort("10.77.0.2:0"), "bad_source", ErrBadSource},
		{"multicast source", request(4, wire.ModeClient), netip.MustParseAddrPort("239.1.1.1:123"), "bad_source", ErrBadSource},
		{"broadcast source", request(4, wire.ModeClient), netip.MustParseAddrPort("255.255.255.255:123"), "bad_source", ErrBadSource},
		{"unspecified source", request(4, wire.ModeClient), netip.MustParseAddrPort("0.0.0.0:123"), "bad_source", ErrBadSource},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, Config{})
			err := s.StepDatagram(core.Datagram{Addr: tc.addr, Data: tc.data, Time: t0})
			var de *DropError
			if !errors.As(err, &de) || de.Reason != tc.reason || !errors.Is(err, tc.err) {
				t.Fatalf("StepDatagram = %v, want a DropError %q wrapping %v", err, tc.reason, tc.err)
			}
			if rd := s.Ready(); !rd.Empty() {
				t.Errorf("answered a dropped packet: %+v", rd)
			}
			st := s.Report()
			if st.Dropped[tc.reason] != 1 || st.Replies != 0 {
				t.Errorf("status %+v", st)
			}
		})
	}
}

func TestSentReportsAndFramesIgnored(t *testing.T) {
	s := newServer(t, Config{})
	if err := s.StepDatagram(core.Datagram{Addr: clientAddr, Data: request(4, wire.ModeServer), Time: t0, Local: true}); err != nil {
		t.Errorf("sent report: %v", err)
	}
	if err := s.Step(core.Message{}); !errors.Is(err, core.ErrUnexpectedKind) {
		t.Errorf("Step = %v", err)
	}
	if st := s.Report(); len(st.Dropped) != 0 || st.Requests != 0 {
		t.Errorf("sent report counted: %+v", st)
	}
}

func TestExtensionFieldsIgnored(t *testing.T) {
	s := newServer(t, Config{})
	// An NTPv4 request with a 28-byte extension field (type 0x0104,
	// length 28): answered with a bare header.
	ext := []byte{0x01, 0x04, 0x00, 0x1c}
	req := append(append(request(4, wire.ModeClient), ext...), make([]byte, 24)...)
	d, p := one(t, s, core.Datagram{Addr: clientAddr, Data: req, Time: t0})
	if len(d.Data) != wire.NTPHeaderLen || p.Origin != t1 {
		t.Errorf("reply of %d bytes, origin %x", len(d.Data), p.Origin)
	}
	if st := s.Report(); st.ExtensionsIgnored != 1 || st.Replies != 1 {
		t.Errorf("status %+v", st)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, cfg := range []Config{
		{LocalStratum: 16},
		{Precision: 3},
		{Precision: -40},
		{Keys: []wire.NTPKey{{ID: 0, Type: "MD5", Secret: []byte("x")}}},
		{Keys: []wire.NTPKey{{ID: 1, Type: "MD5", Secret: []byte("x")}, {ID: 1, Type: "MD5", Secret: []byte("y")}}},
		{RateLimit: RateLimit{Burst: -1}},
		{RateLimit: RateLimit{MaxClients: -1}},
		{RateLimit: RateLimit{KissInterval: -time.Second}},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
}

func TestRefIDString(t *testing.T) {
	for _, tc := range []struct {
		stratum uint8
		id      uint32
		want    string
	}{
		{1, wire.RefIDFromText("GPS"), "GPS"},
		{0, wire.RefIDFromText("RATE"), "RATE"},
		{16, wire.RefIDFromText("INIT"), "INIT"},
		{8, wire.RefIDFromText("LOCL"), "LOCL"},
		{2, wire.RefIDFromAddr(netip.MustParseAddr("10.77.0.1")), "10.77.0.1"},
		{3, wire.RefIDFromAddr(netip.MustParseAddr("127.127.1.1")), "127.127.1.1"},
		{1, 0, "0.0.0.0"},
	} {
		if got := RefIDString(tc.stratum, tc.id); got != tc.want {
			t.Errorf("RefIDString(%d, %08x) = %q, want %q", tc.stratum, tc.id, got, tc.want)
		}
	}
}

// The reply a client computes with is exactly what ntp.Association
// expects: the on-wire checks pass and the offset is the clocks'
// difference.
func TestReplyPassesClientOnWireChecks(t *testing.T) {
	s := newServer(t, Config{LocalStratum: 8})
	a, err := ntp.NewAssociation(wire.ModeClient, time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	const offset = -75 * time.Millisecond // server clock minus client clock
	clientSend := t0
	req := a.Request(clientSend, 0, ntp.Unsynchronized(-20))
	b, _ := req.AppendBinary(nil)
	serverRecv := clientSend.Add(100 * time.Microsecond).Add(offset)
	d, _ := one(t, s, core.Datagram{Addr: clientAddr, Data: b, Time: serverRecv})
	// The daemon patches the transmit time 20 us later.
	serverXmt := serverRecv.Add(20 * time.Microsecond)
	binary.BigEndian.PutUint64(d.Data[wire.NTPXmtOffset:], uint64(wire.NTPTimeFromTime(serverXmt)))
	var p wire.NTPPacket
	_ = p.UnmarshalBinary(d.Data)
	sample, err := a.Receive(&p, serverXmt.Add(-offset).Add(100*time.Microsecond))
	if err != nil {
		t.Fatalf("client refused the reply: %v", err)
	}
	if d := sample.Offset - offset; d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("offset %v, want %v", sample.Offset, offset)
	}
	if d := sample.Delay - 200*time.Microsecond; d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("delay %v, want 200us", sample.Delay)
	}
}

// TestAnswer: the daemon's fast path (core.Answerer) answers exactly as
// StepDatagram and Ready do, into the buffer it is given, allocating
// nothing for a plain request of a client the rate limiter already knows;
// a report of our own write is left to StepDatagram.
func TestAnswer(t *testing.T) {
	cfg := Config{LocalStratum: 8, RateLimit: RateLimit{Interval: time.Microsecond}}
	a, b := newServer(t, cfg), newServer(t, cfg)
	req := request(4, wire.ModeClient)
	d := core.Datagram{Addr: clientAddr, Data: req, Time: t0}
	want, _ := one(t, a, d)
	buf := make([]byte, 0, 128)
	got, handled, err := b.Answer(d, buf)
	if !handled || err != nil || string(got.Data) != string(want.Data) || got.Addr != want.Addr || !got.NTPStamp || &got.Data[0] != &buf[:1][0] {
		t.Fatalf("Answer = %+v, %v, %v; want %+v written into the buffer", got, handled, err, want)
	}
	if ra, rb := a.Report(), b.Report(); ra.Requests != rb.Requests || ra.Replies != rb.Replies {
		t.Errorf("counters differ: %+v and %+v", ra, rb)
	}
	if len(b.Ready().Datagrams) != 0 {
		t.Error("an answered request left a datagram in Ready")
	}
	now := t0
	allocs := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		if _, handled, err := b.Answer(core.Datagram{Addr: clientAddr, Data: req, Time: now}, buf); !handled || err != nil {
			t.Fatal(handled, err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per answer, want 0", allocs)
	}
	if _, handled, _ := b.Answer(core.Datagram{Addr: clientAddr, Data: req, Local: true}, buf); handled {
		t.Error("a sent report was answered")
	}
}
