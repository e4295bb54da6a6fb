package main

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/timesync/client"
	"github.com/synclab/synclab/pkg/timesync/server"
	"github.com/synclab/synclab/pkg/wire"
)

func broadcastFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "broadcast", EnvVars: app.Env(name, "broadcast"), Usage: "with --serve: also send NTP broadcasts (mode 5) to `ADDR` (a subnet broadcast address or a multicast group; port 123 unless given), signed with --broadcast-key, like chronyd's broadcast directive"},
		&cli.DurationFlag{Name: "broadcast-interval", EnvVars: app.Env(name, "broadcast-interval"), Value: server.DefaultBroadcastInterval, Usage: "with --broadcast: time between broadcasts (1s to 36h)"},
		&cli.UintFlag{Name: "broadcast-key", EnvVars: app.Env(name, "broadcast-key"), Usage: "with --broadcast: the key `ID` of --ntp-key-file that signs the broadcasts (default: the file's first key)"},
		&cli.BoolFlag{Name: "broadcast-client", EnvVars: app.Env(name, "broadcast-client"), Usage: "follow NTP broadcasts (mode 5) heard on port 123 (or --broadcast-group): the delay is calibrated with client/server exchanges first; the broadcasts must be signed with a key of --ntp-key-file"},
		&cli.StringFlag{Name: "broadcast-group", EnvVars: app.Env(name, "broadcast-group"), Usage: "with --broadcast-client: join the multicast `GROUP[:PORT]` (port 123 unless given) on --broadcast-interface"},
		&cli.StringFlag{Name: "broadcast-interface", EnvVars: app.Env(name, "broadcast-interface"), Usage: "the network `IF` multicast broadcasts are sent from (--broadcast GROUP) or joined on (--broadcast-group)"},
		&cli.BoolFlag{Name: "broadcast-insecure", EnvVars: app.Env(name, "broadcast-insecure"), Usage: "send (--broadcast) or follow (--broadcast-client) UNSIGNED broadcasts, which anyone on the LAN can forge (RFC 8633 deprecates them); chronyd's broadcasts are unsigned"},
		&cli.DurationFlag{Name: "broadcast-timeout", EnvVars: app.Env(name, "broadcast-timeout"), Value: client.DefaultBroadcastTimeout, Usage: "with --broadcast-client: warn when no broadcast is heard for `D`"},
	}
}

// broadcastSettings is what the broadcast flags ask of the daemon's NTP
// socket: the port a broadcast client listens on, and the options that
// let it send to or hear a group.
type broadcastSettings struct {
	clientPort uint16 // a broadcast client's port; 0 when not one
	groups     *transport.GroupOptions
}

