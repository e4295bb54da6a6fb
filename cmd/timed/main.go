// Command timed keeps a lab machine's clock in agreement with its peers,
// serves NTP, and measures clocks.
//
//	timed run [--id 1 --members 1=10.0.0.1:7300,2=10.0.0.2:7300] [--clock system|sim]
//	          [--serve ADDR [--stratum N] [--ntp-key-file PATH] [--rate-limit D]]
//	          [--server HOST[:PORT] ...] [--peer HOST[:PORT] ...] [--minpoll N --maxpoll N] [--makestep D]
//	          [--mode cristian --server HOST[:PORT] ... [--cristian-burst N] [--cristian-min-delay D]]
//	          [--mode berkeley [--multicast GROUP:PORT --interface IF] [--berkeley-round D]
//	           [--berkeley-threshold D] [--berkeley-max-rtt D] [--berkeley-heartbeat D] [--berkeley-leader-timeout D]]
//	          [--broadcast ADDR [--broadcast-interval D] [--broadcast-key N] [--broadcast-interface IF]]
//	          [--broadcast-client [--broadcast-group GROUP --broadcast-interface IF] [--broadcast-timeout D]]
//	          [--broadcast-insecure]
//	timed status [--json]
//	timed query HOST[:PORT] [--proto ntp|cristian] [-n N] [--timeout D] [--source ADDR] [--json] [--key-file PATH --key-id N]
//	timed compare [--server S ...] [--timeout D] [--source ADDR] [--json]
//	timed waitsync [--max-error D] [--timeout D]
//	timed now [--json] [--truetime-file PATH]
//
// Keeping time over NTP (--server, --peer, --serve, --mode cristian) needs
// no cluster: without --id and --members timed opens no cluster socket at
// all. --mode berkeley is for the members of a cluster.
//
// With --clock sim the daemon runs on a simulated clock (real time plus
// --sim-offset, drifting at --sim-drift ppm) that it corrects like the real
// one, and `timed status --json` reports its exact error as true_offset_ns:
// how tests and the demo measure ground truth without touching the system
// clock.
//
// With --serve the daemon answers NTP client requests on ADDR (package
// pkg/timesync/server), and Cristian's time requests on the same address
// (package pkg/timesync/cristian): chronyd, ntpdig, beevik/ntp, `timed
// query` and other timeds (--mode cristian) can measure against it. `timed query` and `timed compare` are one-shot
// measurements that only ever read the local clock.
//
// timed publishes its error bound in a shared page (--truetime-file,
// /run/timed/truetime by default) that any program in the control group
// reads at the cost of a clock read (package pkg/truetime); `timed now`
// prints what such a program gets.
//
// With --mode berkeley the members synchronise with each other (package
// pkg/timesync/berkeley): a master elected among them (bully) polls them
// every round, averages the clocks that agree, and sends each member its
// correction. --serve then serves the group's time unsynchronised, or at
// --stratum with --local-error (how far the group's time may be from true
// time, in the root dispersion), never claiming an external reference.
package main

import (
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/pkg/clock"
)

const name = "timed"

func main() {
	// timed's work is serial: the core is stepped by one goroutine at a
	// time (the loop, or the NTP socket's reader), under one lock.
	app.SerialRuntime()
	a := newApp()
	os.Args = app.FlagsFirst(os.Args, a, "query", "compare")
	app.Main(a)
}

