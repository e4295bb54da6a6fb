// Command mutexd gives the machines of a lab named locks that no two of them
// hold at once, with fences and leases, and a CLI that runs a command under
// a lock, like flock(1) across machines. The algorithm is any of the
// registry's (pkg/mutex; a token ring per lock by default): the daemon, its
// API, status and metrics speak only pkg/mutex's interface.
//
//	mutexd run --id 1 --members 1=10.0.0.1:7400,2=10.0.0.2:7400,... [--algorithm tokenring] [--lease 3s]
//	mutexd lock NAME [--timeout D] [--lease D] [--grace D] -- CMD ARGS...
//	mutexd status [--json] [--cluster]
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	mutexalgorithms "github.com/synclab/synclab/pkg/mutex/algorithms"
	"github.com/synclab/synclab/pkg/mutex/maekawa"
)

const name = "mutexd"

func main() {
	app.SerialRuntime()
	a := newApp()
	os.Args = app.FlagsFirst(os.Args, a, "lock")
	app.Main(a)
}

// algorithms is mutexd's table of mutual-exclusion algorithms (a new one
// is one package implementing mutex.Algorithm and one line in
// pkg/mutex/algorithms).
var algorithms = mutexalgorithms.All

// defaultAlgorithm is --algorithm's default.
const defaultAlgorithm = mutexalgorithms.Default

// Defaults of the settings every algorithm takes.
const (
	defaultLease     = 3 * time.Second
	defaultMinLease  = 100 * time.Millisecond
	defaultHeartbeat = time.Second
)

func newApp() *cli.App {
	var api *lockAPI // made by Build, served by Attach
	flags := []cli.Flag{
		&cli.StringFlag{Name: "algorithm", EnvVars: app.Env(name, "algorithm"), Value: defaultAlgorithm,
			Usage: "the mutual-exclusion algorithm: " + algorithmList() + "; the same on every node"},
		&cli.DurationFlag{Name: "lease", EnvVars: app.Env(name, "lease"), Value: defaultLease,
			Usage: "the cluster's longest lease, and the default one; must be the same on every node (a regenerated token waits this long before its first grant)"},
		&cli.DurationFlag{Name: "heartbeat", EnvVars: app.Env(name, "heartbeat"), Value: defaultHeartbeat,
			Usage: "the unit of every algorithm's failure detector: how often a member says it is alive (the ring skips a member silent 3.5 heartbeats; central's and tokenask's coordinator and its election beat at this rate, at most a third of the lease; Maekawa beats every 1.25 and the majority quorum every 2; Ricart-Agrawala and Lamport at this rate when idle; see docs/mutexd.md)"},
	}
	seen := map[string]bool{}
	for _, f := range algorithms {
		for _, p := range f.Params {
			if seen[p.Name] {
				continue
			}
			seen[p.Name] = true
			flags = append(flags, &cli.DurationFlag{Name: p.Name, EnvVars: app.Env(name, p.Name), Value: p.Default, Category: "advanced",
				Usage: p.Usage + " (" + f.Name + ")"})
		}
	}
	return app.New(app.Spec{
		Name:  name,
		Usage: "distributed mutual exclusion for a lab LAN (token ring with fences and leases)",
		Description: "mutexd keeps named locks that at most one client in the cluster holds at a time, with\n" +
			"the algorithm --algorithm names (" + algorithmList() + "). Every grant carries a fence\n" +
			"number and a lease. `mutexd lock NAME -- CMD` runs a command under a lock.",
		RunFlags: flags,
		Build: func(c *cli.Context, cfg *daemon.Config) (daemon.CoreFactory, error) {
			f, a, err := build(c, cfg)
			api = a
			return f, err
		},
		Attach:     func(_ *cli.Context, d *daemon.Daemon) error { api.attach(d); return nil },
		Commands:   []*cli.Command{lockCommand(), vectorCommand()},
		RenderCore: renderStatus,
		Cluster:    clusterView,
		Examples: []app.Example{
			{Cmd: "mutexd run --id 2 --members 1=10.0.0.1:7400,2=10.0.0.2:7400,3=10.0.0.3:7400 --key-file /etc/synclab/cluster.key", Does: "member 2 of three, with the default algorithm (the token ring) and lease (3s); the same member list on every machine."},
			{Cmd: "mutexd run --id 2 --members 1=10.0.0.1:7400,2=10.0.0.2:7400,3=10.0.0.3:7400 --key-file /etc/synclab/cluster.key --algorithm central", Does: "the same cluster with the central coordinator, which also grants shared locks."},
			{Cmd: "mutexd lock backup -- rsync -a /home /mnt/backup", Does: "run the backup on one machine of the lab at a time, like flock(1) across machines; MUTEXD_FENCE in its environment lets a resource refuse a client that outlived its lease."},
			{Cmd: "mutexd lock --after \"$(ssh hostA mutexd vector)\" report -- ./write-part-2", Does: "with --algorithm tokenask: granted only after the request host A's client made before it sent word here (a program message carrying A's vector), whichever reaches the coordinator first."},
			{Cmd: "mutexd lock --timeout 30s --shared reports -- ./read-reports", Does: "a reader beside other readers (central and majority); give up with status 75 if not granted within 30 s."},
		},
		Exits: map[string][]app.Exit{
			"lock": {
				{Code: "CMD's own", Meaning: "CMD ran and exited; the lock was released (a warning says so if only the release failed)"},
				{Code: "128+N", Meaning: "CMD died of signal N, or signal N came while waiting for the lock (nothing ran)"},
				{Code: "75", Meaning: "--timeout passed before the lock was granted (EX_TEMPFAIL); CMD did not run"},
				{Code: "76", Meaning: "the lock was lost, or could not be renewed in time, while CMD ran (or right after the grant); CMD was terminated; stderr says why"},
				{Code: "126", Meaning: "CMD could not be run (not executable)"},
				{Code: "127", Meaning: "CMD was not found"},
				{Code: "1", Meaning: "the daemon could not be reached, or refused the request; CMD did not run"},
			},
		},
	})
}

