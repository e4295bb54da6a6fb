package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/timesync/client"
	"github.com/synclab/synclab/pkg/timesync/server"
	"github.com/synclab/synclab/pkg/timesync/timedcore"
)

// fakeLocalAddrs gives this machine the addresses of a lab master:
// 10.0.0.1 on eth0 (and the loopback network).
func fakeLocalAddrs(t *testing.T) {
	old := app.LocalAddrs
	app.LocalAddrs = func() (map[netip.Addr]string, error) {
		return map[netip.Addr]string{netip.MustParseAddr("10.0.0.1"): "eth0", netip.MustParseAddr("127.0.0.1"): "lo"}, nil
	}
	t.Cleanup(func() { app.LocalAddrs = old })
}

// TestMarkSelf: a source is this timed when it is one of this machine's
// addresses at the port this timed answers on; such a source is not
// polled but listed, named as this host.
func TestMarkSelf(t *testing.T) {
	fakeLocalAddrs(t)
	ap := netip.MustParseAddrPort
	for _, tc := range []struct {
		name    string
		serve   string // --serve address, "" for none
		servers []string
		peers   []string
		self    []string
	}{
		{"the README's master", "0.0.0.0:123", []string{"10.0.0.1:123"}, nil, []string{"10.0.0.1:123"}},
		{"another host", "0.0.0.0:123", []string{"10.0.0.2:123"}, nil, nil},
		{"loopback", "0.0.0.0:123", []string{"127.0.0.5:123", "10.0.0.2:123"}, nil, []string{"127.0.0.5:123"}},
		{"served on another address", "10.0.0.9:123", []string{"10.0.0.1:123"}, nil, nil},
		{"another port (a second daemon here)", "0.0.0.0:1123", []string{"10.0.0.1:123"}, nil, nil},
		{"a client alone answers nothing", "", []string{"10.0.0.1:123"}, nil, nil},
		{"a symmetric peer listens on 123", "", nil, []string{"10.0.0.1:123"}, []string{"10.0.0.1:123"}},
	} {
		cfg := &daemon.Config{}
		var serve *serveSettings
		if tc.serve != "" {
			serve = &serveSettings{addr: ap(tc.serve)}
		}
		cc := &client.Config{}
		for _, s := range tc.servers {
			cc.Servers = append(cc.Servers, ap(s))
		}
		for _, s := range tc.peers {
			cc.Peers = append(cc.Peers, ap(s))
		}
		var logs bytes.Buffer
		if err := markSelf(cfg, serve, cc, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, s := range cc.Self {
			got = append(got, s.Addr.String())
			if !strings.Contains(s.Why, "this host: "+s.Addr.Addr().String()+" is this machine's") {
				t.Errorf("%s: why %q", tc.name, s.Why)
			}
		}
		if strings.Join(got, " ") != strings.Join(tc.self, " ") {
			t.Errorf("%s: self %v, want %v", tc.name, got, tc.self)
		}
		if n := len(cc.Servers) + len(cc.Peers) + len(cc.Self); n != len(tc.servers)+len(tc.peers) {
			t.Errorf("%s: %d sources left and self, want %d", tc.name, n, len(tc.servers)+len(tc.peers))
		}
		if len(tc.self) > 0 && !strings.Contains(logs.String(), "not following "+tc.self[0]+": this host itself") {
			t.Errorf("%s: not logged:\n%s", tc.name, logs.String())
		}
	}
}

// renderTimed renders the status of a timedcore made of cc (a real
// client, ticked once) and, with stratum > 0, a server at that local
// stratum.
func renderTimed(t *testing.T, cc client.Config, stratum uint8) (string, timedcore.Sync) {
	t.Helper()
	cc.Rand = rand.New(rand.NewPCG(1, 2))
	cc.LocalStratum = stratum
	ntpc, err := client.New(cc)
	if err != nil {
		t.Fatal(err)
	}
	tc := timedcore.Config{Client: ntpc}
	if stratum > 0 {
		if tc.Server, err = server.New(server.Config{LocalStratum: stratum}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := timedcore.New(tc)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	c.Tick(now)
	c.Ready()
	st := c.Status().(timedcore.Status)
	raw, _ := json.Marshal(st)
	var out bytes.Buffer
	if err := renderCore(&out, raw, now); err != nil {
		t.Fatal(err)
	}
	return out.String(), st.Sync
}

// TestStatusTime: a client with no answer yet says so, with no bound
// (it said "Error bound : ±0s"); the master whose server list names
// itself is the lab's reference, and its own address is a source row
// saying it is this host (it said "bad_stratum: stratum 8 is no better
// than our local stratum 8").
func TestStatusTime(t *testing.T) {
	fakeLocalAddrs(t)
	out, s := renderTimed(t, client.Config{Servers: []netip.AddrPort{netip.MustParseAddrPort("10.0.0.2:123")}}, 0)
	if !strings.Contains(out, "Time     : unsynchronised: no answer yet from 10.0.0.2:123\n") || strings.Contains(out, "±") || s.ErrorBoundNS != nil {
		t.Errorf("a client with no answer yet:\n%s", out)
	}
	if err := statusExit(mustJSON(t, timedcore.Status{Sync: s})); !errors.Is(err, app.ExitError{Code: exitUnsynchronised}) {
		t.Errorf("status exit: %v, want code %d", err, exitUnsynchronised)
	}

	cc := client.Config{Servers: []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:123")}}
	if err := markSelf(&daemon.Config{}, &serveSettings{addr: netip.MustParseAddrPort("0.0.0.0:123")}, &cc, nil); err != nil {
		t.Fatal(err)
	}
	out, s = renderTimed(t, cc, 8)
	for _, want := range []string{
		"Time     : the lab's reference, serving its own clock at local stratum 8 (no error bound: nothing to compare it with); 10.0.0.1:123 is this host, and no other source is configured\n",
		"NTP client : follows nothing: every source configured is this host\n",
		"self: this host: 10.0.0.1 is this machine's address (eth0), where this timed answers NTP on port 123: a clock cannot follow itself, not polled",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the master lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "bad_stratum") {
		t.Errorf("the master blames the stratum:\n%s", out)
	}
	if err := statusExit(mustJSON(t, timedcore.Status{Sync: s})); err != nil {
		t.Errorf("status exit of the lab's reference: %v", err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
