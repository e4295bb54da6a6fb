package mutexd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/testkit/e2e"
	"github.com/synclab/synclab/internal/testkit/syncbuf"
	"github.com/synclab/synclab/internal/testkit/testenv"
)

// TestMutexdFailingDiskHoldsGrant runs a real one-member mutexd (the
// token ring) whose state directory goes read-only: a lock it has not
// used yet needs a new generation, which it cannot write, so its grant
// must not reach the client (a crash would lose the generation and the
// member would grant the same fence again); `mutexd lock` says why it
// waits; once the disk works the generation is written and the grant
// comes. Before the fix the grant left at once ("mutexd lock" ran its
// command with the disk still failing). Needs root (mount): skipped
// otherwise, a failure in CI (testenv).
func TestMutexdFailingDiskHoldsGrant(t *testing.T) {
	// The held grant must outlive the 2 s `mutexd lock` waits before it
	// says why (with a 2 s lease it was dropped around then: the client
	// answered "lease expired" under load).
	c, state, cl := diskMember(t, "20s")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var g mutexGrant
	if err := cl.Post(ctx, "/v1/locks/a/acquire", map[string]any{}, &g); err != nil {
		t.Fatalf("acquire with a working disk: %v", err)
	}
	if err := cl.Post(ctx, "/v1/locks/a/release", map[string]any{"request": g.Request}, nil); err != nil {
		t.Fatal(err)
	}

	// The disk goes read-only.
	readOnly(t, state)
	mark := filepath.Join(t.TempDir(), "ran")
	lock := exec.Command(filepath.Join(e2e.BinDir(), "mutexd"), "lock", "b", "--control", c.Control(1), "--timeout", "50s", "--", "touch", mark)
	var stderr syncbuf.Buffer
	lock.Stderr = &stderr
	if err := lock.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- lock.Wait() }()
	defer func() {
		if lock.ProcessState == nil {
			lock.Process.Kill()
			<-exited
		}
	}()
	said := time.Now().Add(40 * time.Second)
	for !strings.Contains(stderr.String(), "still waiting") {
		select {
		case err := <-exited:
			t.Fatalf("mutexd lock ended (%v) with the state directory read-only: the grant of a generation the member could not write reached its client; stderr: %s", err, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(said) {
			t.Fatalf("mutexd lock waited 40 s without saying why; stderr: %s", stderr.String())
		}
	}
	t.Logf("mutexd lock: %s", strings.TrimSpace(stderr.String()))
	for _, want := range []string{"cannot write its state", "read-only file system"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("mutexd lock's stderr does not say %q: %s", want, stderr.String())
		}
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the command ran while the state directory was read-only")
	}

	// The disk works again: the generation is written, the grant comes.
	if out, err := exec.Command("umount", state).CombinedOutput(); err != nil {
		t.Fatalf("umount the read-only bind: %v: %s", err, out)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("mutexd lock after the disk was repaired: %v; stderr: %s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("not granted 30 s after the disk was repaired; stderr: %s", stderr.String())
	}
	if _, err := os.Stat(mark); err != nil {
		t.Fatal("the command did not run once granted")
	}
}

// TestMutexdHeldGrantSaysSo runs a real one-member mutexd (the token
// ring) whose state directory goes read-only while a client holds lock a
// and another asks for lock b (a new generation, which the member cannot
// write: its grant is made and held for the write), and holds the
// daemon's words to what each client has at that instant: /v1/locks
// shows b granted and waiting for the state write, not held; the log
// says lock_grant_held for b and no lock_granted until the grant leaves;
// a renewal of a, held behind it, is answered 503 naming the state write
// and its error, not "whoever confirms it did not answer". Once the disk
// works, b is granted and logged so. Needs root (mount).
func TestMutexdHeldGrantSaysSo(t *testing.T) {
	c, state, cl := diskMember(t, "20s")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var a mutexGrant
	if err := cl.Post(ctx, "/v1/locks/a/acquire", map[string]any{}, &a); err != nil {
		t.Fatalf("acquire with a working disk: %v", err)
	}
	readOnly(t, state)
	type answer struct {
		g   mutexGrant
		err error
	}
	bc := ctl.NewClient(c.Control(1), "mutexd")
	defer bc.Close()
	got := make(chan answer, 1)
	go func() {
		var g mutexGrant
		err := bc.Post(ctx, "/v1/locks/b/acquire", map[string]any{"client": "b-client"}, &g)
		got <- answer{g, err}
	}()

	// /v1/locks: b granted, waiting for the state write.
	var holder map[string]any
	c.Eventually("lock b granted and held for the write", 20*time.Second, func() bool {
		var v struct {
			Locks []struct {
				Name    string           `json:"name"`
				Holders []map[string]any `json:"holders"`
			} `json:"locks"`
		}
		if err := cl.Get(ctx, "/v1/locks", &v); err != nil {
			return false
		}
		for _, l := range v.Locks {
			if l.Name == "b" && len(l.Holders) == 1 {
				holder = l.Holders[0]
				return holder["unsaved"] == "grant"
			}
		}
		return false
	})
	if holder["client"] != "b-client" {
		t.Errorf("b's holder %v, want b-client's request", holder)
	}
	select {
	case ans := <-got:
		t.Fatalf("b's acquire answered with the state directory read-only: %+v", ans)
	default:
	}

	// A renewal of a, held behind b's grant: the disk is said.
	err := cl.Post(ctx, "/v1/locks/a/renew", map[string]any{"request": a.Request}, nil)
	var ce *ctl.Error
	if !errors.As(err, &ce) || ce.Status != 503 || !strings.Contains(ce.Msg, "waits for this member's state write") ||
		!strings.Contains(ce.Msg, "read-only file system") || !strings.Contains(ce.Msg, state) {
		t.Errorf("renewal of a held for the write: %v, want 503 naming the state write, its error and %s", err, state)
	} else {
		t.Logf("renewal of a held for the write: %v", err)
	}

	// The log: b held, not granted.
	logged := func(event string) bool {
		b, _ := os.ReadFile(c.LogPath(1))
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "event="+event) && strings.Contains(line, "lock=b ") {
				return true
			}
		}
		return false
	}
	c.Eventually("lock_grant_held for b in the log", 10*time.Second, func() bool { return logged("lock_grant_held") })
	if logged("lock_granted") {
		t.Error("lock_granted for b logged while its grant waits for the state write")
	}

	if out, err := exec.Command("umount", state).CombinedOutput(); err != nil {
		t.Fatalf("umount the read-only bind: %v: %s", err, out)
	}
	select {
	case ans := <-got:
		if ans.err != nil {
			t.Fatalf("b after the disk was repaired: %v", ans.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("b not granted 30 s after the disk was repaired")
	}
	c.Eventually("lock_granted for b in the log", 10*time.Second, func() bool { return logged("lock_granted") })
}

// diskMember starts a one-member mutexd (the token ring) with --lease
// lease whose state directory is on a tmpfs of its own, and returns it,
// the directory and a client of its control socket (closed at the end).
// It needs root (mount): skipped otherwise, a failure in CI (testenv).
func diskMember(t *testing.T, lease string) (*cluster, string, *ctl.Client) {
	testenv.RequireRoot(t, "mounting a tmpfs for the state directory needs root")
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		testenv.Unavailable(t, "cannot mount a tmpfs for the state directory: %v: %s", err, bytes.TrimSpace(out))
	}
	state := filepath.Join(mnt, "mutexd")
	t.Cleanup(func() {
		exec.Command("umount", "-l", state).Run() // the read-only bind, if still there
		exec.Command("umount", "-l", mnt).Run()
	})
	c := newCluster(t, "mutexd", 1)
	c.Extra[1] = []string{"--state-dir", state, "--lease", lease}
	c.Start(1)
	c.Eventually("mutexd up", 10*time.Second, func() bool { _, err := c.Status(1); return err == nil })
	cl := ctl.NewClient(c.Control(1), "mutexd")
	t.Cleanup(func() { cl.Close() })
	return c, state, cl
}

// readOnly makes the state directory read-only. The daemon holds its
// lock file open for writing, so a read-only bind of the directory over
// itself: every new write there fails with EROFS; `umount state` ends it.
func readOnly(t *testing.T, state string) {
	for _, args := range [][]string{{"--bind", state, state}, {"-o", "remount,bind,ro", state}} {
		if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
			t.Fatalf("mount %v: %v: %s", args, err, out)
		}
	}
}
