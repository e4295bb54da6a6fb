package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/demo/plot"
)

type options struct {
	short bool
	netns bool   // hosts in network namespaces (root) rather than on loopback
	bin   string // directory of the three binaries
	repo  string // the synclab checkout (scripts/lab.sh); "": found from the working directory
	plot  string // chart file ("" for none)
	// diagrams is the directory the acts' space-time diagrams (and the
	// traces they are drawn from) go to; "" for none.
	diagrams string
	keep     bool
	pause    func() // called before stopping when keep is set
	out      io.Writer
	// bold: out is a terminal that may get escape codes (headings in
	// bold); never in a file or a pipe.
	bold bool
}

// hosts is the size of the demo lab.
const hosts = 5

// summary is what the demo shows at the end, and what its test checks.
type summary struct {
	// timed, Berkeley: the five clocks' spread (max pairwise difference of
	// their true offsets) at the start and at the end, and how long it
	// took to fall below 1 ms.
	InitialSpread, FinalSpread time.Duration
	Converged                  time.Duration // 0: never
	Master                     uint32
	// timed, NTP client following host 1: its offset from host 1's clock
	// at the end, and when it first got within 1 ms.
	ClientOffset    time.Duration
	ClientConverged time.Duration // 0: never
	// mutexd: the shared counter after hosts x Increments increments
	// under the lock, and without it.
	Increments, Locked, Unlocked int
	LockFailures                 int
	// electd: the leader, the one agreed after it was killed and how long
	// that took, and the leader after it came back.
	Leader, NewLeader, Returned uint32
	Failover                    time.Duration
	Plot                        string
	// Diagrams are the acts' diagrams written (SVG and HTML of each).
	Diagrams []string
	// Verdicts are `X trace check`'s verdicts on each traced act's
	// traces, by act: "property: verdict" (a violation fails the act).
	Verdicts map[string][]string
	// Lab is the prefix of the network namespaces the demo built (netns
	// mode), so that a caller can check they are gone.
	Lab string
}

func (s summary) ok() bool {
	return s.Converged > 0 && s.FinalSpread < time.Millisecond && s.ClientConverged > 0 &&
		s.Locked == hosts*s.Increments && s.LockFailures == 0 &&
		s.Leader != 0 && s.NewLeader != 0 && s.NewLeader != s.Leader && s.Returned == s.Leader
}

// lab is the demo's running processes.
type lab struct {
	o      options
	dir    string
	net    int    // R in 127.77.R.x and 239.77.R.x
	prefix string // the namespace lab's prefix (netns mode)
	mu     sync.Mutex
	procs  []*proc
	timeds map[int]*ctl.Client // 1..hosts, and hosts+1 the NTP client
	electd map[int]*proc
}

type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

func (l *lab) say(format string, args ...any) {
	if l.o.bold {
		fmt.Fprintf(l.o.out, "\n\033[1m== %s\033[0m\n", fmt.Sprintf(format, args...))
		return
	}
	fmt.Fprintf(l.o.out, "\n== %s\n", fmt.Sprintf(format, args...))
}

func (l *lab) printf(format string, args ...any) { fmt.Fprintf(l.o.out, format, args...) }

// addr is host's address: 127.77.R.(10+host) on loopback, the lab's
// 10.77.0.host in namespaces.
func (l *lab) addr(host int) string {
	if l.prefix != "" {
		return fmt.Sprintf("10.77.0.%d", host)
	}
	return fmt.Sprintf("127.77.%d.%d", l.net, 10+host)
}

// multicast is the flags that carry a daemon's broadcasts on group
// 239.77.R.g, port: on lo with TTL 0 (nothing leaves the machine), or on
// the namespace hosts' eth0 across the lab's bridge.
func (l *lab) multicast(g, port int) []string {
	group := fmt.Sprintf("239.77.%d.%d:%d", l.net, g, port)
	if l.prefix != "" {
		return []string{"--multicast", group, "--interface", "eth0", "--multicast-ttl", "1"}
	}
	return []string{"--multicast", group, "--interface", "lo", "--multicast-ttl", "0"}
}

