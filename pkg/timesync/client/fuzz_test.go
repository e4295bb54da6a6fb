package client

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/corefuzz"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// FuzzClient drives an NTP client (two servers, a symmetric peer and a
// Cristian server) through a program read from the input, as anyone on
// the LAN could: NTP is unauthenticated by design, so any host can answer
// a poll with any header, and one that sees the poll (or guesses its
// transmit timestamp) passes the origin check. Answers echo the poll's
// transmit timestamp most of the time (so that they reach the filter, the
// selection and the servo), with timestamps from the edges (zero, the era
// boundaries, years off), any stratum, leap, poll, precision, root delay
// and dispersion, kiss codes; raw bytes of any length from any source;
// Cristian replies sealed with the cluster key; broadcasts (mode 5) from
// two broadcasters, signed, signed with the wrong secret or not at all,
// followed with or without --broadcast-insecure; restarts from the state
// the client saved. The client must never panic, never step the clock
// backwards nor more often than StepLimit, never ask for a frequency
// beyond ±500 ppm or a non-finite adjustment, and only ever send to its
// sources.
func FuzzClient(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 50, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 200, 1, 0, 0, 0, 0})
	f.Add([]byte("\x00\x20\x01\x00\x01\x02\x00\x00\x20\x01\x01\x01\x02\x00\x00\x20\x03\x00\x00\x30\x05"))
	f.Fuzz(func(t *testing.T, in []byte) { fuzzClientBody(t, in) })
}

// BenchmarkFuzzClient is FuzzClient's cost per execution (execs/s).
func BenchmarkFuzzClient(b *testing.B) {
	corefuzz.Bench(b, "FuzzClient", nil, fuzzClientBody)
}

// clientSteps bounds a program (corefuzz's doc, "What a program costs").
const clientSteps = 100

