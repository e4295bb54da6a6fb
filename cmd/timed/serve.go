package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/berkeley"
	"github.com/synclab/synclab/pkg/timesync/client"
	"github.com/synclab/synclab/pkg/timesync/server"
	"github.com/synclab/synclab/pkg/timesync/timedcore"
	"github.com/synclab/synclab/pkg/wire"
)

// ntpPort is the NTP port, the default of --serve and of query targets.
const ntpPort = 123

func serveFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "serve", EnvVars: app.Env(name, "serve"), Usage: "answer NTP requests on `ADDR` (an IP, with :PORT or port 123; e.g. 0.0.0.0 or 10.0.0.1:123)"},
		&cli.UintFlag{Name: "stratum", EnvVars: app.Env(name, "stratum"), Value: wire.StratumUnsynchronized, Usage: "with --serve: stratum `N` advertised without a synchronised upstream (16: unsynchronised, clients refuse the time; a lab master sets e.g. 8, like chrony's local stratum)"},
		&cli.DurationFlag{Name: "local-error", EnvVars: app.Env(name, "local-error"), Usage: "with --stratum: how far, at most, the time served without a synchronised upstream is from true time (`D`, below 1s), advertised as the root dispersion so that clients' error bounds cover it; 0: this clock is declared the reference, as chrony's local. Required for --mode berkeley to serve the group's time at --stratum"},
		&cli.StringFlag{Name: "ntp-key-file", EnvVars: app.Env(name, "ntp-key-file"), Usage: "with --serve or --broadcast-client: chrony-format NTP key file (`PATH`): authenticated requests get signed replies, broadcasts are signed (--broadcast) or checked (--broadcast-client)"},
		&cli.DurationFlag{Name: "rate-limit", EnvVars: app.Env(name, "rate-limit"), Value: server.DefaultRateInterval, Usage: "with --serve: average interval a client may poll at (bursts of 8 allowed); faster clients get a RATE kiss-o'-death; 0 turns limiting off"},
	}
}

// serveConfig reads the --serve flags; nil without --serve.
type serveSettings struct {
	addr netip.AddrPort
	cfg  server.Config
}

func serveConfig(c *cli.Context) (*serveSettings, error) {
	if !c.IsSet("serve") {
		for _, f := range []string{"stratum", "rate-limit", "local-error"} {
			if c.IsSet(f) {
				return nil, app.Usagef("--%s is only used with --serve", f)
			}
		}
		return nil, nil
	}
	addr, err := parseServeAddr(c.String("serve"))
	if err != nil {
		return nil, app.UsageError{Err: fmt.Errorf("--serve: %w", err)}
	}
	s := &serveSettings{addr: addr}
	switch st := c.Uint("stratum"); {
	case st == wire.StratumUnsynchronized:
	case st >= 1 && st < wire.StratumUnsynchronized:
		s.cfg.LocalStratum = uint8(st)
	default:
		return nil, app.Usagef("--stratum %d: want 1..15, or 16 for unsynchronised", st)
	}
	switch d := c.Duration("local-error"); {
	case d != 0 && s.cfg.LocalStratum == 0:
		return nil, app.Usagef("--local-error %v is advertised at the --stratum served without an upstream: give --stratum 1..15", d)
	case d < 0 || d >= server.MaxLocalError:
		return nil, app.Usagef("--local-error %v: want 0 up to below %v (clients refuse a root distance beyond RFC 5905's MAXDIST)", d, server.MaxLocalError)
	default:
		s.cfg.LocalError = d
	}
	if s.cfg.Keys, err = ntpKeys(c); err != nil {
		return nil, err
	}
	switch d := c.Duration("rate-limit"); {
	case d == 0:
		s.cfg.RateLimit.Interval = -1
	case d < 0:
		return nil, app.Usagef("--rate-limit %v: want a positive interval, or 0 for no limit", d)
	default:
		s.cfg.RateLimit.Interval = d
	}
	return s, nil
}