func (l *lab) members(port int) string {
	var m []string
	for i := 1; i <= hosts; i++ {
		m = append(m, fmt.Sprintf("%d=%s:%d", i, l.addr(i), port))
	}
	return strings.Join(m, ",")
}

// key is the demo lab's cluster key: one file for every daemon of every
// host, as copied to every machine of a real lab.
func (l *lab) key() string { return filepath.Join(l.dir, "cluster.key") }

// keygen makes the lab's key the way an administrator does, with the
// binaries' own keygen.
func (l *lab) keygen() error {
	out, err := exec.Command(filepath.Join(l.o.bin, "timed"), "keygen", l.key()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("timed keygen: %v: %s", err, out)
	}
	l.printf("timed keygen %s: the cluster key every daemon of every host authenticates its frames with\n", l.key())
	return nil
}

func (l *lab) path(host int, file string) string {
	return filepath.Join(l.dir, fmt.Sprintf("h%d", host), file)
}

// start runs one daemon of host, its output in h<host>/<daemon>.log.
func (l *lab) start(host int, daemon string, args ...string) (*proc, error) {
	if err := os.MkdirAll(filepath.Join(l.dir, fmt.Sprintf("h%d", host)), 0o755); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(l.path(host, daemon+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	argv := append([]string{"run", "--id", strconv.Itoa(host),
		"--control", l.path(host, daemon+".sock"), "--state-dir", l.path(host, daemon+".state"),
		"--key-file", l.key()}, args...)
	cmd := exec.Command(filepath.Join(l.o.bin, daemon), argv...)
	if l.prefix != "" {
		// ip netns exec execs the daemon in place: the PID is the
		// daemon's own, and SIGKILL reaches it.
		cmd = exec.Command("ip", append([]string{"netns", "exec", fmt.Sprintf("%s-h%d", l.prefix, host), cmd.Path}, argv...)...)
	}
	// The demo's lab is its own: never this machine's lab file.
	cmd.Env = append(os.Environ(), "SYNCLAB_LAB_FILE=")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s on host %d: %w", daemon, host, err)
	}
	p := &proc{name: fmt.Sprintf("%s on host %d", daemon, host), cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	l.mu.Lock()
	l.procs = append(l.procs, p)
	l.mu.Unlock()
	return p, nil
}

// kill ends p with SIGKILL and waits for it.
func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stopAll stops every process the demo started, by PID: SIGTERM, then
// SIGKILL for any still running a second later.
func (l *lab) stopAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.procs {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	deadline := time.After(time.Second)
	for _, p := range l.procs {
		select {
		case <-p.done:
		case <-deadline:
			p.kill()
		}
	}
}

func run(ctx context.Context, o options) (sum summary, err error) {
	dir, err := os.MkdirTemp("", "synclab-demo.")
	if err != nil {
		return sum, err
	}
	defer os.RemoveAll(dir)
	l := &lab{o: o, dir: dir, net: 1 + rand.IntN(254), timeds: map[int]*ctl.Client{}, electd: map[int]*proc{}}
	if o.netns {
		down, err := l.namespaces()
		if err != nil {
			return sum, err
		}
		defer down()
		sum.Lab = l.prefix
	}
	defer l.stopAll()
	if err := l.startAll(); err != nil {
		return sum, err
	}
	for _, step := range []func(context.Context, *summary) error{l.clocks, l.counter, l.election} {
		if err := step(ctx, &sum); err != nil {
			return sum, err
		}
	}
	l.report(sum)
	if o.pause != nil {
		o.pause()
	}
	l.say("done: stopping %d daemons and removing %s", len(l.procs), dir)
	return sum, nil
}

// namespaces builds a lab of hosts+1 network-namespace hosts on one bridge
// with scripts/lab.sh, and returns what tears it down.
func (l *lab) namespaces() (down func(), err error) {
	root := l.o.repo
	if root == "" {
		var err error
		if root, err = moduleRoot(); err != nil {
			return nil, err
		}
	}
	script := filepath.Join(root, "scripts", "lab.sh")
	l.prefix = fmt.Sprintf("sldemo%04x", rand.IntN(1<<16))
	out, err := exec.Command(script, "up", strconv.Itoa(hosts+1), "--prefix", l.prefix).CombinedOutput()
	downFn := func() {
		if out, err := exec.Command(script, "down", "--prefix", l.prefix).CombinedOutput(); err != nil {
			l.printf("removing the namespaces of lab %s: %v: %s\n", l.prefix, err, strings.TrimSpace(string(out)))
		}
	}
	if err != nil {
		downFn()
		return nil, fmt.Errorf("building the namespace lab (%s up): %v: %s", script, err, strings.TrimSpace(string(out)))
	}
	return downFn, nil
}

func (l *lab) startAll() error {
	where := fmt.Sprintf("%d hosts on %s-%d", hosts, l.addr(1), 10+hosts)
	if l.prefix != "" {
		where = fmt.Sprintf("%d network-namespace hosts (%s-h1..h%d) on %s-%d", hosts, l.prefix, hosts, l.addr(1), hosts)
	}
	l.say("starting %s: timed (Berkeley, simulated clocks up to ±200 ms and ±30 ppm off), mutexd, electd", where)
	if err := l.keygen(); err != nil {
		return err
	}
	rnd := rand.New(rand.NewPCG(uint64(l.net), uint64(time.Now().UnixNano())))
	for i := 1; i <= hosts; i++ {
		offset := time.Duration(rnd.Int64N(int64(400*time.Millisecond))) - 200*time.Millisecond
		drift := rnd.Float64()*60 - 30
		args := append([]string{"--mode", "berkeley", "--members", l.members(7300)}, l.multicast(1, 7399)...)
		args = append(args, "--clock", "sim", "--sim-offset", offset.Round(time.Millisecond).String(), "--sim-drift", strconv.FormatFloat(drift, 'f', 1, 64))
		if i == 1 {
			// The group's time is its clocks' average, so within 200 ms
			// of true time (plus the drift of a short run): what its NTP
			// clients must add to their bound (--local-error; without it
			// a Berkeley member serves the group's time unsynchronised).
			args = append(args, "--serve", l.addr(1)+":12300", "--stratum", "8", "--local-error", "250ms")
		}
		if _, err := l.start(i, "timed", args...); err != nil {
			return err
		}
		if _, err := l.start(i, "mutexd", "--members", l.members(7400)); err != nil {
			return err
		}
		p, err := l.start(i, "electd", append([]string{"--members", l.members(7500)}, l.multicast(2, 7599)...)...)
		if err != nil {
			return err
		}
		l.electd[i] = p
		l.timeds[i] = ctl.NewClient(l.path(i, "timed.sock"), "timed")
	}
	// A sixth machine that is no member: it follows host 1's NTP server.
	client := hosts + 1
	if _, err := l.start(client, "timed", "--members", fmt.Sprintf("%d=%s:7300", client, l.addr(client)),
		"--clock", "sim", "--sim-offset", "-150ms", "--sim-drift", "20", "--server", l.addr(1)+":12300"); err != nil {
		return err
	}
	l.timeds[client] = ctl.NewClient(l.path(client, "timed.sock"), "timed")
	l.printf("host 1 also serves NTP (stratum 8, the group's time within 250 ms of true time) on %s:12300; a sixth machine, %s, follows it as an NTP client\n", l.addr(1), l.addr(client))
	return nil
}

// timedView is what the demo reads of `timed status --json`.
type timedView struct {
	TrueOffsetNS int64 `json:"true_offset_ns"`
	Node         struct {
		Core struct {
			Cluster struct {
				Role      string `json:"role"`
				Master    uint32 `json:"master"`
				Term      uint64 `json:"term"`
				LastRound *struct {
					Round uint32 `json:"round"`
				} `json:"last_round"`
			} `json:"cluster"`
		} `json:"core"`
	} `json:"node"`
}

func (l *lab) trueOffsets(ctx context.Context) (map[int]time.Duration, map[int]timedView, bool) {
	offs, views := map[int]time.Duration{}, map[int]timedView{}
	for i, c := range l.timeds {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		var v timedView
		err := c.Get(cctx, "/v1/status", &v)
		cancel()
		if err != nil {
			return nil, nil, false
		}
		offs[i], views[i] = time.Duration(v.TrueOffsetNS), v
	}
	return offs, views, true
}

// awaitRounds waits until the master has computed n rounds more than it
// had when called (at most 15 s, a master elected meanwhile counting from
// its own first), so that the traces hold a whole round: the first
// polled after every trace started, its adjustments sent and acknowledged
// before the next round is computed. A fixed wait did not: at load 31 a
// 1.5 s trace held one of a round's four adjustments.
func (l *lab) awaitRounds(ctx context.Context, n uint32) {
	round := func() (uint64, uint32, bool) {
		_, views, ok := l.trueOffsets(ctx)
		if !ok {
			return 0, 0, false
		}
		m := views[1].Node.Core.Cluster.Master
		v, ok := views[int(m)]
		if m == 0 || !ok || v.Node.Core.Cluster.LastRound == nil {
			return 0, 0, false
		}
		return v.Node.Core.Cluster.Term, v.Node.Core.Cluster.LastRound.Round, true
	}
	term0, r0, ok0 := round()
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end) && ctx.Err() == nil; {
		sleepCtx(ctx, 100*time.Millisecond)
		term, r, ok := round()
		switch {
		case !ok:
		case !ok0 || term != term0:
			term0, r0, ok0 = term, r, true
		case r >= r0+n:
			return
		}
	}
}

// spread is the largest difference between two members' clocks; mean their
// average (the group's time).
func spread(offs map[int]time.Duration) (spread, mean time.Duration) {
	lo, hi := time.Duration(math.MaxInt64), time.Duration(math.MinInt64)
	var sum time.Duration
	for i := 1; i <= hosts; i++ {
		lo, hi, sum = min(lo, offs[i]), max(hi, offs[i]), sum+offs[i]
	}
	return hi - lo, sum / hosts
}

func ms(d time.Duration) string { return fmt.Sprintf("%+9.3f", float64(d)/1e6) }

// clocks watches the clocks converge and plots them.
func (l *lab) clocks(ctx context.Context, sum *summary) error {
	window := 30 * time.Second
	if l.o.short {
		window = 15 * time.Second
	}
	var offs map[int]time.Duration
	var views map[int]timedView
	if !waitFor(ctx, 10*time.Second, func() bool {
		var ok bool
		offs, views, ok = l.trueOffsets(ctx)
		return ok
	}) {
		return fmt.Errorf("timed did not answer on every host within 10 s (logs in %s/h*/timed.log)", l.dir)
	}
	sum.InitialSpread, _ = spread(offs)
	l.say("timed: every clock's offset from the group's time (their average), ms; client: the NTP client's from host 1")
	l.printf("%7s", "t")
	for i := 1; i <= hosts; i++ {
		l.printf("  %9s", fmt.Sprintf("h%d", i))
	}
	l.printf("  %9s  %9s  master\n", "client", "spread")
	samples := plot.Series{}
	start := time.Now()
	lastLine := time.Duration(-time.Second)
	for {
		el := time.Since(start)
		if el > window || ctx.Err() != nil {
			break
		}
		if o, v, ok := l.trueOffsets(ctx); ok {
			offs, views = o, v
			sp, mean := spread(offs)
			client := offs[hosts+1] - offs[1]
			for i := 1; i <= hosts; i++ {
				samples[fmt.Sprintf("h%d", i)] = append(samples[fmt.Sprintf("h%d", i)], plot.Point{T: el.Seconds(), NS: float64(offs[i] - mean)})
			}
			samples["client"] = append(samples["client"], plot.Point{T: el.Seconds(), NS: float64(client)})
			if sum.Converged == 0 && sp < time.Millisecond {
				sum.Converged = el
			}
			if sum.ClientConverged == 0 && client.Abs() < time.Millisecond {
				sum.ClientConverged = el
			}
			if el-lastLine >= time.Second {
				lastLine = el
				l.printf("%6.1fs", el.Seconds())
				for i := 1; i <= hosts; i++ {
					l.printf("  %s", ms(offs[i]-mean))
				}
				l.printf("  %s  %s  %d\n", ms(client), ms(sp), views[1].Node.Core.Cluster.Master)
			}
		}
		sleepCtx(ctx, 250*time.Millisecond)
	}
	sum.FinalSpread, _ = spread(offs)
	sum.ClientOffset = offs[hosts+1] - offs[1]
	// A Berkeley round (one a second): the master's polls, every reading,
	// the adjustments and their acknowledgements; drawn from the first
	// poll for 900 ms, so one round.
	if err := l.traced(ctx, sum, "berkeley-round", "timed", all(), "a Berkeley round: the master's polls (clock_poll), the readings (clock_reading), the adjustments (clock_adjust, acknowledged)",
		[]string{"--from-kind", "clock_poll", "--until", "900ms"}, func() error {
			l.awaitRounds(ctx, 3)
			return nil
		}); err != nil {
		return err
	}
	sum.Master = views[1].Node.Core.Cluster.Master
	if l.o.plot != "" {
		if err := writePlot(l.o.plot, samples); err != nil {
			return err
		}
		sum.Plot = l.o.plot
	}
	return nil
}

func writePlot(path string, s plot.Series) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("the chart: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("the chart: %w", err)
	}
	if err := plot.Render(f, "synclab demo: each clock's |offset| from the group's time (client: from its NTP server)", s); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	tsv, err := os.Create(strings.TrimSuffix(path, filepath.Ext(path)) + ".tsv")
	if err != nil {
		return err
	}
	defer tsv.Close()
	fmt.Fprintln(tsv, "# seconds host offset_ns")
	for _, h := range slices.Sorted(maps.Keys(s)) {
		for _, p := range s[h] {
			fmt.Fprintf(tsv, "%.3f %s %.0f\n", p.T, h, p.NS)
		}
	}
	return nil
}

