package daemon

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/server"
	"github.com/synclab/synclab/pkg/wire"
)

// echoNTP answers every datagram with the same bytes, asking for the
// transmit timestamp to be patched in: the shape of an NTP server.
type echoNTP struct {
	out      []core.Datagram
	received []core.Datagram
	sent     []core.Datagram
}

func (e *echoNTP) Step(core.Message) error { return core.ErrUnexpectedKind }
func (e *echoNTP) StepDatagram(d core.Datagram) error {
	if d.Local {
		e.sent = append(e.sent, d)
		return nil
	}
	e.received = append(e.received, d)
	e.out = append(e.out, core.Datagram{Addr: d.Addr, Data: d.Data, NTPStamp: true})
	return nil
}
func (e *echoNTP) Tick(time.Time) {}
func (e *echoNTP) Ready() core.Ready {
	rd := core.Ready{Datagrams: e.out}
	e.out = nil
	return rd
}
func (e *echoNTP) Status() any { return nil }

// startEcho runs a daemon of cfg with an echoNTP core and a datagram
// socket on 127.0.0.1.
func startEcho(t *testing.T, cfg Config) (*Daemon, *echoNTP) {
	t.Helper()
	cfg.DatagramAddr = netip.MustParseAddrPort("127.0.0.1:0")
	echo := &echoNTP{}
	d, err := New(cfg, func(core.Env) (core.Core, error) { return echo, nil })
	if err != nil {
		t.Fatal(err)
	}
	start(t, d)
	return d, echo
}

func TestDatagramSocketServesCore(t *testing.T) {
	dir := shortDir(t)
	cfg := testConfig(t, transport.NewMemNetwork(), dir, 1, 1)
	const offset = 250 * time.Millisecond
	cfg.Clock = clock.NewSim(clock.SimConfig{Offset: offset}, time.Now)
	d, echo := startEcho(t, cfg)
	var server netip.AddrPort
	eventually(t, "datagram socket", func() bool {
		st := status(t, cfg.ControlPath)
		if st.Datagram == nil {
			return false
		}
		server = netip.MustParseAddrPort(st.Datagram.Address)
		return true
	})
	server = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), server.Port())

	client, err := transport.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	req := wire.NTPPacket{Version: 4, Mode: wire.ModeClient}
	b, _ := req.AppendBinary(nil)
	before := time.Now()
	if err := client.Send(server, b, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-client.Packets():
		var resp wire.NTPPacket
		if err := resp.UnmarshalBinary(p.Data); err != nil {
			t.Fatal(err)
		}
		// The transmit time is the daemon's (simulated) clock at the write:
		// real time plus the offset, between our send and our receive.
		xmt := resp.Transmit.Time().Add(-offset)
		if xmt.Before(before.Add(-time.Millisecond)) || xmt.After(p.Time.Add(time.Millisecond)) {
			t.Errorf("transmit %v (minus offset) outside [%v, %v]", xmt, before, p.Time)
		}
		// The core was told exactly what left, and when: the kernel's
		// transmit stamp, on the daemon's clock, after the reading
		// written into the packet (the same instant where the kernel
		// gives no stamp) and before the client's kernel received it:
		// bracketed, so that a descheduled sender cannot fail it.
		var sent []core.Datagram
		d.Do(context.Background(), func(*node.Node) { sent = append(sent, echo.sent...) })
		if len(sent) != 1 || !sent[0].Local || !bytes.Equal(sent[0].Data, p.Data) {
			t.Fatalf("sent report %+v does not match the reply", sent)
		}
		if lag := sent[0].Time.Sub(resp.Transmit.Time()); lag < -time.Nanosecond || sent[0].Time.Add(-offset).After(p.Time.Add(time.Microsecond)) {
			t.Errorf("reported transmit time %v is %v after the one in the packet, and (minus the offset) %v after the client received it",
				sent[0].Time, lag, sent[0].Time.Add(-offset).Sub(p.Time))
		}
	case <-time.After(hangGuard):
		t.Fatal("no reply")
	}
	if st := status(t, cfg.ControlPath); st.Node.DatagramsIn != 1 || st.Node.DatagramsOut != 1 {
		t.Errorf("datagram counters in %d out %d", st.Node.DatagramsIn, st.Node.DatagramsOut)
	}
}