// ntpKeys reads --ntp-key-file (nil without it).
func ntpKeys(c *cli.Context) ([]wire.NTPKey, error) {
	path := c.String("ntp-key-file")
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--ntp-key-file: %w", err)
	}
	keys, err := wire.ParseChronyKeys(data)
	if err != nil {
		return nil, fmt.Errorf("--ntp-key-file %s: %w", path, err)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("--ntp-key-file %s: no keys in the file", path)
	}
	return keys, nil
}

// parseServeAddr reads "IP", "IP:PORT", "[IPv6]:PORT" or "IPv6". Names are
// refused: a daemon binds addresses, and must not depend on DNS at start.
func parseServeAddr(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		if ap.Port() == 0 {
			return ap, fmt.Errorf("%q: port 0 would pick a random port; give a port or leave it out for %d", s, ntpPort)
		}
		return ap, nil
	}
	host := strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if a, err := netip.ParseAddr(host); err == nil {
		return netip.AddrPortFrom(a, ntpPort), nil
	}
	if _, p, ok := strings.Cut(s, ":"); ok && !strings.Contains(p, ":") {
		if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
			return netip.AddrPort{}, fmt.Errorf("%q: bad port %q", s, p)
		}
	}
	return netip.AddrPort{}, fmt.Errorf("%q: want an IP address, IP:PORT or [IPv6]:PORT, not a name (e.g. 0.0.0.0 or 10.0.0.1:123)", s)
}

// coreFactory builds timed's core: for the members, if any, the liveness
// detector, or with --mode berkeley (bk) the Berkeley core that
// synchronises them;
// with --serve the NTP server, and with --server/--peer the NTP client and
// its discipline; the server then advertises what the client knows. In
// Berkeley mode the server serves the group's time (server.Config.Group):
// unsynchronised unless --stratum and --local-error say how far the group's
// time may be from true time, then with that plus the member's bound
// relative to the group as root dispersion: the group agrees with itself,
// not with any reference.
func coreFactory(cfg *daemon.Config, serve *serveSettings, cc *client.Config, bk *berkeley.Config) daemon.CoreFactory {
	standalone := cfg.Standalone()
	var live daemon.CoreFactory
	if !standalone {
		live = app.LivenessCore(cfg)
	}
	precision := measurePrecision(cfg.Clock.Now)
	cluster := cfg.Cluster
	if cluster == "" {
		cluster = "synclab" // the daemon's default, applied later
	}
	// Cristian's frames need a sender ID, never checked by the other end;
	// outside a cluster there is no member ID to use.
	frameID := cfg.ID
	if standalone {
		frameID = standaloneFrameID
	}
	if serve != nil {
		cfg.DatagramAddr = serve.addr
		serve.cfg.Precision = precision
		// Cristian's requests arrive on the same socket.
		serve.cfg.Cristian = server.CristianConfig{ID: frameID, Cluster: wire.ClusterID(cluster), Keys: cfg.Keys}
	}
	if cc != nil && serve == nil {
		cfg.Datagrams = true
		cfg.DatagramAddr = ntpAddr(cfg, serve, cc)
	}
	if cc != nil {
		cc.TickInterval = cfg.TickInterval
		cc.Precision = precision
		cc.ID, cc.Cluster, cc.Keys = frameID, wire.ClusterID(cluster), cfg.Keys
		if serve != nil {
			cc.Address = serve.addr.Addr() // loop detection
			cc.LocalStratum = serve.cfg.LocalStratum
		}
	}
	return func(env core.Env) (core.Core, error) {
		// One file, a section per part that keeps state (a file from
		// before sections is the one part's that persisted then: the
		// Berkeley core's in Berkeley mode, else the client's).
		legacy := timedcore.SectionClient
		if bk != nil {
			legacy = timedcore.SectionCluster
		}
		saved, err := timedcore.DecodeState(env.State, legacy)
		if err != nil {
			return nil, fmt.Errorf("%w (remove the file only if you accept that this member's terms restart and its frequency is learnt again)", err)
		}
		tc := timedcore.Config{State: saved}
		switch {
		case bk != nil:
			berkEnv := env
			berkEnv.State = saved.Part(timedcore.SectionCluster)
			if tc.Cluster, err = newBerkeley(*bk, berkEnv, cfg.StateDir); err != nil {
				return nil, err
			}
		case live != nil:
			liveEnv := env
			liveEnv.State = nil // the liveness detector keeps nothing
			if tc.Cluster, err = live(liveEnv); err != nil {
				return nil, err
			}
		}
		if serve != nil {
			scfg := serve.cfg
			scfg.Group = bk != nil
			if tc.Server, err = server.New(scfg); err != nil {
				return nil, err
			}
		}
		if cc != nil {
			c := *cc
			c.Rand = env.Rand
			ntpc, err := client.New(c)
			if err != nil {
				return nil, err
			}
			if persisted := saved.Part(timedcore.SectionClient); persisted != nil {
				if err := ntpc.Restore(persisted); err != nil {
					return nil, fmt.Errorf("%w (the state file is in --state-dir; remove it to start from 0 ppm)", err)
				}
			}
			tc.Client = ntpc
		}
		return timedcore.New(tc)
	}
}

