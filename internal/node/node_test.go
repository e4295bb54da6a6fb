package node

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// recorder is a core that records what it is stepped with and sends what
// the test queues.
type recorder struct {
	steps     []core.Message
	datagrams []core.Datagram
	ticks     int
	rd        core.Ready
	stepErr   error
}

func (r *recorder) Step(m core.Message) error {
	if r.stepErr != nil {
		return r.stepErr
	}
	m.Payload = bytes.Clone(m.Payload)
	r.steps = append(r.steps, m)
	return nil
}
func (r *recorder) StepDatagram(d core.Datagram) error {
	r.datagrams = append(r.datagrams, d)
	return nil
}
func (r *recorder) Tick(time.Time) { r.ticks++ }
func (r *recorder) Ready() core.Ready {
	rd := r.rd
	r.rd = core.Ready{}
	return rd
}
func (r *recorder) Status() any { return map[string]int{"steps": len(r.steps)} }

var (
	t0      = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	members = map[uint32]netip.AddrPort{
		1: netip.MustParseAddrPort("127.0.0.11:7000"),
		2: netip.MustParseAddrPort("127.0.0.12:7000"),
		3: netip.MustParseAddrPort("127.0.0.13:7000"),
	}
	testKey = wire.Key{ID: 7, Secret: []byte("0123456789abcdef0123456789abcdef")}
)

func newNode(t *testing.T, id uint32, mutate func(*Config)) (*Node, *recorder) {
	t.Helper()
	cfg := Config{ID: id, Members: members, Cluster: "lab", Incarnation: 1}
	if mutate != nil {
		mutate(&cfg)
	}
	r := &recorder{}
	n, err := New(cfg, r)
	if err != nil {
		t.Fatal(err)
	}
	return n, r
}

// deliver finalizes every send of from at now and hands the ones addressed
// to to's member address (or multicast) to to.
func deliver(t *testing.T, from, to *Node, now time.Time) []error {
	t.Helper()
	var errs []error
	for _, s := range from.Ready().Sends {
		if !s.Multicast && s.To != members[to.ID()] {
			continue
		}
		errs = append(errs, to.Receive(Inbound{From: members[from.ID()], Data: from.Finalize(s, now), Time: now.Add(time.Millisecond)}))
	}
	return errs
}

