package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/labnet"
	"github.com/synclab/synclab/pkg/wire"
)

var (
	ntpServeRun     = flag.Bool("ntpserve", false, "run BenchmarkNTPServe, a lab measurement of about a minute (scripts/bench.sh ntpserve sets it)")
	ntpServeBin     = flag.String("ntpserve.bin", "", "`DIR` holding timed (default: go build it from ../../../cmd/timed)")
	ntpServePrefix  = flag.String("ntpserve.prefix", "", "lab namespace `PREFIX` (default: random)")
	ntpServeLoad    = flag.Duration("ntpserve.load", 3*time.Second, "length of each throughput run")
	ntpServeRounds  = flag.Int("ntpserve.rounds", 5, "throughput runs per server and concurrency, alternating which server goes first")
	ntpServeClients = flag.String("ntpserve.clients", "1,8,32", "concurrencies: closed request loops, each from its own address")
	ntpServeArgs    = flag.String("ntpserve.timed-args", "", "more `FLAGS` for timed, split at spaces (e.g. a cluster for a timed that needs one: --id 1 --members 1=10.77.0.2:7300)")
	ntpServeFloor   = flag.Bool("ntpserve.floor", false, "measure the floor too: testdata/ntpfloor.c, built with cc, a minimal C server (blocking recvmmsg, sendmmsg, nothing else) on a fourth host")
)

const (
	// ntpServeLimitExp is the per-client rate limit both servers run
	// with: one request per 2^-19 s (1.9 us) on average, bursts of 8.
	// It is chrony's lowest interval, so the limiter works on every
	// request in both (a table lookup and a bucket update per client
	// address) without refusing any: what is measured is the serving
	// path with the limiter on, as a lab runs it.
	ntpServeLimitExp = -19
	// ntpServeMaxClients bounds the concurrency (one address each).
	ntpServeMaxClients = 64
	// targetNTPServeRSS is an NTP-only timed's RSS target, 8 MB in the
	// unit the table prints (MB: 10^6 bytes).
	targetNTPServeRSS = 8_000_000
	// targetNTPServeRatio and targetNTPServeCPU are issue 34's goals:
	// replies/s at least 1.2x chronyd's at every concurrency, and server
	// CPU per reply at most 0.8x chronyd's.
	targetNTPServeRatio = 1.2
	targetNTPServeCPU   = 0.8
)