// broadcastConfig reads the broadcast flags into serve's and cc's
// configurations (making a client configuration for a broadcast client
// that follows no server) and returns the client configuration.
func broadcastConfig(c *cli.Context, serve *serveSettings, cc *client.Config) (*client.Config, broadcastSettings, error) {
	var bs broadcastSettings
	sending, following := c.IsSet("broadcast"), c.Bool("broadcast-client")
	iface := c.String("broadcast-interface")
	for _, f := range []struct {
		name, with string
		ok         bool
	}{
		{"broadcast-interval", "--broadcast", sending},
		{"broadcast-key", "--broadcast", sending},
		{"broadcast-group", "--broadcast-client", following},
		{"broadcast-timeout", "--broadcast-client", following},
		{"broadcast-insecure", "--broadcast or --broadcast-client", sending || following},
		{"broadcast-interface", "--broadcast or --broadcast-client", sending || following},
	} {
		if given(c, f.name) && !f.ok {
			return nil, bs, app.Usagef("--%s is only used with %s", f.name, f.with)
		}
	}
	if sending && following {
		return nil, bs, app.Usagef("--broadcast and --broadcast-client: a host either sends broadcasts or follows them")
	}
	if !following && serve == nil && given(c, "ntp-key-file") {
		return nil, bs, app.Usagef("--ntp-key-file is only used with --serve or --broadcast-client")
	}
	insecure := c.Bool("broadcast-insecure")
	if sending {
		if serve == nil {
			return nil, bs, app.Usagef("--broadcast needs --serve: broadcast clients calibrate their delay with client/server exchanges to the broadcaster (give e.g. --serve 0.0.0.0)")
		}
		dst, err := parseServeAddr(c.String("broadcast"))
		if err != nil {
			return nil, bs, app.UsageError{Err: fmt.Errorf("--broadcast: %w", err)}
		}
		b := server.BroadcastConfig{Addr: dst, Interval: c.Duration("broadcast-interval"), Insecure: insecure}
		switch {
		case insecure && c.IsSet("broadcast-key"):
			return nil, bs, app.Usagef("--broadcast-key and --broadcast-insecure: choose one")
		case insecure:
		case len(serve.cfg.Keys) == 0:
			return nil, bs, app.Usagef("--broadcast: broadcasts are signed (RFC 8633 deprecates unauthenticated broadcast): give --ntp-key-file (the clients need the same key), or --broadcast-insecure to send them unsigned")
		case c.IsSet("broadcast-key"):
			b.KeyID = uint32(c.Uint("broadcast-key"))
			if !slices.ContainsFunc(serve.cfg.Keys, func(k wire.NTPKey) bool { return k.ID == b.KeyID }) {
				return nil, bs, app.Usagef("--broadcast-key %d is not in --ntp-key-file", b.KeyID)
			}
		default:
			b.KeyID = serve.cfg.Keys[0].ID
		}
		bs.groups = &transport.GroupOptions{Broadcast: true}
		if dst.Addr().IsMulticast() {
			if iface == "" {
				return nil, bs, app.Usagef("--broadcast %v is a multicast group: give --broadcast-interface, the interface to send it from", dst.Addr())
			}
			bs.groups.Interface, bs.groups.TTL = iface, 1
		} else if iface != "" {
			return nil, bs, app.Usagef("--broadcast-interface is for a multicast group; %v is not one", dst.Addr())
		}
		if serve.addr.Addr().IsLoopback() && !dst.Addr().IsLoopback() && !dst.Addr().IsMulticast() {
			return nil, bs, app.Usagef("--broadcast %v from --serve %v: a loopback socket cannot reach that network; serve on its address or 0.0.0.0", dst.Addr(), serve.addr)
		}
		serve.cfg.Broadcast = b
		return cc, bs, nil
	}
	if !following {
		return cc, bs, nil
	}
	if c.String("mode") != "ntp" {
		return nil, bs, app.Usagef("--broadcast-client follows NTP broadcasts: not with --mode %s", c.String("mode"))
	}
	keys, err := ntpKeys(c)
	if err != nil {
		return nil, bs, err
	}
	if len(keys) == 0 && !insecure {
		return nil, bs, app.Usagef("--broadcast-client needs the broadcasters' key (--ntp-key-file): RFC 8633 deprecates unauthenticated broadcast; to follow unsigned broadcasts (chronyd's) anyway, add --broadcast-insecure")
	}
	if cc == nil {
		def := client.DefaultLANConfig()
		cc = &def
	}
	listen := fmt.Sprintf("broadcasts to port %d", ntpPort)
	bs.clientPort = ntpPort
	if g := c.String("broadcast-group"); g != "" {
		group, err := parseServeAddr(g)
		if err != nil {
			return nil, bs, app.UsageError{Err: fmt.Errorf("--broadcast-group: %w", err)}
		}
		if !group.Addr().Is4() || !group.Addr().IsMulticast() {
			return nil, bs, app.Usagef("--broadcast-group %v: want an IPv4 multicast group (224.0.0.0/4), e.g. 239.77.0.5; broadcasts to a subnet's broadcast address need no group", group)
		}
		if iface == "" {
			return nil, bs, app.Usagef("--broadcast-group needs --broadcast-interface: the interface the group is joined on")
		}
		bs.groups = &transport.GroupOptions{Interface: iface, TTL: 1, Join: group.Addr()}
		bs.clientPort = group.Port()
		listen = fmt.Sprintf("group %v on %s", group, iface)
	} else if iface != "" {
		return nil, bs, app.Usagef("--broadcast-interface is for a multicast group: give --broadcast-group too")
	}
	if serve != nil && (!serve.addr.Addr().IsUnspecified() || serve.addr.Port() != bs.clientPort) {
		return nil, bs, app.Usagef("--broadcast-client hears broadcasts on 0.0.0.0:%d, where this timed's one NTP socket must listen: with --serve, give --serve 0.0.0.0:%d", bs.clientPort, bs.clientPort)
	}
	cc.Broadcast = client.BroadcastConfig{Enabled: true, Listen: listen, Keys: keys, Insecure: insecure, Timeout: c.Duration("broadcast-timeout")}
	if cc.Broadcast.Timeout < time.Second {
		return nil, bs, app.Usagef("--broadcast-timeout %v: at least 1s", cc.Broadcast.Timeout)
	}
	return cc, bs, nil
}

