package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/internal/transport"
)

// Version is the synclab release, set at link time with
// -ldflags "-X github.com/synclab/synclab/internal/app.Version=...".
var Version = "0.1.0-dev"

// Spec is what a binary adds to the common skeleton.
type Spec struct {
	Name        string // "timed"
	Usage       string // one line
	Description string // a paragraph for --help
	// RunFlags are the binary's own `run` flags.
	RunFlags []cli.Flag
	// Build finishes cfg from the binary's flags (the clock, hooks...) and
	// returns the core to run.
	Build func(c *cli.Context, cfg *daemon.Config) (daemon.CoreFactory, error)
	// Attach registers the binary's control-API routes on the daemon.
	Attach func(c *cli.Context, d *daemon.Daemon) error
	// Commands are the binary's own client commands.
	Commands []*cli.Command
	// RenderCore prints the core's part of `status` for humans; nil prints
	// it as indented JSON. now is the daemon clock's reading at the time of
	// the status (cores report times on that clock).
	RenderCore func(w io.Writer, core []byte, now time.Time) error
	// OwnsClock says the daemon disciplines the clock and prints its own
	// synchronisation state (timed): the status's Clock line then leaves
	// the kernel's out.
	OwnsClock bool
	// StatusExit, when set, decides `status`'s exit code from the core's
	// status once it is printed for people (timed: 0 synchronised, 3
	// not); `status --json` exits 0 whenever it has a document to print.
	StatusExit func(core []byte) error
	// StatusUsage is appended to `status`'s one-line usage (what its exit
	// code says, when StatusExit decides it).
	StatusUsage string
	// Cluster adds the binary's own columns to `status --cluster` (nil:
	// a Role column).
	Cluster *ClusterView
	// ClusterOptional lets `run` go without --id and --members (both left
	// out): Build then gets a Config with ID 0 and no Members, and decides
	// whether its flags need a cluster (timed keeps time over NTP alone).
	ClusterOptional bool
	// Examples open the manual page's EXAMPLES (the commands every binary
	// shares follow them). Each names one of the binary's commands and
	// only that command's flags: a test checks them.
	Examples []Example
	// Exits are the exit statuses of the binary's own commands besides
	// 0, 1 and 2, by command path ("lock", "trace draw"), for the manual
	// page's EXIT STATUS: every code a command can return is listed there
	// (a test looks for the codes in the binary's source).
	Exits map[string][]Exit
}

// UsageError marks a mistake in how the command was called: exit code 2.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Usagef builds a UsageError.
func Usagef(format string, args ...any) error { return UsageError{fmt.Errorf(format, args...)} }

// ExitError carries a specific exit code (e.g. `mutexd lock` passing on its
// child's status); Msg, when set, is printed.
type ExitError struct {
	Code int
	Msg  string
}

func (e ExitError) Error() string { return e.Msg }

// New builds the binary's app.
func New(spec Spec) *cli.App {
	a := &cli.App{
		Name:                 spec.Name,
		Usage:                spec.Usage,
		Description:          spec.Description,
		Version:              Version,
		EnableBashCompletion: true,
		HideHelpCommand:      true,
		Commands: slices.Concat(
			[]*cli.Command{runCommand(spec), statusCommand(spec)},
			spec.Commands,
			[]*cli.Command{keygenCommand(spec.Name), traceCommand(spec.Name), webCommand(spec), manCommand(spec.Name), completionCommand(spec.Name), versionCommand(spec.Name)},
		),
		OnUsageError: onUsageError,
		// Main decides exit codes; urfave must not exit on its own.
		ExitErrHandler: func(*cli.Context, error) {},
		CommandNotFound: func(c *cli.Context, cmd string) {
			fmt.Fprintf(c.App.ErrWriter, "%s: unknown command %q (see %s --help)\n", c.App.Name, cmd, c.App.Name)
			cli.OsExiter(2)
		},
	}
	for _, cmd := range a.Commands {
		setUsageError(cmd)
	}
	a.Metadata = map[string]any{manualKey: manual{examples: spec.Examples, exits: spec.Exits}}
	// --version says what `version` says.
	cli.VersionPrinter = func(c *cli.Context) { fmt.Fprintln(c.App.Writer, Build(c.App.Name)) }
	return a
}

func setUsageError(cmd *cli.Command) {
	if cmd.OnUsageError == nil {
		cmd.OnUsageError = onUsageError
	}
	for _, sub := range cmd.Subcommands {
		setUsageError(sub)
	}
}

func onUsageError(c *cli.Context, err error, _ bool) error {
	flags := c.App.Flags
	if c.Command != nil {
		flags = c.Command.Flags
	}
	return UsageError{explainUsage(flags, err)}
}

