package timed

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
	"github.com/synclab/synclab/internal/testkit/testenv"
	"github.com/synclab/synclab/pkg/truetime"
)

// truetimeWatch reads the page every millisecond for d and checks every
// interval it gets against the ground truth: with --clock sim the true
// time is this machine's real clock, read just before and just after the
// read (the reader's own clock reading lies between the two).
type truetimeWatch struct {
	ok, unsynced         int
	firstWidth, lastWith time.Duration
	maxAge               time.Duration
	lastErr              error
}

func watchTrueTime(t *testing.T, r *truetime.Reader, d time.Duration, until func(truetimeWatch) bool) truetimeWatch {
	t.Helper()
	var w truetimeWatch
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		before := time.Now()
		rd, err := r.Read()
		after := time.Now()
		switch {
		case err == nil:
			if rd.Earliest.After(after) || rd.Latest.Before(before) {
				t.Fatalf("the true time [%v, %v] is outside the bound [%v, %v] (age %v)",
					before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano),
					rd.Earliest.Format(time.RFC3339Nano), rd.Latest.Format(time.RFC3339Nano), rd.Age)
			}
			width := rd.Latest.Sub(rd.Earliest)
			if w.ok == 0 {
				w.firstWidth = width
			}
			w.ok++
			w.lastWith = width
			w.maxAge = max(w.maxAge, rd.Age)
		case errors.Is(err, truetime.ErrUnsynchronised):
			w.unsynced++
		}
		w.lastErr = err
		if until != nil && until(w) {
			return w
		}
		time.Sleep(time.Millisecond)
	}
	return w
}

