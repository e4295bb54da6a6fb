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

func main() {
	var o options
	flag.BoolVar(&o.short, "short", false, "the short form (about 30 s), as CI runs it")
	flag.StringVar(&o.bin, "bin", "", "`DIR` holding timed, mutexd and electd (default: go build them)")
	flag.StringVar(&o.plot, "plot", "synclab-demo-clocks.svg", "write the clocks' chart to `FILE` (samples beside it, .tsv)")
	flag.StringVar(&o.diagrams, "diagrams", "synclab-demo-diagrams", "write the acts' space-time diagrams (SVG and HTML, and their traces) to `DIR` (\"\": none)")
	flag.BoolVar(&o.keep, "keep", false, "leave the lab running until Enter is pressed")
	hostsMode := flag.String("hosts", "auto", "`where` the hosts run: loopback (no root), netns (root, iproute2, nftables), or auto: netns when possible")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "demo: unexpected arguments %q (see -h)\n", flag.Args())
		os.Exit(2)
	}
	switch *hostsMode {
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
		fmt.Fprintf(os.Stderr, "demo: -hosts %q: want auto, loopback or netns\n", *hostsMode)
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
		fmt.Println("== building timed, mutexd and electd")
		if err := build(dir); err != nil {
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

// build compiles the three daemons into dir.
func build(dir string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/timed", "./cmd/mutexd", "./cmd/electd")
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
			return "", fmt.Errorf("no go.mod above the working directory: run the demo from the synclab checkout, or pass -bin")
		}
		dir = parent
	}
}