// Main runs the app and exits with the synclab convention: 0 success,
// 1 failure, 2 usage error, or an ExitError's own code.
func Main(a *cli.App) {
	// urfave/cli reads the word before the completion flag from os.Args,
	// not from the arguments it is given.
	args, ok := completionArgs(os.Args)
	if !ok {
		os.Exit(0)
	}
	os.Args = args
	os.Exit(Run(a, os.Args, os.Stderr))
}

// Run is Main without the exit, for tests.
func Run(a *cli.App, args []string, stderr io.Writer) int {
	args, ok := completionArgs(args)
	if !ok {
		return 0
	}
	err := a.Run(args)
	if err == nil {
		return 0
	}
	var ee ExitError
	if errors.As(err, &ee) {
		if ee.Msg != "" {
			fmt.Fprintf(stderr, "%s: %s\n", a.Name, ee.Msg)
		}
		return ee.Code
	}
	var ue UsageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "%s: %v\n(see %s --help)\n", a.Name, err, a.Name)
		return 2
	}
	fmt.Fprintf(stderr, "%s: %v\n", a.Name, err)
	return 1
}

// completionFlag is urfave/cli's hidden flag: a shell asking for the
// words that may follow.
const completionFlag = "--generate-bash-completion"

// completionArgs keeps a request for completions one: urfave/cli only sees
// the flag as the last argument, and otherwise runs the command with the
// flag as an argument. A binary that reorders its arguments (timed moves
// flags before a query's hosts) would then send a query while the user
// presses TAB. So the flag is moved last; and after "--", where urfave/cli
// ignores it whatever its place, nothing is run at all (ok false).
func completionArgs(args []string) (_ []string, ok bool) {
	i := slices.Index(args, completionFlag)
	if i < 0 {
		return args, true
	}
	if slices.Contains(args, "--") {
		return nil, false
	}
	return append(slices.Delete(slices.Clone(args), i, i+1), completionFlag), true
}

// EnvVar is the environment variable that also sets flag name of binary
// prog: EnvVar("timed", "sim-offset") = "TIMED_SIM_OFFSET".
func EnvVar(prog, flag string) string {
	return strings.ToUpper(strings.ReplaceAll(prog+"_"+flag, "-", "_"))
}

// Env returns the one-element EnvVars list of a flag.
func Env(prog, flag string) []string { return []string{EnvVar(prog, flag)} }

func commonRunFlags(name string) []cli.Flag {
	env := func(flag string) []string { return Env(name, flag) }
	return []cli.Flag{
		&cli.UintFlag{Name: "id", EnvVars: env("id"), Usage: "this node's member ID (> 0; required)"},
		&cli.StringFlag{Name: "members", EnvVars: env("members"), Usage: "static member list `ID=HOST:PORT,...`, the same on every node; this node's entry is its listen address"},
		&cli.StringFlag{Name: "cluster", EnvVars: env("cluster"), Value: "synclab", Usage: "cluster `NAME`; frames of other clusters are dropped"},
		&cli.StringFlag{Name: "key-file", EnvVars: env("key-file"), Usage: "shared HMAC key file (`PATH`, made by `" + name + " keygen`); frames without a valid MAC are dropped. A cluster needs one, or --insecure"},
		&cli.BoolFlag{Name: "insecure", EnvVars: env("insecure"), Usage: "allow a cluster without a key: any host on the LAN can then forge and replay its frames (logged at start, shown in status); ignored when --key-file is given"},
		&cli.StringFlag{Name: "control", EnvVars: env("control"), Value: "/run/" + name + "/control.sock", Usage: "control socket `PATH`"},
		&cli.StringFlag{Name: "control-group", EnvVars: env("control-group"), Usage: "`GROUP` allowed to use the control socket besides root"},
		&cli.StringFlag{Name: "state-dir", EnvVars: env("state-dir"), Value: "/var/lib/" + name, Usage: "durable state `DIR`"},
		&cli.StringFlag{Name: "log-level", EnvVars: env("log-level"), Value: "info", Usage: "debug, info, warn or error"},
		&cli.StringFlag{Name: "log-format", EnvVars: env("log-format"), Value: "text", Usage: "text or json"},
		&cli.StringFlag{Name: "metrics", EnvVars: env("metrics"), Usage: "serve Prometheus metrics on `ADDR` (e.g. 127.0.0.1:9177; 8 connections at once, the rest closed and counted: on a LAN address anyone can keep them busy)"},
		&cli.StringFlag{Name: "multicast", EnvVars: env("multicast"), Usage: "send broadcasts to multicast `GROUP:PORT` (e.g. 239.77.0.1:7199)"},
		&cli.StringFlag{Name: "interface", EnvVars: env("interface"), Usage: "network `IF` for --multicast (e.g. eth0, lo)"},
		&cli.IntFlag{Name: "multicast-ttl", EnvVars: env("multicast-ttl"), Value: 1, Usage: "multicast TTL (0 keeps datagrams on this host)"},
		&cli.DurationFlag{Name: "tick", EnvVars: env("tick"), Value: 10 * time.Millisecond, Usage: "delay of the first core tick, and the tick period of a core that does not schedule its own (the cores shipped here tick at their own deadlines, at least once a second); 1ms to 1s"},
		&cli.Uint64Flag{Name: "seed", EnvVars: env("seed"), Usage: "seed the protocol's randomness (0: random); for reproducible experiments"},
		&cli.StringFlag{Name: "trace", EnvVars: env("trace"), Usage: "record a protocol trace to `FILE` from the start (one already there is kept as FILE.old); `" + name + " trace start|stop` at run time"},
		&cli.Int64Flag{Name: "trace-max-bytes", EnvVars: env("trace-max-bytes"), Value: trace.DefaultMaxBytes, Usage: "bound the trace file to `N` bytes; past it, events are counted, not written"},
	}
}

