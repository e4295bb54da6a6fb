package bench

import (
	"context"
	"encoding/json"
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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/labnet"
	"github.com/synclab/synclab/pkg/wire"
)

var (
	timesyncRun    = flag.Bool("timesync", false, "run BenchmarkTimesync, a lab measurement of several minutes (scripts/bench.sh timesync sets it)")
	timesyncWarmup = flag.Duration("timesync.warmup", time.Minute, "time the clients get to converge before accuracy is sampled")
	timesyncWindow = flag.Duration("timesync.window", 2*time.Minute, "accuracy sampling window, after the warm-up")
	timesyncLoad   = flag.Duration("timesync.load", 5*time.Second, "length of each server throughput run")
	timesyncConns  = flag.Int("timesync.conns", 8, "concurrent request loops of the throughput runs")
	timesyncBin    = flag.String("timesync.bin", "", "`DIR` holding timed (default: go build it from ../../cmd/timed)")
	timesyncPrefix = flag.String("timesync.prefix", "", "lab namespace `PREFIX` (default: random)")
)

const (
	targetAccuracyP99 = 50 * time.Microsecond
	targetConverge1ms = 10 * time.Second
)

// BenchmarkTimesync measures timed's NTP client against chronyd's, both
// following the same chronyd -x server on a namespace LAN, and timed's NTP
// server against chronyd's:
//
//	h1  chronyd -x, local stratum 8: the server both clients follow
//	h2  timed --server h1, simulated clock +100 ms, +30 ppm
//	h3  timed --server h1, simulated clock -100 ms, -30 ppm
//	h4  chronyd -x --server h1 (the real clock: its true offset is 0, so
//	    what it estimates is its error); later the load generator
//	h5  timed --serve, stratum 8, no rate limit: the throughput target
//
// Both clients poll every second (minpoll = maxpoll = 0). timed's error is
// its simulated clock's exact error (true_offset_ns), sampled every
// second of the window; chronyd's is the offset it estimates for the same
// server (statistics.log, "Est offset") and, raw, each measurement's
// (measurements.log). The throughput runs send NTP mode-3 requests from
// -timesync.conns closed loops in h4 for -timesync.load each, counting
// valid replies. Nothing can set the real clock: every daemon runs without
// CAP_SYS_TIME and chronyd with -x.
func BenchmarkTimesync(b *testing.B) {
	if !*timesyncRun {
		b.Skip("BenchmarkTimesync runs for minutes in a namespace lab: run it with scripts/bench.sh timesync (or pass -timesync)")
	}
	labnet.Require(b)
	if _, err := exec.LookPath("chronyd"); err != nil {
		b.Skipf("chronyd is the reference: install Debian's chrony (scripts/bench.sh timesync does, without starting the service): %v", err)
	}
	if *timesyncWarmup <= 0 || *timesyncWindow <= 0 || *timesyncLoad <= 0 || *timesyncConns < 1 {
		b.Fatalf("bad flags: warm-up %v, window %v, load %v, conns %d", *timesyncWarmup, *timesyncWindow, *timesyncLoad, *timesyncConns)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir := shortTempDir(b)
	timed := timedBinary(b, dir, *timesyncBin)
	lab := benchLab(b, 5, *timesyncPrefix)
	h1, h4, h5 := lab.Host(1), lab.Host(4), lab.Host(5)
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	loadStart := loadAverage()
	b.ResetTimer()

	// The server, then both kinds of client at once.
	writeFile(b, filepath.Join(dir, "server.conf"), chronyServerConf(dir, h1.Addr()))
	h1.Start(b, "chronyd-server", noSysTime("chronyd", "-x", "-d", "-f", filepath.Join(dir, "server.conf")), nil)
	cdir := filepath.Join(dir, "chrony-client")
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		b.Fatal(err)
	}
	writeFile(b, filepath.Join(cdir, "client.conf"), chronyClientConf(cdir, h1.Addr()))
	h4.Start(b, "chronyd-client", noSysTime("chronyd", "-x", "-d", "-f", filepath.Join(cdir, "client.conf")), nil)
	clients := []*benchTimed{
		startBenchTimed(b, lab.Host(2), dir, timed, 100*time.Millisecond, "--sim-drift", "30", "--server", h1.Addr().String(), "--minpoll", "0", "--maxpoll", "0"),
		startBenchTimed(b, lab.Host(3), dir, timed, -100*time.Millisecond, "--sim-drift", "-30", "--server", h1.Addr().String(), "--minpoll", "0", "--maxpoll", "0"),
	}
	started := time.Now()

	// Convergence: every 20 ms until 100 us, or the warm-up ends.
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() { c.converge(ctx, started, *timesyncWarmup) })
	}
	wg.Wait()
	for _, c := range clients {
		logf("timed from %v: 1 ms after %v, 100 us after %v", c.start, c.to1ms, c.to100us)
	}
	if rest := *timesyncWarmup - time.Since(started); rest > 0 {
		logf("warm-up: %v more before the accuracy window", rest.Round(time.Second))
		sleepCtx(ctx, rest)
	}

	// Accuracy window.
	logf("accuracy window: %v", *timesyncWindow)
	measured := countLines(filepath.Join(cdir, "measurements.log"))
	stats := countLines(filepath.Join(cdir, "statistics.log"))
	cpu0, _ := CPUTime(clients[0].proc.PID())
	w0 := time.Now()
	var timedErr []time.Duration
	var rssMax int64
	for time.Since(w0) < *timesyncWindow && ctx.Err() == nil {
		sleepCtx(ctx, time.Second)
		for _, c := range clients {
			if off, err := c.trueOffset(); err == nil {
				timedErr = append(timedErr, off.Abs())
			}
			if n, err := RSS(c.proc.PID()); err == nil {
				rssMax = max(rssMax, n)
			}
		}
	}
	cpu1, _ := CPUTime(clients[0].proc.PID())
	cpuShare := float64(cpu1-cpu0) / float64(time.Since(w0))
	chronyEst := chronyColumn(b, filepath.Join(cdir, "statistics.log"), stats, h1.Addr(), 4)
	chronyRaw := chronyColumn(b, filepath.Join(cdir, "measurements.log"), measured, h1.Addr(), 11)

	// Throughput: chronyd on h1, then timed on h5, from h4.
	srv := startBenchTimed(b, h5, dir, timed, 0, "--serve", h5.Addr().String(), "--stratum", "8", "--rate-limit", "0")
	waitAnswers(b, ctx, h4, netip.AddrPortFrom(h5.Addr(), 123))
	waitAnswers(b, ctx, h4, netip.AddrPortFrom(h1.Addr(), 123))
	chronyQPS := throughput(b, ctx, h4, netip.AddrPortFrom(h1.Addr(), 123), *timesyncConns, *timesyncLoad)
	scpu0, _ := CPUTime(srv.proc.PID())
	t0 := time.Now()
	timedQPS := throughput(b, ctx, h4, netip.AddrPortFrom(h5.Addr(), 123), *timesyncConns, *timesyncLoad)
	scpu1, _ := CPUTime(srv.proc.PID())
	srvCPU := float64(scpu1-scpu0) / float64(time.Since(t0))
	logf("throughput: chronyd %.0f/s, timed %.0f/s", chronyQPS, timedQPS)
	b.StopTimer()

	te, ce, cr := Summarize(timedErr), Summarize(chronyEst), Summarize(chronyRaw)
	t := &Table{Title: "timesync: timed vs chronyd on a namespace LAN", Systems: []string{"timed", "chronyd -x"}}
	t.Section(fmt.Sprintf("accuracy over %v after a %v warm-up, both polling one chronyd server every second", *timesyncWindow, *timesyncWarmup))
	t.Row("|error| p50", "", micros(te.P50), micros(ce.P50))
	t.Row("|error| p99", fmt.Sprintf("<= %v and <= chronyd", targetAccuracyP99),
		Verdict(micros(te.P99), te.N > 0 && te.P99 <= targetAccuracyP99 && (ce.N == 0 || te.P99 <= ce.P99)), micros(ce.P99))
	t.Row("|error| max", "", micros(te.Max), micros(ce.Max))
	t.Row("samples", "", strconv.Itoa(te.N), strconv.Itoa(ce.N))
	t.Row("raw measurement |offset| p50 / p99", "", "-", micros(cr.P50)+" / "+micros(cr.P99))
	t.Section("convergence (timed's simulated clock; chronyd -x does not move its clock)")
	for _, c := range clients {
		t.Row(fmt.Sprintf("from %+v: within 1 ms", c.start), "<= 10 s", Verdict(dur(c.to1ms), c.to1ms > 0 && c.to1ms <= targetConverge1ms), "n/a")
		t.Row(fmt.Sprintf("from %+v: within 100 us", c.start), "", dur(c.to100us), "n/a")
	}
	t.Section(fmt.Sprintf("NTP server throughput (%d closed loops for %v, from another host)", *timesyncConns, *timesyncLoad))
	t.Row("replies/s", "", fmt.Sprintf("%.0f", timedQPS), fmt.Sprintf("%.0f", chronyQPS))
	t.Row("server CPU under load", "", fmt.Sprintf("%.0f%%", 100*srvCPU), "-")
	t.Section("resources while polling (timed client)")
	t.Row("RSS (max)", "<= 20 MB", Verdict(MB(rssMax), rssMax > 0 && rssMax <= targetRSS), "-")
	t.Row("CPU", "", fmt.Sprintf("%.2f%%", 100*cpuShare), "-")
	t.Note("lab %s: 5 namespace hosts on one bridge; load average at start %s on 2 CPUs", lab.Prefix(), loadStart)
	t.Note("timed's error is exact: its simulated clock's true offset, sampled once a second on each of the 2 clients")
	t.Note("chronyd's error is what it estimates for the server (statistics.log Est offset): its clock is the real one, which the server shares, so the true offset is 0")
	t.Note("no jitter or asymmetry can be injected here (no netem: LAB-NOTES.md), so only the unimpaired LAN is measured")
	t.Note("p99 is nearest-rank; kernel receive timestamps on both sides")
	if err := t.Write(os.Stdout); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(te.P99)/1e3, "timed-p99-us")
	b.ReportMetric(float64(ce.P99)/1e3, "chronyd-p99-us")
}