// BenchmarkNTPServe measures timed's NTP server against chronyd's, A/B on
// one namespace LAN, the same load generator, the same per-client rate
// limit:
//
//	h1  chronyd -x, local stratum 8, "ratelimit interval -19 burst 8"
//	h2  timed run --serve h2 --stratum 8 --rate-limit 1907ns (no cluster)
//	h3  the load: N closed request loops, each from its own address
//	    (10.77.0.100 and up), so each is a client of its own to the
//	    limiters
//	h4  with -ntpserve.floor: testdata/ntpfloor.c, the least a server
//	    can do per request (blocking recvmmsg, one sendmmsg a batch, no
//	    limiter, no checks): the floor of both servers' CPU per reply
//
// Each loop sends a mode-3 request, waits for the reply (a valid mode-4
// answer echoing its transmit timestamp, stratum 8) or 100 ms, and sends
// the next. For each concurrency the servers take turns, -ntpserve.rounds
// times each, alternating which goes first; replies/s is the median of the
// rounds (the machine is shared: a run that another process slowed down
// must not decide the comparison), the runs are printed beside it. CPU
// per reply is each run's server CPU time (utime+stime from /proc) over
// its replies, the median of the runs. RSS (VmRSS) is read the same way
// for both, every 100 ms: idle before the load, and the maximum under it.
// Nothing can set the real clock: both run without CAP_SYS_TIME, chronyd
// with -x, timed on a simulated clock.
func BenchmarkNTPServe(b *testing.B) {
	if !*ntpServeRun {
		b.Skip("BenchmarkNTPServe builds a namespace lab: run it with scripts/bench.sh ntpserve (or pass -ntpserve)")
	}
	labnet.Require(b)
	if _, err := exec.LookPath("chronyd"); err != nil {
		b.Skipf("chronyd is the reference: install Debian's chrony (scripts/bench.sh ntpserve does, without starting the service): %v", err)
	}
	clients, err := parseConcurrencies(*ntpServeClients)
	if err != nil || *ntpServeLoad <= 0 || *ntpServeRounds < 1 {
		b.Fatalf("bad flags: -ntpserve.clients %q (%v), -ntpserve.load %v, -ntpserve.rounds %d", *ntpServeClients, err, *ntpServeLoad, *ntpServeRounds)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir := shortTempDir(b)
	timed := timedBinary(b, dir, *ntpServeBin)
	floor := ""
	hosts := 3
	if *ntpServeFloor {
		floor = buildNTPFloor(b, dir)
		hosts = 4
	}
	loadStart := loadAverage()

	lab := benchLab(b, hosts, *ntpServePrefix)
	h1, h2, h3 := lab.Host(1), lab.Host(2), lab.Host(3)
	locals := loadAddresses(b, h3, slices.Max(clients))
	b.ResetTimer()

	writeFile(b, filepath.Join(dir, "server.conf"), chronyServerConf(dir, h1.Addr())+fmt.Sprintf("ratelimit interval %d burst 8\n", ntpServeLimitExp))
	chrony := h1.Start(b, "chronyd-server", noSysTime("chronyd", "-x", "-d", "-f", filepath.Join(dir, "server.conf")), nil)
	limit := time.Second >> -ntpServeLimitExp // 1907ns
	td := h2.Start(b, "timed", noSysTime(append([]string{timed, "run", "--serve", h2.Addr().String(), "--stratum", "8",
		"--rate-limit", limit.String(), "--control", filepath.Join(dir, "timed.sock"),
		"--state-dir", filepath.Join(dir, "timed.state"), "--clock", "sim"}, strings.Fields(*ntpServeArgs)...)...), nil)
	servers := []*ntpServer{
		{name: "timed", proc: td, addr: netip.AddrPortFrom(h2.Addr(), 123)},
		{name: "chronyd", proc: chrony, addr: netip.AddrPortFrom(h1.Addr(), 123)},
	}
	if floor != "" {
		h4 := lab.Host(4)
		servers = append(servers, &ntpServer{name: "floor", proc: h4.Start(b, "ntpfloor", noSysTime(floor, h4.Addr().String()), nil),
			addr: netip.AddrPortFrom(h4.Addr(), 123)})
	}
	for _, s := range servers {
		waitAnswers(b, ctx, h3, s.addr)
	}
	time.Sleep(time.Second) // let both settle after their first answers
	for _, s := range servers {
		s.rssIdle, _ = RSS(s.proc.PID())
		s.qps = map[int][]float64{}
	}

	for _, n := range clients {
		for round := range *ntpServeRounds {
			order := servers
			if round%2 == 1 {
				order = slices.Clone(servers)
				slices.Reverse(order)
			}
			for _, s := range order {
				if ctx.Err() != nil {
					b.Fatal("interrupted")
				}
				qps := s.measure(b, ctx, h3, locals[:n], *ntpServeLoad)
				timesyncLogf("%d clients, round %d: %s %.0f replies/s", n, round+1, s.name, qps)
			}
		}
	}
	b.StopTimer()
	for _, s := range servers {
		if n, err := RSS(s.proc.PID()); err == nil {
			s.rssAfter = n
		}
	}
	t := ntpServeTable(servers, clients, loadStart, lab.Prefix())
	if err := t.Write(os.Stdout); err != nil {
		b.Fatal(err)
	}
	for _, n := range clients {
		b.ReportMetric(medianOf(servers[0].qps[n])/medianOf(servers[1].qps[n]), fmt.Sprintf("timed/chronyd-%dclients", n))
	}
}

// ntpServer is one server under test and what it measured.
type ntpServer struct {
	name     string
	proc     *labnet.Proc
	addr     netip.AddrPort
	qps      map[int][]float64 // replies/s by concurrency, one per round
	cpu      map[int][]float64 // CPU share by concurrency, one per round
	perReply map[int][]float64 // CPU seconds per reply by concurrency, one per round
	rssIdle  int64
	rssLoad  int64 // max under load
	rssAfter int64
}

// measure runs the load against s and returns its replies/s, sampling its
// RSS and CPU meanwhile.
func (s *ntpServer) measure(b *testing.B, ctx context.Context, h *labnet.Host, locals []netip.Addr, d time.Duration) float64 {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if n, err := RSS(s.proc.PID()); err == nil {
					s.rssLoad = max(s.rssLoad, n)
				}
			}
		}
	})
	cpu0, _ := CPUTime(s.proc.PID())
	t0 := time.Now()
	qps := loadFrom(b, ctx, h, s.addr, locals, d)
	cpu1, _ := CPUTime(s.proc.PID())
	close(done)
	wg.Wait()
	if s.cpu == nil {
		s.cpu, s.perReply = map[int][]float64{}, map[int][]float64{}
	}
	n := len(locals)
	s.qps[n] = append(s.qps[n], qps)
	s.cpu[n] = append(s.cpu[n], float64(cpu1-cpu0)/float64(time.Since(t0)))
	if replies := qps * d.Seconds(); replies > 0 {
		s.perReply[n] = append(s.perReply[n], (cpu1-cpu0).Seconds()/replies)
	}
	return qps
}

