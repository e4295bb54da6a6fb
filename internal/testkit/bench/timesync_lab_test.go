package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/labnet"
	"github.com/synclab/synclab/pkg/wire"
)

var (
	timesyncRun    = flag.Bool("timesync", false, "run BenchmarkTimesync, a lab measurement of several minutes (scripts/bench.sh timesync sets it)")
	timesyncWarmup = flag.Duration("timesync.warmup", time.Minute, "time the clients get to converge before accuracy is sampled")
	timesyncWindow = flag.Duration("timesync.window", 2*time.Minute, "accuracy sampling window, after the warm-up")
	timesyncLoad   = flag.Duration("timesync.load", 5*time.Second, "length of each server throughput run")
	timesyncConns  = flag.Int("timesync.conns", 8, "concurrent request loops of the throughput runs")
	timesyncBin    = flag.String("timesync.bin", "", "`DIR` holding timed (default: go build it from ../../../cmd/timed)")
	timesyncPrefix = flag.String("timesync.prefix", "", "lab namespace `PREFIX` (default: random)")
	timesyncImpair = flag.Bool("timesync.impair", false, "after the clean LAN, measure accuracy again on a lab built with labnet.WithSwitch: "+
		"no impairment, symmetric jitter and asymmetric delay on the client-server links, at once (another warm-up and window)")
	timesyncJitter = flag.Duration("timesync.jitter", 250*time.Microsecond, "with -timesync.impair: `J`, each direction of the jittery links is delayed uniformly over [0, 2J]")
	timesyncAsym   = flag.Duration("timesync.asym", 400*time.Microsecond, "with -timesync.impair: `A`, the asymmetric links take 100 us + A from client to server and 100 us back")
	timesyncBin2   = flag.String("timesync.bin2", "", "`DIR` holding another build of timed for the clean LAN's second client (h3, from -100 ms): an A/B of two builds in one lab, "+
		"against the same server at the same time; the table pools both clients, -timesync.samples keeps them apart")
	timesyncFlags        = flag.String("timesync.flags", "", "extra `FLAGS` (space-separated) for the clean LAN's first timed client (h2), e.g. --xleave")
	timesyncFlags2       = flag.String("timesync.flags2", "", "extra `FLAGS` (space-separated) for the clean LAN's second timed client (h3): with -timesync.bin2, an A/B of two configurations")
	timesyncChronyXleave = flag.Bool("timesync.chrony-xleave", false, "the clean LAN's chronyd client polls in interleaved mode (xleave), as timed --xleave does")
	timesyncSamples      = flag.String("timesync.samples", "", "write the clean LAN's signed errors to `FILE` (CSV: source,seq,error_ns,delay_ns; one timed source per client, chronyd's per clock update, "+
		"and chronyd's raw measurements with their round trips), to study how a percentile varies with the window and to record the lab's noise")
)

const (
	targetAccuracyP99 = 50 * time.Microsecond
	targetConverge1ms = 10 * time.Second

	// asymBase is the delay of the fast direction of the asymmetric links:
	// with it both directions go through the switch's delay queue, whose
	// overshoot (tens of microseconds) then adds to both alike. (The switch
	// has a small asymmetry of its own, which the unimpaired pair shows.)
	asymBase = 100 * time.Microsecond
	// maxImpairment bounds -timesync.jitter and -timesync.asym: this is a
	// LAN benchmark, and a poll every second.
	maxImpairment = 50 * time.Millisecond
)