// ntpAddr is where timed's NTP socket listens: --serve's address; else, a
// client needing a socket all the same, this host's own address when it is
// a member, so servers see (and rate-limit) each host by its address even
// when hosts share an interface, or every address.
func ntpAddr(cfg *daemon.Config, serve *serveSettings, cc *client.Config) netip.AddrPort {
	if serve != nil {
		return serve.addr
	}
	if cc != nil && cc.Broadcast.Enabled && cfg.DatagramAddr.IsValid() {
		return cfg.DatagramAddr // where broadcasts come: build set it
	}
	self := netip.IPv4Unspecified()
	if !cfg.Standalone() && !cfg.Members[cfg.ID].Addr().IsUnspecified() {
		self = cfg.Members[cfg.ID].Addr()
	}
	// A client's port is any; a symmetric peer's is fixed: its peer's
	// packets come to the port it polls from, and a peer is configured
	// with ours (RFC 5905: port 123 at both ends).
	port := uint16(0)
	if cc != nil && len(cc.Peers) > 0 {
		port = ntpPort
	}
	return netip.AddrPortFrom(self, port)
}

// standaloneFrameID is the sender ID of Cristian's frames from a timed
// outside any cluster: frames need one (0 is not a member ID), and the
// other end only echoes it.
const standaloneFrameID = 1

// measurePrecision returns the precision exponent of a clock: log2 of the
// smallest step between two different readings, rounded up, as ntpd and
// chrony measure it (what a reading costs, for a nanosecond clock).
func measurePrecision(now func() time.Time) int8 {
	best := time.Duration(math.MaxInt64)
	for range 64 {
		a := now()
		b := a
		// Bounded: a clock that does not move in 10,000 reads is coarse,
		// and the last difference (0) is skipped below.
		for i := 0; i < 10_000 && b.Equal(a); i++ {
			b = now()
		}
		if d := b.Sub(a); d > 0 && d < best {
			best = d
		}
	}
	if best == time.Duration(math.MaxInt64) {
		return -1 // did not move at all: claim no better than 0.5 s
	}
	exp := int(math.Ceil(math.Log2(best.Seconds())))
	return int8(min(max(exp, -32), -1))
}

// coreView is timedcore.Status with the cluster part left raw for the
// liveness renderer.
type coreView struct {
	Sync    timedcore.Sync  `json:"sync"`
	Cluster json.RawMessage `json:"cluster"`
	Server  *server.Status  `json:"server"`
	Client  json.RawMessage `json:"client"`
}

