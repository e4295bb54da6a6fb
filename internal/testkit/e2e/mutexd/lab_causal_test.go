package mutexd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/testkit/e2e"
	"github.com/synclab/synclab/internal/testkit/labnet"
)

// TestLabMutexdCausalChain sends a causal chain through `mutexd lock` on
// three namespace hosts: a client on host A asks for lock x while A's
// link to the coordinator is cut (its request waits in TCP's
// retransmission); a program message carries A's vector (`mutexd vector`
// on A) to a client on host B, whose `mutexd lock --after VECTOR x` is
// the request that follows A's causally and reaches the coordinator
// first; then the link heals. With tokenask, A's command runs first, and
// B's, whose MUTEXD_VECTOR names A's request, after it. The same chain
// under central (FIFO) runs B's first: the difference the notes' token-
// asking algorithm makes. Each command appends its host and MUTEXD_VECTOR
// to a shared file: the order of the lines is the order of the grants.
func TestLabMutexdCausalChain(t *testing.T) {
	labnet.Require(t)
	for _, alg := range []string{"tokenask", "central"} {
		t.Run(alg, func(t *testing.T) { labCausal(t, alg) })
	}
}

func labCausal(t *testing.T, alg string) {
	lab := labnet.New(t, 3)
	// A 3 s lease: a beat a second, and a predecessor the coordinator has
	// not heard of is waited for 2.5 s, far longer than the cut below
	// and TCP's retransmission after it.
	l := &labMutexd{t: t, lab: lab, dir: e2e.ShortDir(t), procs: map[int]*labnet.Proc{}, extra: []string{"--algorithm", alg, "--lease", "3s"}}
	l.key = e2e.KeyFile(t, l.dir)
	for i := 1; i <= 3; i++ {
		l.start(i)
	}
	coord := l.coordinator()
	var a, b int
	for i := 1; i <= 3; i++ {
		if i != coord {
			if a == 0 {
				a = i
			} else {
				b = i
			}
		}
	}
	file := filepath.Join(l.dir, "order")
	script := func(host string) string { return `echo "` + host + ` $MUTEXD_VECTOR" >> ` + file }
	lock := func(i int, host string, extra ...string) *exec.Cmd {
		argv := append([]string{"lock", "x", "--control", l.control(i), "--timeout", "30s"}, extra...)
		cmd := exec.Command(filepath.Join(e2e.BinDir(), "mutexd"), append(argv, "--", "sh", "-c", script(host))...)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
				cmd.Wait()
			}
			if t.Failed() {
				t.Logf("mutexd lock at h%d (%s): %s", i, host, out.String())
			}
		})
		return cmd
	}

	lab.Partition(a, coord)
	cmdA := lock(a, "A")
	// The program message: what A's client sends once its request is
	// made, stamped with A's vector (tokenask), or nothing (central keeps
	// no vectors: its chain is the same messages without the stamp).
	var after []string
	if alg == "tokenask" {
		v := l.vectorOnce(a)
		t.Logf("A (h%d) asked for x; its program message carries %s", a, v)
		after = []string{"--after", v}
	} else {
		l.waitLocal(a, "x")
	}
	cmdB := lock(b, "B", after...)
	// B's request has reached the coordinator (waiting there for A's,
	// or granted at once), and only then does A's link heal.
	l.waitCoordinatorSaw(coord, b, file)
	lab.Heal(a, coord)
	for _, c := range []*exec.Cmd{cmdA, cmdB} {
		if err := waitCmd(c, 40*time.Second); err != nil {
			t.Fatalf("mutexd lock: %v", err)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	t.Logf("%s: order of the critical sections: %q", alg, lines)
	if len(lines) != 2 {
		t.Fatalf("%d critical sections, want 2: %q", len(lines), lines)
	}
	first := strings.Fields(lines[0])[0]
	switch alg {
	case "tokenask":
		if first != "A" {
			t.Fatalf("B's request, which causally follows A's, was granted first: %q", lines)
		}
		// B's own stamp names A's request: a program message B's command
		// sends carries the whole chain on.
		if !strings.Contains(lines[1], after[1]) {
			t.Errorf("B's MUTEXD_VECTOR %q does not name A's request %s", lines[1], after[1])
		}
	case "central":
		if first != "B" {
			t.Fatalf("central granted A first: the cut did not hold A's request back, so the tokenask run proved nothing: %q", lines)
		}
	}
}

// coordinator waits until a member coordinates and may grant, and returns
// it.
func (l *labMutexd) coordinator() int {
	l.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for i := 1; i <= l.members(); i++ {
			if st, err := l.status(i); err == nil && e2e.Field(st, "node", "core", "detail", "coordinates") == true &&
				e2e.Field(st, "node", "core", "detail", "ready") == true {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	l.t.Fatal("no coordinator ready within 20 s")
	return 0
}

func (l *labMutexd) status(i int) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var st map[string]any
	err := ctl.NewClient(l.control(i), "mutexd").Get(ctx, "/v1/status", &st)
	return st, err
}

// vectorOnce runs `mutexd vector` against member i until it names a
// request of i (the client's request has been made), and returns it.
func (l *labMutexd) vectorOnce(i int) string {
	l.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := exec.Command(filepath.Join(e2e.BinDir(), "mutexd"), "vector", "--control", l.control(i)).CombinedOutput()
		v := strings.TrimSpace(string(out))
		if err == nil && strings.Contains(v, fmt.Sprintf("%d:", i)) {
			return v
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("mutexd vector at h%d: %q, %v", i, out, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitLocal waits until member i has a request for lock waiting.
func (l *labMutexd) waitLocal(i int, lock string) {
	l.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		var v mutexLocks
		err := ctl.NewClient(l.control(i), "mutexd").Get(ctx, "/v1/locks", &v)
		cancel()
		for _, lk := range v.Locks {
			if err == nil && lk.Name == lock && len(lk.Queue) > 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("h%d: no request for %s waiting (%v)", i, lock, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitCoordinatorSaw waits until the coordinator has member b's request
// for x: waiting in its queue (for a predecessor), or granted (the
// critical section has run, or is running).
func (l *labMutexd) waitCoordinatorSaw(coord, b int, file string) {
	l.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if data, _ := os.ReadFile(file); strings.Contains(string(data), "B ") {
			return
		}
		if st, err := l.status(coord); err == nil {
			if d, ok := lockOf(st, "x")["detail"].(map[string]any); ok {
				for _, w := range asList(d["waiting"]) {
					if w == float64(b) {
						return
					}
				}
				for _, h := range asList(d["holders"]) {
					if h == float64(b) {
						return
					}
				}
			}
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("the coordinator h%d never had h%d's request", coord, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func asList(v any) []any { s, _ := v.([]any); return s }

// waitCmd waits for cmd to exit successfully within d.
func waitCmd(cmd *exec.Cmd, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		cmd.Process.Kill()
		return fmt.Errorf("%v still running after %v", cmd.Args, d)
	}
}