// BenchmarkTimesync measures timed's NTP client against chronyd's, both
// following the same chronyd -x server on a namespace LAN, and timed's NTP
// server against chronyd's. Sub-benchmark clean, on the kernel bridge:
//
//	h1  chronyd -x, local stratum 8: the server both clients follow
//	h2  timed --server h1, simulated clock +100 ms, +30 ppm
//	h3  timed --server h1, simulated clock -100 ms, -30 ppm (-timesync.bin2: another build)
//	h4  chronyd -x --server h1; later the load generator
//	h5  timed --serve, stratum 8, no rate limit: the throughput target
//
// Both clients poll every second (minpoll = maxpoll = 0), and both errors
// are exact. timed's is its simulated clock's true offset (true_offset_ns),
// sampled every second of the window. chronyd -x does not leave its clock
// alone: it steers a virtual one (its null clock driver: the real clock
// plus a correction it accumulates), and it timestamps its packets with
// that clock. The real clock is the truth (the server shares it), so the
// virtual clock's error is the correction itself, which chronyd logs at
// every clock update, just before applying the update, as tracking.log's
// "Rem. corr.". Beside that, the table shows what chronyd estimates for the
// server (statistics.log "Est offset") and each raw measurement
// (measurements.log): both are relative to its virtual clock, so they are
// residuals of its own tracking, not errors against the truth. The
// throughput runs send NTP mode-3 requests from -timesync.conns closed
// loops in h4 for -timesync.load each, counting valid replies.
//
// With -timesync.impair, sub-benchmark impaired follows (the clean lab is
// gone by then, so the two never share the CPUs): a lab of 7 hosts on
// labnet's user-space switch, where h1 serves again and three pairs of
// clients (one timed, one chronyd -x) follow it at once, each pair's links
// to h1 carrying one condition (see timesyncConditions): no impairment
// (the switch alone), symmetric jitter, and asymmetric delay. Same server,
// same time, same warm-up and window as the clean run.
//
// Signed errors are "clock minus true time" (+: ahead): timed's
// true_offset_ns, chronyd's Rem. corr. (+: the system clock is slow of
// chronyd's time). chronyd's estimates are put the same way round: minus
// Est offset (+ there: the local clock is estimated fast), and the
// measurements' offset as logged (RFC 5905 theta, +: local clock slow), so
// that each is the error a clock steered by it alone would have.
//
// Nothing can set the real clock: every daemon runs without CAP_SYS_TIME
// and chronyd with -x.
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
	if *timesyncImpair && (*timesyncJitter <= 0 || *timesyncJitter > maxImpairment || *timesyncAsym <= 0 || *timesyncAsym > maxImpairment) {
		b.Fatalf("bad flags: -timesync.jitter %v and -timesync.asym %v must be in (0, %v]", *timesyncJitter, *timesyncAsym, maxImpairment)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir := shortTempDir(b)
	timed := timedBinary(b, dir, *timesyncBin)
	timed2 := timed
	if *timesyncBin2 != "" {
		timed2 = timedBinary(b, dir, *timesyncBin2)
	}
	loadStart := loadAverage()

	// Each lab belongs to its sub-benchmark and is torn down when it ends,
	// so the impaired lab can reuse the prefix (bench.sh cleans up by it).
	var clean *timesyncClean
	b.Run("clean", func(b *testing.B) { clean = runTimesyncClean(b, ctx, filepath.Join(dir, "clean"), timed, timed2) })
	var impaired *timesyncImpaired
	if *timesyncImpair && clean != nil && ctx.Err() == nil {
		b.Run("impaired", func(b *testing.B) { impaired = runTimesyncImpaired(b, ctx, filepath.Join(dir, "impaired"), timed) })
	}
	if clean == nil {
		return // the sub-benchmark said why
	}
	if err := timesyncTable(clean, impaired, loadStart).Write(os.Stdout); err != nil {
		b.Fatal(err)
	}
}

// accuracy is what one timed and one chronyd -x measured over the window,
// as signed errors (clock minus true time).
type accuracy struct {
	timed     []time.Duration // timed's true offset, every second
	chrony    []time.Duration // chronyd's true error (Rem. corr.), every update
	chronyEst []time.Duration // chronyd's estimate for the server (minus Est offset)
	chronyRaw []time.Duration // chronyd's raw measurements (theta)
}

