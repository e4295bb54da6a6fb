package client_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/client"
	"github.com/synclab/synclab/pkg/timesync/ntp"
	"github.com/synclab/synclab/pkg/wire"
)

var (
	t0      = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	srvAddr = netip.MustParseAddrPort("10.0.0.2:123")
	peerAdr = netip.MustParseAddrPort("10.0.0.3:123")
)

// bench drives one client by hand: it plays the driver (ticks every 10 ms,
// patches transmit timestamps, reports them back) and lets the test play
// the network.
type bench struct {
	t   *testing.T
	c   *client.Client
	now time.Time // the local clock (never adjusted here)
	rd  core.Ready
	// sent are the datagrams written, as written (transmit patched).
	sent []core.Datagram
}

func newBench(t *testing.T, mut func(*client.Config)) *bench {
	t.Helper()
	cfg := client.DefaultLANConfig()
	cfg.Servers = []netip.AddrPort{srvAddr}
	if mut != nil {
		mut(&cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &bench{t: t, c: c, now: t0}
}

// drain takes the client's output and "writes" its datagrams at b.now + 1
// µs, reporting each transmit time back as the daemon does.
func (b *bench) drain() {
	b.t.Helper()
	rd := b.c.Ready()
	b.rd.Adjustments = append(b.rd.Adjustments, rd.Adjustments...)
	b.rd.Events = append(b.rd.Events, rd.Events...)
	if rd.State != nil {
		b.rd.State = rd.State
	}
	for _, d := range rd.Datagrams {
		if !d.NTPStamp {
			b.t.Fatalf("datagram to %v without NTPStamp", d.Addr)
		}
		at := b.now.Add(time.Microsecond)
		data := append([]byte(nil), d.Data...)
		binary.BigEndian.PutUint64(data[wire.NTPXmtOffset:], uint64(wire.NTPTimeFromTime(at)))
		w := core.Datagram{Addr: d.Addr, Data: data, Time: at, Local: true}
		if err := b.c.StepDatagram(w); err != nil {
			b.t.Fatalf("sent report: %v", err)
		}
		b.sent = append(b.sent, w)
	}
}

// tick advances the local clock by d in 10 ms ticks.
func (b *bench) tick(d time.Duration) {
	for end := b.now.Add(d); b.now.Before(end); {
		b.now = b.now.Add(10 * time.Millisecond)
		b.c.Tick(b.now)
		b.drain()
	}
}

// nextRequest ticks until the client sends a packet to to (at most 70 s)
// and returns it decoded.
func (b *bench) nextRequest(to netip.AddrPort) wire.NTPPacket {
	b.t.Helper()
	n := len(b.sent)
	for i := 0; i < 7000; i++ {
		for _, d := range b.sent[n:] {
			if d.Addr == to {
				var p wire.NTPPacket
				if err := p.UnmarshalBinary(d.Data); err != nil {
					b.t.Fatal(err)
				}
				return p
			}
		}
		n = len(b.sent)
		b.tick(10 * time.Millisecond)
	}
	b.t.Fatalf("no request to %v in 70 s", to)
	return wire.NTPPacket{}
}

// answer feeds the server's answer to req: the server's clock is ahead of
// ours by offset, each leg takes delay.
func (b *bench) answer(req wire.NTPPacket, offset, delay time.Duration, mut func(*wire.NTPPacket)) error {
	b.t.Helper()
	sent := req.Transmit.TimeNear(b.now)
	srvRecv := sent.Add(delay + offset)
	rep, err := ntp.ServerReply(&req, srvRecv, ntp.System{Stratum: 1, Precision: -20,
		ReferenceID: wire.RefIDFromText("GPS"), Reference: srvRecv})
	if err != nil {
		b.t.Fatal(err)
	}
	rep.Transmit = wire.NTPTimeFromTime(srvRecv.Add(10 * time.Microsecond))
	if mut != nil {
		mut(&rep)
	}
	data, err := rep.AppendBinary(nil)
	if err != nil {
		b.t.Fatal(err)
	}
	arrive := sent.Add(2*delay + 10*time.Microsecond)
	if arrive.After(b.now) {
		b.now = arrive
	}
	return b.c.StepDatagram(core.Datagram{Addr: srvAddr, Data: data, Time: arrive})
}

func (b *bench) events(name string) []core.Event {
	var out []core.Event
	for _, e := range b.rd.Events {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func TestConfigValidate(t *testing.T) {
	good := func() client.Config {
		c := client.DefaultLANConfig()
		c.Servers = []netip.AddrPort{srvAddr}
		return c
	}
	for _, tc := range []struct {
		name string
		mut  func(*client.Config)
		want string
	}{
		{"no sources", func(c *client.Config) { c.Servers = nil }, "no servers"},
		{"twice", func(c *client.Config) { c.Peers = []netip.AddrPort{srvAddr} }, "listed twice"},
		{"mapped twice", func(c *client.Config) {
			c.Peers = []netip.AddrPort{netip.MustParseAddrPort("[::ffff:10.0.0.2]:123")}
		}, "listed twice"},
		{"port 0", func(c *client.Config) { c.Servers = []netip.AddrPort{netip.MustParseAddrPort("10.0.0.2:0")} }, "port"},
		{"poll range", func(c *client.Config) { c.MinPoll, c.MaxPoll = 5, 3 }, "above MaxPoll"},
		{"poll too low", func(c *client.Config) { c.MinPoll = -5 }, "outside"},
		{"poll below ticks", func(c *client.Config) { c.MinPoll, c.TickInterval = -4, 50*time.Millisecond }, "two ticks"},
		{"step negative", func(c *client.Config) { c.StepThreshold = -1 }, "StepThreshold"},
		{"local stratum", func(c *client.Config) { c.LocalStratum = 16 }, "LocalStratum"},
		{"min samples", func(c *client.Config) { c.MinSamples = 9 }, "MinSamples"},
		{"frequency", func(c *client.Config) { c.Frequency = 600 }, "initial frequency"},
		{"xleave without servers", func(c *client.Config) { c.Servers, c.Peers, c.Interleaved = nil, []netip.AddrPort{peerAdr}, true }, "interleaved"},
		{"poll samples", func(c *client.Config) { c.PollSamples = client.MaxPollSamples + 1 }, "PollSamples"},
		{"poll samples negative", func(c *client.Config) { c.PollSamples = -1 }, "PollSamples"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good()
			tc.mut(&cfg)
			_, err := client.New(cfg)
			if !errors.Is(err, client.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrConfig about %q", err, tc.want)
			}
		})
	}
	// The zero value of every field but the sources means the LAN default.
	c, err := client.New(client.Config{Servers: []netip.AddrPort{srvAddr}})
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Report(); st.Sources[0].Poll != client.DefaultMinPoll {
		t.Fatalf("default poll %d", st.Sources[0].Poll)
	}
}

// TestPollRangeZeroGiven: --minpoll 0 --maxpoll 0 polls every second for
// good, even when the server stops answering (an unanswered source backs
// off up to MaxPoll); both zero is not "unset" when given.
func TestPollRangeZeroGiven(t *testing.T) {
	b := newBench(t, func(c *client.Config) { c.MinPoll, c.MaxPoll, c.PollRangeSet = 0, 0, true })
	var times []time.Time
	for range 60 {
		b.nextRequest(srvAddr)
		times = append(times, b.now)
	}
	for i := 20; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap > time.Second+time.Second/32+10*time.Millisecond {
			t.Fatalf("poll %d came %v after the one before: the poll range 0..0 was not kept", i, gap)
		}
	}
	if p := b.c.Report().Sources[0].Poll; p != 0 {
		t.Fatalf("poll exponent %d after 60 polls, want 0", p)
	}
}

// TestBurstThenPoll: a burst of 8 mode-3 requests 500 ms apart (plus up to
// 1/32 of jitter), then one per 2^MinPoll s while the server answers;
// requests leak no state.
func TestBurstThenPoll(t *testing.T) {
	b := newBench(t, nil)
	var times []time.Time
	for range 11 {
		p := b.nextRequest(srvAddr)
		if p.Mode != wire.ModeClient || p.Version != 4 || !p.Origin.IsZero() || !p.Receive.IsZero() || p.Stratum != 0 {
			t.Fatalf("request %+v", p)
		}
		if len(times) == 0 && p.Leap != wire.LeapNotInSync {
			t.Fatalf("an unsynchronised client says leap %d", p.Leap)
		}
		times = append(times, b.now)
		if err := b.answer(p, 0, 100*time.Microsecond, nil); err != nil { // else the poll backs off
			t.Fatal(err)
		}
	}
	if first := times[0].Sub(t0); first > client.DefaultBurstInterval/4+10*time.Millisecond {
		t.Fatalf("first request after %v", first)
	}
	for i := 1; i < len(times); i++ {
		gap := times[i].Sub(times[i-1])
		want := client.DefaultBurstInterval
		if i >= client.DefaultBurst {
			want = time.Second
		}
		if gap < want || gap > want+want/32+10*time.Millisecond {
			t.Fatalf("gap %d is %v, want about %v", i, gap, want)
		}
	}
}

// TestExchangePipeline feeds a server's answers by hand: the server is 5 ms
// ahead, 200 µs each way. After MinSamples answers the client selects it and
// slews 5 ms forward, sets the frequency and reports its error bound; the
// status shows the whole picture.
func TestExchangePipeline(t *testing.T) {
	b := newBench(t, nil)
	const off = 5 * time.Millisecond
	for i := range client.DefaultMinSamples {
		if err := b.answer(b.nextRequest(srvAddr), off, 200*time.Microsecond, nil); err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		if i < client.DefaultMinSamples-1 {
			b.tick(10 * time.Millisecond)
			if len(b.rd.Adjustments) != 0 {
				t.Fatalf("adjusted after %d samples: %+v", i+1, b.rd.Adjustments)
			}
			if v := b.c.Report().Sources[0].Verdict; v != "collecting" {
				t.Fatalf("verdict with %d samples: %s", i+1, v)
			}
		}
	}
	b.tick(10 * time.Millisecond)
	kinds := map[clock.AdjustKind]clock.Adjustment{}
	for _, a := range b.rd.Adjustments {
		kinds[a.Kind] = a
	}
	slew, ok := kinds[clock.AdjustSlew]
	if !ok || (slew.Offset-off).Abs() > 20*time.Microsecond {
		t.Fatalf("adjustments %+v, want a slew of about %v", b.rd.Adjustments, off)
	}
	if _, ok := kinds[clock.AdjustFrequency]; !ok {
		t.Fatal("no frequency adjustment at the first update")
	}
	if s := kinds[clock.AdjustSync]; !s.Synced || s.MaxError < off {
		t.Fatalf("sync adjustment %+v", s)
	}
	if len(b.events(client.EventSynchronized)) != 1 || len(b.events(client.EventSysPeer)) != 1 {
		t.Fatalf("events %+v", b.rd.Events)
	}
	st := b.c.Report()
	src := st.Sources[0]
	if !st.Synchronized || st.SysPeer != srvAddr.String() || st.Stratum != 2 || st.ReferenceID != "10.0.0.2" ||
		src.Verdict != "sys_peer" || src.Reach != "37" || src.Stratum != 1 || src.ReferenceID != "GPS" ||
		time.Duration(src.OffsetNS)-off > 20*time.Microsecond || src.DelayNS < int64(400*time.Microsecond) {
		t.Fatalf("status %+v\nsource %+v", st, src)
	}
	if st.ErrorBoundNS < int64(off) || st.BoundLowNS > int64(off) || st.BoundHighNS < int64(off) {
		t.Fatalf("bound [%d, %d] ns (±%d) does not hold the 5 ms offset", st.BoundLowNS, st.BoundHighNS, st.ErrorBoundNS)
	}
	// What the server core is to advertise: one stratum below the source,
	// its address as reference ID, its delay in the root delay.
	if sys := b.c.System(b.now); sys.Stratum != 2 || sys.Leap != wire.LeapNone ||
		sys.ReferenceID != wire.RefIDFromAddr(srvAddr.Addr()) || sys.RootDelay < 400*time.Microsecond {
		t.Fatalf("system %+v", sys)
	}
	// A synchronised client says so in its requests.
	if p := b.nextRequest(srvAddr); p.Leap != wire.LeapNone {
		t.Fatalf("synchronised client sends leap %d", p.Leap)
	}
}

// TestOnWireRejections: duplicates, bogus origins, strangers, wrong modes
// and runts are refused with typed errors and counted; the transmit time
// the driver reports replaces the one the client put in the request.
func TestOnWireRejections(t *testing.T) {
	b := newBench(t, nil)
	req := b.nextRequest(srvAddr)

	// The bytes the client produced carried a placeholder; an answer
	// echoing it is not an answer to what was sent.
	placeholder := req
	placeholder.Transmit = wire.NTPTimeFromTime(b.now) // what Request wrote at the tick
	if err := b.answer(placeholder, 0, 100*time.Microsecond, nil); !errors.Is(err, ntp.ErrBogus) {
		t.Fatalf("answer to the unpatched timestamp: %v", err)
	}
	if err := b.answer(req, 0, 100*time.Microsecond, nil); err != nil {
		t.Fatalf("good answer: %v", err)
	}
	// The same answer again.
	if err := b.answer(req, 0, 100*time.Microsecond, nil); !errors.Is(err, ntp.ErrDuplicate) {
		t.Fatalf("duplicate: %v", err)
	}
	// A forged answer to a request never sent.
	forged := req
	forged.Transmit = wire.NTPTimeFromTime(b.now.Add(time.Hour))
	if err := b.answer(forged, 0, 100*time.Microsecond, nil); !errors.Is(err, ntp.ErrBogus) {
		t.Fatalf("forged: %v", err)
	}
	// An unsynchronised server.
	req = b.nextRequest(srvAddr)
	if err := b.answer(req, 0, 100*time.Microsecond, func(p *wire.NTPPacket) { p.Leap = wire.LeapNotInSync }); !errors.Is(err, ntp.ErrUnsynchronized) {
		t.Fatalf("leap 3: %v", err)
	}

	pkt := func(mode uint8) []byte {
		p := wire.NTPPacket{Version: 4, Mode: mode, Transmit: wire.NTPTimeFromTime(b.now)}
		d, _ := p.AppendBinary(nil)
		return d
	}
	stranger := netip.MustParseAddrPort("10.0.0.9:123")
	for _, tc := range []struct {
		name string
		d    core.Datagram
		want error
	}{
		{"stranger answer", core.Datagram{Addr: stranger, Data: pkt(wire.ModeServer)}, client.ErrUnknownSource},
		{"stranger peer", core.Datagram{Addr: stranger, Data: pkt(wire.ModeSymmetricActive)}, client.ErrUnknownSource},
		{"request to us", core.Datagram{Addr: srvAddr, Data: pkt(wire.ModeClient)}, client.ErrUnexpectedMode},
		{"server as peer", core.Datagram{Addr: srvAddr, Data: pkt(wire.ModeSymmetricActive)}, client.ErrUnexpectedMode},
		{"runt", core.Datagram{Addr: srvAddr, Data: pkt(wire.ModeServer)[:47]}, client.ErrMalformed},
	} {
		if err := b.c.StepDatagram(tc.d); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := b.c.Step(core.Message{Kind: wire.KindHeartbeat}); !errors.Is(err, core.ErrUnexpectedKind) {
		t.Errorf("Step: %v", err)
	}
	st := b.c.Report()
	for k, want := range map[string]uint64{
		"accepted": 1, "rejected_bogus": 2, "rejected_duplicate": 1, "rejected_unsynchronized": 1,
		"unknown_source": 1, "stranger_peer": 1, "unexpected_mode": 2, "malformed": 1,
	} {
		if st.Counters[k] != want {
			t.Errorf("counter %s = %d, want %d (all: %v)", k, st.Counters[k], want, st.Counters)
		}
	}
	if !strings.Contains(st.Sources[0].LastError, "mode") {
		t.Errorf("last error %q", st.Sources[0].LastError)
	}
}

// TestKissRate: a RATE kiss raises the source's poll above both ours and the
// one the server asks for; requests then come no faster.
func TestKissRate(t *testing.T) {
	b := newBench(t, nil)
	req := b.nextRequest(srvAddr)
	err := b.answer(req, 0, 100*time.Microsecond, func(p *wire.NTPPacket) {
		*p = ntp.KissReply(&req, b.now, "RATE")
		p.Poll = 3 // the server wants 8 s
	})
	var kiss *ntp.KissError
	if !errors.As(err, &kiss) || kiss.Code != "RATE" {
		t.Fatalf("kiss: %v", err)
	}
	kissAt := b.now
	next := b.nextRequest(srvAddr)
	if gap := b.now.Sub(kissAt); gap < 16*time.Second-time.Second || next.Poll != 4 {
		t.Fatalf("after RATE: next request after %v with poll %d, want 2^4 s", gap, next.Poll)
	}
	if len(b.events(client.EventKiss)) != 1 || b.c.Report().Sources[0].Poll != 4 {
		t.Fatalf("events %+v", b.rd.Events)
	}
	// A server asking for an absurd poll gets the protocol's maximum, not
	// a wrapped int8.
	err = b.answer(next, 0, 100*time.Microsecond, func(p *wire.NTPPacket) {
		*p = ntp.KissReply(&next, b.now, "RATE")
		p.Poll = 127
	})
	if !errors.As(err, &kiss) || b.c.Report().Sources[0].Poll != ntp.MaxPollLimit {
		t.Fatalf("RATE with poll 127: %v, poll %d", err, b.c.Report().Sources[0].Poll)
	}
}

// TestKissDeny: DENY stops polling the source for good, and status says so.
func TestKissDeny(t *testing.T) {
	b := newBench(t, nil)
	req := b.nextRequest(srvAddr)
	err := b.answer(req, 0, 100*time.Microsecond, func(p *wire.NTPPacket) { *p = ntp.KissReply(&req, b.now, "DENY") })
	var kiss *ntp.KissError
	if !errors.As(err, &kiss) || !kiss.Stop() {
		t.Fatalf("kiss: %v", err)
	}
	n := len(b.sent)
	b.tick(2 * time.Minute)
	if len(b.sent) != n {
		t.Fatalf("%d requests after DENY", len(b.sent)-n)
	}
	if err := b.answer(req, 0, 100*time.Microsecond, nil); !errors.Is(err, client.ErrStopped) {
		t.Fatalf("packet after DENY: %v", err)
	}
	src := b.c.Report().Sources[0]
	if src.Verdict != "stopped" || !strings.Contains(src.Why, "DENY") {
		t.Fatalf("source %+v", src)
	}
}

// TestUnreachable: a source that stops answering is reported unreachable
// once the reach register empties (8 polls), with an event.
func TestUnreachable(t *testing.T) {
	b := newBench(t, nil)
	if err := b.answer(b.nextRequest(srvAddr), 0, 100*time.Microsecond, nil); err != nil {
		t.Fatal(err)
	}
	b.tick(10 * time.Millisecond)
	if len(b.events(client.EventReachable)) != 1 {
		t.Fatalf("events %+v", b.rd.Events)
	}
	for range 8 {
		b.nextRequest(srvAddr)
	}
	b.tick(10 * time.Millisecond)
	src := b.c.Report().Sources[0]
	if len(b.events(client.EventUnreachable)) != 1 || src.Reach != "0" || src.Verdict != "unreachable" {
		t.Fatalf("after 8 unanswered polls: %+v, events %+v", src, b.rd.Events)
	}
}

// TestSymmetricPeer: RFC 5905 symmetric mode with a configured peer. Our
// packets are mode 1 at our own poll interval, carrying our system state
// and, as origin and receive timestamps, the peer's latest packet and when
// it came; nothing is sent in answer to a peer's packet. A peer's packet
// gives a sample when it answers our latest one (mode 1 from a peer that
// polls too, or mode 2 from an ntpd-style passive one), once; crossed
// packets give none, but their timestamps go back in our next packet.
func TestSymmetricPeer(t *testing.T) {
	b := newBench(t, func(c *client.Config) {
		c.Servers, c.Peers, c.LocalStratum = nil, []netip.AddrPort{peerAdr}, 7
	})
	own := b.nextRequest(peerAdr)
	if own.Mode != wire.ModeSymmetricActive || own.Stratum != 7 || own.Leap != wire.LeapNone ||
		wire.RefIDText(own.ReferenceID) != "LOCL" || !own.Origin.IsZero() || !own.Receive.IsZero() {
		t.Fatalf("own first packet %+v", own)
	}
	send := func(p wire.NTPPacket, dst time.Time) error {
		data, _ := p.AppendBinary(nil)
		n := len(b.sent)
		err := b.c.StepDatagram(core.Datagram{Addr: peerAdr, Data: data, Time: dst})
		b.drain()
		if len(b.sent) != n {
			t.Fatalf("%d packets sent in answer to a peer's packet: symmetric mode answers at its own poll", len(b.sent)-n)
		}
		return err
	}
	// The peer started at the same time: its first packet has not heard
	// from us (origin 0). No sample, but it is what we echo next.
	theirs := wire.NTPPacket{Version: 4, Mode: wire.ModeSymmetricActive, Stratum: 8, Poll: 0,
		Transmit: wire.NTPTimeFromTime(b.now.Add(-3 * time.Millisecond))}
	dst := b.now.Add(time.Millisecond)
	if err := send(theirs, dst); !errors.Is(err, ntp.ErrZeroOrigin) {
		t.Fatalf("peer's first packet: %v", err)
	}
	own = b.nextRequest(peerAdr)
	if own.Origin != theirs.Transmit || own.Receive != wire.NTPTimeFromTime(dst) || own.Mode != wire.ModeSymmetricActive {
		t.Fatalf("our next packet %+v does not echo the peer's (xmt %v, received %v)", own, theirs.Transmit, dst)
	}
	// The peer's next packet answers ours: a sample.
	answer := func(mode uint8, after time.Duration) wire.NTPPacket {
		return wire.NTPPacket{Version: 4, Mode: mode, Stratum: 8, Poll: 0, ReferenceID: wire.RefIDFromText("LOCL"),
			Origin: own.Transmit, Receive: own.Transmit.Add(time.Millisecond), Transmit: own.Transmit.Add(after)}
	}
	a1 := answer(wire.ModeSymmetricActive, 300*time.Millisecond)
	if err := send(a1, b.now.Add(300*time.Millisecond)); err != nil {
		t.Fatalf("peer's answer: %v", err)
	}
	// The same packet again is a duplicate; another one answering the
	// same packet of ours gives no second sample, but it is newer, so it
	// is what our next packet echoes.
	if err := send(a1, b.now.Add(301*time.Millisecond)); !errors.Is(err, ntp.ErrDuplicate) {
		t.Fatalf("replayed answer: %v", err)
	}
	a2 := answer(wire.ModeSymmetricActive, 400*time.Millisecond)
	dst2 := b.now.Add(400 * time.Millisecond)
	if err := send(a2, dst2); !errors.Is(err, ntp.ErrBogus) {
		t.Fatalf("second answer to the same packet: %v", err)
	}
	st := b.c.Report()
	if st.Sources[0].Accepted != 1 || st.Sources[0].Mode != "peer" || st.Counters["peer_crossed"] != 2 {
		t.Fatalf("source %+v, counters %v", st.Sources[0], st.Counters)
	}
	own = b.nextRequest(peerAdr)
	if own.Origin != a2.Transmit || own.Receive != wire.NTPTimeFromTime(dst2) {
		t.Fatalf("our packet %+v does not echo the peer's newest", own)
	}
	// An ntpd-style passive association answers in mode 2: a sample too.
	if err := send(answer(wire.ModeSymmetricPassive, time.Millisecond), b.now.Add(2*time.Millisecond)); err != nil {
		t.Fatalf("mode-2 answer: %v", err)
	}
	if st := b.c.Report(); st.Sources[0].Accepted != 2 {
		t.Fatalf("source %+v after a mode-2 answer", st.Sources[0])
	}
	// A forged packet from the peer's address that does not answer us
	// (an off-path attacker cannot know our transmit timestamp) gives no
	// sample and cannot displace the genuine answer we echo.
	forged := answer(wire.ModeSymmetricActive, time.Hour)
	forged.Origin = own.Transmit.Add(time.Nanosecond * 977)
	if err := send(forged, b.now.Add(3*time.Millisecond)); !errors.Is(err, ntp.ErrBogus) {
		t.Fatalf("forged packet: %v", err)
	}
	if own := b.nextRequest(peerAdr); own.Origin == forged.Transmit {
		t.Fatalf("our packet echoes the forged one")
	}
}

// TestSymmetricPeerPoll: a peer polls at the shorter of both intervals
// (RFC 5905 min(ppoll, hpoll)), never below MinPoll, whatever Poll value
// its peer's packets carry. The peer here answers every packet but is
// unsynchronised (leap 3): no sample, so our own poll backs off, to 2^3 s
// after 11 polls.
func TestSymmetricPeerPoll(t *testing.T) {
	for _, tc := range []struct {
		theirPoll int8
		want      time.Duration // the last interval
	}{
		{0, time.Second},       // the peer polls faster: follow it
		{-4, time.Second},      // not below our MinPoll (0)
		{127, 8 * time.Second}, // absurd: our own poll stands
	} {
		b := newBench(t, func(c *client.Config) {
			c.Servers, c.Peers, c.MinPoll, c.MaxPoll, c.PollRangeSet, c.Burst = nil, []netip.AddrPort{peerAdr}, 0, 6, true, -1
		})
		var times []time.Time
		for range 12 {
			own := b.nextRequest(peerAdr)
			times = append(times, b.now)
			p := wire.NTPPacket{Version: 4, Mode: wire.ModeSymmetricActive, Leap: wire.LeapNotInSync, Stratum: 16, Poll: tc.theirPoll,
				Origin: own.Transmit, Receive: own.Transmit, Transmit: own.Transmit.Add(time.Millisecond)}
			data, _ := p.AppendBinary(nil)
			if err := b.c.StepDatagram(core.Datagram{Addr: peerAdr, Data: data, Time: b.now.Add(2 * time.Millisecond)}); !errors.Is(err, ntp.ErrUnsynchronized) {
				t.Fatalf("unsynchronised peer's packet: %v", err)
			}
		}
		gap := times[len(times)-1].Sub(times[len(times)-2])
		if gap < tc.want || gap > tc.want+tc.want/32+20*time.Millisecond {
			t.Errorf("peer advertising poll %d: we poll every %v, want %v", tc.theirPoll, gap, tc.want)
		}
	}
}

// TestRestore: the persisted frequency round-trips; bad state is refused
// and changes nothing; Restore after the first tick is refused.
func TestRestore(t *testing.T) {
	b := newBench(t, nil)
	for _, bad := range [][]byte{nil, {1, 2, 3}, append([]byte{2}, make([]byte, 8)...), append([]byte{3}, make([]byte, 16)...),
		stateOf(math.NaN()), stateOf(600), stateV2(1, -1), stateV2(1, math.Inf(1))} {
		if err := b.c.Restore(bad); !errors.Is(err, client.ErrState) {
			t.Errorf("Restore(%x): %v", bad, err)
		}
	}
	if b.c.Frequency() != 0 {
		t.Fatal("refused state changed the frequency")
	}
	if err := b.c.Restore(stateOf(-12.5)); err != nil || b.c.Frequency() != -12.5 {
		t.Fatalf("Restore: %v, frequency %v", err, b.c.Frequency())
	}
	if err := b.c.Restore(stateV2(7.25, 0.01)); err != nil || b.c.Frequency() != 7.25 {
		t.Fatalf("Restore version 2: %v, frequency %v", err, b.c.Frequency())
	}
	b.tick(10 * time.Millisecond)
	if err := b.c.Restore(stateOf(3)); !errors.Is(err, client.ErrStarted) {
		t.Fatalf("Restore after Tick: %v", err)
	}
}

// stateV2 builds persisted state as the client writes it: version 2, the
// frequency and its error as big-endian float64s.
func stateV2(ppm, errPPM float64) []byte {
	b := make([]byte, 17)
	b[0] = 2
	binary.BigEndian.PutUint64(b[1:], math.Float64bits(ppm))
	binary.BigEndian.PutUint64(b[9:], math.Float64bits(errPPM))
	return b
}

// stateOf builds persisted state as the first version wrote it: a version
// byte and the frequency as a big-endian float64.
func stateOf(ppm float64) []byte {
	b := []byte{1, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint64(b[1:], math.Float64bits(ppm))
	return b
}

// TestStatusJSON: the status marshals with the snake_case keys scripts use.
func TestStatusJSON(t *testing.T) {
	b := newBench(t, nil)
	for range client.DefaultMinSamples {
		if err := b.answer(b.nextRequest(srvAddr), time.Millisecond, 100*time.Microsecond, nil); err != nil {
			t.Fatal(err)
		}
	}
	b.tick(10 * time.Millisecond)
	js, err := json.Marshal(b.c.Status())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"synchronized", "stratum", "sys_peer", "offset_ns", "frequency_ppm", "root_distance_ns",
		"error_bound_ns", "earliest", "latest", "sources", "counters"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no %q in %s", k, js)
		}
	}
	src := m["sources"].([]any)[0].(map[string]any)
	for _, k := range []string{"address", "mode", "stratum", "reach", "poll", "offset_ns", "delay_ns", "dispersion_ns",
		"jitter_ns", "verdict", "why"} {
		if _, ok := src[k]; !ok {
			t.Errorf("no %q in source %v", k, src)
		}
	}
	if m["error_bound_ns"].(float64) <= 0 || src["reach"] != "37" {
		t.Errorf("status %s", js)
	}
}

// TestPollSamples: with PollSamples 2 a poll is two requests, the second
// sent at the first tick after the first's answer; the filter gets the
// less delayed answer only, whichever came first, and the reach register
// and the poll interval count the poll once. When the poll's last answer
// is lost, the held one still reaches the filter, long before the next
// poll.
func TestPollSamples(t *testing.T) {
	b := newBench(t, func(c *client.Config) {
		c.PollSamples, c.Burst, c.MinPoll, c.MaxPoll = 2, -1, 0, 0
	})
	src := func() client.SourceStatus { return b.c.Report().Sources[0] }
	const us = time.Microsecond
	req := b.nextRequest(srvAddr)
	// Poll 1: the cold first answer 300 us each way, the second 100 us.
	// Poll 2: the first is the less delayed.
	for i, legs := range [][2]time.Duration{{300 * us, 100 * us}, {80 * us, 400 * us}} {
		start := b.now
		if err := b.answer(req, legs[0]/10, legs[0], nil); err != nil {
			t.Fatal(err)
		}
		if got := src().Accepted; got != uint64(i) {
			t.Fatalf("poll %d: %d samples accepted before the poll ended, want %d", i+1, got, i)
		}
		second := b.nextRequest(srvAddr)
		if gap := b.now.Sub(start); gap > 20*time.Millisecond {
			t.Fatalf("poll %d: second request %v after the first, want the next tick", i+1, gap)
		}
		if err := b.answer(second, legs[1]/10, legs[1], nil); err != nil {
			t.Fatal(err)
		}
		st := src()
		best := min(legs[0], legs[1])
		if st.Accepted != uint64(i+1) || st.Samples != i+1 || time.Duration(st.LastOffsetNS) != best/10 ||
			time.Duration(st.LastDelayNS) != 2*best {
			t.Fatalf("poll %d: accepted %d, %d in the filter, last offset %v delay %v; want the %v-leg answer's",
				i+1, st.Accepted, st.Samples, time.Duration(st.LastOffsetNS), time.Duration(st.LastDelayNS), best)
		}
		if want := []string{"1", "3"}[i]; st.Reach != want {
			t.Fatalf("poll %d: reach %s, want %s: one bit a poll", i+1, st.Reach, want)
		}
		req = b.nextRequest(srvAddr)
		if gap := b.now.Sub(start); gap < time.Second || gap > time.Second+time.Second/32+20*time.Millisecond {
			t.Fatalf("poll %d: the next poll %v after this one, want about 1 s", i+1, gap)
		}
	}
	// Poll 3: the second request is never answered.
	if err := b.answer(req, 0, 200*us, nil); err != nil {
		t.Fatal(err)
	}
	b.nextRequest(srvAddr)
	b.tick(300 * time.Millisecond)
	if st := src(); st.Accepted != 3 || time.Duration(st.LastDelayNS) != 400*us {
		t.Fatalf("poll 3, second answer lost: accepted %d, last delay %v; want the first answer's sample",
			st.Accepted, time.Duration(st.LastDelayNS))
	}
	if n := b.c.Report().Counters["poll_samples_unused"]; n != 2 {
		t.Fatalf("poll_samples_unused %d, want 2", n)
	}
}

// TestPollSamplesLostRequest: a poll's second request is lost; the third
// goes at the second's wait's end, and the poll ends on its answer, not
// at the end of a wait for the lost one: a request still unanswered after
// a later one's answer is taken for lost.
func TestPollSamplesLostRequest(t *testing.T) {
	b := newBench(t, func(c *client.Config) {
		c.PollSamples, c.Burst, c.MinPoll, c.MaxPoll = 3, -1, 0, 0
	})
	const us = time.Microsecond
	if err := b.answer(b.nextRequest(srvAddr), 0, 100*us, nil); err != nil {
		t.Fatal(err)
	}
	b.nextRequest(srvAddr) // lost
	third := b.nextRequest(srvAddr)
	if err := b.answer(third, 0, 80*us, nil); err != nil {
		t.Fatal(err)
	}
	if st := b.c.Report().Sources[0]; st.Accepted != 1 || time.Duration(st.LastDelayNS) != 160*us {
		t.Fatalf("after the poll's last answer: accepted %d, last delay %v; want the third answer's sample at once",
			st.Accepted, time.Duration(st.LastDelayNS))
	}
}

// TestPollSamplesKissRate: a RATE kiss ends a multi-sample poll (the rest
// of it would be refused as well) and the next request waits for the
// server's interval; the answer already held is used.
func TestPollSamplesKissRate(t *testing.T) {
	b := newBench(t, func(c *client.Config) {
		c.PollSamples, c.Burst, c.MinPoll, c.MaxPoll = 3, -1, 0, 0
	})
	req := b.nextRequest(srvAddr)
	if err := b.answer(req, 0, 100*time.Microsecond, nil); err != nil {
		t.Fatal(err)
	}
	req = b.nextRequest(srvAddr)
	var kiss *ntp.KissError
	if err := b.answer(req, 0, 100*time.Microsecond, func(p *wire.NTPPacket) {
		*p = ntp.KissReply(&req, b.now, "RATE")
		p.Poll = 3
	}); !errors.As(err, &kiss) {
		t.Fatalf("kiss: %v", err)
	}
	kissAt := b.now
	if st := b.c.Report().Sources[0]; st.Accepted != 1 {
		t.Fatalf("the poll's answer before the kiss: accepted %d, want 1", st.Accepted)
	}
	b.nextRequest(srvAddr)
	if gap := b.now.Sub(kissAt); gap < 16*time.Second-time.Second {
		t.Fatalf("after RATE mid-poll: next request after %v, want 2^4 s", gap)
	}
}