// TestStandaloneServesDatagramsOnly: a daemon with no ID and no members
// runs outside any cluster: it never opens the member endpoint, serves its
// datagram socket, and says so in status.
func TestStandaloneServesDatagramsOnly(t *testing.T) {
	dir := shortDir(t)
	cfg := testConfig(t, transport.NewMemNetwork(), dir, 1, 1)
	cfg.ID, cfg.Members = 0, nil
	cfg.Network = func(transport.Config) (transport.Endpoint, error) {
		t.Error("a standalone daemon opened a member endpoint")
		return nil, errors.New("no endpoint here")
	}
	startEcho(t, cfg)
	var st Status
	eventually(t, "datagram socket", func() bool {
		st = status(t, cfg.ControlPath)
		return st.Datagram != nil
	})
	if st.ID != 0 || st.Address != "" || len(st.Members) != 0 {
		t.Errorf("status id %d address %q members %v; want none", st.ID, st.Address, st.Members)
	}
	client, err := transport.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server := netip.MustParseAddrPort(st.Datagram.Address)
	b, _ := (&wire.NTPPacket{Version: 4, Mode: wire.ModeClient}).AppendBinary(nil)
	if err := client.Send(server, b, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-client.Packets():
	case <-time.After(hangGuard):
		t.Fatal("no reply from the standalone daemon")
	}
}

func TestStandaloneConfig(t *testing.T) {
	c := Config{Name: "testd", Clock: clock.NewSim(clock.SimConfig{}, time.Now)}
	if err := c.validate(); err == nil || !strings.Contains(err.Error(), "--id and --members are required") {
		t.Errorf("no cluster and no datagram socket: %v", err)
	}
	c.Datagrams = true
	if err := c.validate(); err != nil || !c.Standalone() || !c.DatagramAddr.IsValid() {
		t.Errorf("datagrams only: %v, standalone %v, address %v", err, c.Standalone(), c.DatagramAddr)
	}
	c.Multicast = &transport.MulticastConfig{}
	if err := c.validate(); err == nil {
		t.Error("multicast without a cluster accepted")
	}
	half := Config{Name: "testd", ID: 1, Datagrams: true, Clock: c.Clock}
	if err := half.validate(); err == nil || half.Standalone() {
		t.Errorf("an ID without members: %v", err)
	}
}

// answerNTP is echoNTP answering on the fast path (core.Answerer).
type answerNTP struct{ echoNTP }

func (a *answerNTP) Answer(d core.Datagram, buf []byte) (core.Datagram, bool, error) {
	if d.Local {
		return core.Datagram{}, false, nil
	}
	return core.Datagram{Addr: d.Addr, Data: append(buf[:0], d.Data...), NTPStamp: true}, true, nil
}

// TestAnsweredDatagrams: a core that answers datagrams on the spot
// (core.Answerer) is served by the datagram socket's reader: the answers
// go out with the transmit time of their write, Ready is not involved,
// the node's counters still count them, and serving a batch allocates
// nothing.
func TestAnsweredDatagrams(t *testing.T) {
	dir := shortDir(t)
	cfg := testConfig(t, transport.NewMemNetwork(), dir, 1, 1)
	const offset = 250 * time.Millisecond
	cfg.Clock = clock.NewSim(clock.SimConfig{Offset: offset}, time.Now)
	cfg.DatagramAddr = netip.MustParseAddrPort("127.0.0.1:0")
	// A quiet loop: AllocsPerRun counts every goroutine's allocations.
	cfg.TickInterval = time.Second
	ans := &answerNTP{}
	d, err := New(cfg, func(core.Env) (core.Core, error) { return ans, nil })
	if err != nil {
		t.Fatal(err)
	}
	start(t, d)
	var st Status
	eventually(t, "datagram socket", func() bool {
		st = status(t, cfg.ControlPath)
		return st.Datagram != nil
	})
	client, err := transport.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	b, _ := (&wire.NTPPacket{Version: 4, Mode: wire.ModeClient}).AppendBinary(nil)
	before := time.Now()
	for range 5 {
		if err := client.Send(netip.MustParseAddrPort(st.Datagram.Address), b, nil); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		select {
		case p := <-client.Packets():
			var resp wire.NTPPacket
			if err := resp.UnmarshalBinary(p.Data); err != nil {
				t.Fatal(err)
			}
			if xmt := resp.Transmit.Time().Add(-offset); xmt.Before(before.Add(-time.Millisecond)) || xmt.After(p.Time.Add(time.Millisecond)) {
				t.Errorf("transmit %v (minus offset) outside [%v, %v]", xmt, before, p.Time)
			}
		case <-time.After(hangGuard):
			t.Fatal("no answer")
		}
	}
	st = status(t, cfg.ControlPath)
	if st.Node.DatagramsIn != 5 || st.Node.DatagramsOut != 5 || len(ans.received) != 0 {
		t.Errorf("datagram counters in %d out %d, stepped %d; want 5, 5 and none stepped", st.Node.DatagramsIn, st.Node.DatagramsOut, len(ans.received))
	}
	// Serving a batch, stepping and writing included, allocates nothing.
	// The answers go to a socket nobody reads: the client's reader
	// allocates per datagram, and AllocsPerRun would count it.
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	batch := make([]transport.Packet, transport.BatchSize)
	for i := range batch {
		batch[i] = transport.Packet{From: sink.LocalAddr().(*net.UDPAddr).AddrPort(), Data: b, Time: time.Now(), Kernel: true}
	}
	// A tick of the loop may land in a measurement: the fewest of three
	// counts, since an allocation of serving shows in every one.
	allocs := testing.AllocsPerRun(50, func() { d.serveDatagrams(batch) })
	for range 2 {
		allocs = min(allocs, testing.AllocsPerRun(50, func() { d.serveDatagrams(batch) }))
	}
	if allocs != 0 {
		t.Errorf("%v allocations per batch of %d, want 0", allocs, len(batch))
	}
}

