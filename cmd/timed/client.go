package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/pkg/timesync/client"
)

func clientFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "mode", EnvVars: app.Env(name, "mode"), Value: "ntp", Usage: "how to synchronise: `ntp` (follow --server/--peer in NTP modes), cristian (Cristian's algorithm against timed --server addresses) or berkeley (the --members agree on their average time: a master elected among them polls and corrects them; no --server or --peer)"},
		&cli.StringSliceFlag{Name: "server", EnvVars: app.Env(name, "server"), Usage: "follow the server `HOST[:PORT]` (NTP client mode, or Cristian's with --mode cristian; repeat for several: falsetickers are outvoted)"},
		&cli.IntFlag{Name: "cristian-burst", EnvVars: app.Env(name, "cristian-burst"), Value: client.DefaultCristianBurst, Usage: "with --mode cristian: requests per poll; the one with the smallest round trip is kept"},
		&cli.DurationFlag{Name: "cristian-min-delay", EnvVars: app.Env(name, "cristian-min-delay"), Usage: "with --mode cristian: the smallest one-way delay the network is known to have (tightens the accuracy ±(RTT/2 - min); 0 is always safe)"},
		&cli.StringSliceFlag{Name: "peer", EnvVars: app.Env(name, "peer"), Usage: "synchronise with `HOST[:PORT]` as a symmetric peer (modes 1/2)"},
		&cli.IntFlag{Name: "minpoll", EnvVars: app.Env(name, "minpoll"), Value: int(client.DefaultMinPoll), Usage: "shortest poll interval, log2 `SECONDS` (0: 1 s; down to -4 for tests)"},
		&cli.IntFlag{Name: "maxpoll", EnvVars: app.Env(name, "maxpoll"), Value: int(client.DefaultMaxPoll), Usage: "longest poll interval, log2 `SECONDS` (6: 64 s)"},
		&cli.BoolFlag{Name: "xleave", EnvVars: app.Env(name, "xleave"), Usage: "poll the --server sources in chrony's interleaved mode: a server that speaks it (chronyd, timed) sends the kernel's transmit stamp of its previous answer, taking its send path out of the offset (samples one poll older); a server that does not (ntpd, older timed) is used in basic mode and status says so"},
		&cli.IntFlag{Name: "poll-samples", EnvVars: app.Env(name, "poll-samples"), Value: 1, Usage: "requests per poll to each --server, each sent when the last is answered; the least delayed answer is used (the first after a quiet interval finds the path cold). A rate-limiting server sees N requests per poll interval"},
		&cli.DurationFlag{Name: "makestep", EnvVars: app.Env(name, "makestep"), Usage: "step the clock FORWARD when it is more than `D` behind, during the first 3 updates only (0: never step; the clock is never stepped back)"},
	}
}