// benchTimed is a timed on a lab host, in a cluster of its own.
type benchTimed struct {
	proc    *labnet.Proc
	control string
	bin     string
	start   time.Duration // initial offset of its simulated clock
	to1ms   time.Duration // from its start until |true offset| < 1 ms; 0: never
	to100us time.Duration
}

func startBenchTimed(b *testing.B, h *labnet.Host, dir, bin string, offset time.Duration, args ...string) *benchTimed {
	b.Helper()
	sub := filepath.Join(dir, h.Name())
	if err := os.MkdirAll(sub, 0o755); err != nil {
		b.Fatal(err)
	}
	bt := &benchTimed{control: filepath.Join(sub, "timed.sock"), bin: bin, start: offset}
	argv := append([]string{bin, "run", "--id", "1", "--members", fmt.Sprintf("1=%s:7300", h.Addr()),
		"--control", bt.control, "--state-dir", filepath.Join(sub, "state"),
		"--clock", "sim", "--sim-offset", offset.String()}, args...)
	bt.proc = h.Start(b, "timed", noSysTime(argv...), nil)
	return bt
}

func (bt *benchTimed) trueOffset() (time.Duration, error) {
	out, err := exec.Command(bt.bin, "status", "--json", "--control", bt.control).Output()
	if err != nil {
		return 0, err
	}
	var st struct {
		TrueOffsetNS *int64 `json:"true_offset_ns"`
	}
	if err := json.Unmarshal(out, &st); err != nil || st.TrueOffsetNS == nil {
		return 0, fmt.Errorf("no true_offset_ns in %s", out)
	}
	return time.Duration(*st.TrueOffsetNS), nil
}