// chronyClient is a chronyd -x client's log directory, and how many lines
// each log had when the accuracy window opened.
type chronyClient struct {
	dir                   string
	measured, stats, trck int
}

func (c *chronyClient) markWindow() {
	c.measured = countLines(filepath.Join(c.dir, "measurements.log"))
	c.stats = countLines(filepath.Join(c.dir, "statistics.log"))
	c.trck = countLines(filepath.Join(c.dir, "tracking.log"))
}

// read fills in chronyd's part of a: its logs' lines about server since
// markWindow.
func (c *chronyClient) read(b *testing.B, server netip.Addr, a *accuracy) {
	a.chrony = chronyColumn(b, filepath.Join(c.dir, "tracking.log"), c.trck, server, 10, +1)
	a.chronyEst = chronyColumn(b, filepath.Join(c.dir, "statistics.log"), c.stats, server, 4, -1)
	a.chronyRaw = chronyColumn(b, filepath.Join(c.dir, "measurements.log"), c.measured, server, 11, +1)
}

// timesyncClean is what the clean sub-benchmark measured.
type timesyncClean struct {
	prefix    string
	clients   []*benchTimed
	acc       accuracy    // timed: both clients
	stamps    stampCounts // both timed clients, since their start
	cpuShare  float64     // of the first timed client, over the window
	rssMax    int64
	chronyQPS float64
	timedQPS  float64
	srvCPU    float64
}

