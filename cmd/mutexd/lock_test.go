package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/pkg/mutex"
)

// TestMain lets the test binary be mutexd, so that `mutexd lock` runs as a
// real process with real signals and a real child.
func TestMain(m *testing.M) {
	if os.Getenv("MUTEXD_TEST_BE_MUTEXD") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// fakeDaemon is a control socket that answers the lock calls as a test
// says, and records what it was asked.
type fakeDaemon struct {
	path    string
	mu      sync.Mutex
	calls   []string    // "acquire", "renew", "release", in order
	times   []time.Time // when each call came
	acquire func(r *http.Request) (any, error)
	renew   func(r *http.Request) (any, error)
	release func(r *http.Request) (any, error)
	status  func(r *http.Request) (any, error) // GET /v1/status (default: a healthy daemon's, empty)
	locks   func(r *http.Request) (any, error) // GET /v1/locks (default: no lock)
}

func newFakeDaemon(t *testing.T) *fakeDaemon {
	t.Helper()
	dir, err := os.MkdirTemp("", "mxt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &fakeDaemon{path: filepath.Join(dir, "control.sock")}
	f.acquire = func(*http.Request) (any, error) {
		return grantView{Request: "9-1", Lock: "db", Fence: 42, LeaseMS: 3000, LeaseLeftMS: 2990, Generation: 1 << 32}, nil
	}
	f.renew = func(*http.Request) (any, error) { return renewView{LeaseLeftMS: 2990, Fence: 42}, nil }
	f.release = func(*http.Request) (any, error) { return releaseView{Was: "held"}, nil }
	f.status = func(*http.Request) (any, error) { return map[string]any{}, nil }
	f.locks = func(*http.Request) (any, error) { return locksView{Incarnation: 9, Locks: []mutex.LockStatus{}}, nil }
	s, err := ctl.Listen(f.path, ctl.ListenOptions{Grace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []string{"acquire", "renew", "release"} {
		s.Handle(http.MethodPost, "/v1/locks/{name}/"+call, func(r *http.Request) (any, error) {
			f.mu.Lock()
			f.calls = append(f.calls, call)
			f.times = append(f.times, time.Now())
			h := map[string]func(*http.Request) (any, error){"acquire": f.acquire, "renew": f.renew, "release": f.release}[call]
			f.mu.Unlock()
			return h(r)
		})
	}
	for call, h := range map[string]*func(*http.Request) (any, error){"status": &f.status, "locks": &f.locks} {
		s.Handle(http.MethodGet, "/v1/"+call, func(r *http.Request) (any, error) {
			f.mu.Lock()
			f.calls = append(f.calls, call)
			f.times = append(f.times, time.Now())
			h := *h
			f.mu.Unlock()
			return h(r)
		})
	}
	go s.Serve()
	t.Cleanup(func() { s.Close() })
	return f
}

// firstRenewalConfirms makes the daemon confirm the first renewal with a
// whole lease and answer the later ones with then: whether the grant's
// answer came quickly (the keeper's renewal is the first) or late on a
// loaded host (mutexd lock anchors the deadline with a renewal at once),
// the lock is held, with the command running, when the renewals start to
// fail.
func (f *fakeDaemon) firstRenewalConfirms(lease time.Duration, then func(*http.Request) (any, error)) {
	var n int
	f.renew = func(r *http.Request) (any, error) {
		f.mu.Lock()
		n++
		first := n == 1
		f.mu.Unlock()
		if first {
			return renewView{LeaseLeftMS: lease.Milliseconds(), Fence: 42}, nil
		}
		return then(r)
	}
}

// first returns when call first came (zero if never).
func (f *fakeDaemon) first(call string) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, c := range f.calls {
		if c == call {
			return f.times[i]
		}
	}
	return time.Time{}
}

func (f *fakeDaemon) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeDaemon) set(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

// lockProc starts `mutexd lock` against f.
func lockProc(t *testing.T, f *fakeDaemon, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"lock", "--control", f.path}, args...)...)
	cmd.Env = append(os.Environ(), "MUTEXD_TEST_BE_MUTEXD=1")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = os.Stdout, &stderr
	// A child left behind (it runs in its own process group) may hold
	// stderr open: Wait does not wait for it longer than this.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			kill(cmd)
			cmd.Wait()
		}
	})
	return cmd, &stderr
}