// clientConfig reads the client flags; nil without --server or --peer.
func clientConfig(c *cli.Context) (*client.Config, error) {
	servers, peers := c.StringSlice("server"), c.StringSlice("peer")
	mode := c.String("mode")
	if c.Bool("xleave") && (mode != "ntp" || len(servers) == 0) {
		return nil, app.Usagef("--xleave is for NTP servers: it needs --server in --mode ntp (not peers, Cristian or Berkeley)")
	}
	if c.IsSet("poll-samples") && (mode != "ntp" || len(servers) == 0) {
		return nil, app.Usagef("--poll-samples is for NTP servers: it needs --server in --mode ntp (not peers, Cristian or Berkeley)")
	}
	if n := c.Int("poll-samples"); n < 1 || n > client.MaxPollSamples {
		return nil, app.Usagef("--poll-samples %d: want 1..%d", n, client.MaxPollSamples)
	}
	if mode != "cristian" {
		for _, f := range []string{"cristian-burst", "cristian-min-delay"} {
			if c.IsSet(f) {
				return nil, app.Usagef("--%s is only used with --mode cristian", f)
			}
		}
	}
	switch mode {
	case "ntp":
	case "berkeley":
		// The group's time is its own average: following a server at the
		// same time would give the clock two masters.
		if len(servers)+len(peers) > 0 {
			return nil, app.Usagef("--mode berkeley synchronises the --members with each other: it takes no --server or --peer (to follow NTP servers, run timed in --mode ntp)")
		}
	case "cristian":
		if len(peers) > 0 {
			return nil, app.Usagef("--peer is NTP's symmetric mode: not with --mode cristian")
		}
		if len(servers) == 0 {
			return nil, app.Usagef("--mode cristian needs at least one --server HOST[:PORT] (a timed --serve address)")
		}
	default:
		return nil, app.Usagef("--mode %q: want ntp, cristian or berkeley", mode)
	}
	if len(servers)+len(peers) == 0 {
		for _, f := range []string{"minpoll", "maxpoll", "makestep"} {
			if c.IsSet(f) {
				return nil, app.Usagef("--%s is only used with --server or --peer", f)
			}
		}
		return nil, nil
	}
	cfg := client.DefaultLANConfig()
	// One source given twice (or under two names) would be counted twice
	// where falsetickers are outvoted; the client refuses it at start,
	// naming no flag, and --check would pass it.
	given := map[netip.AddrPort]string{}
	source := func(flag, s string) (netip.AddrPort, error) {
		ap, err := resolveSource(s)
		if err != nil {
			return ap, app.UsageError{Err: fmt.Errorf("--%s: %w", flag, err)}
		}
		key := netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		if first, dup := given[key]; dup {
			return ap, app.Usagef("--%s %s: %s is already a source (%s): each server or peer counts once", flag, s, key, first)
		}
		given[key] = "--" + flag + " " + s
		return ap, nil
	}
	for _, s := range servers {
		ap, err := source("server", s)
		if err != nil {
			return nil, err
		}
		if mode == "cristian" {
			cfg.CristianServers = append(cfg.CristianServers, ap)
		} else {
			cfg.Servers = append(cfg.Servers, ap)
		}
	}
	if mode == "cristian" {
		if n := c.Int("cristian-burst"); n < 1 || n > 64 {
			return nil, app.Usagef("--cristian-burst %d: want 1..64", n)
		}
		if d := c.Duration("cristian-min-delay"); d < 0 {
			return nil, app.Usagef("--cristian-min-delay %v: must not be negative", d)
		}
		cfg.CristianBurst, cfg.CristianMinDelay = c.Int("cristian-burst"), c.Duration("cristian-min-delay")
	}
	for _, s := range peers {
		ap, err := source("peer", s)
		if err != nil {
			return nil, err
		}
		cfg.Peers = append(cfg.Peers, ap)
	}
	minPoll, maxPoll := c.Int("minpoll"), c.Int("maxpoll")
	if minPoll < -4 || maxPoll > 17 || minPoll > maxPoll {
		return nil, app.Usagef("--minpoll %d --maxpoll %d: want -4 <= minpoll <= maxpoll <= 17", minPoll, maxPoll)
	}
	cfg.MinPoll, cfg.MaxPoll, cfg.PollRangeSet = int8(minPoll), int8(maxPoll), true
	cfg.Interleaved = c.Bool("xleave")
	cfg.PollSamples = c.Int("poll-samples")
	if d := c.Duration("makestep"); d < 0 {
		return nil, app.Usagef("--makestep %v: want a positive threshold, or 0 never to step", d)
	} else {
		cfg.StepThreshold = d
	}
	return &cfg, nil
}

// resolveSource reads HOST[:PORT] (port 123 by default). A name is resolved
// once, at start.
func resolveSource(s string) (netip.AddrPort, error) {
	if ap, err := parseServeAddr(s); err == nil {
		return ap, nil
	}
	host, port := s, strconv.Itoa(ntpPort)
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return netip.AddrPort{}, fmt.Errorf("%q: bad port %q", s, port)
	}
	if err := app.MistypedIP(host); err != nil {
		return netip.AddrPort{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := lookupHost(ctx, host)
	if err != nil || len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("%q does not resolve: %v (give an IP address or fix name resolution)", host, err)
	}
	return netip.AddrPortFrom(ips[0].Unmap(), uint16(n)), nil
}