// converge polls the true offset until it is within 100 us, or limit.
func (bt *benchTimed) converge(ctx context.Context, started time.Time, limit time.Duration) {
	for time.Since(started) < limit && ctx.Err() == nil {
		off, err := bt.trueOffset()
		if err == nil {
			if bt.to1ms == 0 && off.Abs() < time.Millisecond {
				bt.to1ms = time.Since(started)
			}
			if off.Abs() < 100*time.Microsecond {
				bt.to100us = time.Since(started)
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// timedBinary returns the timed in binDir (a benchmark's -X.bin flag), or
// without one builds one into dir.
func timedBinary(b *testing.B, dir, binDir string) string {
	if binDir != "" {
		p := filepath.Join(binDir, "timed")
		if _, err := os.Stat(p); err != nil {
			b.Fatalf("timed binary: %v", err)
		}
		return p
	}
	p := filepath.Join(dir, "timed")
	if out, err := exec.Command("go", "build", "-o", p, "../../cmd/timed").CombinedOutput(); err != nil {
		b.Fatalf("building timed: %v\n%s", err, out)
	}
	return p
}

// noSysTime runs argv without CAP_SYS_TIME: nothing the benchmark starts may
// be able to move the real clock, which every namespace shares.
func noSysTime(argv ...string) []string {
	return append([]string{"setpriv", "--bounding-set", "-sys_time", "--inh-caps", "-sys_time"}, argv...)
}

func chronyServerConf(dir string, bind netip.Addr) string {
	return strings.Join([]string{
		"local stratum 8",
		"allow 10.77.0.0/24",
		"bindaddress " + bind.String(),
		"cmdport 0",
		"bindcmdaddress /",
		"user root",
		"pidfile " + filepath.Join(dir, "server.pid"),
		"driftfile " + filepath.Join(dir, "server.drift"),
		"",
	}, "\n")
}

func chronyClientConf(dir string, server netip.Addr) string {
	return strings.Join([]string{
		"server " + server.String() + " iburst minpoll 0 maxpoll 0",
		"port 0",
		"cmdport 0",
		"bindcmdaddress /",
		"user root",
		"logdir " + dir,
		"log measurements statistics",
		"pidfile " + filepath.Join(dir, "client.pid"),
		"driftfile " + filepath.Join(dir, "client.drift"),
		"",
	}, "\n")
}

func writeFile(b *testing.B, path, data string) {
	b.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		b.Fatal(err)
	}
}

func countLines(path string) int {
	data, _ := os.ReadFile(path)
	return strings.Count(string(data), "\n")
}

// chronyColumn returns |column col| (seconds) of the lines about server
// that chronyd logged after the first skip lines of path.
func chronyColumn(b *testing.B, path string, skip int, server netip.Addr, col int) []time.Duration {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Logf("chronyd log %s: %v", path, err)
		return nil
	}
	lines := strings.Split(string(data), "\n")
	var out []time.Duration
	for _, l := range lines[min(skip, len(lines)):] {
		f := strings.Fields(l)
		if len(f) <= col || f[2] != server.String() {
			continue
		}
		v, err := strconv.ParseFloat(f[col], 64)
		if err != nil {
			continue
		}
		out = append(out, time.Duration(v*1e9).Abs())
	}
	return out
}

func micros(d time.Duration) string {
	return fmt.Sprintf("%.1f us", float64(d)/float64(time.Microsecond))
}

func dur(d time.Duration) string {
	if d <= 0 {
		return "never"
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// ntpRequest is a mode-3 request with a transmit timestamp that identifies
// it (the reply echoes it as its origin).
func ntpRequest(xmt wire.NTPTime) []byte {
	p := wire.NTPPacket{Version: 4, Mode: wire.ModeClient, Transmit: xmt}
	b, _ := p.AppendBinary(nil)
	return b
}

// waitAnswers waits until target answers a request from h (a server that
// just started, or one still in its first polls).
func waitAnswers(b *testing.B, ctx context.Context, h *labnet.Host, target netip.AddrPort) {
	b.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if throughput(b, ctx, h, target, 1, 200*time.Millisecond) > 0 {
			return
		}
	}
	b.Fatalf("%v never answered", target)
}

// throughput runs conns closed request loops from h against target for d
// and returns the valid replies per second: mode 4, stratum 1-15, and the
// origin of the loop's outstanding request. A loop waits at most 100 ms
// for a reply before sending the next request.
func throughput(b *testing.B, ctx context.Context, h *labnet.Host, target netip.AddrPort, conns int, d time.Duration) float64 {
	b.Helper()
	socks := make([]*net.UDPConn, conns)
	err := h.Do(func() error {
		for i := range socks {
			c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(target))
			if err != nil {
				return err
			}
			socks[i] = c
		}
		return nil
	})
	if err != nil {
		b.Fatalf("throughput sockets in %s: %v", h.Name(), err)
	}
	var valid atomic.Uint64
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for i, c := range socks {
		wg.Go(func() {
			defer c.Close()
			rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
			buf := make([]byte, 1024)
			for time.Now().Before(end) && ctx.Err() == nil {
				xmt := wire.NTPTime(rng.Uint64() | 1)
				if _, err := c.Write(ntpRequest(xmt)); err != nil {
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
