package common

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

func TestMembersDetectKillAndRestart(t *testing.T) {
	c := newCluster(t, "mutexd", 3)
	for i := 1; i <= 3; i++ {
		c.Start(i)
	}
	for i := 1; i <= 3; i++ {
		c.Eventually(fmt.Sprintf("host %d sees both others", i), 5*time.Second, func() bool { return c.Alive(i) == 2 })
	}
	st, _ := c.Status(3)
	inc := st["node"].(map[string]any)["incarnation"].(float64)

	c.Procs[3].Process.Signal(syscall.SIGKILL)
	c.Procs[3].Wait()
	took := c.Eventually("hosts 1 and 2 notice host 3 is gone", 5*time.Second, func() bool { return c.Alive(1) == 1 && c.Alive(2) == 1 })
	t.Logf("SIGKILL noticed after %v", took.Round(time.Millisecond))

	c.Start(3)
	c.Eventually("host 3 back everywhere", 5*time.Second, func() bool { return c.Alive(1) == 2 && c.Alive(2) == 2 && c.Alive(3) == 2 })
	st, _ = c.Status(3)
	if got := st["node"].(map[string]any)["incarnation"].(float64); got <= inc {
		t.Errorf("incarnation after restart %v, before %v: must grow", got, inc)
	}

	// Human status output.
	out, err := exec.Command(filepath.Join(e2e.BinDir(), "mutexd"), "status", "--control", c.Control(1)).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("3 of 3 alive")) {
		t.Errorf("status output (%v):\n%s", err, out)
	}
}

func TestGracefulStopOnSIGTERM(t *testing.T) {
	c := newCluster(t, "mutexd", 1)
	c.Start(1)
	c.Eventually("control socket up", 5*time.Second, func() bool { _, err := c.Status(1); return err == nil })
	c.Procs[1].Process.Signal(syscall.SIGTERM)
	if err := c.Procs[1].Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	if _, err := os.Stat(c.Control(1)); !os.IsNotExist(err) {
		t.Errorf("control socket left behind: %v", err)
	}
	out, err := exec.Command(filepath.Join(e2e.BinDir(), "mutexd"), "status", "--control", c.Control(1)).CombinedOutput()
	if code := e2e.ExitCode(err); code != 1 || !bytes.Contains(out, []byte("cannot reach the daemon")) {
		t.Errorf("status of a stopped daemon: exit %d, %s", code, out)
	}
}

func TestWrongKeyIsDroppedAndCounted(t *testing.T) {
	c := newCluster(t, "mutexd", 2)
	writeKey := func(name, hex string) string {
		p := filepath.Join(c.Dir, name)
		if err := os.WriteFile(p, []byte("1 "+hex+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := writeKey("good.key", strings.Repeat("ab", 32))
	bad := writeKey("bad.key", strings.Repeat("cd", 32))
	// mutexd's ring presumes every member alive at start and takes one
	// for down after 3.5 heartbeats of silence: short heartbeats keep the
	// test short.
	c.Start(1, "--key-file", good, "--heartbeat", "100ms")
	c.Start(2, "--key-file", bad, "--heartbeat", "100ms")
	c.Eventually("host 1 counts bad MACs from host 2", 5*time.Second, func() bool {
		st, err := c.Status(1)
		if err != nil {
			return false
		}
		d, _ := st["node"].(map[string]any)["dropped"].(map[string]any)
		return d["bad_mac"] != nil && d["bad_mac"].(float64) >= 3
	})
	// Two members, two keys: each announces its key's fingerprint, the
	// other's differs, and with two members that disagree both step back
	// (configuration agreement): neither grants anything, and each says
	// which key differs.
	c.Eventually("host 1 steps back, naming member 2's other key", 5*time.Second, func() bool {
		st, err := c.Status(1)
		if err != nil {
			return false
		}
		ag, _ := st["node"].(map[string]any)["agreement"].(map[string]any)
		ms, _ := ag["members"].([]any)
		return ag["standing"] == "stepped_back" && len(ms) == 1 && strings.Contains(fmt.Sprint(ms[0]), "member 2's key differs")
	})
}

func TestSimClockReportsGroundTruth(t *testing.T) {
	c := newCluster(t, "timed", 1)
	c.Start(1, "--clock", "sim", "--sim-offset", "-150ms", "--sim-drift", "40")
	var off float64
	c.Eventually("status", 5*time.Second, func() bool {
		st, err := c.Status(1)
		if err != nil {
			return false
		}
		off = st["true_offset_ns"].(float64)
		return true
	})
	// -150 ms plus at most a few seconds of 40 ppm drift.
	if off > -149.5e6 || off < -150.5e6 {
		t.Errorf("true_offset_ns = %.0f, want about -150 ms", off)
	}
	out, err := exec.Command(filepath.Join(e2e.BinDir(), "timed"), "run", "--id", "1", "--members", "1=127.0.0.1:9",
		"--sim-offset", "1s").CombinedOutput()
	if code := e2e.ExitCode(err); code != 2 || !bytes.Contains(out, []byte("need --clock sim")) {
		t.Errorf("--sim-offset without --clock sim: exit %d, %s", code, out)
	}
}
