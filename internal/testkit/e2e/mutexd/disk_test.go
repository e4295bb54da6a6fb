package mutexd

import (
	"bytes"
	"context"
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
	c.Extra[1] = []string{"--state-dir", state, "--lease", "2s"}
	c.Start(1)
	c.Eventually("mutexd up", 10*time.Second, func() bool { _, err := c.Status(1); return err == nil })
	cl := ctl.NewClient(c.Control(1), "mutexd")
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var g mutexGrant
	if err := cl.Post(ctx, "/v1/locks/a/acquire", map[string]any{}, &g); err != nil {
		t.Fatalf("acquire with a working disk: %v", err)
	}
	if err := cl.Post(ctx, "/v1/locks/a/release", map[string]any{"request": g.Request}, nil); err != nil {
		t.Fatal(err)
	}

	// The disk goes read-only (the daemon holds its lock file open for
	// writing, so a read-only bind of the state directory over itself:
	// every new write there fails with EROFS).
	for _, args := range [][]string{{"--bind", state, state}, {"-o", "remount,bind,ro", state}} {
		if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
			t.Fatalf("mount %v: %v: %s", args, err, out)
		}
	}
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