// TestAnsweredInterleavedDatagrams: timed's NTP server as the core, sent
// requests in interleaved form (NTPv4, an odd origin, a receive timestamp
// that is not the transmit one): every answer takes the stamped write
// (WriteBatchStamped, the error queue's drain, AnswerSent), which must
// allocate nothing either. It allocated about four times a batch and once
// per answer (the drain's buffer and closure, a sockaddr per stamp read).
func TestAnsweredInterleavedDatagrams(t *testing.T) {
	dir := shortDir(t)
	cfg := testConfig(t, transport.NewMemNetwork(), dir, 1, 1)
	cfg.Clock = clock.NewSim(clock.SimConfig{Offset: 250 * time.Millisecond}, time.Now)
	cfg.DatagramAddr = netip.MustParseAddrPort("127.0.0.1:0")
	cfg.TickInterval = time.Second // a quiet loop, as in TestAnsweredDatagrams
	srv, err := server.New(server.Config{LocalStratum: 8, RateLimit: server.RateLimit{Interval: -1}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg, func(core.Env) (core.Core, error) { return srv, nil })
	if err != nil {
		t.Fatal(err)
	}
	start(t, d)
	eventually(t, "datagram socket", func() bool { return status(t, cfg.ControlPath).Datagram != nil })
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	batch := make([]transport.Packet, transport.BatchSize)
	base := time.Now()
	for i := range batch {
		req := wire.NTPPacket{Version: 4, Mode: wire.ModeClient, Origin: wire.NTPTime(2*i + 1), Receive: 7, Transmit: 9}
		b, _ := req.AppendBinary(nil)
		// Distinct receive times: each answer's stamp has a slot.
		batch[i] = transport.Packet{From: sink.LocalAddr().(*net.UDPAddr).AddrPort(), Data: b, Time: base.Add(time.Duration(i) * time.Microsecond), Kernel: true}
	}
	saved := func() uint64 {
		var n uint64
		d.Do(context.Background(), func(*node.Node) { n = srv.Report().Interleaved.Saved })
		return n
	}
	d.serveDatagrams(batch)
	if got := saved(); got != uint64(len(batch)) {
		t.Fatalf("%d answers' transmit stamps kept, want %d: the stamped path was not taken", got, len(batch))
	}
	const runs = 50
	allocs := testing.AllocsPerRun(runs, func() { d.serveDatagrams(batch) })
	for range 2 {
		allocs = min(allocs, testing.AllocsPerRun(runs, func() { d.serveDatagrams(batch) }))
	}
	if allocs != 0 {
		t.Errorf("%v allocations per batch of %d interleaved-form requests, want 0", allocs, len(batch))
	}
	if got, want := saved(), uint64(len(batch)*(1+3*(runs+1))); got != want {
		t.Errorf("%d answers' transmit stamps kept, want %d (every one stamped by the kernel)", got, want)
	}
}