// renderCore prints the members table (or in Berkeley mode the group's
// view) and, when following or serving, chronyc-like blocks about the NTP
// client and server.
func renderCore(w io.Writer, raw []byte, now time.Time) error {
	var v coreView
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("unexpected timed status: %w", err)
	}
	if err := renderSync(w, v.Sync); err != nil {
		return err
	}
	switch {
	case isBerkeley(v.Cluster):
		fmt.Fprintln(w)
		if err := renderBerkeley(w, v.Cluster, now); err != nil {
			return err
		}
	case len(v.Cluster) > 0:
		fmt.Fprintln(w)
		if err := app.RenderLiveness(w, v.Cluster, now); err != nil {
			return err
		}
	}
	if len(v.Client) > 0 && string(v.Client) != "null" {
		fmt.Fprintln(w)
		if err := renderClient(w, v.Client); err != nil {
			return err
		}
	}
	if v.Server == nil {
		return nil
	}
	fmt.Fprintln(w)
	return renderServer(w, v.Server)
}

func renderServer(w io.Writer, s *server.Status) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	sys := s.System
	state := "synchronised"
	if !sys.Synchronized {
		state = "unsynchronised: clients will refuse the time"
	}
	local := ""
	if s.LocalStratum != 0 {
		local = fmt.Sprintf(" (local stratum %d)", s.LocalStratum)
	}
	if s.LocalErrorNS != 0 {
		local = fmt.Sprintf(" (local stratum %d, within %s of true time as --local-error vouches)", s.LocalStratum, fmtDur(time.Duration(s.LocalErrorNS)))
	}
	if s.Unsynchronised != "" {
		state = "unsynchronised: " + s.Unsynchronised
	}
	fmt.Fprintf(tw, "NTP server\t: stratum %d%s, leap %d (%s), refid %s\n", sys.Stratum, local, sys.Leap, state, sys.RefID)
	fmt.Fprintf(tw, "Root\t: delay %s, dispersion %s, precision 2^%d s (%s)\n",
		fmtDur(time.Duration(sys.RootDelayNs)), fmtDur(time.Duration(sys.RootDispersionNs)), sys.Precision, precisionString(sys.Precision))
	fmt.Fprintf(tw, "Requests\t: %d, replies %d (authenticated %d), KoD RATE %d, crypto-NAK %s\n",
		s.Requests, s.Replies, s.Authenticated, s.KoDRate, counts(s.CryptoNAK))
	fmt.Fprintf(tw, "Dropped\t: %s\n", counts(s.Dropped))
	if x := s.Interleaved; x.Saved > 0 || x.Unknown > 0 {
		fmt.Fprintf(tw, "Interleaved\t: %d answers with the previous answer's kernel transmit stamp; %d stamps kept (of %d), %d evicted, %d asked for and not kept\n",
			x.Answers, x.Kept, x.Capacity, x.Evicted, x.Unknown)
	}
	if r := s.RateLimit; r != nil {
		fmt.Fprintf(tw, "Rate limit\t: 1 request per %s on average, bursts of %d; %d clients tracked (max %d, %d evicted)\n",
			time.Duration(r.IntervalMS)*time.Millisecond, r.Burst, r.Clients, r.MaxClients, r.Evicted)
	} else {
		fmt.Fprintf(tw, "Rate limit\t: off\n")
	}
	keys := "none"
	if s.Keys > 0 {
		keys = fmt.Sprintf("%d symmetric keys", s.Keys)
	}
	fmt.Fprintf(tw, "Auth\t: %s\n", keys)
	if err := tw.Flush(); err != nil {
		return err
	}
	if s.Broadcast != nil {
		renderBroadcastServer(w, s.Broadcast)
	}
	return nil
}

// counts renders a counter map as "3 (mode_control 1, rate_limited 2)".
func counts(m map[string]uint64) string {
	var total uint64
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] > 0 {
			total += m[k]
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	if total == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
}

func precisionString(exp int8) string {
	return time.Duration(math.Round(math.Ldexp(float64(time.Second), int(exp)))).String()
}

// fmtDur prints an unsigned duration in the one style of every measured
// time (app.FormatDuration).
func fmtDur(d time.Duration) string { return app.FormatDuration(d) }
