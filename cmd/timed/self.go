package main

import (
	"fmt"
	"log/slog"
	"net/netip"
	"strings"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/timesync/client"
)

// markSelf takes out of cc's sources those that are this timed itself: an
// address of this machine at the port where this timed's NTP socket
// answers (its --serve port, or 123 for symmetric peers). Such a source
// would be polled and answer with this very clock: the lab master whose
// TIMED_SERVER names its own address followed itself, and its verdict
// blamed the stratum. They stay in the status, with the verdict "self"
// and why (client.Config.Self), and are logged once: at WARN when nothing
// is left to follow and this host is no local reference, else at INFO (a
// master listing itself with the lab's servers, as a shared lab file does).
func markSelf(cfg *daemon.Config, serve *serveSettings, cc *client.Config, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	listen := ntpAddr(cfg, serve, cc)
	if listen.Port() == 0 {
		return nil // an ephemeral port: nothing can be configured to reach it
	}
	local, err := app.LocalAddrs()
	if err != nil {
		return fmt.Errorf("checking whether a source is this host: %w", err)
	}
	isSelf := func(a netip.AddrPort) (string, bool) {
		a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
		if a.Port() != listen.Port() {
			return "", false
		}
		if a.Addr() == listen.Addr().Unmap() {
			where, _ := app.LocalAddr(local, a.Addr())
			return where, true
		}
		if !listen.Addr().IsUnspecified() {
			return "", false
		}
		return app.LocalAddr(local, a.Addr())
	}
	var names []string
	keep := func(list []netip.AddrPort, mode string) []netip.AddrPort {
		var out []netip.AddrPort
		for _, a := range list {
			where, self := isSelf(a)
			if !self {
				out = append(out, a)
				continue
			}
			what := "address (" + where + ")"
			if where == "loopback" {
				what = "loopback address"
			}
			cc.Self = append(cc.Self, client.SelfSource{Addr: a, Mode: mode,
				Why: fmt.Sprintf("this host: %s is this machine's %s, where this timed answers NTP on port %d", a.Addr(), what, listen.Port())})
			names = append(names, a.String())
		}
		return out
	}
	cc.Servers = keep(cc.Servers, "server")
	cc.CristianServers = keep(cc.CristianServers, "server")
	cc.Peers = keep(cc.Peers, "peer")
	if len(names) == 0 {
		return nil
	}
	left := len(cc.Servers) + len(cc.CristianServers) + len(cc.Peers)
	msg := fmt.Sprintf("not following %s: this host itself (a clock cannot follow itself)", strings.Join(names, ", "))
	switch {
	case left == 0 && cc.LocalStratum == 0:
		log.Warn(msg+"; nothing else to follow, so this clock stays unsynchronised: name another server, or serve as the lab's reference with --stratum (TIMED_STRATUM=8)", "sources", names)
	case left == 0:
		log.Info(msg+fmt.Sprintf("; this host is the lab's reference (local stratum %d)", cc.LocalStratum), "sources", names)
	default:
		log.Info(msg, "sources", names)
	}
	return nil
}
