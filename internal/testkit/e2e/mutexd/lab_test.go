package mutexd

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/testkit/e2e"
	"github.com/synclab/synclab/internal/testkit/labnet"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/mutex"
	mutexalgorithms "github.com/synclab/synclab/pkg/mutex/algorithms"
)

// labMutexd runs mutexd on every host of a namespace LAN.
type labMutexd struct {
	t     *testing.T
	lab   *labnet.Lab
	dir   string
	n     int    // members: hosts 1..n (0: every host of the lab)
	key   string // --key-file of every member; "" runs them --insecure
	procs map[int]*labnet.Proc
	extra []string // more flags for every member
	trace bool     // every member records a trace (--trace) from its start
}

func (l *labMutexd) tracePath(i int) string { return filepath.Join(l.dir, fmt.Sprintf("h%d.trace", i)) }

// checkTraces stops every member's trace (`mutexd trace stop`) and checks
// the run with `mutexd trace check`: the namespace hosts share the
// machine's clock (--clock-bound 0); and each trace's order against its
// vector clock (e2e.CheckTraceOrder: the quorum algorithms' frames go
// over TCP links, whose sends are recorded when they are queued). It
// returns the checker's output and how many frames of each kind were
// sent.
func (l *labMutexd) checkTraces() (string, map[string]int) {
	l.t.Helper()
	var paths []string
	var files []*trace.File
	for i := 1; i <= l.members(); i++ {
		if out, err := exec.Command(filepath.Join(e2e.BinDir(), "mutexd"), "trace", "stop", "--control", l.control(i)).CombinedOutput(); err != nil {
			l.t.Fatalf("h%d: mutexd trace stop: %v\n%s", i, err, out)
		}
		paths = append(paths, l.tracePath(i))
		f, err := trace.ReadFile(l.tracePath(i))
		if err != nil {
			l.t.Fatal(err)
		}
		files = append(files, f)
	}
	out, _ := e2e.TraceCheck(l.t, "mutexd", paths, "--clock-bound", "0")
	kinds := map[string]int{}
	for _, s := range e2e.CheckTraceOrder(l.t, files) {
		kinds[s.Event.Kind]++
	}
	return out, kinds
}

// members is how many of the lab's hosts are members.
func (l *labMutexd) members() int {
	if l.n == 0 {
		return l.lab.N()
	}
	return l.n
}

func (l *labMutexd) control(i int) string { return filepath.Join(l.dir, fmt.Sprintf("h%d.sock", i)) }

func (l *labMutexd) start(i int) {
	var members []string
	for j := 1; j <= l.members(); j++ {
		members = append(members, fmt.Sprintf("%d=%s:7400", j, l.lab.Host(j).Addr()))
	}
	argv := []string{"setpriv", "--bounding-set", "-sys_time", "--inh-caps", "-sys_time",
		filepath.Join(e2e.BinDir(), "mutexd"), "run",
		"--id", strconv.Itoa(i), "--members", strings.Join(members, ","),
		"--control", l.control(i), "--state-dir", filepath.Join(l.dir, fmt.Sprintf("h%d.state", i)),
		// A short lease keeps the recovery after a kill (a lost token is
		// replaced one lease after it could last have been granted) short.
		"--lease", "1s",
	}
	argv = append(append(argv, e2e.AuthArgs(l.key)...), l.extra...)
	if l.trace {
		argv = append(argv, "--trace", l.tracePath(i))
	}
	l.procs[i] = l.lab.Host(i).Start(l.t, "mutexd", argv, nil)
}

// holder returns the host whose daemon has granted lock name now, or 0.
func (l *labMutexd) holder(name string) int {
	for i := 1; i <= l.lab.N(); i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		var v mutexLocks
		err := ctl.NewClient(l.control(i), "mutexd").Get(ctx, "/v1/locks", &v)
		cancel()
		if err != nil {
			continue
		}
		for _, lk := range v.Locks {
			if lk.Name == name && lk.Holder != nil {
				return i
			}
		}
	}
	return 0
}