// TestTimedTrueTimeHoldsTruth: a timed on a simulated clock 50 ms off,
// drifting 30 ppm and wandering, follows a timed server on a true clock; a reader of
// its truetime page (pkg/truetime, as an application reads it) checks
// every interval against the true time: while the first slews absorb the
// 50 ms, until the bound is under 2 ms wide and 5 s more, beside two CPU
// hogs, then with the server gone (the bound widens with the drift),
// then with the daemon stopped (SIGSTOP: the page is no longer
// published; the reader widens it with its age, then refuses it as stale
// after --truetime-stale-after), and once the daemon continues; after a
// clean stop (SIGTERM) the page says so, and is refused at once.
func TestTimedTrueTimeHoldsTruth(t *testing.T) {
	c := newCluster(t, "timed", 2)
	addr := serveTimed(t, c, 1, 0, "--stratum", "8")
	c.StartAlone(2, "--clock", "sim", "--sim-offset", "50ms", "--sim-drift", "30", "--sim-wander", "0.5", "--server", addr.String(),
		"--minpoll", "0", "--maxpoll", "1", "--truetime-stale-after", "3s")
	page := strings.TrimSuffix(c.Control(2), ".sock") + ".truetime"
	c.Eventually("the truetime page", 5*time.Second, func() bool { _, err := os.Stat(page); return err == nil })
	fi, _ := os.Stat(page)
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("page mode %v, want 0640", fi.Mode().Perm())
	}
	r, err := truetime.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	// Slews: from before the first update until 5 s after it.
	w := watchTrueTime(t, r, 20*time.Second, func(w truetimeWatch) bool { return w.ok > 0 })
	if w.ok == 0 {
		t.Fatalf("no bound in 20 s: %v", w.lastErr)
	}
	st, err := c.Status(2)
	if err != nil {
		t.Fatal(err)
	}
	trueOff := time.Duration(st["true_offset_ns"].(float64))
	// Until the bound is tight (the filter full, the frequency learnt),
	// then 5 s more: the wander keeps the servo slewing all along.
	w = watchTrueTime(t, r, 60*time.Second, func(w truetimeWatch) bool { return w.ok > 0 && w.lastWith < 2*time.Millisecond })
	if w.lastWith >= 2*time.Millisecond {
		t.Fatalf("the bound is still %v wide after 60 s", w.lastWith)
	}
	first := w.firstWidth
	w = watchTrueTime(t, r, 5*time.Second, nil)
	t.Logf("synchronised with the clock %v off (width %v); then %d intervals held the true time, width %v last",
		trueOff, first, w.ok, w.lastWith)
	if trueOff < 10*time.Millisecond && trueOff > -10*time.Millisecond {
		t.Errorf("the clock was %v off at the first bound: the slews were not under test", trueOff)
	}
	if w.ok < 1000 || w.unsynced > 0 {
		t.Fatalf("%d readings held a bound, %d none (last error %v)", w.ok, w.unsynced, w.lastErr)
	}

	// Under load: two CPU hogs beside the daemons and the reader on this
	// 2-core machine; the daemon's publications come late, the reader is
	// preempted between its loads.
	for range 2 {
		hog := exec.Command("sh", "-c", "while :; do :; done")
		if err := hog.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { hog.Process.Kill(); hog.Wait() }()
		defer time.AfterFunc(4*time.Second, func() { hog.Process.Kill() }).Stop()
	}
	w = watchTrueTime(t, r, 4*time.Second, nil)
	t.Logf("beside two CPU hogs: %d intervals held the true time, width %v to %v, publications up to %v old", w.ok, w.firstWidth, w.lastWith, w.maxAge)
	if st, err := c.Status(2); err == nil {
		// The slews are counted from when the clock took them: the page
		// is widened only by the model's approximations (microseconds).
		if tt, ok := st["truetime"].(map[string]any); ok {
			miss, _ := tt["slew_miss_max_ns"].(float64)
			t.Logf("the largest slew the clock had left beyond the discipline's count: %v", time.Duration(miss))
		}
	}
	if w.ok < 100 || w.lastErr != nil {
		t.Fatalf("beside two CPU hogs: %d readings, last error %v", w.ok, w.lastErr)
	}

	// Source loss: the server goes; the bound widens and keeps holding.
	c.Procs[1].Process.Kill()
	c.Procs[1].Wait()
	w = watchTrueTime(t, r, 4*time.Second, nil)
	t.Logf("server gone: %d intervals held the true time, width %v to %v", w.ok, w.firstWidth, w.lastWith)
	if w.ok < 1000 || w.lastWith <= w.firstWidth || w.lastErr != nil {
		t.Fatalf("server gone: %d readings, width %v to %v, last error %v", w.ok, w.firstWidth, w.lastWith, w.lastErr)
	}

	// The daemon stops publishing: readers widen its last bound with the
	// age, then refuse it.
	p := c.Procs[2].Process
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer p.Signal(syscall.SIGCONT)
	w = watchTrueTime(t, r, 6*time.Second, func(w truetimeWatch) bool { return errors.Is(w.lastErr, truetime.ErrStale) })
	var te *truetime.Error
	if !errors.As(w.lastErr, &te) || te.Kind != truetime.ErrStale || te.Age < 3*time.Second || te.Age > 4*time.Second ||
		!strings.Contains(te.Error(), "is timed running?") {
		t.Fatalf("stopped daemon: last error %v, want ErrStale once 3 s old", w.lastErr)
	}
	if w.maxAge < 2500*time.Millisecond || w.lastWith <= w.firstWidth {
		t.Fatalf("stopped daemon: bound used up to %v old, width %v to %v: want it used, widening, until nearly stale", w.maxAge, w.firstWidth, w.lastWith)
	}
	t.Logf("daemon stopped: the bound held %v old (width %v to %v), then %v", w.maxAge.Round(time.Millisecond), w.firstWidth, w.lastWith, w.lastErr)

	// It continues: publications resume.
	if err := p.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	w = watchTrueTime(t, r, 5*time.Second, func(w truetimeWatch) bool { return w.ok > 100 })
	if w.ok <= 100 {
		t.Fatalf("after SIGCONT: %d readings, last error %v", w.ok, w.lastErr)
	}

	// timed now prints what the reader gets.
	out, errOut, code := timedCLI(t, "now", "--control", c.Control(2))
	if code != 0 || !strings.Contains(out, "Earliest") || !strings.Contains(out, "--clock sim") {
		t.Errorf("timed now: exit %d\n%s%s", code, out, errOut)
	}
	st, err = c.Status(2)
	if err != nil {
		t.Fatal(err)
	}
	if tt, _ := st["truetime"].(map[string]any); tt["path"] != page || tt["bound"] != true {
		t.Errorf("status truetime: %v", st["truetime"])
	}
	t.Logf("status: %v", st["truetime"])

	// A clean stop says so: readers refuse the page at once.
	p.Signal(syscall.SIGTERM)
	c.Procs[2].Wait()
	if _, _, err := r.Now(); !errors.Is(err, truetime.ErrStale) || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("after SIGTERM: %v", err)
	}
	_, errOut, code = timedCLI(t, "now", "--control", c.Control(2))
	if code != 1 || !strings.Contains(errOut, "stopped") {
		t.Errorf("timed now after SIGTERM: exit %d, %q", code, errOut)
	}
}

