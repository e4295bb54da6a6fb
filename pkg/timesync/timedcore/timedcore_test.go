package timedcore

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/server"
	"github.com/synclab/synclab/pkg/wire"
)

// fake records what reaches it and returns a canned Ready.
type fake struct {
	name      string
	steps     int
	datagrams []core.Datagram
	ticks     int
	ready     core.Ready
}

func (f *fake) Step(core.Message) error { f.steps++; return nil }
func (f *fake) StepDatagram(d core.Datagram) error {
	f.datagrams = append(f.datagrams, d)
	return nil
}
func (f *fake) Tick(time.Time) { f.ticks++ }
func (f *fake) Ready() core.Ready {
	rd := f.ready
	f.ready = core.Ready{}
	return rd
}
func (f *fake) Status() any         { return map[string]string{"name": f.name} }
func (f *fake) Deadline() time.Time { return time.Time{} }

var (
	peer = netip.MustParseAddrPort("10.77.0.2:123")
	now  = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
)

func packet(mode uint8) []byte {
	p := wire.NTPPacket{Version: 4, Mode: mode, Transmit: wire.NTPTimeFromTime(now)}
	b, _ := p.AppendBinary(nil)
	return b
}

func newServer(t *testing.T) *server.Server {
	s, err := server.New(server.Config{LocalStratum: 8})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRouting(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode uint8
		sent bool
		want string // "server", "client"
	}{
		{"request", wire.ModeClient, false, "server"},
		{"reply to our poll", wire.ModeServer, false, "client"},
		{"symmetric active", wire.ModeSymmetricActive, false, "client"},
		{"control", wire.ModeControl, false, "client"},
		{"our reply written", wire.ModeServer, true, "server"},
		{"our poll written", wire.ModeClient, true, "client"},
		{"our symmetric poll written", wire.ModeSymmetricActive, true, "client"},
		{"a broadcast heard", wire.ModeBroadcast, false, "client"},
		{"our broadcast written", wire.ModeBroadcast, true, "server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t)
			cl := &fake{name: "client"}
			c, err := New(Config{Cluster: &fake{}, Server: srv, Client: cl})
			if err != nil {
				t.Fatal(err)
			}
			_ = c.StepDatagram(core.Datagram{Addr: peer, Data: packet(tc.mode), Time: now, Local: tc.sent})
			got := "server"
			if len(cl.datagrams) == 1 {
				got = "client"
			} else if srv.Report().Requests == 0 && !tc.sent {
				got = "nobody"
			}
			if got != tc.want {
				t.Errorf("went to %s, want %s", got, tc.want)
			}
		})
	}
}