// clusterFlagsOptional says in --id's help that it may be left out, for a
// daemon whose Spec allows that.
func clusterFlagsOptional(flags []cli.Flag, optional bool) []cli.Flag {
	if optional {
		for _, f := range flags {
			if id, ok := f.(*cli.UintFlag); ok && id.Name == "id" {
				id.Usage = "this node's member ID (> 0), with --members; without both, no cluster"
			}
		}
	}
	return flags
}

func runCommand(spec Spec) *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "run the " + spec.Name + " daemon",
		Flags: slices.Concat(clusterFlagsOptional(commonRunFlags(spec.Name), spec.ClusterOptional), labFlags(spec.Name), spec.RunFlags,
			// No variable: a unit's environment must not make it a check.
			[]cli.Flag{&cli.BoolFlag{Name: "check", Usage: "check the configuration (flags, variables, the lab file), print what the daemon would run with, and exit without starting it: 0 if it would start"}}),
		Action: func(c *cli.Context) error { return explainFailure(spec.Name, run(c, spec)) },
	}
}

func run(c *cli.Context, spec Spec) error {
	if c.NArg() > 0 {
		return Usagef("run takes no arguments (got %q)", c.Args().Slice())
	}
	// The lab file first: it may set the log's level and format too.
	lab, err := applyLab(c, spec)
	if err != nil {
		return err
	}
	logger, err := newLogger(c.App.ErrWriter, c.String("log-level"), c.String("log-format"))
	if err != nil {
		return lab.explain(err)
	}
	cfg, err := commonConfig(c, spec, lab)
	if err != nil {
		return lab.explain(err)
	}
	cfg.Logger = logger
	cfg.Version, cfg.Commit = Version, commit()
	cfg.ConfigSource = lab.source()
	if lab != nil {
		logger.Info("configuration from the lab file (flags and environment variables override it)", "source", cfg.ConfigSource)
		if lab.warn != "" {
			logger.Warn(lab.warn)
		}
	}
	newCore, err := spec.Build(c, &cfg)
	if err != nil {
		return lab.explain(err)
	}
	if c.Bool("check") {
		if err := cfg.Check(); err != nil {
			return lab.explain(err)
		}
		return printCheck(c, cfg, lab)
	}
	d, err := daemon.New(cfg, newCore)
	if err != nil {
		return err
	}
	daemon.ApplyGCPercent(os.LookupEnv) // the process's collector: GOGC=50 unless set
	if spec.Attach != nil {
		if err := spec.Attach(c, d); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return d.Run(ctx)
}

func commonConfig(c *cli.Context, spec Spec, lab *labUse) (daemon.Config, error) {
	name := spec.Name
	cfg := daemon.Config{
		Name:         name,
		Cluster:      c.String("cluster"),
		ControlPath:  c.String("control"),
		ControlGroup: c.String("control-group"),
		StateDir:     c.String("state-dir"),
		MetricsAddr:  c.String("metrics"),
		TickInterval: c.Duration("tick"),
		Seed:         c.Uint64("seed"),
	}
	// An empty path or name given on purpose is most likely an unset
	// variable in a unit file or script (--state-dir "$DIR"): the daemon
	// would fall back to its default quietly, and two daemons given one
	// such line would share /var/lib/NAME.
	for _, f := range []string{"state-dir", "control", "cluster"} {
		if c.IsSet(f) && strings.TrimSpace(c.String(f)) == "" {
			return cfg, Usagef("--%s is empty (an unset variable?): give a value, or leave the flag out for the default", f)
		}
	}
	// Checked here, naming the flag, so that --check refuses them too
	// (the daemon's own check, at start, names no flag).
	if t := cfg.TickInterval; t < time.Millisecond || t > time.Second {
		return cfg, Usagef("--tick %v: want 1ms to 1s", t)
	}
	if err := checkMetricsAddr(cfg.MetricsAddr); err != nil {
		return cfg, UsageError{err}
	}
	cfg.TraceMaxBytes = c.Int64("trace-max-bytes")
	if cfg.TraceMaxBytes <= 0 {
		return cfg, Usagef("--trace-max-bytes %d: want a positive bound", cfg.TraceMaxBytes)
	}
	if f := c.String("trace"); f != "" {
		abs, err := filepath.Abs(f)
		if err != nil {
			return cfg, err
		}
		cfg.TraceFile = abs
	}
	// Checked here rather than with urfave's Required, whose error cannot
	// be told apart from a runtime failure (exit 2, not 1).
	var missing []string
	for _, f := range []string{"id", "members"} {
		if !c.IsSet(f) {
			missing = append(missing, "--"+f)
		}
	}
	if len(missing) == 2 && spec.ClusterOptional {
		return noCluster(c, cfg)
	}
	if len(missing) > 0 {
		if lab == nil {
			return cfg, Usagef("%s required (or %s, or a lab file: --lab-file, default %s)", strings.Join(missing, " and "), strings.Join(envsOf(name, missing), " and "), DefaultLabFile)
		}
		return cfg, Usagef("%s required (or %s)", strings.Join(missing, " and "), strings.Join(envsOf(name, missing), " and "))
	}
	id := c.Uint("id")
	if id == 0 || id > 1<<32-1 {
		return cfg, Usagef("--id %d: want a member ID from 1 to %d", id, uint32(1<<32-1))
	}
	cfg.ID = uint32(id)
	members, err := ParseMembers(c.String("members"))
	if err != nil {
		return cfg, UsageError{fmt.Errorf("--members: %w", err)}
	}
	if _, ok := members[cfg.ID]; !ok {
		return cfg, Usagef("--id %d is not in --members: add this node's own entry (its listen address)", cfg.ID)
	}
	cfg.Members = members
	cfg.Insecure = c.Bool("insecure")
	if path := c.String("key-file"); path != "" {
		if cfg.Keys, err = LoadKeys(path); err != nil {
			return cfg, err
		}
	}
	if err := checkKey(name, cfg); err != nil {
		return cfg, err
	}
	if g := c.String("multicast"); g != "" {
		group, err := ParseMulticast(g)
		if err != nil {
			return cfg, UsageError{err}
		}
		ifname := c.String("interface")
		if ifname == "" {
			return cfg, Usagef("--multicast needs --interface: the interface the group is joined on")
		}
		// Checked here so that the error names the flag (the transport's
		// names the member's listen address) and --check finds it.
		if _, err := net.InterfaceByName(ifname); err != nil {
			return cfg, Usagef("--interface %q: no such network interface on this host (`ip -br link` lists them)", ifname)
		}
		ttl := c.Int("multicast-ttl")
		if ttl < 0 || ttl > 255 {
			return cfg, Usagef("--multicast-ttl %d: want 0-255", ttl)
		}
		cfg.Multicast = &transport.MulticastConfig{Group: group, Interface: ifname, TTL: ttl, Loopback: true}
	} else {
		for _, f := range []string{"interface", "multicast-ttl"} {
			if c.IsSet(f) {
				return cfg, Usagef("--%s is only used with --multicast", f)
			}
		}
	}
	return cfg, nil
}

// noCluster finishes the Config of a daemon run without --id and
// --members: flags that only mean something to a cluster are refused.
func noCluster(c *cli.Context, cfg daemon.Config) (daemon.Config, error) {
	for _, f := range []string{"multicast", "interface", "multicast-ttl", "cluster"} {
		if c.IsSet(f) {
			return cfg, Usagef("--%s is for a cluster: it needs --id and --members", f)
		}
	}
	if path := c.String("key-file"); path != "" {
		var err error
		if cfg.Keys, err = LoadKeys(path); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, Usagef("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	var mk func(io.Writer, *slog.HandlerOptions) slog.Handler
	switch format {
	case "text":
		mk = func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewTextHandler(w, o) }
	case "json":
		mk = func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewJSONHandler(w, o) }
	default:
		return nil, Usagef("--log-format %q: want text or json", format)
	}
	if journalStream(w) {
		// The journal: every line carries its syslog priority (journal.go).
		return slog.New(newPriorityHandler(w, opts, mk)), nil
	}
	return slog.New(mk(w, opts)), nil
}

func envsOf(name string, flags []string) []string {
	var out []string
	for _, f := range flags {
		out = append(out, EnvVar(name, strings.TrimPrefix(f, "--")))
	}
	return out
}