// counterScript is the critical section of the notes' shared counter: read
// the file, increment, write it back. The file is the counter's value on its
// first line, then one line per applied operation, "op start end host", the
// section's times on the real clock, which every namespace shares; the sleep
// widens the section so that two at once could not go unnoticed. The line
// ends with the lock's fence (MUTEXD_FENCE), as a fenced resource sees it.
//
// An operation is applied at most once, as a client that retries must make
// it: a lock lost while the command runs (a lease that could not be renewed
// on a loaded host) kills the command, and the client cannot know whether it
// had written. So the operation's ID is checked first, and the value and the
// operation's line are committed together by one rename. A retry then never
// increments twice, while two holders at once still lose an update (a stale
// read) and overlap, which checkCounter sees.
const counterScript = `f=$1 op=$3; grep -q "^$op " "$f" && exit 0; s=$(date +%s%N); n=$(head -n 1 "$f"); ` + holdGate + `sleep 0.005; ` +
	`e=$(date +%s%N); { echo $((n+1)); tail -n +2 "$f"; echo "$op $s $e $2 $MUTEXD_FENCE"; } > "$f.$op" && mv "$f.$op" "$f"`

// holdGate makes a test's fault land mid-run by an event, not after a
// sleep that a fast or a loaded host outruns: while the file "$f.hold"
// exists, the first section to find the counter at 5 or more claims
// "$f.holder" (mkdir: one claimant), writes its host's name into
// "$f.holder/host", and holds the lock until "$f.hold" is removed.
const holdGate = `if [ -e "$f.hold" ] && [ "$n" -ge 5 ] && mkdir "$f.holder" 2>/dev/null; then ` +
	`echo "$2" > "$f.holder/tmp" && mv "$f.holder/tmp" "$f.holder/host"; while [ -e "$f.hold" ]; do sleep 0.01; done; fi; `

