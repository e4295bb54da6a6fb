// Command demo is synclab's first-day demo: a five-host lab on this one
// machine, no root needed, showing the three daemons at work.
//
//	go run ./internal/demo [-short] [-hosts auto|loopback|netns] [-bin DIR] [-plot FILE] [-diagrams DIR] [-keep]
//
// (scripts/demo.sh builds the binaries and runs it.) Without root the hosts
// are loopback addresses 127.77.R.11-15, R random per run so that two demos
// on one machine never meet; multicast runs on lo with TTL 0, so nothing
// leaves the machine. As root they are network namespaces on one bridge
// (10.77.0.1-5, built and removed with scripts/lab.sh), each daemon in its
// host's namespace. Every process it starts is stopped by PID at the end,
// also on Ctrl-C, and its temporary directory (and namespaces) removed.
// What it leaves is in one directory where it was started,
// synclab-demo/ (OutDir): the clocks' chart and the acts' diagrams.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/synclab/synclab/internal/app"
)

// OutDir is where the demo's outputs go by default, relative to the
// directory it is run from; .gitignore covers it.
const OutDir = "synclab-demo"

// BuildNote says what the first build costs; scripts/demo.sh says the
// same before its own build.
const BuildNote = "the first build on a machine downloads the Go modules and compiles them all (about 260 packages): one to four minutes on 2 cores; later builds take seconds"

// flags defines the demo's command line into o; hosts receives -hosts.
// scripts/demo.sh checks arguments against the same names before it
// builds anything (a test keeps the two lists equal).
func flags(o *options, hosts *string) *flag.FlagSet {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.BoolVar(&o.short, "short", false, "the short form (about 30 s), as CI runs it")
	fs.StringVar(&o.bin, "bin", "", "`DIR` holding timed, mutexd and electd (default: go build them)")
	fs.StringVar(&o.repo, "repo", "", "the synclab checkout, for scripts/lab.sh (default: found from the working directory)")
	fs.StringVar(&o.plot, "plot", filepath.Join(OutDir, "clocks.svg"), "write the clocks' chart to `FILE` (samples beside it, .tsv)")
	fs.StringVar(&o.diagrams, "diagrams", filepath.Join(OutDir, "diagrams"), "write the acts' space-time diagrams (SVG and HTML, and their traces) to `DIR` (\"\": none)")
	fs.BoolVar(&o.keep, "keep", false, "leave the lab running until Enter is pressed")
	fs.StringVar(hosts, "hosts", "auto", "`where` the hosts run: loopback (no root), netns (root, iproute2, nftables), or auto: netns when possible")
	return fs
}

func main() {
	var o options
	var hostsMode string
	fs := flags(&o, &hostsMode)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "demo: unexpected arguments %q (see -h)\n", fs.Args())
		os.Exit(2)
	}
	switch hostsMode {
	case "loopback":
	case "netns":
		if why := netnsUnavailable(); why != "" {
			fmt.Fprintf(os.Stderr, "demo: -hosts netns: %s\n", why)
			os.Exit(2)
		}
		o.netns = true
	case "auto":
		o.netns = netnsUnavailable() == ""
	default:
		fmt.Fprintf(os.Stderr, "demo: -hosts %q: want auto, loopback or netns\n", hostsMode)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.out = os.Stdout
	// Bold headings on a terminal only (and not with NO_COLOR set,
	// no-color.org): redirected output stays plain text.
	o.bold = app.IsTerminal(int(os.Stdout.Fd())) && os.Getenv("NO_COLOR") == ""
	if o.bin == "" {
		dir, err := os.MkdirTemp("", "synclab-demo-bin.")
		if err != nil {
			fail(err)
		}
		defer os.RemoveAll(dir)
		fmt.Println("== building timed, mutexd and electd (go build -v: a line per package as it compiles)")
		fmt.Println("   " + BuildNote)
		if err := build(dir, o.repo); err != nil {
			fail(err)
		}
		o.bin = dir
	}
	if o.keep {
		o.pause = func() {
			fmt.Println("the lab keeps running; press Enter to stop it")
			fmt.Scanln()
		}
	}
	sum, err := run(ctx, o)
	if err != nil {
		fail(err)
	}
	if !sum.ok() {
		fmt.Fprintln(os.Stderr, "demo: something did not behave as it should (see above)")
		os.Exit(1)
	}
}

// netnsUnavailable says why the hosts cannot be network namespaces here,
// or "" when they can.
func netnsUnavailable() string {
	if os.Geteuid() != 0 {
		return "network namespaces need root"
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " not found (Debian: iproute2, nftables)"
		}
	}
	return ""
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "demo:", err)
	os.Exit(1)
}

// build compiles the three daemons into dir, showing Go's progress.
func build(dir, root string) error {
	if root == "" {
		var err error
		if root, err = moduleRoot(); err != nil {
			return err
		}
	}
	cmd := exec.Command("go", "build", "-v", "-o", dir+string(filepath.Separator), "./cmd/timed", "./cmd/mutexd", "./cmd/electd")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	return nil
}

// moduleRoot finds the directory holding go.mod, from the working
// directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory: run the demo from the synclab checkout, or pass -repo (or -bin)")
		}
		dir = parent
	}
}
