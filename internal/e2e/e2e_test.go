package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/app"
)

var binDir string

func TestMain(m *testing.M) {
	// The daemons started here never read this machine's own lab file
	// (/etc/synclab/lab.toml): a test that wants one names it.
	os.Setenv("SYNCLAB_LAB_FILE", "")
	if dir := os.Getenv("SYNCLAB_E2E_BIN"); dir != "" {
		// Binaries built elsewhere: an installed build, or an older one
		// to show what a test guards against.
		binDir = dir
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "synclab-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	build := exec.Command("go", "build", "-o", dir+"/", "github.com/synclab/synclab/cmd/...")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the binaries:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// freePort returns a port free for both UDP and TCP on ip.
func freePort(t *testing.T, ip string) int {
	t.Helper()
	for range 50 {
		u, err := net.ListenPacket("udp4", ip+":0")
		if err != nil {
			t.Fatal(err)
		}
		port := u.LocalAddr().(*net.UDPAddr).Port
		l, err := net.Listen("tcp4", fmt.Sprintf("%s:%d", ip, port))
		u.Close()
		if err == nil {
			l.Close()
			return port
		}
	}
	t.Fatal("no free port")
	return 0
}

type cluster struct {
	t       *testing.T
	daemon  string
	dir     string
	key     string // the cluster's key file; every member runs with it unless told otherwise
	members string
	procs   map[int]*exec.Cmd
	extra   map[int][]string // more flags per host
	env     map[int][]string // more environment per host
}

// newCluster prepares n hosts 127.0.0.(30+i) for daemon.
func newCluster(t *testing.T, daemon string, n int) *cluster {
	dir, err := os.MkdirTemp("", "sle2e")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, daemon: daemon, dir: dir, procs: map[int]*exec.Cmd{}, extra: map[int][]string{}, env: map[int][]string{}}
	var m []string
	for i := 1; i <= n; i++ {
		ip := fmt.Sprintf("127.0.0.%d", 30+i)
		m = append(m, fmt.Sprintf("%d=%s:%d", i, ip, freePort(t, ip)))
	}
	c.members = strings.Join(m, ",")
	c.key = keyFile(t, dir)
	t.Cleanup(func() {
		for i, p := range c.procs {
			if p.ProcessState == nil {
				p.Process.Kill()
				p.Wait()
			}
			if t.Failed() {
				b, _ := os.ReadFile(c.logPath(i))
				t.Logf("host %d log:\n%s", i, b)
			}
		}
		os.RemoveAll(dir)
	})
	return c
}

func (c *cluster) control(i int) string { return filepath.Join(c.dir, fmt.Sprintf("h%d.sock", i)) }
func (c *cluster) logPath(i int) string { return filepath.Join(c.dir, fmt.Sprintf("h%d.log", i)) }

func (c *cluster) start(i int, args ...string) {
	c.t.Helper()
	c.startAlone(i, append([]string{"--id", fmt.Sprint(i), "--members", c.members}, args...)...)
}

// startAlone starts host i without --id and --members (unless args has
// them): a daemon outside any cluster.
func (c *cluster) startAlone(i int, args ...string) {
	c.t.Helper()
	argv := append([]string{"run",
		"--control", c.control(i), "--state-dir", filepath.Join(c.dir, fmt.Sprintf("h%d.state", i)),
		"--tick", "5ms"}, args...)
	argv = append(argv, c.extra[i]...)
	if !slices.Contains(argv, "--key-file") && !slices.Contains(argv, "--insecure") {
		argv = append(argv, "--key-file", c.key)
	}
	cmd := exec.Command(filepath.Join(binDir, c.daemon), argv...)
	cmd.Env = append(os.Environ(), c.env[i]...)
	log, err := os.OpenFile(c.logPath(i), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.procs[i] = cmd
}

// status runs `X status --json` against host i.
func (c *cluster) status(i int) (map[string]any, error) {
	out, err := exec.Command(filepath.Join(binDir, c.daemon), "status", "--json", "--control", c.control(i)).Output()
	if err != nil {
		return nil, err
	}
	var st map[string]any
	return st, json.Unmarshal(out, &st)
}

// alive is how many other members host i believes alive.
func (c *cluster) alive(i int) int {
	st, err := c.status(i)
	if err != nil {
		return -1
	}
	members, _ := st["node"].(map[string]any)["core"].(map[string]any)["members"].([]any)
	n := 0
	for _, m := range members {
		// A core that lists this node itself (the token ring) counts it
		// alive; only the others are counted.
		if m := m.(map[string]any); m["alive"] == true && m["self"] != true {
			n++
		}
	}
	return n
}

func (c *cluster) eventually(what string, within time.Duration, cond func() bool) time.Duration {
	c.t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			c.t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

func TestMembersDetectKillAndRestart(t *testing.T) {
	c := newCluster(t, "mutexd", 3)
	for i := 1; i <= 3; i++ {
		c.start(i)
	}
	for i := 1; i <= 3; i++ {
		c.eventually(fmt.Sprintf("host %d sees both others", i), 5*time.Second, func() bool { return c.alive(i) == 2 })
	}
	st, _ := c.status(3)
	inc := st["node"].(map[string]any)["incarnation"].(float64)

	c.procs[3].Process.Signal(syscall.SIGKILL)
	c.procs[3].Wait()
	took := c.eventually("hosts 1 and 2 notice host 3 is gone", 5*time.Second, func() bool { return c.alive(1) == 1 && c.alive(2) == 1 })
	t.Logf("SIGKILL noticed after %v", took.Round(time.Millisecond))

	c.start(3)
	c.eventually("host 3 back everywhere", 5*time.Second, func() bool { return c.alive(1) == 2 && c.alive(2) == 2 && c.alive(3) == 2 })
	st, _ = c.status(3)
	if got := st["node"].(map[string]any)["incarnation"].(float64); got <= inc {
		t.Errorf("incarnation after restart %v, before %v: must grow", got, inc)
	}

	// Human status output.
	out, err := exec.Command(filepath.Join(binDir, "mutexd"), "status", "--control", c.control(1)).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("3 of 3 alive")) {
		t.Errorf("status output (%v):\n%s", err, out)
	}
}

func TestGracefulStopOnSIGTERM(t *testing.T) {
	c := newCluster(t, "mutexd", 1)
	c.start(1)
	c.eventually("control socket up", 5*time.Second, func() bool { _, err := c.status(1); return err == nil })
	c.procs[1].Process.Signal(syscall.SIGTERM)
	if err := c.procs[1].Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	if _, err := os.Stat(c.control(1)); !os.IsNotExist(err) {
		t.Errorf("control socket left behind: %v", err)
	}
	out, err := exec.Command(filepath.Join(binDir, "mutexd"), "status", "--control", c.control(1)).CombinedOutput()
	if code := exitCode(err); code != 1 || !bytes.Contains(out, []byte("cannot reach the daemon")) {
		t.Errorf("status of a stopped daemon: exit %d, %s", code, out)
	}
}

func TestWrongKeyIsDroppedAndCounted(t *testing.T) {
	c := newCluster(t, "mutexd", 2)
	writeKey := func(name, hex string) string {
		p := filepath.Join(c.dir, name)
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
	c.start(1, "--key-file", good, "--heartbeat", "100ms")
	c.start(2, "--key-file", bad, "--heartbeat", "100ms")
	c.eventually("host 1 counts bad MACs from host 2", 5*time.Second, func() bool {
		st, err := c.status(1)
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
	c.eventually("host 1 steps back, naming member 2's other key", 5*time.Second, func() bool {
		st, err := c.status(1)
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
	c.start(1, "--clock", "sim", "--sim-offset", "-150ms", "--sim-drift", "40")
	var off float64
	c.eventually("status", 5*time.Second, func() bool {
		st, err := c.status(1)
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
	out, err := exec.Command(filepath.Join(binDir, "timed"), "run", "--id", "1", "--members", "1=127.0.0.1:9",
		"--sim-offset", "1s").CombinedOutput()
	if code := exitCode(err); code != 2 || !bytes.Contains(out, []byte("need --clock sim")) {
		t.Errorf("--sim-offset without --clock sim: exit %d, %s", code, out)
	}
}

// keyFile writes a new cluster key in dir with the binaries' own keygen
// code: every cluster a test starts is authenticated, as a lab's is.
func keyFile(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "cluster.key")
	if _, err := app.WriteNewKeyFile(path, false); err != nil {
		t.Fatal(err)
	}
	return path
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}