// algorithmList names the algorithms with their summaries.
func algorithmList() string {
	var parts []string
	for _, f := range algorithms {
		parts = append(parts, f.Name+" ("+f.Summary+")")
	}
	return strings.Join(parts, ", ")
}

// options maps the flags to the options of the algorithm f, refusing what
// no algorithm can work with as a usage error (exit 2) before anything
// starts.
func options(c *cli.Context, cfg *daemon.Config, f mutex.Factory) (mutex.Options, error) {
	opt := mutex.Options{MinLease: defaultMinLease, Authenticated: len(cfg.Keys) > 0, Params: map[string]time.Duration{}}
	for _, fl := range []struct {
		flag string
		v    *time.Duration
	}{{"lease", &opt.Lease}, {"heartbeat", &opt.Heartbeat}} {
		*fl.v = c.Duration(fl.flag)
	}
	for _, p := range f.Params {
		opt.Params[p.Name] = c.Duration(p.Name)
	}
	// Another algorithm's setting (a flag, a variable, a lab file's key)
	// would be ignored: the operator meant it for a cluster that is not
	// this one, or switched algorithms and kept it.
	for _, other := range algorithms {
		for _, p := range other.Params {
			if _, ours := opt.Params[p.Name]; !ours && c.IsSet(p.Name) {
				users, verb := paramUsers(p.Name), "uses"
				if len(users) > 1 {
					verb = "use"
				}
				return opt, app.Usagef("--%s %v: only --algorithm %s %s it, and this member runs --algorithm %s: remove it (or set the algorithm it was meant for)",
					p.Name, c.Duration(p.Name), strings.Join(users, ", "), verb, f.Name)
			}
		}
	}
	for _, fl := range append([]string{"lease", "heartbeat"}, slices.Sorted(maps.Keys(opt.Params))...) {
		d := c.Duration(fl)
		if d <= 0 {
			return opt, app.Usagef("--%s %v: must be positive", fl, d)
		}
		// Most cores refuse timers under a millisecond by their own
		// names (HeartbeatInterval), and none runs them finer than its
		// --tick (at least 1ms): the flag is what the operator typed,
		// refused alike for every algorithm.
		if d < time.Millisecond {
			return opt, app.Usagef("--%s %v: want at least 1ms", fl, d)
		}
	}
	return opt, nil
}

