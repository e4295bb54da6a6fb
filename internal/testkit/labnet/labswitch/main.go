// Command labswitch runs the lab's user-space Ethernet switch (package
// l2switch) as a process, for labs built from the shell by scripts/lab.sh
// (`lab.sh up N --switch`); Go tests use the same switch in-process through
// labnet.WithSwitch.
//
//	labswitch run -ports p1,p2,p3 -control /run/synclab-lab-P/switch.sock [-seed N]
//	labswitch ctl -control PATH link A B [delay=2ms] [jitter=100us] [loss=5] [dup=1] [down=true] [reorder=false]
//	labswitch ctl -control PATH portloss H PCT [ip]
//	labswitch ctl -control PATH heal
//	labswitch ctl -control PATH show
//
// `run` forwards between the named interfaces of the network namespace it is
// started in (`ip netns exec P-br labswitch run ...`) until SIGTERM or SIGINT,
// and serves a control socket: one request line per connection, answered
// with lines ending in "ok" or "error: ...". `link` changes only the fields
// given and keeps the others. Exit codes: 0 success, 1 failure, 2 usage.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/synclab/synclab/internal/testkit/labnet/l2switch"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = run(os.Args[2:])
	case "ctl":
		err = ctl(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "labswitch: %v\n", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

func usage() {
	fmt.Fprintln(os.Stderr, `usage:
  labswitch run -ports p1,p2,... -control SOCKET [-seed N]
  labswitch ctl -control SOCKET link A B [delay=D] [jitter=D] [loss=PCT] [dup=PCT] [down=BOOL] [reorder=BOOL]
  labswitch ctl -control SOCKET portloss HOST PCT [ip]
  labswitch ctl -control SOCKET heal
  labswitch ctl -control SOCKET show`)
	os.Exit(2)
}

func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	ports := fs.String("ports", "", "comma-separated interfaces; port i is the i-th")
	control := fs.String("control", "", "path of the control socket")
	seed := fs.Uint64("seed", 0, "seed of the random draws (0: random)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if *ports == "" || *control == "" {
		return fmt.Errorf("%w: run needs -ports and -control", errUsage)
	}
	names := strings.Split(*ports, ",")
	sw, err := l2switch.Open(names, l2switch.Config{Seed: *seed})
	if err != nil {
		return err
	}
	defer sw.Close()
	os.Remove(*control) // a stale socket of a killed switch
	ln, err := net.Listen("unix", *control)
	if err != nil {
		return err
	}
	defer ln.Close()
	srv := &server{sw: sw, n: len(names)}
	go srv.serve(ln)
	fmt.Printf("labswitch: forwarding between %s (control %s)\n", *ports, *control)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return nil
}

type server struct {
	sw *l2switch.Switch
	n  int
}

func (s *server) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			line, err := bufio.NewReader(io.LimitReader(c, 4096)).ReadString('\n')
			if err != nil && line == "" {
				return
			}
			out, err := s.handle(strings.Fields(line))
			if err != nil {
				fmt.Fprintf(c, "%serror: %v\n", out, err)
				return
			}
			fmt.Fprintf(c, "%sok\n", out)
		}()
	}
}

func (s *server) handle(f []string) (string, error) {
	if len(f) == 0 {
		return "", errors.New("empty request")
	}
	switch f[0] {
	case "link":
		if len(f) < 3 {
			return "", errors.New("link A B [key=value...]")
		}
		a, b, err := pair(f[1], f[2])
		if err != nil {
			return "", err
		}
		l, err := s.sw.Link(a, b)
		if err != nil {
			return "", err
		}
		if err := applyKV(&l, f[3:]); err != nil {
			return "", err
		}
		return "", s.sw.SetLink(a, b, l)
	case "portloss":
		if len(f) < 3 || len(f) > 4 || (len(f) == 4 && f[3] != "ip") {
			return "", errors.New("portloss HOST PCT [ip]")
		}
		h, err := strconv.Atoi(f[1])
		if err != nil {
			return "", fmt.Errorf("host %q: %w", f[1], err)
		}
		p, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			return "", fmt.Errorf("percent %q: %w", f[2], err)
		}
		return "", s.sw.SetPortLoss(h, l2switch.PortLoss{Percent: p, AllIP: len(f) == 4})
	case "heal":
		for a := 1; a <= s.n; a++ {
			for b := 1; b <= s.n; b++ {
				if a == b {
					continue
				}
				l, err := s.sw.Link(a, b)
				if err != nil {
					return "", err
				}
				l.Down = false
				if err := s.sw.SetLink(a, b, l); err != nil {
					return "", err
				}
			}
		}
		return "", nil
	case "show":
		return s.show()
	}
	return "", fmt.Errorf("unknown request %q", f[0])
}

