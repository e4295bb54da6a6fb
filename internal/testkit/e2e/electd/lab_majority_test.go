package electd

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/testkit/e2e"
	"github.com/synclab/synclab/internal/testkit/labnet"
)

// leaderView is GET /v1/leader as this test reads it.
type majorityLeaderView struct {
	Leader uint32 `json:"leader"`
	Term   uint64 `json:"term"`
	Self   bool   `json:"self"`
	Why    string `json:"why"`
}

// majorityWatch polls every member's /v1/leader over its control socket
// (no process per poll: a sweep of five takes a millisecond or two) and
// records every sweep in which two members said "I lead".
type majorityWatch struct {
	l       *labElectd
	clients map[int]*ctl.Client
	mu      sync.Mutex
	sweeps  int
	slow    int // sweeps too slow to tell (see sweep)
	double  []string
}

func newMajorityWatch(l *labElectd) *majorityWatch {
	w := &majorityWatch{l: l, clients: map[int]*ctl.Client{}}
	for i := 1; i <= l.members(); i++ {
		w.clients[i] = ctl.NewClient(l.control(i), "electd")
	}
	return w
}

func (w *majorityWatch) view(i int) (majorityLeaderView, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var v majorityLeaderView
	err := w.clients[i].Get(ctx, "/v1/leader", &v)
	return v, err == nil
}

// sweep reads every host once; it returns the views and notes a double.
func (w *majorityWatch) sweep(hosts []int) map[int]majorityLeaderView {
	start := time.Now()
	views := map[int]majorityLeaderView{}
	var self []int
	for _, i := range hosts {
		if v, ok := w.view(i); ok {
			views[i] = v
			if v.Self {
				self = append(self, i)
			}
		}
	}
	took := time.Since(start)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sweeps++
	switch {
	case took > 25*time.Millisecond:
		// The reads are one after the other: a leader that stepped down
		// after its read and a successor elected before the next read
		// would look like two at once. The leases keep the two beliefs at
		// least 2×25 ms apart, so a sweep shorter than 25 ms cannot see
		// that; a longer one (a loaded host) proves nothing either way.
		w.slow++
	case len(self) > 1:
		w.double = append(w.double, fmt.Sprintf("hosts %v all said they lead within %v", self, took))
	}
	return views
}

// run sweeps all hosts until stop is closed.
func (w *majorityWatch) run(stop <-chan struct{}, done *sync.WaitGroup) {
	defer done.Done()
	for {
		select {
		case <-stop:
			return
		default:
		}
		w.sweep(e2e.All(w.l.members()))
		time.Sleep(2 * time.Millisecond)
	}
}

// agreedLeader waits until the listed hosts all name one leader among
// them, and returns it and how long that took.
func (w *majorityWatch) agreedLeader(what string, within time.Duration, hosts ...int) (uint32, time.Duration) {
	w.l.t.Helper()
	start := time.Now()
	for {
		views := w.sweep(hosts)
		lead := uint32(0)
		ok := len(views) == len(hosts)
		for _, v := range views {
			if v.Leader == 0 || (lead != 0 && v.Leader != lead) {
				ok = false
			}
			lead = v.Leader
		}
		if ok && slices.Contains(hosts, int(lead)) {
			return lead, time.Since(start)
		}
		if time.Since(start) > within {
			w.l.t.Fatalf("%s: hosts %v agreed on no leader within %v: %+v", what, hosts, within, views)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLabElectdMajority runs electd --algorithm majority on five namespace
// hosts: the leader is SIGKILLed five times (failover timed from the kill
// to the survivors' agreement), the leader is cut off with one other host
// (the minority side shows no leader and `electd leader` says why, the
// majority side elects), and a watcher reading every member's view
// throughout counts the sweeps in which two members said they lead.
func TestLabElectdMajority(t *testing.T) {
	labnet.Require(t)
	const n = 5
	lab := labnet.New(t, n)
	l := &labElectd{t: t, lab: lab, dir: e2e.ShortDir(t), procs: map[int]*labnet.Proc{},
		extra: []string{"--algorithm", "majority"}}
	l.key = e2e.KeyFile(t, l.dir)
	for i := 1; i <= n; i++ {
		l.start(i)
	}
	w := newMajorityWatch(l)
	lead, _ := w.agreedLeader("start", 5*time.Second, e2e.All(n)...)

	stop := make(chan struct{})
	var done sync.WaitGroup
	done.Add(1)
	go w.run(stop, &done)
	defer func() {
		close(stop)
		done.Wait()
	}()

	// SIGKILL of the leader, five times.
	var failovers []time.Duration
	for range 5 {
		killed := int(lead)
		l.procs[killed].Kill()
		var took time.Duration
		lead, took = w.agreedLeader("after SIGKILL", 3*time.Second, e2e.Others(n, killed)...)
		failovers = append(failovers, took)
		l.start(killed)
		w.agreedLeader("after the restart", 5*time.Second, e2e.All(n)...)
	}
	slices.Sort(failovers)
	t.Logf("failover after SIGKILL of the leader (kill to agreement of the 4 survivors), 5 runs: %v", failovers)
	// The target (p99 <= 1 s) is the benchmark's to measure; here a
	// failover must merely happen, within the 3 s wait above.

	// The leader and one other host cut off: a minority of 2.
	minority := []int{int(lead), 1 + int(lead)%n}
	var majority []int
	for i := 1; i <= n; i++ {
		if !slices.Contains(minority, i) {
			majority = append(majority, i)
		}
	}
	lab.Split(minority, majority)
	next, took := w.agreedLeader("majority side after the split", 3*time.Second, majority...)
	t.Logf("split %v | %v: the majority side agreed on %d in %v", minority, majority, next, took)
	deadline := time.Now().Add(2 * time.Second)
	for {
		views := w.sweep(minority)
		if views[minority[0]].Leader == 0 && views[minority[1]].Leader == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the minority side %v still shows a leader: %+v", minority, views)
		}
		time.Sleep(10 * time.Millisecond)
	}
	out, err := exec.Command(filepath.Join(e2e.BinDir(), "electd"), "leader", "--control", l.control(minority[0])).CombinedOutput()
	if e2e.ExitCode(err) != 1 || !strings.Contains(string(out), "no leader") {
		t.Errorf("electd leader on the minority side: exit %d, %q: want exit 1 saying why", e2e.ExitCode(err), out)
	}
	t.Logf("minority side: %s", strings.TrimSpace(string(out)))

	lab.HealAll()
	w.agreedLeader("after the heal", 5*time.Second, e2e.All(n)...)

	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("%d sweeps of all members (%d too slow to tell), %d with two members saying they lead", w.sweeps, w.slow, len(w.double))
	if len(w.double) > 0 {
		t.Errorf("two self-believed leaders seen: %v", w.double)
	}
}
