package mutexd

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/testkit/e2e"
	"github.com/synclab/synclab/internal/testkit/labnet"
)

// TestLabMutexdShared: `mutexd lock --shared` on the majority quorum with
// real binaries: readers on three hosts hold the lock together, a writer
// asking meanwhile runs alone after them, and a reader asking after the
// writer waits for it (no writer starvation). Every member traces the run,
// and `mutexd trace check` finds the shared holds beside each other and
// the writer alone, the fences in grant order.
func TestLabMutexdShared(t *testing.T) {
	labnet.Require(t)
	lab := labnet.New(t, 5)
	// A 3 s lease (the last --lease wins): renewals of 1 s leases miss
	// their time on a host loaded far beyond its cores.
	l := &labMutexd{t: t, lab: lab, dir: e2e.ShortDir(t), procs: map[int]*labnet.Proc{},
		extra: []string{"--algorithm", "majority", "--heartbeat", "200ms", "--lease", "3s"}, trace: true}
	l.key = e2e.KeyFile(t, l.dir)
	for i := 1; i <= 5; i++ {
		l.start(i)
	}
	for i := 1; i <= 5; i++ {
		l.waitUp(i)
	}
	type span struct {
		who        string
		start, end time.Time
	}
	var mu sync.Mutex
	var spans []span
	var wg sync.WaitGroup
	run := func(i int, who string, shared bool, hold time.Duration) {
		defer wg.Done()
		args := []string{"netns", "exec", lab.Host(i).Namespace(), filepath.Join(e2e.BinDir(), "mutexd"), "lock", "db",
			"--control", l.control(i), "--timeout", "20s"}
		if shared {
			args = append(args, "--shared")
		}
		args = append(args, "--", "sh", "-c", fmt.Sprintf("date +%%s%%N; sleep %g; date +%%s%%N", hold.Seconds()))
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v: %s", who, err, out)
			return
		}
		f := strings.Fields(string(out))
		a, _ := strconv.ParseInt(f[0], 10, 64)
		b, _ := strconv.ParseInt(f[1], 10, 64)
		mu.Lock()
		spans = append(spans, span{who, time.Unix(0, a), time.Unix(0, b)})
		mu.Unlock()
	}
	for i, who := range []string{"r1", "r2", "r3"} {
		wg.Add(1)
		go run(i+1, who, true, 1500*time.Millisecond)
	}
	// The writer asks once all three readers hold; the last reader once the
	// writer's request is in its daemon's queue (on a loaded host a
	// command takes its time to start: the order of the requests is read
	// from the daemons, not from when the commands were started).
	for i := 1; i <= 3; i++ { // every reader holds (a slow start must not let the writer in first)
		l.waitLock(i, func(v mutexLock) bool { return len(v.Holders) > 0 })
	}
	wg.Add(1)
	go run(4, "w4", false, 300*time.Millisecond)
	l.waitLock(4, func(v mutexLock) bool { return len(v.Queue) > 0 })
	time.Sleep(50 * time.Millisecond) // its first round reached the coordinators
	wg.Add(1)
	go run(5, "r5", true, 100*time.Millisecond)
	wg.Wait()
	by := map[string]span{}
	for _, s := range spans {
		by[s.who] = s
		t.Logf("%s: %v .. %v", s.who, s.start.Format("15:04:05.000"), s.end.Format("15:04:05.000"))
	}
	if len(by) != 5 {
		t.Fatalf("%d of 5 commands ran", len(by))
	}
	overlap := func(a, b span) bool { return a.start.Before(b.end) && b.start.Before(a.end) }
	if !overlap(by["r1"], by["r2"]) || !overlap(by["r2"], by["r3"]) {
		t.Errorf("the readers did not hold together")
	}
	for _, s := range spans {
		if s.who != "w4" && overlap(s, by["w4"]) {
			t.Errorf("%s ran beside the writer", s.who)
		}
	}
	if by["r5"].start.Before(by["w4"].end) {
		t.Errorf("r5, asking after the writer, ran before it: the writer could starve")
	}
	out, kinds := l.checkTraces()
	t.Logf("mutexd trace check:\n%s\nframes sent: %v", out, kinds)
	if kinds["quorum_lock"] == 0 {
		t.Errorf("no quorum_lock frame in the traces: the quorum's stream frames were not traced")
	}
	for _, want := range []string{"exclusive: HOLDS", "fences: HOLDS", "5 holds of 1 lock"} {
		if !strings.Contains(out, want) {
			t.Errorf("mutexd trace check: no %q in\n%s", want, out)
		}
	}
}

// mutexLock is one lock of GET /v1/locks, as much as these tests read.
type mutexLock struct {
	Name    string `json:"name"`
	Holders []struct {
		ID uint64 `json:"id"`
	} `json:"holders"`
	Queue []struct {
		ID uint64 `json:"id"`
	} `json:"queue"`
}

// waitLock waits (up to 20 s) until host i's daemon shows lock db in the
// state cond wants.
func (l *labMutexd) waitLock(i int, cond func(mutexLock) bool) {
	l.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		var v struct {
			Locks []mutexLock `json:"locks"`
		}
		err := ctl.NewClient(l.control(i), "mutexd").Get(ctx, "/v1/locks", &v)
		cancel()
		for _, lk := range v.Locks {
			if err == nil && lk.Name == "db" && cond(lk) {
				return
			}
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("h%d: lock db never reached the state awaited (%v)", i, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