// incrementScript is the critical section of the notes' shared counter: read the shared
// counter, take a moment, write it back plus one. Without mutual exclusion
// two hosts read the same value and one increment is lost.
const incrementScript = `v=$(cat "$1"); sleep 0.005; echo $((v + 1)) > "$1"`

// counter runs the shared-counter experiment with the lock and without.
func (l *lab) counter(ctx context.Context, sum *summary) error {
	k := 20
	if l.o.short {
		k = 10
	}
	sum.Increments = k
	l.say("mutexd: the shared counter of the course notes: %d hosts x %d increments of one file", hosts, k)
	if !waitFor(ctx, 10*time.Second, func() bool {
		for i := 1; i <= hosts; i++ {
			var st struct{}
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			err := ctl.NewClient(l.path(i, "mutexd.sock"), "mutexd").Get(cctx, "/v1/status", &st)
			cancel()
			if err != nil {
				return false
			}
		}
		return true
	}) {
		return fmt.Errorf("mutexd did not answer on every host within 10 s (logs in %s/h*/mutexd.log)", l.dir)
	}
	file := filepath.Join(l.dir, "counter")
	for _, locked := range []bool{true, false} {
		if err := os.WriteFile(file, []byte("0\n"), 0o644); err != nil {
			return err
		}
		start := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := 1; i <= hosts; i++ {
			wg.Go(func() {
				for range k {
					var cmd *exec.Cmd
					if locked {
						cmd = exec.CommandContext(ctx, filepath.Join(l.o.bin, "mutexd"), "lock", "--control", l.path(i, "mutexd.sock"),
							"--timeout", "30s", "counter", "--", "sh", "-c", incrementScript, "sh", file)
					} else {
						cmd = exec.CommandContext(ctx, "sh", "-c", incrementScript, "sh", file)
					}
					if out, err := cmd.CombinedOutput(); err != nil {
						mu.Lock()
						sum.LockFailures++
						mu.Unlock()
						l.printf("host %d: %v: %s\n", i, err, strings.TrimSpace(string(out)))
					}
				}
			})
		}
		wg.Wait()
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		v, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return fmt.Errorf("the counter file holds %q: %w", b, err)
		}
		if locked {
			sum.Locked = v
			l.printf("with `mutexd lock counter -- sh -c '...'`: counter = %d of %d in %.1f s\n", v, hosts*k, time.Since(start).Seconds())
		} else {
			sum.Unlocked = v
			l.printf("the same without the lock:            counter = %d of %d (%d updates lost)\n", v, hosts*k, hosts*k-v)
		}
	}
	// A lock handoff: hosts 2 and 4 want the lock at once; the token
	// goes round the ring to one, then to the other. Host 1 takes the
	// lock once before, untraced: the ring makes a lock's token at its
	// first request (token_regenerated, after a search for it), which is
	// not the handoff's story.
	if out, err := exec.CommandContext(ctx, filepath.Join(l.o.bin, "mutexd"), "lock", "--control", l.path(1, "mutexd.sock"),
		"--timeout", "10s", "handoff", "--", "true").CombinedOutput(); err != nil {
		return fmt.Errorf("host 1: mutexd lock handoff: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return l.traced(ctx, sum, "lock-handoff", "mutexd", all(),
		"hosts 2 and 4 want the lock held last by host 1: their requests (ring_probe want), the token passed 1 -> 2 -> 3 -> 4 (token, token_ack), each grant after a majority check (ring_probe check), lock_granted and lock_released", nil, func() error {
			var wg sync.WaitGroup
			errs := make([]error, hosts+1)
			for _, i := range []int{2, 4} {
				wg.Go(func() {
					out, err := exec.CommandContext(ctx, filepath.Join(l.o.bin, "mutexd"), "lock", "--control", l.path(i, "mutexd.sock"),
						"--timeout", "10s", "handoff", "--", "sleep", "0.2").CombinedOutput()
					if err != nil {
						errs[i] = fmt.Errorf("host %d: mutexd lock: %v: %s", i, err, strings.TrimSpace(string(out)))
					}
				})
			}
			wg.Wait()
			return errors.Join(errs...)
		})
}

