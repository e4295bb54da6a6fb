package timedcore

import (
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
func (f *fake) Status() any { return map[string]string{"name": f.name} }

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
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t)
			cl := &fake{name: "client"}
			c, err := New(Config{Cluster: &fake{}, Server: srv, Client: cl})
			if err != nil {
				t.Fatal(err)
			}
			_ = c.StepDatagram(core.Datagram{Addr: peer, Data: packet(tc.mode), Time: now, Sent: tc.sent})
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
	if string(b) != `{"cluster":{"name":""}}` {
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
	if string(b) != `{"client":{"name":""}}` {
		t.Errorf("status %s", b)
	}
}

func TestStateFromOnePart(t *testing.T) {
	cl := &fake{ready: core.Ready{State: []byte("freq")}}
	c, _ := New(Config{Cluster: &fake{}, Client: cl})
	if rd := c.Ready(); string(rd.State) != "freq" {
		t.Errorf("state %q", rd.State)
	}
	c, _ = New(Config{Cluster: &fake{ready: core.Ready{State: []byte("a")}}, Client: &fake{ready: core.Ready{State: []byte("b")}}})
	defer func() {
		if recover() == nil {
			t.Error("two parts' state merged silently")
		}
	}()
	c.Ready()
}