func ntpServeTable(servers []*ntpServer, clients []int, loadStart, prefix string) *Table {
	td, ch := servers[0], servers[1]
	var floor *ntpServer
	systems := []string{"timed", "chronyd -x"}
	if len(servers) > 2 {
		floor = servers[2]
		systems = append(systems, "floor (C, recvmmsg+sendmmsg)")
	}
	t := &Table{Title: "ntpserve: timed's NTP server vs chronyd's, A/B on a namespace LAN", Systems: systems}
	t.Section(fmt.Sprintf("replies/s, closed loops each from its own address, %v per run, median of %d runs each, taking turns (rate limit 2^%d s, burst 8, on both)",
		*ntpServeLoad, *ntpServeRounds, ntpServeLimitExp))
	for _, n := range clients {
		tq, cq := medianOf(td.qps[n]), medianOf(ch.qps[n])
		ratio := ratioOf(tq, cq)
		cells := []string{Verdict(fmt.Sprintf("%.0f (%.2fx; runs %s)", tq, ratio, joinQPS(td.qps[n])), ratio >= targetNTPServeRatio),
			fmt.Sprintf("%.0f (runs %s)", cq, joinQPS(ch.qps[n]))}
		if floor != nil {
			fq := medianOf(floor.qps[n])
			cells = append(cells, fmt.Sprintf("%.0f (%.2fx; runs %s)", fq, ratioOf(fq, cq), joinQPS(floor.qps[n])))
		}
		t.Row(fmt.Sprintf("%d clients", n), fmt.Sprintf(">= %.1fx chronyd", targetNTPServeRatio), cells...)
	}
	t.Section("server CPU per reply, us (each run's CPU time over its replies, median of the runs)")
	for _, n := range clients {
		tc, cc := medianOf(td.perReply[n]), medianOf(ch.perReply[n])
		ratio := ratioOf(tc, cc)
		cells := []string{Verdict(fmt.Sprintf("%.2f (%.2fx)", 1e6*tc, ratio), tc > 0 && cc > 0 && ratio <= targetNTPServeCPU), fmt.Sprintf("%.2f", 1e6*cc)}
		if floor != nil {
			fc := medianOf(floor.perReply[n])
			cells = append(cells, fmt.Sprintf("%.2f (%.2fx)", 1e6*fc, ratioOf(fc, cc)))
		}
		t.Row(fmt.Sprintf("%d clients", n), fmt.Sprintf("<= %.1fx chronyd", targetNTPServeCPU), cells...)
	}
	t.Section("server CPU under load (of one core)")
	for _, n := range clients {
		cells := []string{fmt.Sprintf("%.0f%%", 100*mean(td.cpu[n])), fmt.Sprintf("%.0f%%", 100*mean(ch.cpu[n]))}
		if floor != nil {
			cells = append(cells, fmt.Sprintf("%.0f%%", 100*mean(floor.cpu[n])))
		}
		t.Row(fmt.Sprintf("%d clients", n), "", cells...)
	}
	t.Section("memory (VmRSS, read the same way for both)")
	t.Row("idle, before the load", "<= 8 MB", Verdict(MB(td.rssIdle), td.rssIdle > 0 && td.rssIdle <= targetNTPServeRSS), MB(ch.rssIdle))
	t.Row("max under load", "<= 8 MB", Verdict(MB(td.rssLoad), td.rssLoad > 0 && td.rssLoad <= targetNTPServeRSS), MB(ch.rssLoad))
	t.Row("after the load", "", MB(td.rssAfter), MB(ch.rssAfter))
	t.Note("lab %s: %d namespace hosts on one kernel bridge; load average at start %s on 2 CPUs; the load generator (Go) shares the CPUs", prefix, len(servers)+1, loadStart)
	t.Note("a reply counts when it is mode 4, stratum 8 and echoes the loop's outstanding transmit timestamp; a loop waits at most 100 ms for it")
	t.Note("timed: `timed run --serve ADDR --stratum 8 --rate-limit 1907ns` without --id/--members (no cluster socket), simulated clock;" +
		" chronyd: -x, local stratum 8, ratelimit interval -19 burst 8; both without CAP_SYS_TIME")
	t.Note("a server's CPU includes the kernel's work in its system calls: a reply's send carries it across the veth pair and the bridge" +
		" into the client's socket (the softirq runs in the sender), the same for every server")
	if floor != nil {
		t.Note("floor: testdata/ntpfloor.c, one thread blocking in recvmmsg and answering a batch with one sendmmsg, no rate limit, no checks, no event loop;" +
			" no server can spend less per reply on this kernel")
	}
	return t
}