func TestRoundTrip(t *testing.T) {
	a, ra := newNode(t, 1, nil)
	b, rb := newNode(t, 2, nil)
	ra.rd.Messages = []core.Message{{To: 2, Kind: wire.KindHeartbeat, Term: 9, Payload: []byte{1, 2, 3, 4, 5, 6, 7, 8}}}
	sendTime := t0.Add(123456789 * time.Nanosecond)
	if errs := deliver(t, a, b, sendTime); len(errs) != 1 || errs[0] != nil {
		t.Fatalf("deliver: %v", errs)
	}
	if len(rb.steps) != 1 {
		t.Fatalf("core stepped %d times, want 1", len(rb.steps))
	}
	m := rb.steps[0]
	if m.From != 1 || m.To != 2 || m.Kind != wire.KindHeartbeat || m.Term != 9 || !bytes.Equal(m.Payload, []byte{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("got %+v", m)
	}
	if d := m.Sent.Sub(sendTime); d < -time.Nanosecond || d > time.Nanosecond {
		t.Errorf("Sent = %v, want the finalize time %v", m.Sent, sendTime)
	}
	if !m.Time.Equal(sendTime.Add(time.Millisecond)) {
		t.Errorf("Time = %v, want the inbound time", m.Time)
	}
	if m.Lamport != 1 {
		t.Errorf("Lamport = %d, want 1 (first send)", m.Lamport)
	}
	if got := b.Status().Lamport; got != 2 {
		t.Errorf("receiver Lamport = %d, want max(0,1)+1 = 2", got)
	}
	if got := b.Status().FramesIn["heartbeat"]; got != 1 {
		t.Errorf("frames_in[heartbeat] = %d", got)
	}
}

func TestBroadcast(t *testing.T) {
	for _, multicast := range []bool{false, true} {
		a, ra := newNode(t, 1, func(c *Config) { c.Multicast = multicast })
		ra.rd.Messages = []core.Message{{To: core.Broadcast, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
		sends := a.Ready().Sends
		want := 2
		if multicast {
			want = 1
		}
		if len(sends) != want {
			t.Fatalf("multicast=%v: %d sends, want %d", multicast, len(sends), want)
		}
		for _, s := range sends {
			var f wire.Frame
			if err := f.UnmarshalBinary(s.Data); err != nil {
				t.Fatal(err)
			}
			if s.Multicast != multicast {
				t.Errorf("Multicast = %v", s.Multicast)
			}
			if multicast && f.Receiver != 0 {
				t.Errorf("multicast frame addressed to %d", f.Receiver)
			}
			if !multicast && s.To != members[f.Receiver] {
				t.Errorf("frame for %d sent to %v", f.Receiver, s.To)
			}
		}
		// A stream broadcast is always one frame per member.
		ra.rd.Messages = []core.Message{{To: core.Broadcast, Kind: wire.KindHeartbeat, Payload: make([]byte, 8), Stream: true}}
		if sends := a.Ready().Sends; len(sends) != 2 || !sends[0].Stream {
			t.Errorf("stream broadcast: %+v", sends)
		}
	}
}

func TestSequenceIncreasesAcrossIncarnations(t *testing.T) {
	b, rb := newNode(t, 2, nil)
	for inc := uint32(1); inc <= 3; inc++ {
		a, ra := newNode(t, 1, func(c *Config) { c.Incarnation = inc })
		for i := 0; i < 3; i++ {
			ra.rd.Messages = append(ra.rd.Messages, core.Message{To: 2, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)})
		}
		for _, err := range deliver(t, a, b, t0) {
			if err != nil {
				t.Fatalf("incarnation %d: %v", inc, err)
			}
		}
	}
	if len(rb.steps) != 9 {
		t.Errorf("stepped %d frames of 9", len(rb.steps))
	}
}

func TestFinalizeLeavesSendIntact(t *testing.T) {
	a, ra := newNode(t, 1, func(c *Config) { c.Keys = []wire.Key{testKey} })
	ra.rd.Messages = []core.Message{{To: 2, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
	s := a.Ready().Sends[0]
	orig := bytes.Clone(s.Data)
	one := a.Finalize(s, t0)
	two := a.Finalize(s, t0.Add(time.Second))
	if !bytes.Equal(s.Data, orig) {
		t.Fatal("Finalize modified the send's bytes")
	}
	if len(one) != len(orig)+wire.AuthTrailerLen || len(two) != len(one) {
		t.Fatalf("sealed lengths %d, %d; want %d", len(one), len(two), len(orig)+wire.AuthTrailerLen)
	}
	if bytes.Equal(one, two) {
		t.Error("two finalizes a second apart produced identical bytes (transmit time not patched?)")
	}
}

// TestBadInput feeds every kind of bad frame and checks it is dropped,
// counted under its reason, and never reaches the core.
func TestBadInput(t *testing.T) {
	a, ra := newNode(t, 1, func(c *Config) { c.Keys = []wire.Key{testKey} })
	good := func(to uint32) []byte {
		ra.rd.Messages = []core.Message{{To: to, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
		return a.Finalize(a.Ready().Sends[0], t0)
	}
	frameFrom := func(mut func(*wire.Frame)) []byte {
		f := wire.Frame{Header: wire.Header{Kind: wire.KindHeartbeat, Cluster: wire.ClusterID("lab"), Sender: 1, Receiver: 2, Seq: 1 << 50}, Payload: make([]byte, 8)}
		mut(&f)
		b, err := f.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		return wire.Seal(b, testKey)
	}
	replayed := good(2)
	tampered := good(2)
	tampered[len(tampered)-1] ^= 1
	unsealed := func() []byte {
		ra.rd.Messages = []core.Message{{To: 2, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
		return a.Ready().Sends[0].Data
	}()

	cases := []struct {
		name, reason string
		data         []byte
	}{
		{"empty", "truncated", nil},
		{"truncated", "truncated", good(2)[:20]},
		{"garbage", "bad_magic", bytes.Repeat([]byte{0xff}, 80)},
		{"wrong cluster", "wrong_cluster", frameFrom(func(f *wire.Frame) { f.Cluster = wire.ClusterID("other") })},
		{"unknown member", "unknown_member", frameFrom(func(f *wire.Frame) { f.Sender = 99 })},
		{"from self", "from_self", frameFrom(func(f *wire.Frame) { f.Sender = 2 })},
		{"misdirected", "misdirected", good(3)},
		{"no mac", "no_mac", unsealed},
		{"bad mac", "bad_mac", tampered},
		{"replay", "replay", replayed},
	}
	b, rb := newNode(t, 2, func(c *Config) { c.Keys = []wire.Key{testKey} })
	if err := b.Receive(Inbound{From: members[1], Data: replayed, Time: t0}); err != nil {
		t.Fatalf("first copy refused: %v", err)
	}
	accepted := len(rb.steps)
	for _, tc := range cases {
		before := b.Status().Dropped[tc.reason]
		err := b.Receive(Inbound{From: members[1], Data: tc.data, Time: t0})
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if got := b.Status().Dropped[tc.reason]; got != before+1 {
			t.Errorf("%s: dropped[%s] = %d, want %d (err %v, counters %v)", tc.name, tc.reason, got, before+1, err, b.Status().Dropped)
		}
	}
	if len(rb.steps) != accepted {
		t.Errorf("core was stepped with %d bad frames", len(rb.steps)-accepted)
	}
}

func TestCoreRejectionCounted(t *testing.T) {
	a, ra := newNode(t, 1, nil)
	b, rb := newNode(t, 2, nil)
	rb.stepErr = core.ErrUnexpectedKind
	ra.rd.Messages = []core.Message{{To: 2, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
	errs := deliver(t, a, b, t0)
	if len(errs) != 1 || !errors.Is(errs[0], core.ErrUnexpectedKind) {
		t.Fatalf("errs = %v", errs)
	}
	if got := b.Status().Dropped["rejected_heartbeat"]; got != 1 {
		t.Errorf("dropped = %v", b.Status().Dropped)
	}
}

func TestBadDestinationCounted(t *testing.T) {
	a, ra := newNode(t, 1, nil)
	ra.rd.Messages = []core.Message{{To: 42, Kind: wire.KindHeartbeat}, {To: 1, Kind: wire.KindHeartbeat}}
	if sends := a.Ready().Sends; len(sends) != 0 {
		t.Errorf("sent %d frames to a stranger or to itself", len(sends))
	}
	if got := a.Status().Dropped["bad_destination"]; got != 2 {
		t.Errorf("bad_destination = %d, want 2", got)
	}
}

func TestDatagramsPassThrough(t *testing.T) {
	a, ra := newNode(t, 1, nil)
	peer := netip.MustParseAddrPort("127.0.0.99:123")
	pkt := make([]byte, wire.NTPHeaderLen)
	ra.rd.Datagrams = []core.Datagram{{Addr: peer, Data: pkt, NTPStamp: true}}
	sends := a.Ready().Sends
	if len(sends) != 1 || !sends[0].Datagram || sends[0].To != peer {
		t.Fatalf("sends = %+v", sends)
	}
	out := a.Finalize(sends[0], t0)
	var p wire.NTPPacket
	if err := p.UnmarshalBinary(out); err != nil {
		t.Fatal(err)
	}
	if d := p.Transmit.Time().Sub(t0); d < -time.Nanosecond || d > time.Nanosecond {
		t.Errorf("transmit timestamp %v, want %v", p.Transmit.Time(), t0)
	}
	if err := a.Receive(Inbound{From: peer, Data: out, Time: t0, Datagram: true}); err != nil {
		t.Fatal(err)
	}
	if len(ra.datagrams) != 1 || ra.datagrams[0].Addr != peer {
		t.Errorf("datagrams = %+v", ra.datagrams)
	}
}

// TestFrameDatagramPatchedAndSealed: a frame sent on the datagram path (to
// a host that need not be a member) leaves like a member frame: transmit
// timestamp patched, MAC appended; and the driver must report it.
func TestFrameDatagramPatchedAndSealed(t *testing.T) {
	a, ra := newNode(t, 1, func(c *Config) { c.Keys = []wire.Key{testKey} })
	stranger := netip.MustParseAddrPort("127.0.0.99:12300")
	payload, _ := wire.TimeRequest{}.AppendBinary(nil)
	f := wire.Frame{Header: wire.Header{Kind: wire.KindTimeRequest, Cluster: wire.ClusterID("lab"), Sender: 1}, Payload: payload}
	raw, err := f.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	ra.rd.Datagrams = []core.Datagram{{Addr: stranger, Data: raw, Frame: true}}
	sends := a.Ready().Sends
	if len(sends) != 1 || !sends[0].Datagram || !sends[0].Frame || !sends[0].Reported() {
		t.Fatalf("sends = %+v", sends)
	}
	out := a.Finalize(sends[0], t0)
	var got wire.Frame
	if err := got.UnmarshalBinary(out); err != nil {
		t.Fatal(err)
	}
	if !got.Xmt.Time().Equal(t0) {
		t.Errorf("transmit timestamp %v, want %v", got.Xmt.Time(), t0)
	}
	v := wire.NewValidator(wire.ClusterID("lab"), 2, []wire.Key{testKey})
	if err := v.Authenticate(&got, out); err != nil || got.Flags&wire.FlagAuth == 0 {
		t.Errorf("not sealed with the node's key: %v", err)
	}
	if plain := (Send{Datagram: true}); plain.Reported() {
		t.Error("a plain datagram is reported")
	}
}

func TestConfigRejected(t *testing.T) {
	for name, mut := range map[string]func(*Config){
		"zero id":          func(c *Config) { c.ID = 0 },
		"not a member":     func(c *Config) { c.ID = 9 },
		"no cluster":       func(c *Config) { c.Cluster = "" },
		"zero incarnation": func(c *Config) { c.Incarnation = 0 },
		"huge incarnation": func(c *Config) { c.Incarnation = MaxIncarnation + 1 },
	} {
		cfg := Config{ID: 1, Members: members, Cluster: "lab", Incarnation: 1}
		mut(&cfg)
		if _, err := New(cfg, &recorder{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzReceive: no input makes the node panic, and only valid frames reach
// the core.
func FuzzReceive(f *testing.F) {
	a, ra := newNode(&testing.T{}, 1, func(c *Config) { c.Keys = []wire.Key{testKey} })
	ra.rd.Messages = []core.Message{{To: 2, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
	f.Add(a.Finalize(a.Ready().Sends[0], t0))
	f.Add([]byte("SL"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, rb := newNode(t, 2, func(c *Config) { c.Keys = []wire.Key{testKey} })
		err := b.Receive(Inbound{From: members[1], Data: data, Time: t0})
		if (err == nil) != (len(rb.steps) == 1) {
			t.Fatalf("err %v but core stepped %d times", err, len(rb.steps))
		}
		if err != nil && b.Status().TotalDropped() != 1 {
			t.Fatalf("refused without being counted: %v", err)
		}
	})
}

// TestFrameSentReports: a frame the core asked about (Report) comes back
// to it, once written, as a Local message with the time patched into it
// and the time it left; a broadcast without a group is one report per
// member; streams and frames not asked about are never reported.
func TestFrameSentReports(t *testing.T) {
	n, r := newNode(t, 1, nil)
	hb, _ := wire.Heartbeat{Interval: 100}.AppendBinary(nil)
	r.rd = core.Ready{Messages: []core.Message{
		{To: core.Broadcast, Kind: wire.KindHeartbeat, Term: 9, Payload: hb, Report: true},
		{To: 2, Kind: wire.KindHeartbeat, Payload: hb},
		{To: 3, Kind: wire.KindHeartbeat, Payload: hb, Report: true, Stream: true},
	}}
	out := n.Ready()
	reported := 0
	for _, s := range out.Sends {
		if err := n.FrameSent(s, t0, t0.Add(20*time.Microsecond)); err != nil {
			t.Fatal(err)
		}
		if s.Report {
			reported++
		}
	}
	if reported != 2 || len(r.steps) != 2 {
		t.Fatalf("%d sends reported, %d reports stepped; want one per member of the broadcast", reported, len(r.steps))
	}
	for _, m := range r.steps {
		if !m.Local || m.Kind != wire.KindHeartbeat || m.Term != 9 || !m.Sent.Equal(t0) || m.Time.Sub(m.Sent) != 20*time.Microsecond || !bytes.Equal(m.Payload, hb) {
			t.Errorf("report %+v", m)
		}
	}
	if r.steps[0].To == r.steps[1].To {
		t.Errorf("both reports name member %d", r.steps[0].To)
	}
}

// answerer is a recorder that answers every datagram on the spot.
type answerer struct {
	recorder
	sign *wire.NTPSigner
}

func (a *answerer) Answer(d core.Datagram, buf []byte) (core.Datagram, bool, error) {
	return core.Datagram{Addr: d.Addr, Data: append(buf[:0], d.Data...), NTPStamp: true, NTPSign: a.sign}, true, nil
}

// TestSignedAnswerStampedThenSigned: an answer the core wants signed
// (NTPSign) gets its transmit time written first and its MAC computed over
// it, so the client sees when it left, whether it comes through Answer and
// FinishAnswer or through Ready and Finalize; both are counted.
func TestSignedAnswerStampedThenSigned(t *testing.T) {
	key := wire.NTPKey{ID: 3, Type: "SHA256", Secret: []byte("synclab-sha256-key")}
	ans := &answerer{sign: &wire.NTPSigner{Key: key}}
	n, err := New(Config{ID: 1, Members: members, Cluster: "lab", Incarnation: 1}, ans)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := (&wire.NTPPacket{Version: 4, Mode: wire.ModeClient}).AppendBinary(nil)
	peer := netip.MustParseAddrPort("127.0.0.99:40000")
	s, handled, err := n.Answer(Inbound{From: peer, Data: req, Time: t0, Datagram: true}, make([]byte, 0, 128))
	if !handled || err != nil || s.To != peer {
		t.Fatalf("Answer: %+v, %v, %v", s, handled, err)
	}
	at := t0.Add(3 * time.Millisecond)
	check := func(how string, out []byte, at time.Time) {
		t.Helper()
		pkt, id, digest, err := wire.SplitNTPMAC(out)
		if err != nil || wire.VerifyNTPMAC(pkt, id, digest, []wire.NTPKey{key}) != nil {
			t.Fatalf("%s: the MAC does not cover the bytes sent: %v", how, err)
		}
		var p wire.NTPPacket
		if err := p.UnmarshalBinary(out); err != nil || p.Transmit != wire.NTPTimeFromTime(at)&^1 {
			t.Fatalf("%s: transmit %v, want the write's %v", how, p.Transmit.Time(), at)
		}
	}
	check("FinishAnswer", n.FinishAnswer(s, at), at)
	if st := n.Status(); st.DatagramsIn != 1 || st.DatagramsOut != 1 {
		t.Errorf("counters in %d out %d", st.DatagramsIn, st.DatagramsOut)
	}
	ans.rd.Datagrams = []core.Datagram{{Addr: peer, Data: req, NTPStamp: true, NTPSign: ans.sign}}
	sends := n.Ready().Sends
	if len(sends) != 1 || sends[0].NTPSign == nil {
		t.Fatalf("sends %+v", sends)
	}
	// A later write: one at the same instant would be nudged a unit on
	// (distinct transmit timestamps, TestNTPTransmitStampsDistinct).
	check("Finalize", n.Finalize(sends[0], at.Add(time.Millisecond)), at.Add(time.Millisecond))
}
