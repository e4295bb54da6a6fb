package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beevik/ntp"
	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/timesync/server"
	"github.com/synclab/synclab/pkg/timesync/timedcore"
	"github.com/synclab/synclab/pkg/wire"
)

func TestParseServeAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0.0.0.0":          "0.0.0.0:123",
		"10.0.0.1:123":     "10.0.0.1:123",
		"127.0.0.5:12345":  "127.0.0.5:12345",
		"::1":              "[::1]:123",
		"[::1]":            "[::1]:123",
		"[fe80::1]:1123":   "[fe80::1]:1123",
		"192.168.1.1:1024": "192.168.1.1:1024",
	} {
		got, err := parseServeAddr(in)
		if err != nil || got.String() != want {
			t.Errorf("parseServeAddr(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "ntp.example.org", "host:123", "10.0.0.1:0", "10.0.0.1:99999", "10.0.0.1:x"} {
		if got, err := parseServeAddr(bad); err == nil {
			t.Errorf("parseServeAddr(%q) = %v, accepted", bad, got)
		}
	}
}

func TestFlagsFirst(t *testing.T) {
	a := newApp()
	for _, tc := range []struct{ in, want string }{
		{"timed query 10.0.0.1 --json -n 2", "timed query --json -n 2 10.0.0.1"},
		{"timed query -n 2 10.0.0.1 --timeout=1s", "timed query -n 2 --timeout=1s 10.0.0.1"},
		{"timed query --key-file k --key-id 3 h", "timed query --key-file k --key-id 3 h"},
		{"timed query h -- --json", "timed query h -- --json"},
		{"timed compare --server a --json", "timed compare --server a --json"},
		{"timed run --id 1 x", "timed run --id 1 x"}, // other commands untouched
		{"timed", "timed"},
	} {
		got := strings.Join(app.FlagsFirst(strings.Fields(tc.in), a, "query", "compare"), " ")
		if got != tc.want {
			t.Errorf("FlagsFirst(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMeasurePrecision(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var n int
	ticking := func() time.Time { n++; return base.Add(time.Duration(n) * time.Microsecond) }
	if p := measurePrecision(ticking); p != -19 { // 1 us <= 2^-19 s (1.9 us)
		t.Errorf("1 us clock: precision %d, want -19", p)
	}
	coarse := func() time.Time { n++; return base.Add(time.Duration(n/3) * 10 * time.Millisecond) }
	if p := measurePrecision(coarse); p != -6 { // 10 ms <= 2^-6 s (15.6 ms)
		t.Errorf("10 ms clock: precision %d, want -6", p)
	}
	stuck := func() time.Time { return base }
	if p := measurePrecision(stuck); p != -1 {
		t.Errorf("stuck clock: precision %d, want -1", p)
	}
	if p := measurePrecision(time.Now); p > -10 || p < -32 {
		t.Errorf("time.Now: precision %d", p)
	}
}

func TestResolveTarget(t *testing.T) {
	defer func(f func(context.Context, string) ([]netip.Addr, error)) { lookupHost = f }(lookupHost)
	var asked []string
	lookupHost = func(_ context.Context, host string) ([]netip.Addr, error) {
		asked = append(asked, host)
		switch host {
		case "dual.lab":
			return []netip.Addr{netip.MustParseAddr("fd00::5"), netip.MustParseAddr("10.77.0.5")}, nil
		case "v6.lab":
			return []netip.Addr{netip.MustParseAddr("fd00::6")}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	ctx := context.Background()
	for in, want := range map[string]string{
		"10.77.0.1":       "10.77.0.1:123",
		"10.77.0.1:1123":  "10.77.0.1:1123",
		"[fd00::1]:1123":  "[fd00::1]:1123",
		"fd00::1":         "[fd00::1]:123",
		"dual.lab":        "10.77.0.5:123",
		"dual.lab:4123":   "10.77.0.5:4123",
		"v6.lab":          "[fd00::6]:123",
		"[v6.lab]:123":    "[fd00::6]:123",
		"127.0.0.1:65535": "127.0.0.1:65535",
	} {
		got, err := resolveTarget(ctx, in)
		if err != nil || got.String() != want {
			t.Errorf("resolveTarget(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	if len(asked) != 4 {
		t.Errorf("resolver asked for %v: IP literals must never reach it", asked)
	}
	_, err := resolveTarget(ctx, "nowhere.invalid")
	var dns *net.DNSError
	if !errors.As(err, &dns) || !strings.Contains(err.Error(), "nowhere.invalid does not resolve") {
		t.Errorf("unresolvable name: %v", err)
	}
	var ue app.UsageError
	if _, err := resolveTarget(ctx, "dual.lab:0"); !errors.As(err, &ue) {
		t.Errorf("port 0: %v", err)
	}
}

func TestCompareEntries(t *testing.T) {
	defer func(f func(string, ntp.QueryOptions) (*ntp.Response, error)) { ntpQuery = f }(ntpQuery)
	now := time.Now()
	ntpQuery = func(host string, opt ntp.QueryOptions) (*ntp.Response, error) {
		if opt.Timeout != 750*time.Millisecond || opt.LocalAddress != "10.77.0.9" {
			t.Errorf("%s: timeout %v, source %q", host, opt.Timeout, opt.LocalAddress)
		}
		good := &ntp.Response{Stratum: 2, ClockOffset: 40 * time.Millisecond, RTT: time.Millisecond,
			RootDistance: 2 * time.Millisecond, Version: 4, Time: now, ReferenceTime: now.Add(-time.Second),
			ReferenceID: wire.RefIDFromAddr(netip.MustParseAddr("10.77.0.1"))}
		switch host {
		case "a.lab":
			return good, nil
		case "b.lab":
			good.ClockOffset = 10 * time.Millisecond
			return good, nil
		case "kod.lab":
			return &ntp.Response{Stratum: 0, KissCode: "RATE", Version: 4, Leap: ntp.LeapNotInSync}, nil
		case "unsync.lab":
			good.Stratum, good.Leap = 16, ntp.LeapNotInSync
			return good, nil
		case "slow.lab":
			return nil, &net.OpError{Op: "read", Err: timeoutErr{}}
		case "unsync0.lab":
			return &ntp.Response{Stratum: 0, Version: 4, Leap: ntp.LeapNotInSync}, nil
		case "closed.lab":
			return nil, &net.OpError{Op: "read", Err: os.NewSyscallError("recvmsg", syscall.ECONNREFUSED)}
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	entries := compareServers([]string{"a.lab", "b.lab", "kod.lab", "unsync.lab", "slow.lab", "nx.invalid", "unsync0.lab", "closed.lab"}, 750*time.Millisecond, "10.77.0.9")
	res := compareResult{Servers: entries}
	res.summarise()
	if res.Valid != 2 || res.SpreadNs == nil || *res.SpreadNs != int64(30*time.Millisecond) {
		t.Fatalf("valid %d spread %v", res.Valid, res.SpreadNs)
	}
	a, kod, unsync, slow, nx := entries[0], entries[2], entries[3], entries[4], entries[5]
	if !a.Valid || a.OffsetNs != -int64(40*time.Millisecond) || a.RefID != "10.77.0.1" || a.Stratum != 2 {
		t.Errorf("a: %+v", a)
	}
	if kod.Valid || kod.KissCode != "RATE" || !strings.HasPrefix(kod.Verdict, "kiss-o'-death RATE") {
		t.Errorf("kod: %+v", kod)
	}
	if unsync.Valid || unsync.Verdict == "" || unsync.Verdict == "ok" {
		t.Errorf("unsync: %+v", unsync)
	}
	if slow.Valid || !strings.HasPrefix(slow.Error, "timeout") {
		t.Errorf("slow: %+v", slow)
	}
	if nx.Valid || !nx.Unresolved || nx.Error != "nx.invalid does not resolve: no such host" {
		t.Errorf("nx: %+v", nx)
	}
	// Leap 3 and stratum 0 without a kiss code: unsynchronised, not a
	// kiss with an empty code.
	if u0 := entries[6]; u0.Valid || u0.KissCode != "" || strings.Contains(u0.Verdict, "kiss") || !strings.Contains(u0.Verdict, "not synchronised") {
		t.Errorf("unsync0: %+v", u0)
	}
	// A closed port: said as `timed query` says it, not as recvmsg does.
	if closed := entries[7]; closed.Valid || closed.Error != refusedResult {
		t.Errorf("closed: %+v", closed)
	}
	var out bytes.Buffer
	printCompare(&out, compareResult{Servers: entries, Valid: res.Valid, SpreadNs: res.SpreadNs, LocalError: "no local daemon (test)"})
	for _, want := range []string{"Local daemon: no local daemon (test)", "a.lab", "-40.000ms", "kiss-o'-death RATE",
		"nx.invalid does not resolve", "Spread: 30.000ms between the 2 valid servers"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestRenderCore(t *testing.T) {
	srv, err := server.New(server.Config{LocalStratum: 8, Precision: -24})
	if err != nil {
		t.Fatal(err)
	}
	req := wire.NTPPacket{Version: 4, Mode: wire.ModeClient, Transmit: 1}
	b, _ := req.AppendBinary(nil)
	from := netip.MustParseAddrPort("10.77.0.2:123")
	_ = srv.StepDatagram(timedcoreDatagram(from, b))
	ctl := wire.NTPPacket{Version: 2, Mode: wire.ModeControl}
	b, _ = ctl.AppendBinary(nil)
	_ = srv.StepDatagram(timedcoreDatagram(from, b))
	st := srv.Report()
	raw, _ := json.Marshal(timedcore.Status{Cluster: json.RawMessage(`{"id":1,"interval_ms":100,"suspect_after_ns":500000000,"alive":1,"members":[]}`), Server: &st})
	var out bytes.Buffer
	if err := renderCore(&out, raw, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"NTP server : stratum 8 (local stratum 8), leap 0 (synchronised), refid LOCL",
		"precision 2^-24 s (60ns)",
		"Requests   : 1, replies 1 (authenticated 0), KoD RATE 0, crypto-NAK 0",
		"Dropped    : 1 (mode_control 1)",
		"Rate limit : 1 request per 1s on average, bursts of 8; 1 clients tracked",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// Without a server part only the members table is printed.
	out.Reset()
	if err := renderCore(&out, []byte(`{"cluster":{"id":1,"alive":1,"members":[]}}`), time.Now()); err != nil || strings.Contains(out.String(), "NTP server") {
		t.Errorf("no server: %v\n%s", err, out.String())
	}
}

func TestUsageErrors(t *testing.T) {
	base := []string{"timed", "run", "--id", "1", "--members", "1=127.0.0.1:9", "--clock", "sim"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(base, "--stratum", "8"), "--stratum is only used with --serve"},
		{append(base, "--ntp-key-file", "x"), "--ntp-key-file is only used with --serve"},
		{append(base, "--serve", "ntp.example.org"), "not a name"},
		{append(base, "--serve", "127.0.0.1", "--stratum", "0"), "want 1..15"},
		{append(base, "--serve", "127.0.0.1", "--stratum", "17"), "want 1..15"},
		{append(base, "--local-error", "10ms"), "--local-error is only used with --serve"},
		{append(base, "--serve", "127.0.0.1", "--local-error", "10ms"), "give --stratum 1..15"},
		{append(base, "--serve", "127.0.0.1", "--stratum", "8", "--local-error", "1s"), "want 0 up to below 1s"},
		{append(base, "--serve", "127.0.0.1", "--rate-limit", "-1s"), "--rate-limit"},
		{[]string{"timed", "query", "127.0.0.1", "--proto", "cristian", "--key-file", "k", "--key-id", "1"}, "--cluster-key-file"},
		{[]string{"timed", "query", "127.0.0.1", "--cluster", "lab"}, "for --proto cristian"},
		{append(base, "--mode", "ptp"), "want ntp, cristian or berkeley"},
		{append(base, "--mode", "cristian"), "needs at least one --server"},
		{append(base, "--mode", "cristian", "--server", "127.0.0.1", "--peer", "127.0.0.2"), "not with --mode cristian"},
		{append(base, "--server", "127.0.0.1", "--cristian-burst", "3"), "only used with --mode cristian"},
		{append(base, "--mode", "cristian", "--server", "127.0.0.1", "--cristian-burst", "0"), "want 1..64"},
		{append(base, "--mode", "cristian", "--server", "127.0.0.1", "--xleave"), "--xleave is for NTP servers"},
		{append(base, "--peer", "127.0.0.1", "--xleave"), "--xleave is for NTP servers"},
		{append(base, "--xleave"), "--xleave is for NTP servers"},
		{append(base, "--peer", "127.0.0.1", "--poll-samples", "2"), "--poll-samples is for NTP servers"},
		{append(base, "--mode", "cristian", "--server", "127.0.0.1", "--poll-samples", "2"), "--poll-samples is for NTP servers"},
		{append(base, "--server", "127.0.0.1", "--poll-samples", "0"), "want 1..8"},
		{append(base, "--server", "127.0.0.1", "--poll-samples", "9"), "want 1..8"},
		{[]string{"timed", "query", "127.0.0.1", "--proto", "ptp"}, "want ntp"},
		{[]string{"timed", "query", "127.0.0.1", "--timeout", "0s"}, "--timeout"},
		{[]string{"timed", "query", "127.0.0.1", "-n", "65"}, "1 to 64"},
		{[]string{"timed", "query", "127.0.0.1", "--key-file", "k"}, "go together"},
		{[]string{"timed", "compare", "extra"}, "takes no arguments"},
	} {
		var stderr bytes.Buffer
		a := newApp()
		a.Writer, a.ErrWriter = &bytes.Buffer{}, &stderr
		if code := app.Run(a, app.FlagsFirst(tc.args, a, "query", "compare"), &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args[1:], code, stderr.String(), tc.want)
		}
	}
}

// TestBroadcastUsageErrors: the broadcast flags' mistakes are usage
// errors that say what to do.
func TestBroadcastUsageErrors(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "ntp.keys")
	if err := os.WriteFile(keys, []byte("7 SHA1 HEX:00112233445566778899aabbccddeeff00112233\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	alone := []string{"timed", "run", "--clock", "sim"}
	serve := append(slices.Clone(alone), "--serve", "127.0.0.1")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(slices.Clone(alone), "--broadcast", "239.77.0.5"), "--broadcast needs --serve"},
		{append(slices.Clone(serve), "--broadcast", "239.77.0.5"), "give --ntp-key-file"},
		{append(slices.Clone(serve), "--broadcast", "239.77.0.5", "--broadcast-insecure"), "give --broadcast-interface"},
		{append(slices.Clone(serve), "--broadcast", "10.77.0.255", "--broadcast-insecure", "--broadcast-interface", "lo"), "not one"},
		{append(slices.Clone(serve), "--broadcast", "10.77.0.255", "--ntp-key-file", keys, "--broadcast-key", "9"), "--broadcast-key 9 is not in --ntp-key-file"},
		{append(slices.Clone(serve), "--broadcast", "10.77.0.255", "--ntp-key-file", keys, "--broadcast-key", "7", "--broadcast-insecure"), "choose one"},
		{append(slices.Clone(serve), "--broadcast-interval", "1s"), "--broadcast-interval is only used with --broadcast"},
		{append(slices.Clone(serve), "--broadcast", "10.77.0.255", "--broadcast-insecure"), "a loopback socket cannot reach that network"},
		{append(slices.Clone(alone), "--broadcast-client"), "needs the broadcasters' key"},
		{append(slices.Clone(alone), "--broadcast-client", "--broadcast-insecure", "--broadcast-group", "10.77.0.255"), "want an IPv4 multicast group"},
		{append(slices.Clone(alone), "--broadcast-client", "--broadcast-insecure", "--broadcast-group", "239.77.0.5"), "needs --broadcast-interface"},
		{append(slices.Clone(alone), "--broadcast-client", "--broadcast-insecure", "--broadcast-interface", "lo"), "give --broadcast-group too"},
		{append(slices.Clone(serve), "--broadcast-client", "--broadcast-insecure"), "give --serve 0.0.0.0:123"},
		{append(slices.Clone(alone), "--broadcast-group", "239.77.0.5"), "--broadcast-group is only used with --broadcast-client"},
		{append(slices.Clone(alone), "--server", "127.0.0.1", "--broadcast-insecure"), "--broadcast-insecure is only used with --broadcast or --broadcast-client"},
		{append(slices.Clone(alone), "--server", "127.0.0.1", "--ntp-key-file", keys), "--ntp-key-file is only used with --serve or --broadcast-client"},
		{append(slices.Clone(serve), "--broadcast", "10.77.0.255", "--broadcast-insecure", "--broadcast-client"), "either sends broadcasts or follows them"},
	} {
		var stderr bytes.Buffer
		a := newApp()
		a.Writer, a.ErrWriter = &bytes.Buffer{}, &stderr
		if code := app.Run(a, tc.args, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args[2:], code, stderr.String(), tc.want)
		}
	}
}

// TestNoClusterFlags: keeping time over NTP needs no --id or --members;
// Berkeley and the cluster's own flags do, and a timed with nothing to do
// says so.
func TestNoClusterFlags(t *testing.T) {
	alone := []string{"timed", "run", "--clock", "sim"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{alone, "nothing to do"},
		{append(alone, "--server", "300.1.1.1"), `"300.1.1.1" is not an IPv4 address`},
		{append(alone, "--mode", "berkeley"), "give --id and --members"},
		{append(alone, "--server", "127.0.0.1", "--multicast", "239.1.1.1:7", "--interface", "lo"), "--multicast is for a cluster"},
		{append(alone, "--serve", "127.0.0.1", "--cluster", "lab"), "--cluster is for a cluster"},
		{append(alone, "--id", "1", "--server", "127.0.0.1"), "--members required"},
		// One source twice would be counted twice where falsetickers are
		// outvoted (--check passed it; the start refused it, naming no
		// flag).
		{append(alone, "--server", "127.0.0.1", "--server", "127.0.0.1:123"), "--server 127.0.0.1:123: 127.0.0.1:123 is already a source (--server 127.0.0.1): each server or peer counts once"},
		{append(alone, "--server", "127.0.0.1:1123", "--peer", "[::ffff:127.0.0.1]:1123"), "--peer [::ffff:127.0.0.1]:1123: 127.0.0.1:1123 is already a source (--server 127.0.0.1:1123)"},
		{append(alone, "--server", "127.0.0.1", "--server", "127.0.0.1", "--check"), "is already a source"},
		{append(alone, "--server", "127.0.0.1", "--sim-drift", "1e12"), "--sim-drift 1e+12 --sim-wander 0: clock: sim drift 1e+12 ppm: must be within ±100000 ppm"},
	} {
		var stderr bytes.Buffer
		a := newApp()
		a.Writer, a.ErrWriter = &bytes.Buffer{}, &stderr
		if code := app.Run(a, tc.args, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args[2:], code, stderr.String(), tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		addr string // the NTP socket's address
	}{
		{[]string{"--server", "127.0.0.1"}, "0.0.0.0:0"},
		{[]string{"--serve", "127.0.0.1:1123", "--stratum", "8"}, "127.0.0.1:1123"},
		{[]string{"--mode", "cristian", "--server", "127.0.0.1"}, "0.0.0.0:0"},
		// A symmetric peer's packets come to the port it polls from,
		// so it is fixed: 123, as the peer at the other end expects.
		// (192.0.2.1, TEST-NET-1: a peer on any of this machine's
		// addresses would be this timed itself, and is not polled.)
		{[]string{"--peer", "192.0.2.1"}, "0.0.0.0:123"},
		{[]string{"--peer", "127.0.0.1", "--serve", "127.0.0.1:1123"}, "127.0.0.1:1123"},
		{[]string{"--id", "2", "--members", "2=127.0.0.2:7300", "--peer", "127.0.0.1"}, "127.0.0.2:123"},
		{[]string{"--id", "2", "--members", "2=127.0.0.2:7300", "--server", "127.0.0.1"}, "127.0.0.2:0"},
	} {
		cfg, err := buildConfig(t, append(slices.Clone(alone), tc.args...)...)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if !cfg.Datagrams && !cfg.DatagramAddr.IsValid() || cfg.DatagramAddr.String() != tc.addr {
			t.Errorf("%v: NTP socket %v (datagrams %v), want %s", tc.args, cfg.DatagramAddr, cfg.Datagrams, tc.addr)
		}
	}
	// The poll range is taken as given: 0..0 polls every second.
	if cfg, err := buildConfig(t, "timed", "run", "--clock", "sim", "--server", "127.0.0.1", "--minpoll", "0", "--maxpoll", "0"); err != nil || !cfg.pollRangeSet || cfg.maxPoll != 0 || cfg.interleaved {
		t.Errorf("--minpoll 0 --maxpoll 0: %v, %+v", err, cfg)
	}
	if cfg, err := buildConfig(t, "timed", "run", "--clock", "sim", "--server", "127.0.0.1", "--xleave"); err != nil || !cfg.interleaved {
		t.Errorf("--xleave: %v, %+v", err, cfg)
	}
	if cfg, err := buildConfig(t, "timed", "run", "--clock", "sim", "--server", "127.0.0.1"); err != nil || cfg.pollSamples != 1 {
		t.Errorf("default --poll-samples: %v, %+v", err, cfg)
	}
	if cfg, err := buildConfig(t, "timed", "run", "--clock", "sim", "--server", "127.0.0.1", "--poll-samples", "2"); err != nil || cfg.pollSamples != 2 {
		t.Errorf("--poll-samples 2: %v, %+v", err, cfg)
	}
}

// builtConfig is what buildConfig saw: the daemon's Config as build left
// it, and the client's poll range.
type builtConfig struct {
	daemon.Config
	pollRangeSet bool
	maxPoll      int8
	interleaved  bool
	pollSamples  int
}

// buildConfig runs timed's run command up to the daemon: the flags are
// parsed and the core factory built, nothing is started.
func buildConfig(t *testing.T, args ...string) (builtConfig, error) {
	t.Helper()
	var got builtConfig
	a := newApp()
	stop := errors.New("stop before the daemon starts")
	for _, cmd := range a.Commands {
		if cmd.Name != "run" {
			continue
		}
		cmd.Action = func(c *cli.Context) error {
			cfg := daemon.Config{ID: uint32(c.Uint("id")), TickInterval: c.Duration("tick")}
			if c.IsSet("members") {
				m, err := app.ParseMembers(c.String("members"))
				if err != nil {
					return err
				}
				cfg.Members = m
			}
			if _, err := build(c, &cfg); err != nil {
				return err
			}
			if cc, err := clientConfig(c); err == nil && cc != nil {
				got.pollRangeSet, got.maxPoll, got.interleaved, got.pollSamples = cc.PollRangeSet, cc.MaxPoll, cc.Interleaved, cc.PollSamples
			}
			got.Config = cfg
			return stop
		}
	}
	var stderr bytes.Buffer
	a.Writer, a.ErrWriter = &bytes.Buffer{}, &stderr
	if err := a.Run(args); !errors.Is(err, stop) {
		return got, fmt.Errorf("%v (%s)", err, stderr.String())
	}
	return got, nil
}

func TestServeKeyFileErrors(t *testing.T) {
	dir := t.TempDir()
	bad := dir + "/bad.keys"
	empty := dir + "/empty.keys"
	writeFile(t, bad, "1 NOPE HEX:00\n")
	writeFile(t, empty, "# nothing\n")
	for path, want := range map[string]string{bad: "line 1", empty: "no keys", dir + "/missing": "no such file"} {
		var stderr bytes.Buffer
		a := newApp()
		a.Writer, a.ErrWriter = &bytes.Buffer{}, &stderr
		args := []string{"timed", "run", "--id", "1", "--members", "1=127.0.0.1:9", "--clock", "sim", "--serve", "127.0.0.1", "--ntp-key-file", path}
		if code := app.Run(a, args, &stderr); code != 1 || !strings.Contains(stderr.String(), want) {
			t.Errorf("%s: exit %d, %q", path, code, stderr.String())
		}
	}
}

// TestRenderClientSigns: the NTP client's offsets are the reference minus
// this clock, the opposite of `timed query`'s and ntpdate's habits in
// either direction; status says which, so that a clock 30 ms ahead
// (-30.000ms) is not read as one behind.
func TestRenderClientSigns(t *testing.T) {
	raw := []byte(`{"synchronized":true,"stratum":9,"sys_peer":"127.0.0.1:123","offset_ns":-30000000,"last_offset_ns":-30000000,"updates":1,
		"sources":[{"address":"127.0.0.1:123","mode":"server","stratum":8,"reach":"377","offset_ns":-30000000,"verdict":"sys_peer"}]}`)
	var out bytes.Buffer
	if err := renderClient(&out, raw); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-30.000ms now, -30.000ms at the last update (1 update); reference minus this clock: - means this clock is ahead", "Offset (source - local)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRenderBroadcast: the broadcast client's lines (mode, each
// broadcaster's state and delays, refusals, the RFC 8633 warning) and the
// broadcast server's line.
func TestRenderBroadcast(t *testing.T) {
	raw := []byte(`{"synchronized":true,"stratum":9,"sys_peer":"10.77.0.1:123","updates":3,
		"broadcast":{"listen":"broadcasts to port 123","authenticated":false,"warning":"following UNAUTHENTICATED broadcasts","broadcasters":1,
			"refused":{"replay":2,"unauthenticated":1},"last_refused":"10.77.0.9:123: unauthenticated broadcast"},
		"sources":[{"address":"10.77.0.1:123","mode":"broadcast","stratum":8,"reach":"377","verdict":"sys_peer",
			"broadcast":{"state":"following","delay_ns":49322,"apparent_delay_ns":45480,"calibrations":2,"key_id":0}}]}`)
	var out bytes.Buffer
	if err := renderClient(&out, raw); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Broadcast   : client of broadcasts to port 123, WARNING: following UNAUTHENTICATED broadcasts; 1 broadcaster(s), none heard yet",
		"Broadcaster : 10.77.0.1:123: following, delay 49.322us calibrated 2 time(s), apparent 45.480us, unsigned",
		"Refused     : 3 (replay 2, unauthenticated 1); last from a stranger: 10.77.0.9:123: unauthenticated broadcast",
		"10.77.0.1:123  broadcast",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	renderBroadcastServer(&out, &server.BroadcastStatus{Address: "239.77.0.5:123", IntervalMS: 16000, KeyID: 7, Sent: 3, Advertising: "stratum 8"})
	if want := "Broadcast  : to 239.77.0.5:123 every 16s, signed with key 7, advertising stratum 8; 3 sent\n"; out.String() != want {
		t.Errorf("server line %q, want %q", out.String(), want)
	}
}

// TestBroadcastFlagsUndone: a lab file's host section undoes its [timed]
// section's broadcast client with an empty group and a false switch; the
// master then broadcasts without "only used with" errors.
func TestBroadcastFlagsUndone(t *testing.T) {
	args := []string{"timed", "run", "--clock", "sim", "--control", filepath.Join(t.TempDir(), "c.sock"), "--check",
		"--serve", "127.0.0.1:12345", "--stratum", "8", "--broadcast", "239.77.0.5", "--broadcast-interface", "lo", "--broadcast-insecure",
		"--broadcast-client=false", "--broadcast-group", ""}
	var stderr bytes.Buffer
	a := newApp()
	a.Writer, a.ErrWriter = &bytes.Buffer{}, &stderr
	if code := app.Run(a, args, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}