func newApp() *cli.App {
	return app.New(app.Spec{
		Name:  name,
		Usage: "physical clock synchronisation for a lab LAN",
		Description: "timed keeps the clocks of a lab's machines in agreement. It corrects the clock by\n" +
			"slewing, never stepping it backwards. With --serve it answers NTP requests; `timed query`\n" +
			"and `timed compare` measure the local clock against NTP servers without changing it.",
		RunFlags: append([]cli.Flag{
			&cli.StringFlag{Name: "clock", EnvVars: app.Env(name, "clock"), Value: "system", Usage: "`system` (adjtimex; needs CAP_SYS_TIME to correct) or sim (simulated, for tests and demos)"},
			&cli.DurationFlag{Name: "sim-offset", EnvVars: app.Env(name, "sim-offset"), Usage: "with --clock sim: initial error of the simulated clock"},
			&cli.Float64Flag{Name: "sim-drift", EnvVars: app.Env(name, "sim-drift"), Usage: "with --clock sim: frequency error in `PPM`"},
			&cli.Float64Flag{Name: "sim-wander", EnvVars: app.Env(name, "sim-wander"), Usage: "with --clock sim: random-walk frequency noise, `PPM` per sqrt(second)"},
			&cli.BoolFlag{Name: "no-adjust", EnvVars: app.Env(name, "no-adjust"), Usage: "measure and report only; never correct the clock"},
		}, slices.Concat(serveFlags(), clientFlags(), broadcastFlags(), berkeleyFlags(), truetimeFlags())...),
		Build:      build,
		Commands:   []*cli.Command{queryCommand(), compareCommand(), waitsyncCommand(), nowCommand()},
		RenderCore: renderCore,
		OwnsClock:  true,
		StatusExit: statusExit,
		// The exit code a script tests.
		StatusUsage: "; alone, exit 0 synchronised or the lab's reference, 3 not synchronised, 1 no answer (--json: 0 with any answer)",
		Cluster:     clusterView,
		// Keeping time over NTP (client, server, symmetric peer,
		// Cristian) needs no cluster; Berkeley does.
		ClusterOptional: true,
		Examples: []app.Example{
			{Cmd: "timed run --server 10.0.0.1", Does: "follow the lab's master (or the university's NTP server) and correct this clock, as root, like chronyd with one server line; /etc/default/timed says the same with TIMED_SERVER=10.0.0.1."},
			{Cmd: "timed run --serve 0.0.0.0 --stratum 8", Does: "the lab's master: serve this clock to the lab at stratum 8, like chrony's local stratum 8."},
			{Cmd: "timed run --server 10.0.0.1 --clock sim --sim-offset 30ms --state-dir /tmp/timed --control /tmp/timed/control.sock", Does: "try it as a normal user: a simulated clock 30 ms off is corrected, the machine's clock is never touched (timed status --control /tmp/timed/control.sock shows it)."},
			{Cmd: "timed run --id 2 --members 1=10.0.0.1:7300,2=10.0.0.2:7300,3=10.0.0.3:7300 --mode berkeley --key-file /etc/synclab/cluster.key", Does: "Berkeley mode: the members agree on their average time with no reference; the same line on every member but --id."},
			{Cmd: "timed query 10.0.0.1", Does: "measure this clock against a server once, like ntpdate -q; the clock is never changed."},
			{Cmd: "timed compare --server 10.0.0.1 --server 10.0.0.3", Does: "several servers side by side with the local daemon's view."},
		},
		Exits: map[string][]app.Exit{
			"run":     {{Code: "1", Meaning: "also: told to follow a server without CAP_SYS_TIME (run it as root, or add --no-adjust, or --clock sim)"}},
			"query":   {{Code: "1", Meaning: "no valid answer from the server; the message says why (port unreachable, a kiss-o'-death, no answer in time)"}},
			"compare": {{Code: "1", Meaning: "no server answered validly"}},
			"status":  {{Code: "3", Meaning: "the daemon answered, and its clock is not synchronised (0: synchronised, or it is the lab's reference); with --json the exit is 0 whenever the document is printed"}},
			"waitsync": {
				{Code: "1", Meaning: "--timeout passed before the clock was synchronised within --max-error, or the configuration can never synchronise (--no-adjust, nothing to follow)"},
			},
			"now": {
				{Code: "1", Meaning: "the page cannot be read or trusted: no such file (timed not running, or publishing elsewhere), no permission (not root nor in the --control-group), a layout this CLI does not know, a page timed stopped updating (stale), or a clock stepped back since; the message says which"},
				{Code: "3", Meaning: "timed publishes no bound: it is not synchronised to a source (starting, no source, --no-adjust, or the lab's local reference); with --json the exit is 0 whenever the document is printed"},
			},
		},
	})
}