// show lists every link that is not a perfect cable or has carried frames.
func (s *server) show() (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %9s %9s %6s %6s %-5s %10s %8s %6s\n", "LINK", "DELAY", "JITTER", "LOSS%", "DUP%", "DOWN", "FORWARDED", "DROPPED", "TXERR")
	for a := 1; a <= s.n; a++ {
		for c := 1; c <= s.n; c++ {
			if a == c {
				continue
			}
			l, err := s.sw.Link(a, c)
			if err != nil {
				return "", err
			}
			st, err := s.sw.Stats(a, c)
			if err != nil {
				return "", err
			}
			if l == (l2switch.Link{}) && st == (l2switch.Stats{}) {
				continue
			}
			fmt.Fprintf(&b, "%-8s %9v %9v %6g %6g %-5v %10d %8d %6d\n", fmt.Sprintf("h%d->h%d", a, c),
				l.Delay, l.Jitter, l.Loss, l.Duplicate, l.Down, st.Forwarded, st.Dropped, st.TxErrors)
		}
	}
	for p := 1; p <= s.n; p++ {
		pl, err := s.sw.PortLoss(p)
		if err != nil {
			return "", err
		}
		if pl.Percent > 0 {
			what := "UDP"
			if pl.AllIP {
				what = "IPv4"
			}
			fmt.Fprintf(&b, "loss of %s to and from h%d: %g%%\n", what, p, pl.Percent)
		}
	}
	return b.String(), nil
}

func pair(x, y string) (int, int, error) {
	a, err := strconv.Atoi(strings.TrimPrefix(x, "h"))
	if err != nil {
		return 0, 0, fmt.Errorf("host %q: %w", x, err)
	}
	b, err := strconv.Atoi(strings.TrimPrefix(y, "h"))
	if err != nil {
		return 0, 0, fmt.Errorf("host %q: %w", y, err)
	}
	return a, b, nil
}

// applyKV sets the fields named in key=value arguments.
func applyKV(l *l2switch.Link, kvs []string) error {
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("%q: want key=value", kv)
		}
		var err error
		switch k {
		case "delay":
			l.Delay, err = time.ParseDuration(v)
		case "jitter":
			l.Jitter, err = time.ParseDuration(v)
		case "loss":
			l.Loss, err = strconv.ParseFloat(v, 64)
		case "dup":
			l.Duplicate, err = strconv.ParseFloat(v, 64)
		case "down":
			l.Down, err = strconv.ParseBool(v)
		case "reorder":
			l.Reorder, err = strconv.ParseBool(v)
		default:
			return fmt.Errorf("unknown key %q (delay, jitter, loss, dup, down, reorder)", k)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return l.Validate()
}

// ctl sends one request to a running switch and prints the answer.
func ctl(args []string) error {
	fs := flag.NewFlagSet("ctl", flag.ContinueOnError)
	control := fs.String("control", "", "path of the control socket")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if *control == "" || fs.NArg() == 0 {
		return fmt.Errorf("%w: ctl needs -control and a request", errUsage)
	}
	c, err := net.DialTimeout("unix", *control, 2*time.Second)
	if err != nil {
		return fmt.Errorf("switch not reachable (is the lab built with --switch?): %w", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintln(c, strings.Join(fs.Args(), " ")); err != nil {
		return err
	}
	reply, err := io.ReadAll(c)
	if err != nil {
		return err
	}
	text := strings.TrimSuffix(string(reply), "\n")
	lines := strings.Split(text, "\n")
	lastLine := lines[len(lines)-1]
	if body := strings.Join(lines[:len(lines)-1], "\n"); body != "" {
		fmt.Println(body)
	}
	if lastLine != "ok" {
		return errors.New(strings.TrimPrefix(lastLine, "error: "))
	}
	return nil
}
