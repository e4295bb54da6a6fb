package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/internal/web"
)

// DefaultWebListen is `X web`'s address: loopback only.
const DefaultWebListen = "127.0.0.1:8080"

// webCommand is `X web`, the same for every binary: the live lab page
// (internal/web), a client of the daemon's control socket.
func webCommand(spec Spec) *cli.Command {
	return &cli.Command{
		Name:  "web",
		Usage: "serve a live page of the lab: every member's row, a space-time diagram of every member's last seconds, the checker's verdicts",
		Description: "Serves one self-contained page (nothing fetched from elsewhere) that updates itself: the lab's table\n" +
			"as `status --cluster` prints it, refreshed every --every and at once on each of the daemon's events\n" +
			"(a leader change, a grant), with each member's clock offset and error bound over the last minute;\n" +
			"a space-time diagram of the last --window of every member's trace; and the trace checker's verdicts\n" +
			"over that window, across the lab. It is read-only: it answers GET only, and the one thing it changes\n" +
			"is a trace window on this host's daemon, turned on while it runs (files in the state directory's\n" +
			"traces/, replaced every --rotate and removed; an operator's running trace is read and left alone)\n" +
			"and off when it stops (--no-trace: none), and, through the daemon, one on each other member (asked\n" +
			"for over the cluster's authenticated protocol, kept in the member's memory, off when nobody asks);\n" +
			"a member that does not answer is drawn and listed as not answering traces, with the cause. It\n" +
			"listens on loopback; another address needs --non-loopback and is logged at WARN\n" +
			"(the page then shows the lab to anyone who can reach it). Stop it with Ctrl-C.",
		Flags: []cli.Flag{ControlFlag(spec.Name),
			&cli.StringFlag{Name: "listen", Value: DefaultWebListen, Usage: "serve the page at `ADDR:PORT`"},
			&cli.BoolFlag{Name: "non-loopback", Usage: "allow --listen on an address that is not loopback (anyone who reaches it sees the lab)"},
			&cli.DurationFlag{Name: "every", Value: 500 * time.Millisecond, Usage: "ask the lab for its table this often (250ms to 1m), and at once on each of the daemon's events"},
			&cli.DurationFlag{Name: "window", Value: 10 * time.Second, Usage: "draw and check the last `D` of the trace (1s to 10m)"},
			&cli.DurationFlag{Name: "rotate", Value: 30 * time.Second, Usage: "replace the trace window's file this often, removing the one before (at least --window)"},
			&cli.IntFlag{Name: "max-events", Value: 3000, Usage: "draw and check at most `N` events, the window's latest (10 to 100000): a busy lab's page stays light"},
			&cli.BoolFlag{Name: "no-trace", Usage: "turn no trace window on: the table alone, no diagram and no verdicts"},
			&cli.StringFlag{Name: "lab-file", EnvVars: []string{"SYNCLAB_LAB_FILE"}, Value: DefaultLabFile,
				Usage: "label the diagram's lines with the lab file `PATH`'s host names (not there: not used, unless named)"},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return Usagef("web takes no arguments")
			}
			log, err := newLogger(c.App.ErrWriter, c.String("log-level"), "text")
			if err != nil {
				return err
			}
			listen := c.String("listen")
			loop, err := loopbackListen(listen)
			if err != nil {
				return Usagef("--listen %q: %v", listen, err)
			}
			if !loop && !c.Bool("non-loopback") {
				return Usagef("--listen %s is not a loopback address: the page would show the lab to anyone who reaches it; say --non-loopback if that is what you want", listen)
			}
			names, err := hostNames(c, drawFlags{labFile: c.String("lab-file"), labFileSet: c.IsSet("lab-file")})
			if err != nil {
				return err
			}
			srv, err := web.New(web.Config{
				Daemon: spec.Name, Source: web.CtlSource{C: Client(c)},
				Table: func(st *daemon.ClusterStatus) web.Table { return ClusterTable(st, spec.Cluster) },
				Every: c.Duration("every"), Window: c.Duration("window"), Rotate: c.Duration("rotate"), MaxEvents: c.Int("max-events"),
				Trace: !c.Bool("no-trace"), HostNames: names, Log: log,
			})
			if err != nil {
				return Usagef("%v (see --every, --window, --rotate and --max-events)", err)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			if !loop {
				log.Warn("the live page listens on an address that is not loopback: anyone who reaches it sees the lab's table, its trace and its verdicts", "listen", ln.Addr().String())
			}
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			// Requests end with ctx: the pages' event streams close, so
			// that Shutdown does not wait on them.
			hs := &http.Server{Handler: srv.Handler(!loop), ReadHeaderTimeout: 10 * time.Second,
				BaseContext: func(net.Listener) context.Context { return ctx }}
			go func() {
				<-ctx.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				hs.Shutdown(sctx)
			}()
			fmt.Fprintf(c.App.Writer, "%s web: the live page is at http://%s/ (Ctrl-C stops it)\n", spec.Name, ln.Addr())
			done := make(chan struct{})
			go func() { defer close(done); srv.Run(ctx) }()
			err = hs.Serve(ln)
			stop()
			<-done // the trace window stopped and its files removed
			if errors.Is(err, http.ErrServerClosed) {
				return nil
			}
			return err
		},
	}
}

// loopbackListen says whether listen (HOST:PORT) is on a loopback
// address; a host name other than localhost is refused (no lookup).
func loopbackListen(listen string) (bool, error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false, err
	}
	if host == "localhost" {
		return true, nil
	}
	if host == "" {
		return false, nil // every address
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false, fmt.Errorf("want an IP address (or localhost), not a name")
	}
	return a.Unmap().IsLoopback(), nil
}