// renderBroadcastClient prints the broadcast client's lines into the NTP
// client's block (tw, a tabwriter).
func renderBroadcastClient(tw io.Writer, b *client.BroadcastClientStatus, sources []client.SourceStatus) {
	auth := "signed broadcasts only"
	if !b.Authenticated {
		auth = "WARNING: " + b.Warning
	}
	heard := "none heard yet"
	if !b.LastHeard.IsZero() {
		heard = "last heard " + b.LastHeard.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(tw, "Broadcast\t: client of %s, %s; %d broadcaster(s), %s\n", b.Listen, auth, b.Broadcasters, heard)
	for _, s := range sources {
		if s.Broadcast == nil {
			continue
		}
		sb := s.Broadcast
		line := fmt.Sprintf("%s: %s, delay %s calibrated", s.Address, sb.State, fmtDur(time.Duration(sb.DelayNS)))
		if sb.Calibrations == 0 {
			line = fmt.Sprintf("%s: %s, delay not measured yet", s.Address, sb.State)
		} else {
			line += fmt.Sprintf(" %d time(s)", sb.Calibrations)
		}
		if sb.ApparentDelayNS != 0 {
			line += fmt.Sprintf(", apparent %s", fmtDur(time.Duration(sb.ApparentDelayNS)))
		}
		if sb.ErrorNS != 0 {
			line += fmt.Sprintf(", sample error ±%s", fmtDur(time.Duration(sb.ErrorNS)))
		}
		key := "unsigned"
		if sb.KeyID != 0 {
			key = fmt.Sprintf("key %d", sb.KeyID)
		}
		line += ", " + key
		if sb.Why != "" {
			line += "; " + sb.Why
		}
		fmt.Fprintf(tw, "Broadcaster\t: %s\n", line)
	}
	refused := "0"
	if len(b.Refused) > 0 {
		refused = counts(b.Refused)
	}
	if b.LastRefused != "" {
		refused += "; last from a stranger: " + b.LastRefused
	}
	fmt.Fprintf(tw, "Refused\t: %s\n", refused)
}

// renderBroadcastServer prints the broadcast server's line.
func renderBroadcastServer(w io.Writer, b *server.BroadcastStatus) {
	key := "UNSIGNED (--broadcast-insecure)"
	if b.KeyID != 0 {
		key = fmt.Sprintf("signed with key %d", b.KeyID)
	}
	last := ""
	if b.LastSent != "" {
		last = ", last " + b.LastSent
	}
	fmt.Fprintf(w, "Broadcast  : to %s every %s, %s, advertising %s; %d sent%s\n",
		b.Address, time.Duration(b.IntervalMS)*time.Millisecond, key, b.Advertising, b.Sent, last)
}

// given says whether flag was set to something: a lab file's host section
// may set a string empty or a switch false to undo its [timed] section.
func given(c *cli.Context, flag string) bool {
	if !c.IsSet(flag) {
		return false
	}
	switch v := c.Value(flag).(type) {
	case string:
		return v != ""
	case bool:
		return v
	}
	return true
}

// broadcastListen is where a broadcast client's NTP socket listens.
func broadcastListen(port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.IPv4Unspecified(), port)
}