// ratioOf is a/b, 0 when b is (a run that measured nothing).
func ratioOf(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// buildNTPFloor compiles testdata/ntpfloor.c into dir with cc.
func buildNTPFloor(b *testing.B, dir string) string {
	b.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		b.Fatalf("-ntpserve.floor builds testdata/ntpfloor.c with cc: install gcc, or run without the floor (bench.sh ntpserve --no-floor): %v", err)
	}
	out := filepath.Join(dir, "ntpfloor")
	if msg, err := exec.Command(cc, "-O2", "-Wall", "-o", out, "testdata/ntpfloor.c").CombinedOutput(); err != nil {
		b.Fatalf("building the floor server: %v\n%s", err, msg)
	}
	return out
}

// medianOf is the median of xs (the mean of the middle two of an even
// count); 0 for none.
func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	v := slices.Sorted(slices.Values(xs))
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func joinQPS(qps []float64) string {
	parts := make([]string, len(qps))
	for i, q := range qps {
		parts[i] = strconv.FormatFloat(q, 'f', 0, 64)
	}
	return strings.Join(parts, "/")
}

// parseConcurrencies reads "1,8,32".
func parseConcurrencies(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > ntpServeMaxClients {
			return nil, fmt.Errorf("concurrency %q: want 1..%d", f, ntpServeMaxClients)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("no concurrency")
	}
	return out, nil
}

// loadAddresses adds n addresses to h's lab interface, 10.77.0.100 and
// up (the lab's /24), one per load loop, and returns them.
func loadAddresses(b *testing.B, h *labnet.Host, n int) []netip.Addr {
	b.Helper()
	base := h.Addr().As4()
	var addrs []netip.Addr
	var script strings.Builder
	for i := range n {
		a := base
		a[3] = byte(100 + i)
		addrs = append(addrs, netip.AddrFrom4(a))
		fmt.Fprintf(&script, "addr add %s/24 dev %s\n", netip.AddrFrom4(a), h.Interface())
	}
	path := filepath.Join(b.TempDir(), "addrs.batch")
	if err := os.WriteFile(path, []byte(script.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	if out, err := h.Run(b, "ip", "-batch", path); err != nil {
		b.Fatalf("adding the load's addresses in %s: %v\n%s", h.Name(), err, out)
	}
	return addrs
}

// loadFrom runs one closed request loop per local address from h against
// target for d and returns the valid replies per second: mode 4, stratum
// 1-15, and the origin of the loop's outstanding request. A loop waits at
// most 100 ms for a reply before sending the next request. A nil locals
// entry (netip.Addr{}) lets the kernel pick the source.
func loadFrom(b *testing.B, ctx context.Context, h *labnet.Host, target netip.AddrPort, locals []netip.Addr, d time.Duration) float64 {
	b.Helper()
	socks := make([]*net.UDPConn, len(locals))
	err := h.Do(func() error {
		for i, a := range locals {
			var laddr *net.UDPAddr
			if a.IsValid() {
				laddr = net.UDPAddrFromAddrPort(netip.AddrPortFrom(a, 0))
			}
			c, err := net.DialUDP("udp4", laddr, net.UDPAddrFromAddrPort(target))
			if err != nil {
				return err
			}
			socks[i] = c
		}
		return nil
	})
	if err != nil {
		b.Fatalf("load sockets in %s: %v", h.Name(), err)
	}
	var valid atomic.Uint64
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for i, c := range socks {
		wg.Go(func() {
			defer c.Close()
			rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
			buf := make([]byte, 1024)
			req := make([]byte, 0, wire.NTPHeaderLen)
			for time.Now().Before(end) && ctx.Err() == nil {
				xmt := wire.NTPTime(rng.Uint64() | 1)
				p := wire.NTPPacket{Version: 4, Mode: wire.ModeClient, Transmit: xmt}
				req, _ = p.AppendBinary(req[:0])
				if _, err := c.Write(req); err != nil {
					return
				}
				c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				for {
					n, err := c.Read(buf)
					if err != nil {
						var ne net.Error
						if errors.As(err, &ne) && ne.Timeout() {
							break // lost: send the next one
						}
						return
					}
					var p wire.NTPPacket
					if p.UnmarshalBinary(buf[:n]) == nil && p.Mode == wire.ModeServer && p.Origin == xmt &&
						p.Stratum >= 1 && p.Stratum < wire.StratumUnsynchronized {
						valid.Add(1)
						break
					}
				}
			}
		})
	}
	wg.Wait()
	return float64(valid.Load()) / d.Seconds()
}