func timesyncLogf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func runTimesyncClean(b *testing.B, ctx context.Context, dir, timed, timed2 string) *timesyncClean {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	lab := benchLab(b, 5, *timesyncPrefix)
	h1, h4, h5 := lab.Host(1), lab.Host(4), lab.Host(5)
	res := &timesyncClean{prefix: lab.Prefix()}
	b.ResetTimer()

	// The server, then both kinds of client at once.
	startChronyServer(b, h1, dir)
	chrony := startChronyClient(b, h4, filepath.Join(dir, "chrony-client"), h1.Addr())
	res.clients = []*benchTimed{
		startBenchTimed(b, lab.Host(2), dir, timed, 100*time.Millisecond, append([]string{"--sim-drift", "30", "--server", h1.Addr().String(), "--minpoll", "0", "--maxpoll", "0"},
			strings.Fields(*timesyncFlags)...)...),
		startBenchTimed(b, lab.Host(3), dir, timed2, -100*time.Millisecond, append([]string{"--sim-drift", "-30", "--server", h1.Addr().String(), "--minpoll", "0", "--maxpoll", "0"},
			strings.Fields(*timesyncFlags2)...)...),
	}
	started := time.Now()

	// Convergence: every 20 ms until 100 us, or the warm-up ends.
	var wg sync.WaitGroup
	for _, c := range res.clients {
		wg.Go(func() { c.converge(ctx, started, *timesyncWarmup) })
	}
	wg.Wait()
	for _, c := range res.clients {
		timesyncLogf("timed from %v: 1 ms after %v, 100 us after %v", c.start, c.to1ms, c.to100us)
	}
	if rest := *timesyncWarmup - time.Since(started); rest > 0 {
		timesyncLogf("warm-up: %v more before the accuracy window", rest.Round(time.Second))
		sleepCtx(ctx, rest)
	}

	// Accuracy window.
	timesyncLogf("accuracy window (clean LAN): %v", *timesyncWindow)
	chrony.markWindow()
	cpu0, _ := CPUTime(res.clients[0].proc.PID())
	w0 := time.Now()
	perClient := make([][]time.Duration, len(res.clients))
	for time.Since(w0) < *timesyncWindow && ctx.Err() == nil {
		sleepCtx(ctx, time.Second)
		for i, c := range res.clients {
			if off, err := c.trueOffset(); err == nil {
				res.acc.timed = append(res.acc.timed, off)
				perClient[i] = append(perClient[i], off)
			}
			if n, err := RSS(c.proc.PID()); err == nil {
				res.rssMax = max(res.rssMax, n)
			}
		}
	}
	cpu1, _ := CPUTime(res.clients[0].proc.PID())
	res.cpuShare = float64(cpu1-cpu0) / float64(time.Since(w0))
	chrony.read(b, h1.Addr(), &res.acc)
	if *timesyncSamples != "" {
		raw := chronyColumn(b, filepath.Join(chrony.dir, "measurements.log"), chrony.measured, h1.Addr(), 12, +1)
		if err := writeTimesyncSamples(*timesyncSamples, res.clients, perClient, &res.acc, raw); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range res.clients {
		if st, err := c.stamps(); err == nil {
			res.stamps.add(st)
		} else {
			timesyncLogf("timed's timestamp counters: %v", err)
		}
	}

	// Throughput: chronyd on h1, then timed on h5, from h4.
	srv := startBenchTimed(b, h5, dir, timed, 0, "--serve", h5.Addr().String(), "--stratum", "8", "--rate-limit", "0")
	waitAnswers(b, ctx, h4, netip.AddrPortFrom(h5.Addr(), 123))
	waitAnswers(b, ctx, h4, netip.AddrPortFrom(h1.Addr(), 123))
	res.chronyQPS = throughput(b, ctx, h4, netip.AddrPortFrom(h1.Addr(), 123), *timesyncConns, *timesyncLoad)
	scpu0, _ := CPUTime(srv.proc.PID())
	t0 := time.Now()
	res.timedQPS = throughput(b, ctx, h4, netip.AddrPortFrom(h5.Addr(), 123), *timesyncConns, *timesyncLoad)
	scpu1, _ := CPUTime(srv.proc.PID())
	res.srvCPU = float64(scpu1-scpu0) / float64(time.Since(t0))
	timesyncLogf("throughput: chronyd %.0f/s, timed %.0f/s", res.chronyQPS, res.timedQPS)
	b.StopTimer()

	te, ce := Summarize(absAll(res.acc.timed)), Summarize(absAll(res.acc.chrony))
	b.ReportMetric(float64(te.P99)/1e3, "timed-p99-us")
	b.ReportMetric(float64(ce.P99)/1e3, "chronyd-p99-us")
	return res
}

// writeTimesyncSamples writes the clean window's signed errors as CSV
// (source,seq,error_ns,delay_ns): each timed client's, one a second;
// chronyd's, one per clock update; and chronyd's raw measurements
// (source chronyd-raw: RFC 5905 theta against its own steered clock, and
// the round trip), the lab's noise as a client sees it
// (pkg/timesync/client/testdata/lan-noise.txt is made of them).
func writeTimesyncSamples(path string, clients []*benchTimed, timed [][]time.Duration, a *accuracy, rawDelay []time.Duration) error {
	var sb strings.Builder
	sb.WriteString("source,seq,error_ns,delay_ns\n")
	for i, c := range clients {
		for j, e := range timed[i] {
			fmt.Fprintf(&sb, "timed@%v,%d,%d,\n", c.start, j, e.Nanoseconds())
		}
	}
	for j, e := range a.chrony {
		fmt.Fprintf(&sb, "chronyd,%d,%d,\n", j, e.Nanoseconds())
	}
	if len(rawDelay) == len(a.chronyRaw) {
		for j, e := range a.chronyRaw {
			fmt.Fprintf(&sb, "chronyd-raw,%d,%d,%d\n", j, e.Nanoseconds(), rawDelay[j].Nanoseconds())
		}
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		return fmt.Errorf("-timesync.samples: %w", err)
	}
	return nil
}

// timesyncCondition is one impairment of the impaired lab: how the links
// between a pair of clients and the server carry frames, and what the
// pair measured under it.
type timesyncCondition struct {
	name  string      // short, for logs and metrics
	title string      // section heading
	up    labnet.Link // client -> server
	down  labnet.Link // server -> client
	// bias is what every NTP client's clock error tends to under this
	// condition: half the difference of the path delays, (up - down) / 2,
	// which no client can observe (only the round trip is visible).
	bias time.Duration

	timed  *benchTimed
	chrony *chronyClient
	acc    accuracy
}

// timesyncImpaired is what the impaired sub-benchmark measured.
type timesyncImpaired struct {
	prefix string
	conds  []*timesyncCondition
}

// timesyncConditions are the conditions of the impaired lab, in the order
// of its client pairs.
func timesyncConditions() []*timesyncCondition {
	j, a := *timesyncJitter, *timesyncAsym
	jittery := labnet.Link{Delay: j, Jitter: j}
	return []*timesyncCondition{
		{name: "switch", title: "through the switch, no impairment"},
		{name: "jitter", title: fmt.Sprintf("symmetric jitter, each direction delayed uniformly over 0-%v", 2*j),
			up: jittery, down: jittery},
		{name: "asym", title: fmt.Sprintf("asymmetry, client->server %v and server->client %v, no jitter", asymBase+a, asymBase),
			up: labnet.Link{Delay: asymBase + a}, down: labnet.Link{Delay: asymBase}, bias: a / 2},
	}
}

// runTimesyncImpaired runs the impaired lab: h1 the chronyd -x server; for
// condition i, h(2+2i) a timed and h(3+2i) a chronyd -x client, whose links
// to and from h1 carry the condition. The links are set before the clients
// start, so that everything they ever measure went through them.
func runTimesyncImpaired(b *testing.B, ctx context.Context, dir, timed string) *timesyncImpaired {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	conds := timesyncConditions()
	opts := []labnet.Option{labnet.WithSwitch()}
	if *timesyncPrefix != "" {
		opts = append(opts, labnet.WithPrefix(*timesyncPrefix))
	}
	lab := labnet.New(b, 1+2*len(conds), opts...)
	h1 := lab.Host(1)
	res := &timesyncImpaired{prefix: lab.Prefix(), conds: conds}
	b.ResetTimer()

	startChronyServer(b, h1, dir)
	for i, c := range conds {
		th, ch := 2+2*i, 3+2*i
		for _, h := range []int{th, ch} {
			lab.SetLink(h, 1, c.up)
			lab.SetLink(1, h, c.down)
		}
		c.chrony = startChronyClient(b, lab.Host(ch), filepath.Join(dir, "chrony-"+c.name), h1.Addr())
		off, drift := 100*time.Millisecond, "30"
		if i%2 == 1 {
			off, drift = -off, "-30"
		}
		c.timed = startBenchTimed(b, lab.Host(th), dir, timed, off, "--sim-drift", drift,
			"--server", h1.Addr().String(), "--minpoll", "0", "--maxpoll", "0")
		timesyncLogf("impaired lab: %s: timed on h%d (from %v), chronyd -x on h%d", c.title, th, off, ch)
	}
	timesyncLogf("impaired lab: warm-up %v", *timesyncWarmup)
	sleepCtx(ctx, *timesyncWarmup)

	timesyncLogf("accuracy window (impaired lab): %v", *timesyncWindow)
	for _, c := range conds {
		c.chrony.markWindow()
	}
	w0 := time.Now()
	for time.Since(w0) < *timesyncWindow && ctx.Err() == nil {
		sleepCtx(ctx, time.Second)
		for _, c := range conds {
			if off, err := c.timed.trueOffset(); err == nil {
				c.acc.timed = append(c.acc.timed, off)
			}
		}
	}
	for _, c := range conds {
		c.chrony.read(b, h1.Addr(), &c.acc)
	}
	b.StopTimer()
	for i, c := range conds {
		for _, h := range []int{2 + 2*i, 3 + 2*i} {
			up, down := lab.LinkStats(h, 1), lab.LinkStats(1, h)
			timesyncLogf("switch: h%d->h1 %d frames (%d dropped, %d tx errors), h1->h%d %d (%d, %d)",
				h, up.Forwarded, up.Dropped, up.TxErrors, h, down.Forwarded, down.Dropped, down.TxErrors)
		}
		te, ce := Summarize(absAll(c.acc.timed)), Summarize(absAll(c.acc.chrony))
		b.ReportMetric(float64(te.P99)/1e3, "timed-"+c.name+"-p99-us")
		b.ReportMetric(float64(ce.P99)/1e3, "chronyd-"+c.name+"-p99-us")
		timesyncLogf("%s: timed |error| p99 %s, bias %s; chronyd -x p99 %s, bias %s", c.name,
			micros(te.P99), signedMicros(median(c.acc.timed)), micros(ce.P99), signedMicros(median(c.acc.chrony)))
	}
	return res
}

// timesyncTable lays out both runs side by side: accuracy under every
// condition first, then what only the clean run measures.
func timesyncTable(clean *timesyncClean, imp *timesyncImpaired, loadStart string) *Table {
	t := &Table{Title: "timesync: timed vs chronyd on a namespace LAN", Systems: []string{"timed", "chronyd -x"}}
	t.Section(fmt.Sprintf("accuracy, clean LAN (kernel bridge), over %v after a %v warm-up, both polling one chronyd server every second", *timesyncWindow, *timesyncWarmup))
	accuracyRows(t, clean.acc, 0, fmt.Sprintf("<= %v and <= chronyd/2", targetAccuracyP99), targetAccuracyP99, 2)
	st := clean.stamps
	t.Row("timestamps: T1 kernel TX / missed; T4 kernel RX / user", "missed 0, user 0",
		Verdict(fmt.Sprintf("%d / %d; %d / %d", st.TxKernel, st.TxMissed, st.RxKernel, st.RxUser), st.TxKernel > 0 && st.TxMissed == 0 && st.RxUser == 0), "-")
	if imp != nil {
		for _, c := range imp.conds {
			t.Section("accuracy, switch lab: " + c.title)
			accuracyRows(t, c.acc, c.bias, "<= chronyd", 0, 1)
		}
	}
	t.Section("convergence (timed's simulated clock; chronyd -x's virtual clock is steered from its first measurement)")
	for _, c := range clean.clients {
		t.Row(fmt.Sprintf("from %+v: within 1 ms", c.start), "<= 10 s", Verdict(dur(c.to1ms), c.to1ms > 0 && c.to1ms <= targetConverge1ms), "n/a")
		t.Row(fmt.Sprintf("from %+v: within 100 us", c.start), "", dur(c.to100us), "n/a")
	}
	t.Section(fmt.Sprintf("NTP server throughput (%d closed loops for %v, from another host)", *timesyncConns, *timesyncLoad))
	t.Row("replies/s", "", fmt.Sprintf("%.0f", clean.timedQPS), fmt.Sprintf("%.0f", clean.chronyQPS))
	t.Row("server CPU under load", "", fmt.Sprintf("%.0f%%", 100*clean.srvCPU), "-")
	t.Section("resources while polling (timed client)")
	t.Row("RSS (max)", "<= 20 MB", Verdict(MB(clean.rssMax), clean.rssMax > 0 && clean.rssMax <= targetRSS), "-")
	t.Row("CPU", "", fmt.Sprintf("%.2f%%", 100*clean.cpuShare), "-")

	t.Note("clean lab %s: 5 namespace hosts on one kernel bridge; load average at start %s on 2 CPUs", clean.prefix, loadStart)
	t.Note("both errors are true errors against the real clock, which the server shares: timed's simulated clock's true offset, sampled once a second" +
		" (clean: on each of 2 clients; switch lab: 1 client per condition), and the correction chronyd -x holds on its virtual clock" +
		" (-x steers a virtual clock, not the system's), tracking.log Rem. corr., once per clock update just before it")
	t.Note("chronyd's estimate (statistics.log Est offset) and raw measurements are relative to that virtual clock: residuals of its own tracking, blind to any bias" +
		" such as asymmetry, and smaller than its true error; they are not comparable with timed's true error")
	t.Note("signed error and bias (its median): + means the clock is ahead of true time")
	if imp != nil {
		t.Note("switch lab %s: 7 hosts on labnet's user-space switch (labnet.WithSwitch; ~20-40 us per frame of its own), built after the clean lab was torn down:"+
			" h1 serves again and one timed and one chronyd -x follow it per condition, all conditions at once, each pair's links to and from h1 carrying its condition;"+
			" same warm-up and window", imp.prefix)
		for _, c := range imp.conds {
			if c.bias != 0 {
				t.Note("asymmetry is invisible to ANY NTP client: offset = ((T2-T1)+(T3-T4))/2 assumes equal path delays, and only their sum (the round trip) can be observed;"+
					" a path %v slower towards the server makes every client's clock settle %v ahead, whatever its algorithm."+
					" That bias is the network's, not a defect of either client: compare each client's spread around its own bias."+
					" The switch adds a small asymmetry of its own (see the bias of the unimpaired pair), which adds to it", 2*c.bias, c.bias)
			}
		}
	} else {
		t.Note("jitter and asymmetry: run with -timesync.impair (scripts/bench.sh timesync --impair), a lab on labnet's user-space switch")
	}
	t.Note("p99 is nearest-rank; kernel receive timestamps on both sides")
	return t
}

// accuracyRows adds the rows of one accuracy section. A non-zero bias is
// the error every client tends to (asymmetry): the verdict is then on each
// client's spread around its own bias (median), since the exact bias also
// holds the switch's own asymmetry. limit > 0 is an absolute target on the
// p99 as well; timed's p99 must be at most chronyd's divided by ratio
// (issue 34: half of chronyd's on the clean LAN).
func accuracyRows(t *Table, a accuracy, bias time.Duration, target string, limit time.Duration, ratio int) {
	te, ce := Summarize(absAll(a.timed)), Summarize(absAll(a.chrony))
	meets := func(timed, chrony Summary) bool {
		return timed.N > 0 && (limit <= 0 || timed.P99 <= limit) && (chrony.N == 0 || timed.P99*time.Duration(ratio) <= chrony.P99)
	}
	t.Row("|error| p50", "", micros(te.P50), micros(ce.P50))
	if bias == 0 {
		t.Row("|error| p99", target, Verdict(micros(te.P99), meets(te, ce)), micros(ce.P99))
	} else {
		t.Row("|error| p99", "", micros(te.P99), micros(ce.P99))
	}
	t.Row("|error| max", "", micros(te.Max), micros(ce.Max))
	t.Row("bias (median signed error)", "", signedMicros(median(a.timed)), signedMicros(median(a.chrony)))
	if bias != 0 {
		td, cd := Summarize(absAll(shift(a.timed, -median(a.timed)))), Summarize(absAll(shift(a.chrony, -median(a.chrony))))
		t.Row("expected bias of any NTP client: half the asymmetry", "", signedMicros(bias), signedMicros(bias))
		t.Row("spread: |error - bias| p50", "", micros(td.P50), micros(cd.P50))
		t.Row("spread: |error - bias| p99", target, Verdict(micros(td.P99), meets(td, cd)), micros(cd.P99))
	}
	t.Row("samples", "", strconv.Itoa(te.N), strconv.Itoa(ce.N))
	ee, er := Summarize(absAll(a.chronyEst)), Summarize(absAll(a.chronyRaw))
	t.Row("own estimate |Est offset| p50 / p99 (median), not an error", "", "-",
		fmt.Sprintf("%s / %s (%s)", micros(ee.P50), micros(ee.P99), signedMicros(median(a.chronyEst))))
	t.Row("raw measurement |offset| p50 / p99", "", "-", micros(er.P50)+" / "+micros(er.P99))
}

// absAll returns the magnitudes of ds.
func absAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Abs()
	}
	return out
}

