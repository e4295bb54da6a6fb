// Command mutexd gives the machines of a lab named locks that no two of them
// hold at once: a token ring per lock (package tokenring), with fences and
// leases, and a CLI that runs a command under a lock, like flock(1) across
// machines.
//
//	mutexd run --id 1 --members 1=10.0.0.1:7400,2=10.0.0.2:7400,... [--lease 3s]
//	mutexd lock NAME [--timeout D] [--lease D] [--grace D] -- CMD ARGS...
//	mutexd status [--json]
package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex/tokenring"
)

const name = "mutexd"

func main() {
	a := newApp()
	os.Args = app.FlagsFirst(os.Args, a, "lock")
	app.Main(a)
}

func newApp() *cli.App {
	def := tokenring.DefaultLANConfig()
	var api *lockAPI // made by Build, served by Attach
	return app.New(app.Spec{
		Name:  name,
		Usage: "distributed mutual exclusion for a lab LAN (token ring with fences and leases)",
		Description: "mutexd keeps named locks that at most one client in the cluster holds at a time. Each\n" +
			"lock has a token that travels around the ring of members; every grant carries a fence\n" +
			"number and a lease. `mutexd lock NAME -- CMD` runs a command under a lock.",
		RunFlags: []cli.Flag{
			&cli.DurationFlag{Name: "lease", EnvVars: app.Env(name, "lease"), Value: def.MaxLease,
				Usage: "the cluster's longest lease, and the default one; must be the same on every node (a regenerated token waits this long before its first grant)"},
			&cli.DurationFlag{Name: "heartbeat", EnvVars: app.Env(name, "heartbeat"), Value: def.HeartbeatInterval,
				Usage: "how often a member says it is alive (all an idle ring sends); a member silent for 3.5 heartbeats is skipped"},
			&cli.DurationFlag{Name: "loss-timeout", EnvVars: app.Env(name, "loss-timeout"), Value: def.LossTimeout, Category: "advanced",
				Usage: "how long a waiting member goes without the token before it looks for it (and regenerates it if nobody has it)"},
			&cli.DurationFlag{Name: "confirm-window", EnvVars: app.Env(name, "confirm-window"), Value: def.ConfirmWindow, Category: "advanced",
				Usage: "how recent a majority check of the token must be to grant or renew; longer saves checks, lengthens recovery by as much"},
		},
		Build: func(c *cli.Context, cfg *daemon.Config) (daemon.CoreFactory, error) {
			f, a, err := build(c, cfg)
			api = a
			return f, err
		},
		Attach:     func(_ *cli.Context, d *daemon.Daemon) error { api.attach(d); return nil },
		Commands:   []*cli.Command{lockCommand()},
		RenderCore: renderStatus,
	})
}

// ringConfig maps the flags to the core's configuration and validates it,
// so that a bad combination is a usage error (exit 2) before anything
// starts.
func ringConfig(c *cli.Context, cfg *daemon.Config) (tokenring.Config, error) {
	rc := tokenring.DefaultLANConfig()
	rc.ID = cfg.ID
	// With a key, the MAC already keeps outsiders from forging a token;
	// without one, a received token is vouched for by its sender first.
	rc.TrustSenders = len(cfg.Keys) > 0
	rc.Members = slices.Sorted(maps.Keys(cfg.Members))
	for _, f := range []struct {
		flag string
		v    *time.Duration
	}{
		{"lease", &rc.MaxLease},
		{"heartbeat", &rc.HeartbeatInterval},
		{"loss-timeout", &rc.LossTimeout},
		{"confirm-window", &rc.ConfirmWindow},
	} {
		d := c.Duration(f.flag)
		if d <= 0 {
			return rc, app.Usagef("--%s %v: must be positive", f.flag, d)
		}
		*f.v = d
	}
	if rc.MaxLease < rc.MinLease {
		return rc, app.Usagef("--lease %v: must be at least %v (a shorter lease could not be renewed in time)", rc.MaxLease, rc.MinLease)
	}
	if rc.MaxLease > time.Hour {
		return rc, app.Usagef("--lease %v: at most 1h (a lost token waits one lease before it is replaced)", rc.MaxLease)
	}
	// The timeouts derived from the flags keep the core's proportions.
	rc.DeadAfter = rc.HeartbeatInterval * 7 / 2
	rc.ProbeTimeout = min(rc.ProbeTimeout, rc.ConfirmWindow/2, rc.LossTimeout/2)
	if rc.ProbeTimeout < time.Millisecond {
		return rc, app.Usagef("--confirm-window %v and --loss-timeout %v: each must be at least 2ms (a check needs a round trip)",
			c.Duration("confirm-window"), c.Duration("loss-timeout"))
	}
	if _, err := tokenring.New(rc); err != nil {
		return rc, app.UsageError{Err: err}
	}
	return rc, nil
}

func build(c *cli.Context, cfg *daemon.Config) (daemon.CoreFactory, *lockAPI, error) {
	app.SteadyClock(cfg)
	rc, err := ringConfig(c, cfg)
	if err != nil {
		return nil, nil, err
	}
	api := newAPI(rc)
	cfg.OnEvent = api.onEvent
	return func(env core.Env) (core.Core, error) {
		persisted, rnd := env.State, env.Rand
		rc := rc
		rc.Persisted, rc.Rand = persisted, rnd
		ring, err := tokenring.New(rc)
		if errors.Is(err, tokenring.ErrState) {
			return nil, fmt.Errorf("%w: the state file %s in --state-dir is damaged. Removing it makes this member forget "+
				"the token generations it promised, and an old token could then be granted beside a newer one (two holders): "+
				"remove it only while no member can hold an old token, e.g. with every mutexd of the cluster stopped", err, daemon.CoreStateFile)
		}
		if err != nil {
			return nil, err
		}
		return &ringCore{Core: ring, stats: &api.stats}, nil
	}, api, nil
}
