package timed

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

// timedCLI runs `timed ARGS...` and returns its stdout, stderr and exit
// code.
func timedCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(e2e.BinDir(), "timed"), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), e2e.ExitCode(err)
}

// TestTimedWaitsync: `timed waitsync` against timeds on simulated clocks,
// both outcomes. A client 40 ms off following a server is waited for from
// before it answers (its socket is not there yet) until it is
// synchronised within --max-error (exit 0); a server at a local stratum is
// the lab's reference at once. A client whose server never answers is
// given up on at --timeout (exit 1, saying why in the daemon's words, also
// when a loaded host answers the last look after the timeout: the look
// was cut and said "context deadline exceeded"), and so is a bound tighter
// than the client's; a client that never corrects the clock (--no-adjust)
// is given up on at once. `timed status` says the same with its exit code
// (0 synchronised, 3 not; --json 0 with any answer), and never shows a
// bound it does not have.
func TestTimedWaitsync(t *testing.T) {
	c := newCluster(t, "timed", 4)
	ip := "127.0.0.31"
	addr := fmt.Sprintf("%s:%d", ip, e2e.FreePort(t, ip))
	silent := fmt.Sprintf("127.0.0.33:%d", e2e.FreePort(t, "127.0.0.33")) // nothing listens there
	c.StartAlone(1, "--clock", "sim", "--serve", addr, "--stratum", "8")

	// Waiting starts before the client does.
	type result struct {
		out, errOut string
		code        int
		took        time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		out, errOut, code := timedCLI(t, "waitsync", "--control", c.Control(2), "--max-error", "100ms", "--timeout", "60s", "--interval", "100ms")
		done <- result{out, errOut, code, time.Since(start)}
	}()
	time.Sleep(300 * time.Millisecond)
	c.StartAlone(2, "--clock", "sim", "--sim-offset", "40ms", "--server", addr)
	c.StartAlone(3, "--clock", "sim", "--server", silent)
	c.StartAlone(4, "--clock", "sim", "--server", addr, "--no-adjust")

	r := <-done
	if r.code != 0 || !strings.HasPrefix(r.out, "synchronised to "+addr+" (stratum 8), error bound ±") {
		// What the bound is made of (the source's delay, dispersion and
		// jitter; the frequency's error) says whether the host was slow or
		// the client.
		st, _, _ := timedCLI(t, "status", "--control", c.Control(2))
		t.Fatalf("waitsync on the client: exit %d after %v, stdout %q, stderr %q; status:\n%s", r.code, r.took, r.out, r.errOut, st)
	}
	t.Logf("the client was synchronised within 100ms after %v: %s", r.took.Round(time.Millisecond), strings.TrimSpace(r.out))
	if out, errOut, code := timedCLI(t, "status", "--control", c.Control(2)); code != 0 || !strings.Contains(out, "Time     : synchronised to "+addr) {
		t.Errorf("status of the synchronised client: exit %d\n%s%s", code, out, errOut)
	}

	// The server is the lab's reference: nothing to wait for.
	if out, errOut, code := timedCLI(t, "waitsync", "--control", c.Control(1), "--timeout", "5s"); code != 0 || !strings.Contains(out, "the lab's reference") {
		t.Errorf("waitsync on the server: exit %d, %q %q", code, out, errOut)
	}

	// No answer: given up on at the timeout, saying why.
	start := time.Now()
	_, errOut, code := timedCLI(t, "waitsync", "--control", c.Control(3), "--timeout", "2s", "--interval", "100ms")
	if took := time.Since(start); code != 1 || took < 2*time.Second ||
		!strings.Contains(errOut, "not synchronised within 2s: unsynchronised: no answer yet from "+silent) {
		t.Errorf("waitsync on the client of a silent server: exit %d after %v, %q", code, took, errOut)
	}
	out, errOut, code := timedCLI(t, "status", "--control", c.Control(3))
	if code != 3 || !strings.Contains(out, "Time     : unsynchronised: no answer yet from "+silent) || strings.Contains(out, "±0") {
		t.Errorf("status of the unsynchronised client: exit %d (want 3)\n%s%s", code, out, errOut)
	}
	// --json says it in the document, and exits 0 with one.
	if out, _, code := timedCLI(t, "status", "--json", "--control", c.Control(3)); code != 0 || !strings.Contains(out, `"synchronized": false`) {
		t.Errorf("status --json of the unsynchronised client: exit %d, want 0\n%s", code, out)
	}

	// A bound tighter than the client's: given up on at the timeout.
	_, errOut, code = timedCLI(t, "waitsync", "--control", c.Control(2), "--max-error", "1ns", "--timeout", "1s", "--interval", "100ms")
	if code != 1 || !strings.Contains(errOut, "is above --max-error 1ns") {
		t.Errorf("waitsync --max-error 1ns: exit %d, %q", code, errOut)
	}

	// Never: at once.
	c.Eventually("the measuring client's daemon answers", 10*time.Second, func() bool {
		_, err := c.Status(4)
		return err == nil
	})
	start = time.Now()
	_, errOut, code = timedCLI(t, "waitsync", "--control", c.Control(4), "--timeout", "30s")
	if took := time.Since(start); code != 1 || took > 10*time.Second || !strings.Contains(errOut, "will never be synchronised here: --no-adjust") {
		t.Errorf("waitsync on a --no-adjust client: exit %d after %v, %q", code, took, errOut)
	}
}

// TestTimedServerIsThisHost: the README's master, serving at stratum 8
// with its own address among its servers (the old example file left
// TIMED_SERVER live; a shared lab file lists the master for everyone). It
// was told "bad_stratum: stratum 8 is no better than our local stratum 8"
// and polled itself; now the source is named as this host, never polled,
// and the master is the lab's reference, synchronised for scripts.
func TestTimedServerIsThisHost(t *testing.T) {
	c := newCluster(t, "timed", 1)
	ip := "127.0.0.31"
	addr := fmt.Sprintf("%s:%d", ip, e2e.FreePort(t, ip))
	c.StartAlone(1, "--clock", "sim", "--serve", addr, "--stratum", "8", "--server", addr)
	c.Eventually("the master answers", 10*time.Second, func() bool { _, err := c.Status(1); return err == nil })
	time.Sleep(time.Second) // a second of polling, were it polling itself
	out, errOut, code := timedCLI(t, "status", "--control", c.Control(1))
	for _, want := range []string{
		"Time     : the lab's reference, serving its own clock at local stratum 8",
		"self: this host: " + ip + " is this machine's loopback address, where this timed answers NTP on port",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q (exit %d):\n%s%s", want, code, out, errOut)
		}
	}
	if code != 0 || strings.Contains(out, "bad_stratum") || !strings.Contains(out, "Requests   : 0,") {
		t.Errorf("status: exit %d, the master polled itself or blamed the stratum:\n%s", code, out)
	}
	if out, errOut, code := timedCLI(t, "waitsync", "--control", c.Control(1), "--timeout", "5s"); code != 0 || !strings.Contains(out, "the lab's reference") {
		t.Errorf("waitsync on the master: exit %d, %q %q", code, out, errOut)
	}
	b, _ := os.ReadFile(c.LogPath(1))
	if !strings.Contains(string(b), "not following "+addr+": this host itself") {
		t.Errorf("the log does not say it:\n%s", b)
	}
}