// kill sends SIGKILL to `mutexd lock` and to its children's process
// groups, which it would have killed itself. (Each thread of a Go process
// lists the children it forked.)
func kill(cmd *exec.Cmd) {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", cmd.Process.Pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		for _, f := range strings.Fields(string(b)) {
			if child, err := strconv.Atoi(f); err == nil {
				syscall.Kill(-child, syscall.SIGKILL)
			}
		}
	}
	cmd.Process.Kill()
}

// exitWithin is how long a `mutexd lock` may take to exit (or anything
// else here to happen) before the test gives up on it: no test's schedule
// comes near it (the longest lease here is 2 s), and a lock that failed to
// cut a child short would hold it for the hour of --grace or of the
// child's sleep.
const exitWithin = time.Minute

// exitCode waits for cmd (at most exitWithin: then it is killed and the
// test fails) and returns its exit code.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(exitWithin):
		kill(cmd)
		<-done
		t.Fatalf("mutexd lock %q still running after %v: killed", cmd.Args[1:], exitWithin)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode()
}

func waitFor(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(exitWithin)
	for {
		if b, err := os.ReadFile(path); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never written", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLockRunsCommand: the child sees the lock and fence, its exit code
// becomes mutexd lock's, and the lock is released after it; flags after
// NAME are read as flags.
func TestLockRunsCommand(t *testing.T) {
	f := newFakeDaemon(t)
	out := filepath.Join(t.TempDir(), "env")
	var asked acquireRequest
	f.set(func() {
		f.acquire = func(r *http.Request) (any, error) {
			if err := json.NewDecoder(r.Body).Decode(&asked); err != nil {
				return nil, err
			}
			return grantView{Request: "9-1", Lock: r.PathValue("name"), Fence: 42, LeaseMS: 2000, LeaseLeftMS: 1990}, nil
		}
	})
	cmd, stderr := lockProc(t, f, "db", "--timeout", "5s", "--lease", "2s", "--",
		"sh", "-c", `echo "$MUTEXD_LOCK $MUTEXD_FENCE" > `+out+`; exit 7`)
	if code := exitCode(t, cmd); code != 7 {
		t.Fatalf("exit %d, want the child's 7; stderr: %s", code, stderr)
	}
	if got := waitFor(t, out); got != "db 42\n" {
		t.Errorf("child's environment: %q", got)
	}
	if got := strings.Join(f.called(), ","); got != "acquire,release" {
		t.Errorf("calls %s", got)
	}
	if asked.TimeoutMS != 5000 || asked.LeaseMS != 2000 || !strings.Contains(asked.Client, "sh -c") {
		t.Errorf("acquire asked %+v", asked)
	}
}

// TestLockChildSignalled: a child that dies of signal N makes mutexd lock
// exit 128+N, like a shell.
func TestLockChildSignalled(t *testing.T) {
	f := newFakeDaemon(t)
	cmd, stderr := lockProc(t, f, "db", "--", "sh", "-c", "kill -KILL $$")
	if code := exitCode(t, cmd); code != 128+9 {
		t.Fatalf("exit %d, want 137; stderr: %s", code, stderr)
	}
	cmd, _ = lockProc(t, f, "db", "--", "/nonexistent/cmd")
	if code := exitCode(t, cmd); code != 127 {
		t.Errorf("missing command: exit %d, want 127", code)
	}
}

// TestLockForwardsSignals: signals sent to mutexd lock reach the child.
func TestLockForwardsSignals(t *testing.T) {
	f := newFakeDaemon(t)
	dir := t.TempDir()
	ready, got := filepath.Join(dir, "ready"), filepath.Join(dir, "got")
	cmd, stderr := lockProc(t, f, "db", "--", "sh", "-c",
		`trap 'echo usr1 >> `+got+`' USR1; trap 'echo hup >> `+got+`; exit 3' HUP; echo ok > `+ready+`; while :; do sleep 0.01; done`)
	waitFor(t, ready)
	cmd.Process.Signal(syscall.SIGUSR1)
	deadline := time.Now().Add(exitWithin)
	for b, _ := os.ReadFile(got); !bytes.Contains(b, []byte("usr1")); b, _ = os.ReadFile(got) {
		if time.Now().After(deadline) {
			t.Fatal("SIGUSR1 did not reach the child")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	if code := exitCode(t, cmd); code != 3 {
		t.Fatalf("exit %d, want 3 (the child's answer to SIGHUP); stderr: %s", code, stderr)
	}
}

// childThatHangs ignores SIGTERM and starts a grandchild that does the
// same; both would sleep for an hour: only SIGKILL ends them before
// exitWithin. Every process of theirs has mark in its command line (the
// sleep's length), so survivors can be found whenever the kill came, even
// before the child got to start its own child on a loaded host.
func childThatHangs(t *testing.T) (argv []string, mark string) {
	mark = fmt.Sprintf("3600.%d%d", os.Getpid(), time.Now().UnixNano()%1e9)
	return []string{"sh", "-c", `trap '' TERM; sh -c "trap '' TERM; sleep ` + mark + `" & sleep ` + mark}, mark
}

// survivors lists the live processes whose command line holds mark (a
// zombie is dead: it waits only to be reaped), killing them if kill.
func survivors(mark string, kill bool) []string {
	var live []string
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		dir := filepath.Dir(st)
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		b, _ := os.ReadFile(st)
		i := bytes.LastIndexByte(b, ')')
		if !bytes.Contains(cmdline, []byte(mark)) || i < 0 || bytes.HasPrefix(bytes.TrimSpace(b[i+1:]), []byte("Z")) {
			continue
		}
		if kill {
			pid, _ := strconv.Atoi(filepath.Base(dir))
			syscall.Kill(pid, syscall.SIGKILL)
		}
		live = append(live, strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return live
}

// noSurvivors fails the test if a process the child started outlives it
// (waiting up to exitWithin for the ones a SIGKILL is ending): the kill
// must reach the child's whole process group.
func noSurvivors(t *testing.T, mark string) {
	t.Helper()
	for deadline := time.Now().Add(exitWithin); len(survivors(mark, false)) > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("the child's processes survived: %q: the kill must reach the process group", survivors(mark, true))
			return
		}
	}
}

// TestLockLostKillsBeforeDeadline: when a renewal says the lock is lost,
// the child's whole group is killed if it ignores SIGTERM, at the lease's
// end at the latest, even with a longer --grace; mutexd lock exits 76 and
// says why. The exact schedule (SIGKILL killMargin before the deadline
// counted from before the acquire) is TestKeeper's, without a clock; here
// the real processes show that it happens, with nothing timed against the
// wall clock: the child and its own child ignore SIGTERM and would sleep
// for an hour, --grace is an hour, so mutexd lock exits within exitWithin
// only if the lease's end cut the grace short and SIGKILL reached the whole
// group. The daemon confirms the first renewal (firstRenewalConfirms), so
// the lock is held with the child running when the renewal that says it
// is lost comes, whether or not a slow grant made mutexd lock anchor it.
//
// Which reason it gives is TestKeeper's too: the renewal's "lost" when it
// is heard in time, or, on a host so loaded that the answer comes after
// the point where mutexd lock must act on its own deadline, "no renewal
// confirmed in time". Either way the lock is lost and said so, and the
// kill comes at the lease's end, not the grace's.
func TestLockLostKillsBeforeDeadline(t *testing.T) {
	f := newFakeDaemon(t)
	const lease = 2 * time.Second
	f.set(func() {
		f.acquire = func(*http.Request) (any, error) {
			return grantView{Request: "9-1", Lock: "db", Fence: 42, LeaseMS: lease.Milliseconds(), LeaseLeftMS: lease.Milliseconds()}, nil
		}
		f.firstRenewalConfirms(lease, func(*http.Request) (any, error) {
			return nil, gone("lock \"db\" (fence 42) is lost: its lease expired before a renewal", "expired")
		})
	})
	child, mark := childThatHangs(t)
	t.Cleanup(func() { survivors(mark, true) })
	cmd, stderr := lockProc(t, f, append([]string{"db", "--grace", "1h", "--"}, child...)...)
	code := exitCode(t, cmd)
	if why := stderr.String(); code != exitLost || !strings.Contains(why, "lease expired") && !strings.Contains(why, "no renewal confirmed in time") {
		t.Fatalf("exit %d, want %d, saying the lock was lost; stderr: %s", code, exitLost, stderr)
	}
	// The renewals in between (confirmed, then lost) are as many as the
	// host had time for before mutexd lock's own deadline: on a quiet
	// host two, on a loaded one perhaps none (TestKeeper has them all).
	if got := strings.Join(f.called(), ","); !strings.HasPrefix(got, "acquire,") || !strings.HasSuffix(got, ",release") {
		t.Errorf("calls %s, want acquire, ..., release (best effort, after the child's death)", got)
	}
	noSurvivors(t, mark)
}

// TestLockUnreachableKillsBeforeDeadline: when renewals merely fail (the
// daemon hangs), mutexd lock keeps trying and ends the child before its
// own deadline (TestKeeper has the exact schedule; here, as in
// TestLockLostKillsBeforeDeadline, the child would sleep for an hour and
// ignores SIGTERM: mutexd lock exits only if it killed the child's group
// when no renewal came).
func TestLockUnreachableKillsBeforeDeadline(t *testing.T) {
	f := newFakeDaemon(t)
	const lease = 1500 * time.Millisecond
	f.set(func() {
		f.acquire = func(*http.Request) (any, error) {
			return grantView{Request: "9-1", Lock: "db", Fence: 42, LeaseMS: lease.Milliseconds(), LeaseLeftMS: lease.Milliseconds()}, nil
		}
		f.firstRenewalConfirms(lease, func(r *http.Request) (any, error) {
			io.Copy(io.Discard, r.Body)
			<-r.Context().Done() // a stopped daemon: no answer ever
			return nil, r.Context().Err()
		})
	})
	child, mark := childThatHangs(t)
	t.Cleanup(func() { survivors(mark, true) })
	argv := append([]string{"db", "--"}, child...)
	cmd, stderr := lockProc(t, f, argv...)
	code := exitCode(t, cmd)
	if code != exitLost || !strings.Contains(stderr.String(), "no renewal confirmed") {
		t.Fatalf("exit %d, want %d; stderr: %s", code, exitLost, stderr)
	}
	if got := strings.Join(f.called(), ","); !strings.HasPrefix(got, "acquire,") || !strings.HasSuffix(got, ",release") {
		t.Errorf("calls %s, want acquire, the renewals the host had time for before its deadline, release", got)
	}
	noSurvivors(t, mark)
}

// TestLockTimeout: --timeout expiry is exit 75; nothing runs.
func TestLockTimeout(t *testing.T) {
	f := newFakeDaemon(t)
	f.set(func() {
		f.acquire = func(*http.Request) (any, error) { return nil, ctl.Timeout(`lock "db" was not granted within 50ms`) }
	})
	mark := filepath.Join(t.TempDir(), "ran")
	cmd, stderr := lockProc(t, f, "db", "--timeout", "50ms", "--", "touch", mark)
	if code := exitCode(t, cmd); code != exitTimeout || !strings.Contains(stderr.String(), "not granted within 50ms") {
		t.Fatalf("exit %d, want %d; stderr: %s", code, exitTimeout, stderr)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("the command ran without the lock")
	}
}

// TestLockSaysDiskFailing: a grant that keeps `mutexd lock` waiting
// because the member holds it for its state write (the grant's fence must
// be on disk first) is explained on stderr, once, with the write's
// failure; a grant slow for any other reason says nothing, also while
// the daemon's writes fail: a busy lock, this client's request queued
// behind another's holder (a review: the disk was blamed for the queue,
// from the daemon's failing writes alone). The daemon answers the acquire
// only once the client has looked.
func TestLockSaysDiskFailing(t *testing.T) {
	for _, tc := range []struct {
		name          string
		failing, held bool
		said          bool
	}{
		{name: "granted, held for a failing write", failing: true, held: true, said: true},
		{name: "busy lock while a write fails", failing: true},
		{name: "busy lock, healthy daemon"},
	} {
		f := newFakeDaemon(t)
		asked := make(chan struct{})
		var once sync.Once
		f.set(func() {
			var client string // the acquire's, as the daemon keeps it
			f.status = func(*http.Request) (any, error) {
				defer once.Do(func() { close(asked) })
				if !tc.failing {
					return map[string]any{"persist": map[string]any{"writes": 3}}, nil
				}
				return map[string]any{"persist": map[string]any{"failing": map[string]any{
					"since": time.Now().Add(-time.Minute), "last": time.Now(), "file": "/var/lib/mutexd/core.state",
					"error": "read-only file system", "failed_writes": 812}}}, nil
			}
			f.locks = func(*http.Request) (any, error) {
				if !tc.held { // else the client asks for the status next
					defer once.Do(func() { close(asked) })
				}
				f.mu.Lock()
				defer f.mu.Unlock()
				ls := mutex.LockStatus{Name: "db", Fence: 41}
				if tc.held {
					ls.Holders = []mutex.RequestStatus{{ID: 2, Lock: "db", Client: client, Granted: true, Fence: 42, Unsaved: mutex.UnsavedGrant}}
				} else {
					ls.Holders = []mutex.RequestStatus{{ID: 1, Lock: "db", Client: "backup.sh", Granted: true, Fence: 41}}
					ls.Queue = []mutex.RequestStatus{{ID: 2, Lock: "db", Client: client}}
				}
				return locksView{Incarnation: 9, Locks: []mutex.LockStatus{ls}}, nil
			}
			grant := f.acquire
			f.acquire = func(r *http.Request) (any, error) {
				var req acquireRequest
				if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
					return nil, ctl.BadRequest(err.Error())
				}
				f.mu.Lock()
				client = req.Client
				f.mu.Unlock()
				select {
				case <-asked:
				case <-time.After(15 * time.Second): // a client that never asks: the test fails on what it said
				}
				if tc.failing {
					return nil, ctl.Timeout(`lock "db" was not granted within 1m0s`)
				}
				return grant(r)
			}
		})
		cmd, stderr := lockProc(t, f, "db", "--timeout", "1m", "--", "true")
		code := exitCode(t, cmd)
		said := strings.Contains(stderr.String(), "still waiting")
		want := 0
		if tc.failing {
			want = exitTimeout
		}
		switch {
		case code != want || said != tc.said:
			t.Errorf("%s: exit %d, want %d; said why %v, want %v; stderr: %s", tc.name, code, want, said, tc.said, stderr)
		case tc.said && (!strings.Contains(stderr.String(), "granted, but this member cannot write its state (/var/lib/mutexd/core.state: read-only file system") ||
			!strings.Contains(stderr.String(), "812 failed writes") || strings.Count(stderr.String(), "still waiting") != 1):
			t.Errorf("%s: the cause not said once; stderr: %s", tc.name, stderr)
		}
	}
}

// TestLockReleaseFails: the child's code stands when only the release
// fails, with a warning.
func TestLockReleaseFails(t *testing.T) {
	f := newFakeDaemon(t)
	f.set(func() {
		f.release = func(*http.Request) (any, error) { return nil, ctl.Unavailable("the daemon is shutting down") }
	})
	cmd, stderr := lockProc(t, f, "db", "--", "true")
	if code := exitCode(t, cmd); code != 0 || !strings.Contains(stderr.String(), "release failed") {
		t.Fatalf("exit %d, stderr: %s", code, stderr)
	}
}

// TestLockUsage: mistakes in the call are exit 2, with what to do.
func TestLockUsage(t *testing.T) {
	f := newFakeDaemon(t)
	for _, args := range [][]string{{}, {"db"}, {"db", "--"}, {"db", "--timeout", "-1s", "--", "true"}} {
		cmd, stderr := lockProc(t, f, args...)
		if code := exitCode(t, cmd); code != 2 || !strings.Contains(stderr.String(), "mutexd") {
			t.Errorf("mutexd lock %q: exit %d, stderr: %s", args, code, stderr)
		}
	}
	if len(f.called()) != 0 {
		t.Errorf("a usage error reached the daemon: %v", f.called())
	}
}

// TestLockAnchorsALateGrant: a grant that waited in the queue longer than
// its lease would leave a deadline (counted from before the request) in
// the past, or mostly spent; mutexd lock renews at once to count it from
// now, and runs the command.
//
// The grant says how much of the lease is left when it is answered
// (lease_left_ms): how long the request waited changes nothing else, so
// the daemon here answers at once with what a long wait would leave, and
// nothing is timed against the wall clock. The lease is a minute, so no
// renewal of the keeper's own comes while `true` runs. Without the anchor,
// the deadline that has passed ends the run before the command starts
// (exit 76), and the one mostly spent has no renewal before the command
// ends: either way the calls would not begin acquire, renew.
//
// A lease under 450 ms is anchored with more than two thirds left too when
// the keeper's SIGTERM would come before its first renewal: 268 ms of
// 400 ms renews at 89 ms and warns at 85 ms (TestQueuedGrantKeptAboveTheFloor
// runs it against the cores). Its `true` ends long before 89 ms, so
// without the anchor the calls are acquire, release.
func TestLockAnchorsALateGrant(t *testing.T) {
	for _, tc := range []struct {
		name        string
		lease, left time.Duration // left: of the lease, counted by the daemon from the grant
	}{
		{"waited longer than the lease: the deadline has passed", time.Minute, time.Millisecond},
		{"waited half the lease: less than two thirds left", time.Minute, time.Minute / 2},
		{"a short lease: SIGTERM due before the first renewal", 400 * time.Millisecond, 268 * time.Millisecond},
	} {
		lease := tc.lease
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeDaemon(t)
			f.set(func() {
				f.acquire = func(*http.Request) (any, error) {
					return grantView{Request: "9-1", Lock: "db", Fence: 42, LeaseMS: lease.Milliseconds(), LeaseLeftMS: tc.left.Milliseconds()}, nil
				}
				f.renew = func(*http.Request) (any, error) { return renewView{LeaseLeftMS: lease.Milliseconds(), Fence: 42}, nil }
			})
			cmd, stderr := lockProc(t, f, "db", "--", "true")
			if code := exitCode(t, cmd); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if got := strings.Join(f.called(), ","); !strings.HasPrefix(got, "acquire,renew,") || !strings.HasSuffix(got, "release") {
				t.Errorf("calls %s, want acquire, renew (to anchor the deadline), ..., release", got)
			}
		})
	}
}