func build(c *cli.Context, cfg *daemon.Config) (daemon.CoreFactory, error) {
	kind := c.String("clock")
	if kind != "sim" && (c.IsSet("sim-offset") || c.IsSet("sim-drift") || c.IsSet("sim-wander")) {
		return nil, app.Usagef("--sim-offset, --sim-drift and --sim-wander need --clock sim")
	}
	// Flags are checked before the clock is opened: a usage error must
	// not depend on the host's capabilities.
	serve, err := serveConfig(c)
	if err != nil {
		return nil, err
	}
	cc, err := clientConfig(c)
	if err != nil {
		return nil, err
	}
	bk, err := berkeleyConfig(c, cfg)
	if err != nil {
		return nil, err
	}
	cc, bs, err := broadcastConfig(c, serve, cc)
	if err != nil {
		return nil, err
	}
	cfg.DatagramGroups = bs.groups
	if bs.clientPort != 0 && serve == nil {
		cfg.DatagramAddr = broadcastListen(bs.clientPort)
	}
	if cc != nil {
		if serve != nil {
			cc.LocalStratum = serve.cfg.LocalStratum // markSelf's advice; coreFactory sets it too
		}
		if err := markSelf(cfg, serve, cc, cfg.Logger); err != nil {
			return nil, err
		}
	}
	if cfg.Standalone() && serve == nil && cc == nil {
		return nil, app.Usagef("nothing to do: give --server HOST or --peer HOST to follow, --broadcast-client to follow broadcasts, --serve ADDR to serve NTP, or --id and --members for a cluster (--mode berkeley)")
	}
	if c.Bool("no-adjust") {
		// Measure and report: the client's servo runs open loop, so what
		// it reports is the untouched clock's offset, not the offset left
		// after corrections nobody made; the daemon drops any adjustment
		// all the same (and the system clock is opened read-only).
		cfg.SkipAdjust = true
		if cc != nil {
			cc.NoAdjust = true
		}
	}
	switch kind {
	case "sim":
		sc := clock.SimConfig{
			Offset:    c.Duration("sim-offset"),
			DriftPPM:  c.Float64("sim-drift"),
			WanderPPM: c.Float64("sim-wander"),
			Seed:      int64(cfg.Seed),
		}
		if err := sc.Validate(); err != nil {
			// The clock's message names its fields ("sim drift"), not the flags.
			return nil, app.Usagef("--sim-drift %g --sim-wander %g: %v", sc.DriftPPM, sc.WanderPPM, err)
		}
		cfg.Clock, cfg.ClockName = clock.NewSim(sc, time.Now), "sim"
	case "system":
		// A follower that may not correct the clock would report itself
		// synchronised while the clock drifts on: refuse, as chronyd does.
		// (A client whose only sources are this host follows nothing.)
		follows := cc != nil && (len(cc.Servers)+len(cc.Peers)+len(cc.CristianServers) > 0 || cc.Broadcast.Enabled)
		if (follows || bk != nil) && !c.Bool("no-adjust") && !mayCorrectClock() {
			return nil, fmt.Errorf("correcting this machine's clock needs CAP_SYS_TIME, which this process lacks: run it as root (timed.service grants it), or add --no-adjust to measure only, or --clock sim for an experiment")
		}
		clk, err := clock.NewSystem(clock.SystemOptions{ReadOnly: c.Bool("no-adjust")})
		if err != nil {
			return nil, fmt.Errorf("system clock: %w", err)
		}
		cfg.Clock, cfg.ClockName = clk, "system"
	default:
		return nil, app.Usagef("--clock %q: want system or sim", kind)
	}
	if bk != nil {
		// Only Berkeley makes the members act together: the master's
		// place and the corrections. What must agree is the mode beside
		// the member list and cluster name; the round, threshold and
		// timeouts are the master's or each host's own, but the master's
		// heartbeat and the leader timeout must fit every other member's:
		// the node tells them, and warns of a member whose heartbeats come
		// further apart than this one waits for them. A timed following
		// NTP servers never steps back: its members only say they live.
		cfg.Agreement = &node.Agreement{Algorithm: "berkeley",
			Heartbeat: c.Duration("berkeley-heartbeat"), LeaderTimeout: c.Duration("berkeley-leader-timeout"),
			HeartbeatFlag: "--berkeley-heartbeat", TimeoutFlag: "--berkeley-leader-timeout"}
	}
	if cfg.TrueTime, err = trueTimeConfig(c); err != nil {
		return nil, err
	}
	cfg.ClusterFacts = clusterFacts
	if cc != nil || bk != nil {
		// A clock that should follow someone and does not, for long, is
		// an operator's business (WARN, every ten minutes while it lasts).
		cfg.SyncWarnAfter = 10 * time.Minute
	}
	return coreFactory(cfg, serve, cc, bk), nil
}
