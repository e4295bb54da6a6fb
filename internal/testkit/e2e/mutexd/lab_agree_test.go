package mutexd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

// Configuration agreement (issue 30, item 1) on three namespace hosts with
// the real binaries (e2e.AgreeLab): one host's configuration is wrong in
// one way. At every poll there are never two holders; every daemon that
// sees the disagreement says so at WARN, naming the member and what
// differs; status and metrics show it; the misconfigured host steps back
// and the majority goes on without it.

// TestLabAgreeMutexdOtherKey is where every administrator starts: host 3
// made its own key. Its frames fail authentication; their key fingerprint
// tells a different key from a forgery, and says which. Host 3 grants
// nothing (a lock there is refused at once, saying why); the others hold
// the lock one at a time.
func TestLabAgreeMutexdOtherKey(t *testing.T) {
	a := e2e.NewAgreeLab(t, "mutexd", 7400)
	other := filepath.Join(a.Dir, "other.key")
	if _, err := writeOtherKey(other); err != nil {
		t.Fatal(err)
	}
	full := a.Members(nil)
	a.Start(1, full)
	a.Start(2, full)
	a.Start(3, full, "--key-file", other)
	// Holders: every host runs a lock holder for the whole poll, in
	// turns; a holder records its interval, and no two may overlap.
	// Each ends (its lock's --timeout bounds its wait) before the marks
	// are read: one still queued when the test ended wrote into its
	// removed directory.
	marks := filepath.Join(a.Dir, "marks")
	var holders sync.WaitGroup
	held := func(i int) {
		holders.Add(1)
		go func() {
			defer holders.Done()
			exec.Command(filepath.Join(e2e.BinDir(), "mutexd"), "lock", "x", "--timeout", "6s", "--control", a.Control(i), "--",
				"sh", "-c", fmt.Sprintf(`echo "in %d $(date +%%s%%N)" >> %s; sleep 0.3; echo "out %d $(date +%%s%%N)" >> %s`, i, marks, i, marks)).Run()
		}()
	}
	a.Poll(3*time.Second, func(round int) {
		if round%8 == 0 {
			held(1)
			held(2)
		}
	})
	out, err := a.CLI(3, "lock", "x", "--timeout", "2s", "--", "true")
	if err == nil || !strings.Contains(string(out), "stepped back") {
		t.Errorf("a lock on host 3 (stepped back): %v: %s", err, out)
	}
	holders.Wait()
	checkNoOverlap(t, marks)
	fp := func(host int) string {
		s, _ := e2e.Field(a.Status(host), "node", "agreement", "key_id").(string)
		if len(s) < 8 {
			t.Fatalf("host %d's key id %q", host, s)
		}
		return s[:8] + ".."
	}
	k1, k3 := fp(1), fp(3)
	a.CheckDisagreement("member 3's key differs (key id "+k1+" here, "+k3+" there)", "member 1's key differs (key id "+k3+" here, "+k1+" there)")
	a.Warned(2, "condition=config_differs", "member=3", "member 3's key differs")
	if v := a.MemberView(1, 3); v["authenticated"] == true || v["auth_failures"] == nil {
		t.Errorf("host 1's view of 3: %v (a key difference is told from frames that fail authentication)", v)
	}
}

// writeOtherKey writes a second key file (another secret): host 3's own.
func writeOtherKey(path string) (string, error) {
	b := make([]byte, 32)
	f, err := os.Open("/dev/urandom")
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Read(b); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, []byte(fmt.Sprintf("1 hex:%x\n", b)), 0o600)
}

// checkNoOverlap reads the holders' marks: no two critical sections
// overlap, and there was at least one.
func checkNoOverlap(t *testing.T, path string) {
	t.Helper()
	b, _ := os.ReadFile(path)
	lines := strings.Fields(strings.ReplaceAll(string(b), "\n", " ; "))
	inside := 0
	entries := 0
	for i := 0; i+2 < len(lines); i += 4 {
		switch lines[i] {
		case "in":
			inside++
			entries++
		case "out":
			inside--
		}
		if inside > 1 {
			t.Fatalf("two holders at once:\n%s", b)
		}
	}
	if entries == 0 {
		t.Fatalf("nobody held the lock:\n%s", b)
	}
}

// TestLabAgreeMutexdHolderStopped: a member holding a lock steps back (the
// other member of two came back with another lease): its holder's next
// renewal is refused, saying why, and its command is stopped (exit 76)
// well before the lease would have run out at the other member.
func TestLabAgreeMutexdHolderStopped(t *testing.T) {
	a := e2e.NewAgreeLab(t, "mutexd", 7400)
	two := a.Members(nil, 3)
	a.Start(1, two)
	a.Start(2, two)
	a.Eventually("both run", 5*time.Second, func() bool { return a.Standing(1) == "agreed" && a.Standing(2) == "agreed" })
	marker := filepath.Join(a.Dir, "holding")
	lock := exec.Command(filepath.Join(e2e.BinDir(), "mutexd"), "lock", "x", "--control", a.Control(2), "--timeout", "10s", "--",
		"sh", "-c", "touch "+marker+"; sleep 30")
	var out strings.Builder
	lock.Stdout, lock.Stderr = &out, &out
	if err := lock.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- lock.Wait() }()
	t.Cleanup(func() { lock.Process.Kill() })
	a.Eventually("host 2 holds x", 10*time.Second, func() bool {
		_, err := os.Stat(marker)
		select {
		case err := <-done:
			t.Fatalf("mutexd lock ended before the lock was held: %v: %s", err, out.String())
		default:
		}
		return err == nil
	})

	a.Procs[1].Kill()
	a.Start(1, two, "--lease", "5s")
	stepped := time.Now()
	select {
	case err := <-done:
		if e2e.ExitCode(err) != 76 || !strings.Contains(out.String(), "stepped back") {
			t.Fatalf("the holder ended %v (exit %d): %s", err, e2e.ExitCode(err), out.String())
		}
		t.Logf("holder stopped %v after member 1 came back with another lease: %s", time.Since(stepped).Round(time.Millisecond), strings.TrimSpace(out.String()))
	case <-time.After(8 * time.Second):
		t.Fatalf("the holder still runs 8s after host 2 stepped back (standing %q): %s", a.Standing(2), out.String())
	}
}