// TestTimedNowExits: `timed now` with no page (exit 1, saying where it
// looked), with a daemon that has no bound (exit 3; --json: 0, the kind
// named) and with --truetime-file none (not published: no file).
func TestTimedNowExits(t *testing.T) {
	c := newCluster(t, "timed", 2)
	_, errOut, code := timedCLI(t, "now", "--control", c.Control(1))
	if code != 1 || !strings.Contains(errOut, "h1.truetime") || !strings.Contains(errOut, "is timed running") {
		t.Errorf("no page: exit %d, %q", code, errOut)
	}
	ip := "127.0.0.33"
	silent := fmt.Sprintf("%s:%d", ip, e2e.FreePort(t, ip)) // nothing answers there
	c.StartAlone(1, "--clock", "sim", "--server", silent)
	c.StartAlone(2, "--clock", "sim", "--server", silent, "--truetime-file", "none")
	page := strings.TrimSuffix(c.Control(1), ".sock") + ".truetime"
	c.Eventually("the truetime page", 5*time.Second, func() bool { _, err := os.Stat(page); return err == nil })
	c.Eventually("the first publication", 5*time.Second, func() bool {
		_, errOut, code = timedCLI(t, "now", "--control", c.Control(1))
		return code == 3
	})
	if !strings.Contains(errOut, "not synchronised") {
		t.Errorf("unsynchronised: %q", errOut)
	}
	out, _, code := timedCLI(t, "now", "--json", "--control", c.Control(1))
	if code != 0 || !strings.Contains(out, `"kind": "unsynchronised"`) {
		t.Errorf("--json unsynchronised: exit %d\n%s", code, out)
	}
	c.Eventually("host 2 answering", 5*time.Second, func() bool { _, err := c.Status(2); return err == nil })
	if _, err := os.Stat(strings.TrimSuffix(c.Control(2), ".sock") + ".truetime"); err == nil {
		t.Errorf("--truetime-file none: the page was made")
	}
}

// TestTimedNowControlGroup: the page is readable by the control group's
// members and by nobody else who is not root. timed runs with
// --control-group 65534; `timed now` run as uid 65534 in group 65534
// reads it (exit 3: no bound, nothing to follow), as uid 65533 in group
// 65533 it is refused (exit 1, permission denied, saying who may read).
func TestTimedNowControlGroup(t *testing.T) {
	testenv.RequireRoot(t, "giving the page to a group and reading it as other users")
	c := newCluster(t, "timed", 1)
	ip := "127.0.0.33"
	silent := fmt.Sprintf("%s:%d", ip, e2e.FreePort(t, ip)) // nothing answers there
	c.StartAlone(1, "--clock", "sim", "--server", silent, "--control-group", "65534")
	page := strings.TrimSuffix(c.Control(1), ".sock") + ".truetime"
	c.Eventually("the truetime page", 5*time.Second, func() bool { _, err := os.Stat(page); return err == nil })
	fi, err := os.Stat(page)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Gid != 65534 || fi.Mode().Perm() != 0o640 {
		t.Fatalf("page gid %d mode %v, want 65534 and 0640", st.Gid, fi.Mode().Perm())
	}
	// The other users reach the page and the binary through 0755
	// directories.
	if err := os.Chmod(c.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(c.Dir, "timed")
	b, err := os.ReadFile(filepath.Join(e2e.BinDir(), "timed"))
	if err != nil || os.WriteFile(bin, b, 0o755) != nil {
		t.Fatalf("copying timed: %v", err)
	}
	as := func(id uint32) (string, int) {
		cmd := exec.Command(bin, "now", "--truetime-file", page)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: id, Gid: id, Groups: []uint32{}}}
		out, err := cmd.CombinedOutput()
		return string(out), e2e.ExitCode(err)
	}
	if out, code := as(65534); code != 3 || !strings.Contains(out, "not synchronised") {
		t.Errorf("as a member of the control group: exit %d\n%s", code, out)
	}
	if out, code := as(65533); code != 1 || !strings.Contains(out, "permission denied") || !strings.Contains(out, "--control-group") {
		t.Errorf("as another user: exit %d\n%s", code, out)
	}
}