func fuzzClientBody(t testing.TB, in []byte) {
	p := corefuzz.NewProgram(in)
	servers := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:123"), netip.MustParseAddrPort("10.0.0.2:123")}
	peer := netip.MustParseAddrPort("10.0.0.3:123")
	cristianAddr := netip.MustParseAddrPort("10.0.0.4:7300")
	key := wire.Key{ID: 1, Secret: []byte("0123456789abcdef0123456789abcdef")}
	sources := append(append([]netip.AddrPort{}, servers...), peer, cristianAddr)
	cfg := DefaultLANConfig()
	cfg.Servers, cfg.Peers, cfg.CristianServers = servers, []netip.AddrPort{peer}, []netip.AddrPort{cristianAddr}
	cfg.ID, cfg.Cluster, cfg.Keys = 9, wire.ClusterID("synclab"), []wire.Key{key}
	cfg.MinPoll, cfg.MaxPoll, cfg.PollRangeSet = -2, 2, true
	cfg.BurstInterval, cfg.MinSamples = 300*time.Millisecond, 1+p.Intn(8)
	cfg.StepThreshold = time.Duration(p.Intn(2)) * 100 * time.Millisecond
	cfg.Rand = rand.New(rand.NewPCG(1, 2))
	cfg.Interleaved = p.Bool()
	ntpKey := wire.NTPKey{ID: 7, Type: "SHA1", Secret: []byte("broadcast-key")}
	wrongKey := wire.NTPKey{ID: 7, Type: "SHA1", Secret: []byte("not-the-key")}
	broadcasters := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.5:123"), netip.MustParseAddrPort("10.0.0.6:123")}
	cfg.Broadcast = BroadcastConfig{Enabled: true, Listen: "the fuzzer", Keys: []wire.NTPKey{ntpKey}, Insecure: p.Bool(),
		Timeout: 5 * time.Second, MaxBroadcasters: 1 + p.Intn(2)}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	sent := map[netip.AddrPort]wire.NTPTime{}  // each source's last poll, as the driver patched it
	nonce := map[netip.AddrPort]wire.NTPTime{} // its receive field: an interleaved answer's origin
	var state []byte
	offset := map[netip.AddrPort]time.Duration{} // each source's clock against ours, when sane
	for _, s := range append(append([]netip.AddrPort{}, sources...), broadcasters...) {
		offset[s] = time.Duration(p.Intn(2000)-1000) * time.Millisecond
		if p.Intn(4) == 0 {
			offset[s] = time.Duration(p.I64())
		}
	}
	steps := 0
	drain := func() {
		rd := c.Ready()
		for _, d := range rd.Datagrams {
			known := false
			for _, s := range sources {
				known = known || d.Addr == s
			}
			if !known {
				// A calibration request to a broadcaster it follows.
				for _, s := range c.Report().Sources {
					known = known || s.Mode == "broadcast" && s.Address == d.Addr.String()
				}
			}
			if !known {
				t.Fatalf("sent to %v, not a source", d.Addr)
			}
			// The driver patches the transmit timestamp in and
			// reports the send back.
			xmt := wire.NTPTimeFromTime(now)
			data := append([]byte(nil), d.Data...)
			switch {
			case wire.IsFrame(data) && len(data) >= wire.HeaderLen:
				wire.PatchXmt(data, xmt)
			case len(data) >= wire.NTPHeaderLen:
				binary.BigEndian.PutUint64(data[wire.NTPXmtOffset:], uint64(xmt))
			}
			sent[d.Addr] = xmt
			if !wire.IsFrame(data) && len(data) >= wire.NTPHeaderLen {
				nonce[d.Addr] = wire.NTPTime(binary.BigEndian.Uint64(data[wire.NTPXmtOffset-8:]))
			}
			_ = c.StepDatagram(core.Datagram{Addr: d.Addr, Data: data, Time: now, Local: true})
		}
		for _, a := range rd.Adjustments {
			switch a.Kind {
			case clock.AdjustStep:
				steps++
				if a.Offset <= 0 || cfg.StepThreshold == 0 || steps > cfg.StepLimit {
					t.Fatalf("step %d of %v (threshold %v, limit %d)", steps, a.Offset, cfg.StepThreshold, cfg.StepLimit)
				}
			case clock.AdjustFrequency:
				if math.IsNaN(a.PPM) || math.Abs(a.PPM) > 500 {
					t.Fatalf("frequency %g ppm", a.PPM)
				}
			case clock.AdjustSync:
				if a.EstError < 0 || a.MaxError < 0 {
					t.Fatalf("sync errors %v %v", a.EstError, a.MaxError)
				}
			}
		}
		if rd.State != nil {
			state = rd.State
		}
	}
	stamp := func() wire.NTPTime {
		switch p.Intn(8) {
		case 0:
			return 0
		case 1:
			return wire.NTPTime(p.U64())
		case 2:
			return wire.NTPTimeFromTime(now.Add(time.Duration(p.I64())))
		case 3:
			return wire.NTPTime(^uint64(0) - uint64(p.Intn(2)))
		}
		return wire.NTPTimeFromTime(now.Add(time.Duration(p.Intn(2000)-1000) * time.Millisecond))
	}
	reply := func(src netip.AddrPort, mode uint8) []byte {
		pkt := wire.NTPPacket{
			Leap: uint8(p.Intn(4)), Version: 4, Mode: mode, Stratum: uint8(p.Intn(3)),
			Poll: int8(p.Intn(256) - 128), Precision: int8(-p.Intn(32)),
			RootDelay: wire.NTPShort(p.Intn(1 << 16)), RootDispersion: wire.NTPShort(p.Intn(1 << 16)),
			ReferenceID: p.U32(), Reference: stamp(), Origin: sent[src], Receive: stamp(), Transmit: stamp(),
		}
		switch p.Intn(6) {
		case 5, 4:
			// A sane server, a fixed offset off: enough of these
			// reach the selection and the servo.
			pkt.Leap, pkt.Stratum, pkt.RootDelay, pkt.RootDispersion = 0, uint8(1+p.Intn(2)), wire.NTPShort(p.Intn(64)), wire.NTPShort(p.Intn(64))
			pkt.Receive = wire.NTPTimeFromTime(now.Add(offset[src]))
			pkt.Transmit, pkt.Reference = pkt.Receive, pkt.Receive
		case 0:
			pkt.Stratum = uint8(p.Intn(256))
		case 1:
			pkt.Stratum, pkt.ReferenceID = 0, []uint32{wire.RefIDFromText("RATE"), wire.RefIDFromText("DENY"), wire.RefIDFromText("RSTR"), p.U32()}[p.Intn(4)]
		}
		if p.Intn(8) == 0 {
			pkt.Origin = stamp()
		}
		if cfg.Interleaved && mode == wire.ModeServer && p.Intn(3) == 0 {
			// An interleaved answer (or a forgery of one): the origin
			// is the request's nonce.
			pkt.Origin = nonce[src]
		}
		if p.Intn(8) == 0 {
			pkt.Version = uint8(p.Intn(8))
		}
		b, err := pkt.AppendBinary(nil)
		if err != nil {
			return []byte{byte(p.Intn(256))}
		}
		if p.Intn(8) == 0 {
			b = append(b, make([]byte, p.Intn(80))...)
		}
		return b
	}
	for step := 0; p.More() && step < clientSteps; step++ {
		switch p.Intn(8) {
		case 7:
			src := broadcasters[p.Intn(2)]
			b := reply(src, wire.ModeBroadcast)
			switch p.Intn(4) {
			case 0:
			case 1:
				b = wire.AppendNTPMAC(b[:min(len(b), wire.NTPHeaderLen)], wrongKey)
			default:
				b = wire.AppendNTPMAC(b[:min(len(b), wire.NTPHeaderLen)], ntpKey)
			}
			_ = c.StepDatagram(core.Datagram{Addr: src, Data: b, Time: now.Add(time.Duration(p.Intn(5000)) * time.Microsecond)})
		case 0, 1:
			dt := time.Duration(p.Intn(3000)) * time.Millisecond
			if p.Intn(8) == 0 {
				dt = time.Duration(p.Intn(900)) * time.Second // a sleep, a suspended VM
			}
			now = now.Add(dt)
			c.Tick(now)
		case 2:
			// A server's answer, or a broadcaster's to a calibration request.
			src := append(append([]netip.AddrPort{}, servers...), broadcasters...)[p.Intn(4)]
			_ = c.StepDatagram(core.Datagram{Addr: src, Data: reply(src, wire.ModeServer), Time: now.Add(time.Duration(p.Intn(5000)) * time.Microsecond)})
		case 3:
			mode := []uint8{wire.ModeSymmetricActive, wire.ModeSymmetricPassive, uint8(p.Intn(8))}[p.Intn(3)]
			_ = c.StepDatagram(core.Datagram{Addr: peer, Data: reply(peer, mode), Time: now})
		case 4:
			src := sources[p.Intn(len(sources))]
			if p.Intn(4) == 0 {
				src = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(p.Intn(8))}), uint16(p.Intn(65536)))
			}
			raw := make([]byte, p.Intn(120))
			for i := range raw {
				raw[i] = byte(p.Intn(256))
			}
			if len(raw) > 2 && p.Bool() {
				raw[0], raw[1] = 'S', 'L'
			}
			_ = c.StepDatagram(core.Datagram{Addr: src, Data: raw, Time: now})
		case 5:
			tr := wire.TimeReply{Leap: uint8(p.Intn(4)), Stratum: uint8(p.Intn(17)), Precision: int8(-p.Intn(32)),
				RootDelay: wire.NTPShort(p.Intn(1 << 16)), RootDispersion: wire.NTPShort(p.Intn(1 << 16)), ReferenceID: p.U32(), Origin: sent[cristianAddr]}
			if p.Intn(4) == 0 {
				tr.Origin = stamp()
			}
			payload, _ := tr.AppendBinary(nil)
			fr := wire.Frame{Header: wire.Header{Kind: wire.KindTimeReply, Cluster: cfg.Cluster, Sender: 4, Receiver: 9,
				Seq: p.U64(), Xmt: stamp()}, Payload: payload}
			b, err := fr.AppendBinary(nil)
			if err != nil {
				t.Fatal(err)
			}
			if p.Intn(8) != 0 {
				b = wire.Seal(b, key)
			}
			_ = c.StepDatagram(core.Datagram{Addr: cristianAddr, Data: b, Time: now.Add(time.Duration(p.Intn(5000)) * time.Microsecond)})
		default:
			// A restart from what it saved.
			c, err = New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if state != nil {
				if err := c.Restore(state); err != nil {
					t.Fatalf("restore from its own state %x: %v", state, err)
				}
			}
			sent = map[netip.AddrPort]wire.NTPTime{}
			nonce = map[netip.AddrPort]wire.NTPTime{}
		}
		drain()
	}
	// The status at the end only: every state of a program is the last
	// of the program cut short there (corefuzz.Driver.Inspect).
	_ = c.Status()
}