// leader returns the leader every running electd agrees on, 0 if they do
// not agree (or one does not answer).
func (l *lab) leader(ctx context.Context, skip int) uint32 {
	var lead uint32
	for i := 1; i <= hosts; i++ {
		if i == skip {
			continue
		}
		var v struct {
			Leader uint32 `json:"leader"`
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		err := ctl.NewClient(l.path(i, "electd.sock"), "electd").Get(cctx, "/v1/leader", &v)
		cancel()
		if err != nil || v.Leader == 0 || lead != 0 && v.Leader != lead {
			return 0
		}
		lead = v.Leader
	}
	return lead
}

// election kills the leader and times the failover.
func (l *lab) election(ctx context.Context, sum *summary) error {
	l.say("electd: leader election (bully: the highest-ranked live member leads)")
	if !waitFor(ctx, 10*time.Second, func() bool { sum.Leader = l.leader(ctx, 0); return sum.Leader != 0 }) {
		return fmt.Errorf("electd did not agree on a leader within 10 s (logs in %s/h*/electd.log)", l.dir)
	}
	l.printf("all %d hosts agree: host %d leads\n", hosts, sum.Leader)
	dead := int(sum.Leader)
	if err := l.traced(ctx, sum, "bully-failover", "electd", all(), "the leader killed: the survivors notice (leader_lost), the highest elects itself and announces it (coordinator)", nil, func() error {
		sleepCtx(ctx, 300*time.Millisecond) // the leader's heartbeats, drawn
		start := time.Now()
		l.electd[dead].kill()
		l.printf("SIGKILL to electd on host %d\n", dead)
		if !waitFor(ctx, 10*time.Second, func() bool {
			sum.NewLeader = l.leader(ctx, dead)
			return sum.NewLeader != 0 && sum.NewLeader != sum.Leader
		}) {
			return fmt.Errorf("the survivors did not agree on a new leader within 10 s")
		}
		sum.Failover = time.Since(start)
		l.printf("every survivor agrees on host %d after %.2f s\n", sum.NewLeader, sum.Failover.Seconds())
		sleepCtx(ctx, 300*time.Millisecond) // the new leader's heartbeats
		return nil
	}); err != nil {
		return err
	}
	p, err := l.start(dead, "electd", append([]string{"--members", l.members(7500)}, l.multicast(2, 7599)...)...)
	if err != nil {
		return err
	}
	l.electd[dead] = p
	if !waitFor(ctx, 10*time.Second, func() bool { sum.Returned = l.leader(ctx, 0); return sum.Returned == sum.Leader }) {
		return fmt.Errorf("host %d did not take the lead back within 10 s of its restart", dead)
	}
	l.printf("electd on host %d restarted: it outranks host %d and leads again, in a higher term\n", dead, sum.NewLeader)
	return nil
}

func (l *lab) report(s summary) {
	l.say("summary")
	check := func(ok bool) string {
		if ok {
			return "ok  "
		}
		return "FAIL"
	}
	l.printf("%s timed    Berkeley: %d clocks %.1f ms apart -> within 1 ms after %.1f s; %.3f ms apart at the end (master: host %d)\n",
		check(s.Converged > 0 && s.FinalSpread < time.Millisecond), hosts, float64(s.InitialSpread)/1e6, s.Converged.Seconds(), float64(s.FinalSpread)/1e6, s.Master)
	l.printf("%s timed    NTP client: within 1 ms of host 1 after %.1f s; %.3f ms off at the end\n",
		check(s.ClientConverged > 0), s.ClientConverged.Seconds(), float64(s.ClientOffset)/1e6)
	l.printf("%s mutexd   counter with the lock %d of %d, without %d (%d updates lost)\n",
		check(s.Locked == hosts*s.Increments && s.LockFailures == 0), s.Locked, hosts*s.Increments, s.Unlocked, hosts*s.Increments-s.Unlocked)
	l.printf("%s electd   leader %d killed -> %d agreed in %.2f s -> %d leads again after its restart\n",
		check(s.NewLeader != 0 && s.Returned == s.Leader), s.Leader, s.NewLeader, s.Failover.Seconds(), s.Returned)
	if s.Plot != "" {
		l.printf("     chart of the clocks: %s (samples: %s)\n", s.Plot, strings.TrimSuffix(s.Plot, filepath.Ext(s.Plot))+".tsv")
	}
	if len(s.Diagrams) > 0 {
		l.printf("     space-time diagrams of the acts (open the .html in a browser):\n")
		for _, d := range s.Diagrams {
			l.printf("       %s\n", d)
		}
		l.printf("     drawn from the traces in %s\n", filepath.Join(l.o.diagrams, "traces"))
	}
}

// hostNames names the demo's hosts for the diagrams, as the clocks'
// table does: h1, h2...
func hostNames() string {
	var names []string
	for i := 1; i <= hosts; i++ {
		names = append(names, fmt.Sprintf("%d=h%d", i, i))
	}
	return strings.Join(names, ",")
}

func all() []int {
	hs := make([]int, hosts)
	for i := range hs {
		hs[i] = i + 1
	}
	return hs
}

// traced runs an act while daemon records a trace on every host of on
// (`X trace start` through their control sockets; `trace stop` after,
// on those still running), then draws the traces as act.svg and
// act.html in the diagrams directory: from the act's first protocol
// event (draw adds to `trace draw`'s flags), the lines named h1, h2...,
// the heartbeats folded away.
func (l *lab) traced(ctx context.Context, sum *summary, act, daemon string, on []int, what string, draw []string, fn func() error) error {
	if l.o.diagrams == "" {
		return fn()
	}
	dir := filepath.Join(l.o.diagrams, "traces")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var files []string
	for _, i := range on {
		f, err := filepath.Abs(filepath.Join(dir, fmt.Sprintf("%s-h%d.trace", act, i)))
		if err != nil {
			return err
		}
		os.Remove(f) // a previous demo's: a trace never overwrites a file
		var st struct{}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = ctl.NewClient(l.path(i, daemon+".sock"), daemon).Post(cctx, "/v1/trace/start", map[string]any{"file": f}, &st)
		cancel()
		if err != nil {
			return fmt.Errorf("%s trace start on host %d: %w", daemon, i, err)
		}
		files = append(files, f)
	}
	err := fn()
	for _, i := range on {
		var st struct{}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		serr := ctl.NewClient(l.path(i, daemon+".sock"), daemon).Post(cctx, "/v1/trace/stop", struct{}{}, &st)
		cancel()
		var ce *ctl.ConnectError
		if serr != nil && !errors.As(serr, &ce) && err == nil { // a killed daemon's trace ends where it died
			err = fmt.Errorf("%s trace stop on host %d: %w", daemon, i, serr)
		}
	}
	if err != nil {
		return err
	}
	var drawn []string
	for _, ext := range []string{".svg", ".html"} {
		out := filepath.Join(l.o.diagrams, act+ext)
		args := append([]string{"trace", "draw", "--from-first-event", "--names", hostNames(), "--lab-file", ""}, draw...)
		b, err := exec.CommandContext(ctx, filepath.Join(l.o.bin, daemon), append(append(args, files...), "-o", out)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s trace draw: %v: %s", daemon, err, strings.TrimSpace(string(b)))
		}
		drawn = append(drawn, out)
	}
	sum.Diagrams = append(sum.Diagrams, drawn...)
	l.printf("diagram of %s:\n   %s (and .html)\n", what, drawn[0])
	return l.checkAct(ctx, sum, act, daemon, files)
}

// checkAct runs `X trace check` on an act's traces and prints its
// verdicts; a violated promise fails the act. The demo's hosts share one
// machine's clock (loopback addresses or network namespaces), so two
// hosts' readings are never apart: --clock-bound 0, except for timed,
// whose simulated clocks are apart on purpose.
func (l *lab) checkAct(ctx context.Context, sum *summary, act, daemon string, files []string) error {
	args := append([]string{"trace", "check", "--json"}, files...)
	if daemon != "timed" {
		args = append(args, "--clock-bound", "0")
	}
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, filepath.Join(l.o.bin, daemon), args...)
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	var rep struct {
		Results []struct{ Property, Verdict, Why string }
		Notes   []string
	}
	if jerr := json.Unmarshal(b, &rep); jerr != nil {
		return fmt.Errorf("%s trace check of %s: %v: %s", daemon, act, err, strings.TrimSpace(stderr.String()))
	}
	var parts []string
	for _, r := range rep.Results {
		parts = append(parts, r.Property+": "+r.Verdict)
		if r.Verdict == "violated" {
			return fmt.Errorf("%s trace check of %s: %s violated: %s", daemon, act, r.Property, r.Why)
		}
	}
	if sum.Verdicts == nil {
		sum.Verdicts = map[string][]string{}
	}
	sum.Verdicts[act] = parts
	if len(parts) == 0 {
		l.printf("checked %s's traces: %s\n", act, strings.Join(rep.Notes, "; "))
		return nil
	}
	l.printf("checked %s's traces: %s\n", act, strings.Join(parts, ", "))
	for _, r := range rep.Results {
		if r.Verdict != "holds" {
			l.printf("  %s: %s\n", r.Property, r.Why)
		}
	}
	return nil
}

// waitFor polls cond every 100 ms until it holds, the limit passes or ctx
// ends.
func waitFor(ctx context.Context, limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
