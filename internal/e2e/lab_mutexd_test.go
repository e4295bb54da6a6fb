package e2e

import (
	"bytes"
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
	"github.com/synclab/synclab/internal/labnet"
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
		filepath.Join(binDir, "mutexd"), "run",
		"--id", strconv.Itoa(i), "--members", strings.Join(members, ","),
		"--control", l.control(i), "--state-dir", filepath.Join(l.dir, fmt.Sprintf("h%d.state", i)),
		// A short lease keeps the recovery after a kill (a lost token is
		// replaced one lease after it could last have been granted) short.
		"--lease", "1s",
	}
	argv = append(append(argv, authArgs(l.key)...), l.extra...)
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
// widens the section so that two at once could not go unnoticed.
//
// An operation is applied at most once, as a client that retries must make
// it: a lock lost while the command runs (a lease that could not be renewed
// on a loaded host) kills the command, and the client cannot know whether it
// had written. So the operation's ID is checked first, and the value and the
// operation's line are committed together by one rename. A retry then never
// increments twice, while two holders at once still lose an update (a stale
// read) and overlap, which checkCounter sees.
const counterScript = `f=$1 op=$3; grep -q "^$op " "$f" && exit 0; s=$(date +%s%N); n=$(head -n 1 "$f"); sleep 0.005; ` +
	`e=$(date +%s%N); { echo $((n+1)); tail -n +2 "$f"; echo "$op $s $e $2"; } > "$f.$op" && mv "$f.$op" "$f"`

type counterRun struct {
	successes, failures map[int]int
	why                 []string // each failure's exit status and message
}

// runCounter runs, on every host at once, `mutexd lock counter` around
// counterScript until it has succeeded k times there, retrying a lock
// that failed. during, if set, runs beside the loops.
func (l *labMutexd) runCounter(file string, k int, during func()) counterRun {
	l.t.Helper()
	if err := os.WriteFile(file, []byte("0\n"), 0o644); err != nil {
		l.t.Fatal(err)
	}
	res := counterRun{successes: map[int]int{}, failures: map[int]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []string
	for _, h := range l.lab.Hosts() {
		i := h.Index()
		wg.Go(func() {
			for ok := 0; ok < k && ctx.Err() == nil; {
				op := fmt.Sprintf("%s-%d", h.Name(), ok) // the same ID for every try of one increment
				cmd := exec.CommandContext(ctx, "ip", "netns", "exec", h.Namespace(),
					filepath.Join(binDir, "mutexd"), "lock", "counter", "--control", l.control(i), "--timeout", "20s",
					"--", "sh", "-c", counterScript, "sh", file, h.Name(), op)
				out, err := cmd.CombinedOutput()
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
				}
			}
		})
	}
	if during != nil {
		during()
	}
	wg.Wait()
	if len(errs) > 0 || ctx.Err() != nil {
		l.t.Fatalf("the counter loops did not finish: %v %s", ctx.Err(), strings.Join(errs, "\n"))
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
	type span struct {
		start, end int64
		op, host   string
	}
	var spans []span
	ops := map[string]bool{}
	for _, line := range lines[1:] {
		var s span
		if _, err := fmt.Sscan(line, &s.op, &s.start, &s.end, &s.host); err != nil || s.end < s.start {
			t.Fatalf("bad log line %q: %v", line, err)
		}
		if ops[s.op] {
			t.Errorf("operation %s applied twice", s.op)
		}
		ops[s.op] = true
		spans = append(spans, s)
	}
	if len(spans) != want {
		t.Errorf("%d critical sections logged, want %d (the counter's value)", len(spans), want)
	}
	slices.SortFunc(spans, func(a, b span) int { return int(a.start - b.start) })
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

// TestLabMutexdCounter is the shared counter of the notes (seed 000) on
// five namespace hosts with real binaries, for every algorithm of
// pkg/mutex/algorithms: every host increments one shared file K times
// under `mutexd lock counter`; the total is exact and the logged critical
// sections never overlap. Then again while the daemon of the host holding
// the lock is SIGKILLed and restarted mid-run: the loops retry what
// failed, the run completes, and still nothing overlaps.
func TestLabMutexdCounter(t *testing.T) {
	labnet.Require(t)
	for _, f := range mutexalgorithms.All {
		t.Run(f.Name, func(t *testing.T) { labMutexdCounter(t, f.Name) })
	}
}

func labMutexdCounter(t *testing.T, algorithm string) {
	// The default algorithm counts to 100, the others to 50 (the suite's
	// time; every critical section is still checked).
	const n = 5
	k := 20
	if algorithm != mutexalgorithms.Default {
		k = 10
	}
	lab := labnet.New(t, n)
	l := &labMutexd{t: t, lab: lab, dir: shortDirT(t), procs: map[int]*labnet.Proc{}, extra: []string{"--algorithm", algorithm}}
	l.key = keyFile(t, l.dir)
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
	t.Logf("%d x %d locked increments in %v (failures %v)", n, k, time.Since(start).Round(time.Millisecond), res.failures)
	checkCounter(t, file, n*k)
	for _, w := range res.why {
		t.Log(w)
	}

	// Again, killing the holder's daemon mid-run.
	var killed int
	var killedAt time.Time
	start = time.Now()
	res = l.runCounter(file, k, func() {
		time.Sleep(300 * time.Millisecond)
		deadline := time.Now().Add(10 * time.Second)
		for killed == 0 {
			if killed = l.holder("counter"); killed == 0 {
				if time.Now().After(deadline) {
					t.Error("never found a holder of the lock to kill")
					return
				}
				time.Sleep(time.Millisecond)
			}
		}
		l.procs[killed].Kill()
		killedAt = time.Now()
		time.Sleep(200 * time.Millisecond)
		l.start(killed)
	})
	t.Logf("with h%d's daemon SIGKILLed %v into the run and restarted 200 ms later: %d x %d increments in %v (failures %v)",
		killed, killedAt.Sub(start).Round(time.Millisecond), n, k, time.Since(start).Round(time.Millisecond), res.failures)
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