// TestLockSignalWhileWaiting: a signal while the lock is awaited ends the
// wait (the daemon sees its client go) and exits 128+N; nothing runs.
func TestLockSignalWhileWaiting(t *testing.T) {
	f := newFakeDaemon(t)
	left := make(chan struct{})
	f.set(func() {
		f.acquire = func(r *http.Request) (any, error) {
			io.Copy(io.Discard, r.Body) // the server notices a closed connection once the body is read
			<-r.Context().Done()
			close(left)
			return nil, r.Context().Err()
		}
	})
	mark := filepath.Join(t.TempDir(), "ran")
	cmd, stderr := lockProc(t, f, "db", "--", "touch", mark)
	deadline := time.Now().Add(exitWithin)
	for len(f.called()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(t, cmd); code != 128+15 || !strings.Contains(stderr.String(), "gave up") {
		t.Fatalf("exit %d, want 143; stderr: %s", code, stderr)
	}
	select {
	case <-left:
	case <-time.After(exitWithin):
		t.Error("the daemon never saw the waiting client go")
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("the command ran")
	}
}

// TestLockShared: --shared asks the daemon for a shared lock; a daemon
// whose algorithm refuses it (400) makes mutexd lock fail with its words,
// and nothing runs.
func TestLockShared(t *testing.T) {
	f := newFakeDaemon(t)
	var got acquireRequest
	f.set(func() {
		f.acquire = func(r *http.Request) (any, error) {
			json.NewDecoder(r.Body).Decode(&got)
			return nil, ctl.BadRequest("shared mode is not offered by this algorithm")
		}
	})
	cmd, stderr := lockProc(t, f, "db", "--shared", "--", "true")
	if code := exitCode(t, cmd); code != 1 || !strings.Contains(stderr.String(), "shared mode is not offered") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got.Mode != mutex.Shared {
		t.Errorf("the daemon was asked for mode %v, want shared", got.Mode)
	}
}