func TestServerAlone(t *testing.T) {
	srv := newServer(t)
	cluster := &fake{name: "liveness"}
	c, err := New(Config{Cluster: cluster, Server: srv})
	if err != nil {
		t.Fatal(err)
	}
	// A reply (mode 4) reaches the server, which counts it as a drop.
	var de *server.DropError
	if err := c.StepDatagram(core.Datagram{Addr: peer, Data: packet(wire.ModeServer), Time: now}); !errors.As(err, &de) || de.Reason != "mode_server" {
		t.Errorf("mode 4 without a client: %v", err)
	}
	if err := c.StepDatagram(core.Datagram{Addr: peer, Data: packet(wire.ModeClient), Time: now}); err != nil {
		t.Fatal(err)
	}
	cluster.ready = core.Ready{Messages: []core.Message{{To: 2}}}
	rd := c.Ready()
	if len(rd.Datagrams) != 1 || len(rd.Messages) != 1 {
		t.Errorf("merged Ready: %+v", rd)
	}
	if err := c.Step(core.Message{From: 2}); err != nil || cluster.steps != 1 {
		t.Errorf("Step: %v, cluster saw %d", err, cluster.steps)
	}
	c.Tick(now)
	if cluster.ticks != 1 {
		t.Error("cluster not ticked")
	}
	if c.Server() != srv {
		t.Error("Server() is not the server part")
	}
	b, err := json.Marshal(c.Status())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"cluster":{"name":"liveness"}`, `"server":{"requests":1,`, `"stratum":8`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("status %s lacks %s", b, want)
		}
	}
	if strings.Contains(string(b), `"client"`) {
		t.Errorf("status %s has a client part", b)
	}
}

func TestClientOnly(t *testing.T) {
	cl := &fake{}
	c, _ := New(Config{Cluster: &fake{}, Client: cl})
	_ = c.StepDatagram(core.Datagram{Addr: peer, Data: packet(wire.ModeClient), Time: now})
	if len(cl.datagrams) != 1 || c.Server() != nil {
		t.Errorf("client saw %d datagrams", len(cl.datagrams))
	}
}

func TestNoNTPParts(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, ErrConfig) {
		t.Errorf("New without any part: %v", err)
	}
	c, _ := New(Config{Cluster: &fake{}})
	if err := c.StepDatagram(core.Datagram{Addr: peer, Data: packet(wire.ModeClient)}); !errors.Is(err, core.ErrUnexpectedDatagram) {
		t.Errorf("StepDatagram = %v", err)
	}
	b, _ := json.Marshal(c.Status())
	var st map[string]json.RawMessage
	if err := json.Unmarshal(b, &st); err != nil || string(st["cluster"]) != `{"name":""}` || st["client"] != nil || st["server"] != nil {
		t.Errorf("status %s", b)
	}
}

// TestNoCluster: timed outside any cluster has NTP parts only: frames are
// refused, datagrams and ticks reach the parts, status has no cluster.
func TestNoCluster(t *testing.T) {
	cl := &fake{}
	c, err := New(Config{Client: cl})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Step(core.Message{Kind: wire.KindHeartbeat}); !errors.Is(err, core.ErrUnexpectedKind) {
		t.Errorf("Step without a cluster = %v", err)
	}
	c.Tick(time.Now())
	if err := c.StepDatagram(core.Datagram{Addr: peer, Data: packet(wire.ModeServer)}); err != nil || len(cl.datagrams) != 1 {
		t.Errorf("StepDatagram = %v, client saw %d", err, len(cl.datagrams))
	}
	c.Ready()
	b, _ := json.Marshal(c.Status())
	var st map[string]json.RawMessage
	if err := json.Unmarshal(b, &st); err != nil || string(st["client"]) != `{"name":""}` || st["cluster"] != nil || st["sync"] == nil {
		t.Errorf("status %s", b)
	}
}

func TestStateSections(t *testing.T) {
	// One part's state: its section alone.
	cl := &fake{ready: core.Ready{State: []byte("freq")}}
	c, _ := New(Config{Cluster: &fake{}, Client: cl})
	rd := c.Ready()
	st, err := DecodeState(rd.State, SectionClient)
	if err != nil || string(st.Part(SectionClient)) != "freq" || st.Part(SectionCluster) != nil {
		t.Fatalf("state %q: %v, client %q cluster %q", rd.State, err, st.Part(SectionClient), st.Part(SectionCluster))
	}
	// Two parts change in one Ready: both kept, the promise kept.
	restored, err := DecodeState([]byte("legacy-client"), SectionClient)
	if err != nil {
		t.Fatal(err)
	}
	bk := &fake{ready: core.Ready{State: []byte("term"), Promise: true}}
	cl = &fake{ready: core.Ready{State: []byte("freq2")}}
	c, _ = New(Config{Cluster: bk, Client: cl, State: restored})
	rd = c.Ready()
	if !rd.Promise {
		t.Error("the cluster part's promise was lost")
	}
	st, err = DecodeState(rd.State, SectionClient)
	if err != nil || string(st.Part(SectionCluster)) != "term" || string(st.Part(SectionClient)) != "freq2" {
		t.Fatalf("two parts: %q: %v", rd.State, err)
	}
	// One part changes later: the other's section stays as it was saved.
	bk.ready = core.Ready{State: []byte("term2")}
	rd = c.Ready()
	st, _ = DecodeState(rd.State, SectionClient)
	if string(st.Part(SectionCluster)) != "term2" || string(st.Part(SectionClient)) != "freq2" || rd.Promise {
		t.Fatalf("one part later: %q promise %v", rd.State, rd.Promise)
	}
	// A restored part that never changes keeps its restored state.
	c, _ = New(Config{Cluster: &fake{ready: core.Ready{State: []byte("t")}}, Client: &fake{}, State: restored})
	st, _ = DecodeState(c.Ready().State, SectionClient)
	if string(st.Part(SectionClient)) != "legacy-client" {
		t.Fatalf("the restored client state was dropped: %q", st.Part(SectionClient))
	}
	if again := st.encode(); !bytes.Equal(again, c.state.encode()) {
		t.Fatal("decode-encode does not round-trip")
	}
}

func TestDecodeStateRefusesAbsurd(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"version", []byte("TDS\x02")},
		{"truncated header", []byte("TDS\x01\x06clie")},
		{"unknown section", []byte("TDS\x01\x05other\x00\x00")},
		{"twice", []byte("TDS\x01\x06client\x00\x01a\x06client\x00\x01b")},
		{"longer than the file", []byte("TDS\x01\x06client\x00\x09abc")},
		{"too long", append([]byte("TDS\x01\x06client\xff\xff"), make([]byte, 0xffff)...)},
		// A file without sections is one part's state: no longer than a
		// section, or it could not be written back (issue 29: 5130 bytes
		// decoded, then were refused once encoded). Past 2^16 bytes its
		// length would wrap, and the tail would read as other sections.
		{"legacy too long", bytes.Repeat([]byte("Z"), maxSectionLen+1)},
		{"legacy that wraps", append(make([]byte, 1<<16), "\x07cluster\x00\x01t"...)},
	} {
		if _, err := DecodeState(tc.b, SectionClient); !errors.Is(err, core.ErrState) {
			t.Errorf("%s: %v, want core.ErrState", tc.name, err)
		}
	}
}

func FuzzDecodeState(f *testing.F) {
	f.Add([]byte("TDS\x01\x06client\x00\x04freq\x07cluster\x00\x01t"))
	f.Add([]byte{2, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := DecodeState(b, SectionClient)
		if err != nil {
			return
		}
		again, err := DecodeState(st.encode(), SectionClient)
		if err != nil {
			t.Fatalf("a decoded state does not decode once encoded: %v", err)
		}
		for _, s := range sections {
			if !bytes.Equal(st.Part(s), again.Part(s)) {
				t.Fatalf("section %s: %q then %q", s, st.Part(s), again.Part(s))
			}
		}
	})
}

// unscheduled is a core that does not say when it needs Tick.
type unscheduled struct{ fake }

func (unscheduled) Deadline() {}

// TestPartsScheduleTheirTicks: the composite's deadline is the earliest of
// its parts', so a part that does not schedule its ticks is refused.
func TestPartsScheduleTheirTicks(t *testing.T) {
	if _, err := New(Config{Client: &unscheduled{}}); !errors.Is(err, ErrConfig) {
		t.Errorf("New with an unscheduled part: %v", err)
	}
}