// paramUsers names the algorithms that take the setting name.
func paramUsers(name string) []string {
	var users []string
	for _, f := range algorithms {
		if slices.ContainsFunc(f.Params, func(p mutex.Param) bool { return p.Name == name }) {
			users = append(users, f.Name)
		}
	}
	return users
}

// trialEnv is the environment of a trial core built only to check the
// settings (the daemon builds the real one with its node's clocks and the
// persisted state).
func trialEnv(cfg *daemon.Config) core.Env {
	return core.Env{ID: cfg.ID, Members: slices.Sorted(maps.Keys(cfg.Members)), Now: cfg.Clock.Now(),
		Rand: rand.New(rand.NewPCG(1, 1)), Lamport: new(clock.Lamport)}
}

// agreementParams is what must be the same on every mutexd beside the
// member list and cluster name: the algorithm's timing as a whole. Every
// mutual-exclusion core waits out another member's leases by its own
// clock and its own settings: the lease (every grant's bound, and what a
// regenerated token waits out), the heartbeat (central cuts a lease to end
// within half a beat of its support and a new coordinator waits that half
// beat of its own; Ricart-Agrawala and Lamport take a member for dead after
// missing a few of its busy heartbeats, timed by their own), and each
// algorithm's own timeouts. A member whose timing differs would make
// those waits too short: it is refused, not followed.
func agreementParams(opt mutex.Options) map[string]string {
	p := map[string]string{"lease": opt.Lease.String(), "heartbeat": opt.Heartbeat.String()}
	for name, d := range opt.Params {
		p[name] = d.String()
	}
	return p
}

func build(c *cli.Context, cfg *daemon.Config) (daemon.CoreFactory, *lockAPI, error) {
	app.SteadyClock(cfg)
	f, err := algorithms.Lookup(c.String("algorithm"))
	if err != nil {
		return nil, nil, app.Usagef("--algorithm: %v", strings.TrimPrefix(err.Error(), "mutex: "))
	}
	opt, err := options(c, cfg, f)
	if err != nil {
		return nil, nil, err
	}
	// Before the trial core: a lease below the floor is the first thing
	// to change, whatever else the algorithm makes of it.
	warning, err := checkLease(f, opt)
	if err != nil {
		return nil, nil, app.UsageError{Err: err}
	}
	if warning != "" {
		cfg.Warnings = append(cfg.Warnings, warning)
	}
	// A trial core with no state: a combination of settings the algorithm
	// cannot work with is a usage error before anything starts.
	if _, err := f.New(trialEnv(cfg), opt); err != nil {
		return nil, nil, app.UsageError{Err: err}
	}
	// Every algorithm but Maekawa's grid grants on the majority's side
	// only (docs/mutexd.md's table): an even count is likely a mistake.
	if f.Name != maekawa.Name {
		if w := app.MajorityWarning(len(cfg.Members), "the "+f.Name+" algorithm"); w != "" {
			cfg.Warnings = append(cfg.Warnings, w)
		}
	}
	api := newAPI(f, opt)
	cfg.Agreement = &node.Agreement{Algorithm: f.Name, Params: agreementParams(opt)}
	cfg.ClusterFacts = clusterFacts
	cfg.EventLevel = func(e core.Event) slog.Level {
		if e.Name == lockLostEvent {
			return slog.LevelWarn // a holder lost its lock: its work must stop
		}
		return slog.LevelInfo
	}
	cfg.OnEvent = func(e core.Event) {
		if e.Name == daemon.EventSteppedBack {
			api.steppedBack()
		}
	}
	return func(env core.Env) (core.Core, error) {
		alg, err := f.New(env, opt)
		if errors.Is(err, core.ErrState) {
			return nil, fmt.Errorf("%w: the state file %s in --state-dir is damaged. Removing it makes this member forget "+
				"what it promised (the token generations, the fences), and an old grant could then be made beside a newer one "+
				"(two holders): remove it only while no member can hold an old grant, e.g. with every mutexd of the cluster stopped",
				err, daemon.CoreStateFile)
		}
		if err != nil {
			return nil, err
		}
		return &algoCore{Algorithm: alg, api: api}, nil
	}, api, nil
}