// renderClient prints what `chronyc tracking` and `chronyc sources` show.
func renderClient(w io.Writer, raw json.RawMessage) error {
	var st client.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("unexpected NTP client status: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	if st.Broadcast == nil && !slices.ContainsFunc(st.Sources, func(s client.SourceStatus) bool { return s.Verdict != client.VerdictSelf }) {
		fmt.Fprintln(tw, "NTP client\t: follows nothing: every source configured is this host")
		if err := tw.Flush(); err != nil {
			return err
		}
		return renderSources(w, st.Sources)
	}
	state := "unsynchronised"
	if st.Synchronized {
		state = "synchronised"
	}
	if st.MeasureOnly {
		state = "measuring only (--no-adjust: the clock is never corrected)"
	}
	peer := st.SysPeer
	if peer == "" {
		peer = "none"
	}
	fmt.Fprintf(tw, "NTP client\t: %s, system peer %s, stratum %d, refid %s (%s)\n", state, peer, st.Stratum, st.ReferenceID, st.Selection)
	// The core's offsets are the reference minus this clock (the
	// correction still to make), the opposite of `timed query`'s: say so.
	fmt.Fprintf(tw, "Offset\t: %s now, %s at the last update (%s); reference minus this clock: - means this clock is ahead\n",
		app.FormatOffset(time.Duration(st.OffsetNS)), app.FormatOffset(time.Duration(st.LastOffsetNS)), app.Plural(uint64(st.Updates), "update"))
	fmt.Fprintf(tw, "Frequency\t: %+.3f ppm (error %.3f ppm)\n", st.FrequencyPPM, st.FrequencyErrorPPM)
	if st.ErrorBoundNS > 0 || st.Updates > 0 {
		// The bound itself is the Time line's; here its two sides.
		fmt.Fprintf(tw, "Bounds\t: true time within [%s, %s] of this clock\n",
			app.FormatOffset(time.Duration(st.BoundLowNS)), app.FormatOffset(time.Duration(st.BoundHighNS)))
	}
	fmt.Fprintf(tw, "Root\t: delay %s, dispersion %s, jitter %s\n",
		fmtDur(time.Duration(st.RootDelayNS)), fmtDur(time.Duration(st.RootDispersionNS)), fmtDur(time.Duration(st.SystemJitterNS)))
	if st.Broadcast != nil {
		renderBroadcastClient(tw, st.Broadcast, st.Sources)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return renderSources(w, st.Sources)
}

// renderSources prints the sources, like `chronyc sources`; a source that
// is this host has no numbers to show.
func renderSources(w io.Writer, sources []client.SourceStatus) error {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Source\tMode\tStratum\tReach\tPoll\tOffset (source - local)\tDelay\tDispersion\tJitter\tVerdict")
	for _, s := range sources {
		verdict := s.Verdict
		if s.Why != "" {
			verdict += ": " + s.Why
		}
		if s.Verdict == client.VerdictSelf {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t-\t%s\n", s.Address, s.Mode, verdict)
			continue
		}
		mode := s.Mode
		if s.Interleaved != "" {
			mode += " (xleave: " + s.Interleaved + ")"
		}
		if s.PollSamplesWhy != "" {
			mode += " (poll-samples: 1 answer a poll)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", s.Address, mode, s.Stratum, s.Reach, s.Poll,
			app.FormatOffset(time.Duration(s.OffsetNS)), fmtDur(time.Duration(s.DelayNS)),
			fmtDur(time.Duration(s.DispersionNS)), fmtDur(time.Duration(s.JitterNS)), verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range sources {
		if s.InterleavedWhy != "" {
			fmt.Fprintf(w, "%s: xleave %s: %s\n", s.Address, s.Interleaved, s.InterleavedWhy)
		}
		if s.PollSamplesWhy != "" {
			fmt.Fprintf(w, "%s: %s\n", s.Address, s.PollSamplesWhy)
		}
	}
	return nil
}