// shift returns ds with by added to each.
func shift(ds []time.Duration, by time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d + by
	}
	return out
}

// median is the nearest-rank median of signed samples; 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return Summarize(ds).P50
}

func signedMicros(d time.Duration) string {
	return fmt.Sprintf("%+.1f us", float64(d)/float64(time.Microsecond))
}

// startChronyServer starts the chronyd -x every client follows on h, its
// files in dir.
func startChronyServer(b *testing.B, h *labnet.Host, dir string) {
	b.Helper()
	writeFile(b, filepath.Join(dir, "server.conf"), chronyServerConf(dir, h.Addr()))
	h.Start(b, "chronyd-server", noSysTime("chronyd", "-x", "-d", "-f", filepath.Join(dir, "server.conf")), nil)
}

// startChronyClient starts a chronyd -x client of server on h, logging its
// measurements, statistics and tracking in dir.
func startChronyClient(b *testing.B, h *labnet.Host, dir string, server netip.Addr) *chronyClient {
	b.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	writeFile(b, filepath.Join(dir, "client.conf"), chronyClientConf(dir, server))
	h.Start(b, "chronyd-client", noSysTime("chronyd", "-x", "-d", "-f", filepath.Join(dir, "client.conf")), nil)
	return &chronyClient{dir: dir}
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

// stampCounts is what a timed says of its NTP socket's timestamps: kernel
// transmit stamps used for T1 and missed (T1 then the reading before the
// send, early by the send path: the daemon's error tx_stamp_missed),
// receive stamps by the kernel and in user space (T4 then late by the
// wake-up).
type stampCounts struct {
	TxKernel uint64 `json:"tx_kernel_stamps"`
	TxMissed uint64 `json:"-"`
	RxKernel uint64 `json:"kernel_stamps"`
	RxUser   uint64 `json:"user_stamps"`
}

func (c *stampCounts) add(o stampCounts) {
	c.TxKernel += o.TxKernel
	c.TxMissed += o.TxMissed
	c.RxKernel += o.RxKernel
	c.RxUser += o.RxUser
}

// stamps reads the timestamp counters of bt's NTP socket.
func (bt *benchTimed) stamps() (stampCounts, error) {
	out, err := exec.Command(bt.bin, "status", "--json", "--control", bt.control).Output()
	if err != nil {
		return stampCounts{}, err
	}
	var st struct {
		Datagram *struct {
			Stats stampCounts `json:"stats"`
		} `json:"datagram"`
		Errors map[string]uint64 `json:"errors"`
	}
	if err := json.Unmarshal(out, &st); err != nil || st.Datagram == nil {
		return stampCounts{}, fmt.Errorf("no datagram stats in %s", out)
	}
	c := st.Datagram.Stats
	c.TxMissed = st.Errors["tx_stamp_missed"]
	return c, nil
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
	if out, err := exec.Command("go", "build", "-o", p, "../../../cmd/timed").CombinedOutput(); err != nil {
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
	xleave := ""
	if *timesyncChronyXleave {
		xleave = " xleave"
	}
	return strings.Join([]string{
		"server " + server.String() + " iburst minpoll 0 maxpoll 0" + xleave,
		"port 0",
		"cmdport 0",
		"bindcmdaddress /",
		"user root",
		"logdir " + dir,
		"log measurements statistics tracking",
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

// chronyColumn returns column col (seconds) times sign of the lines about
// server that chronyd logged after the first skip lines of path.
func chronyColumn(b *testing.B, path string, skip int, server netip.Addr, col int, sign float64) []time.Duration {
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
		out = append(out, time.Duration(sign*v*1e9))
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

// throughput runs conns closed request loops from h against target for d,
// from addresses the kernel picks, and returns the valid replies per
// second (loadFrom).
func throughput(b *testing.B, ctx context.Context, h *labnet.Host, target netip.AddrPort, conns int, d time.Duration) float64 {
	return loadFrom(b, ctx, h, target, make([]netip.Addr, conns), d)
}