// holdMidRun arms holdGate for the next run on file.
func holdMidRun(t *testing.T, file string) {
	t.Helper()
	if err := os.RemoveAll(file + ".holder"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file+".hold", nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// heldMidRun waits for the section holdGate stopped and returns its host's
// index, or 0 (the test failed) if none was stopped within a minute.
func (l *labMutexd) heldMidRun(file string) int {
	l.t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile(file + ".holder/host")
		if err != nil {
			continue
		}
		for _, h := range l.lab.Hosts() {
			if h.Name() == strings.TrimSpace(string(b)) {
				return h.Index()
			}
		}
		l.t.Errorf("the section held mid-run names host %q, not one of the lab's", b)
		return 0
	}
	l.t.Error("no section reached the hold mid-run within a minute")
	return 0
}

type counterRun struct {
	successes, failures map[int]int
	why                 []string // each failure's exit status and message
}

// loop is what one host runs: k successful `mutexd lock` runs of script
// (its arguments after the operation's ID: args), shared or exclusive,
// retrying what failed; pause is slept between two runs.
type loop struct {
	k      int
	shared bool
	script string
	args   func(op string) []string
	pause  time.Duration
}

// runCounter runs, on every host at once, `mutexd lock counter` around
// counterScript until it has succeeded k times there, retrying a lock
// that failed. during, if set, runs beside the loops.
func (l *labMutexd) runCounter(file string, k int, during func()) counterRun {
	l.t.Helper()
	if err := os.WriteFile(file, []byte("0\n"), 0o644); err != nil {
		l.t.Fatal(err)
	}
	loops := map[int]loop{}
	for _, h := range l.lab.Hosts() {
		loops[h.Index()] = loop{k: k, script: counterScript, args: func(op string) []string { return []string{file, h.Name(), op} }}
	}
	return l.runLoops(loops, during)
}

// runLoops runs each host's loop at once, and during beside them.
func (l *labMutexd) runLoops(loops map[int]loop, during func()) counterRun {
	l.t.Helper()
	res := counterRun{successes: map[int]int{}, failures: map[int]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []string
	for _, h := range l.lab.Hosts() {
		i := h.Index()
		lp, ok := loops[i]
		if !ok {
			continue
		}
		wg.Go(func() {
			for ok := 0; ok < lp.k && ctx.Err() == nil; {
				op := fmt.Sprintf("%s-%d", h.Name(), ok) // the same ID for every try of one operation
				argv := []string{"netns", "exec", h.Namespace(),
					filepath.Join(e2e.BinDir(), "mutexd"), "lock", "counter", "--control", l.control(i), "--timeout", "20s"}
				if lp.shared {
					argv = append(argv, "--shared")
				}
				argv = append(append(argv, "--", "sh", "-c", lp.script, "sh"), lp.args(op)...)
				out, err := exec.CommandContext(ctx, "ip", argv...).CombinedOutput()
				mu.Lock()
				if err != nil {
					res.failures[i]++
					res.why = append(res.why, fmt.Sprintf("%s: %v: %s", h.Name(), err, bytes.TrimSpace(out)))
					if res.failures[i] > 50 {
						errs = append(errs, fmt.Sprintf("%s: 50 failures, the last: %v: %s", h.Name(), err, out))
						cancel()
					}
				} else {
					res.successes[i]++
					ok++
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(50 * time.Millisecond) // the daemon may be restarting
				} else if lp.pause > 0 {
					time.Sleep(lp.pause)
				}
			}
		})
	}
	if during != nil {
		during()
	}
	wg.Wait()
	if len(errs) > 0 || ctx.Err() != nil {
		l.t.Fatalf("the lock loops did not finish: %v %s", ctx.Err(), strings.Join(errs, "\n"))
	}
	return res
}

// checkCounter asserts the counter's value, that every applied operation
// is logged once, and that no two logged critical sections overlapped.
func checkCounter(t *testing.T, file string, want int) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if got, _ := strconv.Atoi(lines[0]); got != want {
		t.Errorf("counter = %q, want %d", lines[0], want)
	}
	spans := spansOf(t, file, true)
	ops := map[string]bool{}
	for _, s := range spans {
		if ops[s.op] {
			t.Errorf("operation %s applied twice", s.op)
		}
		ops[s.op] = true
	}
	if len(spans) != want {
		t.Errorf("%d critical sections logged, want %d (the counter's value)", len(spans), want)
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	overlaps := 0
	for i := 1; i < len(spans); i++ {
		if p, s := spans[i-1], spans[i]; s.start < p.end {
			overlaps++
			t.Errorf("critical sections overlap: %s %d..%d and %s %d..%d (%v)", p.host, p.start, p.end, s.host, s.start, s.end,
				time.Duration(p.end-s.start))
		}
	}
	if overlaps == 0 && len(spans) > 1 {
		gap := time.Duration(spans[len(spans)-1].end - spans[0].start)
		t.Logf("%d critical sections in %v, none overlapping", len(spans), gap.Round(time.Millisecond))
	}
}

// TestLabMutexdCounter is the shared counter of the course notes on
// five namespace hosts with real binaries, for every algorithm mutexd runs
// (pkg/mutex/algorithms.All, one subtest each, `--algorithm NAME`): every
// host increments one shared file K times under `mutexd lock counter`; the
// total is exact and the logged critical sections never overlap. Then
// again while the daemon of the host holding the lock is SIGKILLed and
// restarted mid-run, and again with a host that does not hold it (the
// highest-numbered other one: the central coordinator, with bully)
// SIGKILLed: the loops retry what failed, the runs complete, and still
// nothing overlaps. An algorithm that offers shared locks also runs
// readers (`mutexd lock --shared`) beside writers: readers do run together,
// and never beside a writer.
func TestLabMutexdCounter(t *testing.T) {
	labnet.Require(t)
	for _, f := range mutexalgorithms.All {
		t.Run(f.Name, func(t *testing.T) { labCounter(t, f) })
	}
}

func labCounter(t *testing.T, f mutex.Factory) {
	const n, k = 5, 4
	lab := labnet.New(t, n)
	l := &labMutexd{t: t, lab: lab, dir: e2e.ShortDir(t), procs: map[int]*labnet.Proc{}, extra: []string{"--algorithm", f.Name}}
	l.key = e2e.KeyFile(t, l.dir)
	for i := 1; i <= n; i++ {
		l.start(i)
	}
	for i := 1; i <= n; i++ {
		deadline := time.Now().Add(5 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := ctl.NewClient(l.control(i), "mutexd").Get(ctx, "/v1/status", nil)
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("h%d: %v", i, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	file := filepath.Join(l.dir, "counter")

	start := time.Now()
	res := l.runCounter(file, k, nil)
	t.Logf("%s: %d x %d locked increments in %v (failures %v)", f.Name, n, k, time.Since(start).Round(time.Millisecond), res.failures)
	checkCounter(t, file, n*k)
	for _, w := range res.why {
		t.Log(w)
	}

	// Again, killing a daemon mid-run: the holder's, then another's.
	for _, victim := range []string{"holder", "non-holder"} {
		var killed int
		var killedAt time.Time
		start = time.Now()
		holdMidRun(t, file)
		res = l.runCounter(file, k, func() {
			// The fifth section or a later one holds the lock until the
			// victim is killed and restarted.
			defer os.Remove(file + ".hold")
			holder := l.heldMidRun(file)
			if holder == 0 {
				return
			}
			killed = holder
			if victim == "non-holder" {
				killed = n
				if holder == n {
					killed = n - 1
				}
			}
			l.procs[killed].Kill()
			killedAt = time.Now()
			time.Sleep(200 * time.Millisecond)
			l.start(killed)
		})
		t.Logf("%s: with the %s h%d's daemon SIGKILLed %v into the run and restarted 200 ms later: %d x %d increments in %v (failures %v)",
			f.Name, victim, killed, killedAt.Sub(start).Round(time.Millisecond), n, k, time.Since(start).Round(time.Millisecond), res.failures)
		checkCounter(t, file, n*k)
		for _, w := range res.why {
			t.Log(w)
		}
		for i := 1; i <= n; i++ {
			if res.successes[i] != k {
				t.Errorf("h%d: %d successes, want %d", i, res.successes[i], k)
			}
		}
	}

	if f.Guarantees.Shared {
		l.runShared(file)
	} else {
		// The clear refusal an algorithm without shared locks gives.
		out, err := exec.Command("ip", "netns", "exec", lab.Host(1).Namespace(), filepath.Join(e2e.BinDir(), "mutexd"), "lock", "--shared",
			"counter", "--control", l.control(1), "--timeout", "5s", "--", "true").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "shared mode is not offered") {
			t.Errorf("%s: --shared: %v: %s, want the refusal", f.Name, err, out)
		}
	}
}

// readerScript is a reader's critical section: it reads the counter and
// logs "op start end host" (real clock) to the readers' log, holding the
// lock 200 ms so that readers granted together overlap visibly.
const readerScript = `f=$1 log=$2 op=$4; grep -q "^$op " "$log" && exit 0; s=$(date +%s%N); head -n 1 "$f" >/dev/null; sleep 0.2; ` +
	`e=$(date +%s%N); echo "$op $s $e $3 $MUTEXD_FENCE" >> "$log"`

// togetherScript is a reader's critical section in the round where every
// host reads at once: as readerScript, but after entering it also waits
// (10 s at most) until another reader has entered, so that readers granted
// together overlap however late a loaded host starts them; readers granted
// one at a time still never overlap (the first waits alone and leaves).
// Entries are logged by operation, once each, so a retried reader does
// not count twice.
const togetherScript = `f=$1 log=$2 op=$4; grep -q "^$op " "$log" && exit 0; s=$(date +%s%N); head -n 1 "$f" >/dev/null; ` +
	`echo "$op" >> "$log.in"; i=0; while [ $(sort -u "$log.in" | wc -l) -lt 2 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; sleep 0.2; ` +
	`e=$(date +%s%N); echo "$op $s $e $3 $MUTEXD_FENCE" >> "$log"`

// runShared runs readers (`mutexd lock --shared`) and writers (the
// counter) on the same lock: first every host reads once, all together,
// and readers must overlap; then hosts 1-3 read while hosts 4-5 increment,
// and no reader may overlap a writer, nor two writers each other.
func (l *labMutexd) runShared(file string) {
	t := l.t
	t.Helper()
	readLog := filepath.Join(l.dir, "reads")
	if err := os.WriteFile(file, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(readLog, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	reader := func(h *labnet.Host, k int, round string) loop {
		return loop{k: k, shared: true, script: readerScript, pause: 50 * time.Millisecond,
			args: func(op string) []string { return []string{file, readLog, h.Name(), round + op} }}
	}
	start := time.Now()
	loops := map[int]loop{}
	for _, h := range l.lab.Hosts() {
		lp := reader(h, 1, "all-")
		lp.script = togetherScript
		loops[h.Index()] = lp
	}
	l.runLoops(loops, nil)
	together := readSpans(t, readLog)
	overlapping := 0
	for i := range together {
		for j := i + 1; j < len(together); j++ {
			if together[i].start < together[j].end && together[j].start < together[i].end {
				overlapping++
			}
		}
	}
	t.Logf("%d readers at once: %d overlapping pairs of the %d possible (in %v)", len(together), overlapping,
		len(together)*(len(together)-1)/2, time.Since(start).Round(time.Millisecond))
	if overlapping == 0 {
		t.Errorf("shared grants never overlapped: readers ran one at a time\n%v", together)
	}

	start = time.Now()
	loops = map[int]loop{}
	for _, h := range l.lab.Hosts() {
		if h.Index() <= 3 {
			loops[h.Index()] = reader(h, 2, "mixed-")
		} else {
			loops[h.Index()] = loop{k: 3, script: counterScript, pause: 100 * time.Millisecond,
				args: func(op string) []string { return []string{file, h.Name(), op} }}
		}
	}
	l.runLoops(loops, nil)
	checkCounter(t, file, 2*3)
	writes := spansOf(t, file, true)
	reads := readSpans(t, readLog)
	beside := 0
	for _, r := range reads {
		for _, w := range writes {
			if r.start < w.end && w.start < r.end {
				beside++
				t.Errorf("reader %s %d..%d beside writer %s %d..%d", r.host, r.start, r.end, w.host, w.start, w.end)
			}
		}
	}
	t.Logf("%d reads and %d writes mixed in %v, %d reads beside a write", len(reads)-len(together), len(writes),
		time.Since(start).Round(time.Millisecond), beside)
	checkFences(t, writes, reads)
}

// checkFences checks the fences the critical sections ran with as a
// resource that keeps the highest fence it has seen, and refuses a lower
// one, needs them: readers that ran together had the same fence, and a
// section that began after another ended had a higher one (or the same,
// both readers).
func checkFences(t *testing.T, writes, reads []span) {
	t.Helper()
	type section struct {
		span
		reader bool
	}
	var all []section
	for _, w := range writes {
		all = append(all, section{w, false})
	}
	for _, r := range reads {
		all = append(all, section{r, true})
	}
	for _, a := range all {
		for _, b := range all {
			switch {
			case a.fence == 0 || b.fence == 0:
				t.Fatalf("a section without its fence: %+v, %+v", a, b)
			case a.reader && b.reader && a.op < b.op && a.start < b.end && b.start < a.end && a.fence != b.fence:
				t.Errorf("readers %s (%s) and %s (%s) ran together with fences %d and %d", a.op, a.host, b.op, b.host, a.fence, b.fence)
			case a.end <= b.start && (a.fence > b.fence || a.fence == b.fence && !(a.reader && b.reader)):
				t.Errorf("%s (%s, fence %d) began after %s (%s, fence %d) ended: a fenced resource refuses it", b.op, b.host, b.fence, a.op, a.host, a.fence)
			}
		}
	}
	fences := map[uint64]bool{}
	for _, s := range all {
		fences[s.fence] = true
	}
	t.Logf("%d sections (%d reads) on %d fences, each as a fenced resource needs it", len(all), len(reads), len(fences))
}

// span is one logged critical section.
type span struct {
	start, end int64
	op, host   string
	fence      uint64 // 0 if not logged
}

// spansOf reads the critical sections logged in a counter file (after
// its first line, the value).
func spansOf(t *testing.T, file string, skipValue bool) []span {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if skipValue {
		lines = lines[1:]
	}
	var spans []span
	for _, line := range lines {
		if line == "" {
			continue
		}
		var s span
		if _, err := fmt.Sscan(line, &s.op, &s.start, &s.end, &s.host); err != nil || s.end < s.start {
			t.Fatalf("bad log line %q: %v", line, err)
		}
		if f := strings.Fields(line); len(f) > 4 {
			s.fence, _ = strconv.ParseUint(f[4], 10, 64)
		}
		spans = append(spans, s)
	}
	return spans
}

func readSpans(t *testing.T, file string) []span { return spansOf(t, file, false) }
