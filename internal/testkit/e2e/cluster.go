package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/app"
)

// FreePort returns a port free for both UDP and TCP on ip.
func FreePort(t *testing.T, ip string) int {
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

// Cluster is n hosts of one daemon on loopback (127.0.0.31 and up, free
// ports), sharing a key, each with its control socket, state directory and
// log in Dir; the processes it started are killed when the test ends, and
// their logs shown if it failed.
type Cluster struct {
	T       *testing.T
	Daemon  string
	Dir     string
	Key     string // the cluster's key file; every member runs with it unless told otherwise
	Members string
	Procs   map[int]*exec.Cmd
	Extra   map[int][]string // more flags per host
	Env     map[int][]string // more environment per host
	// Bin runs host i from another binary (an older build: a mixed
	// cluster) instead of the one under test.
	Bin map[int]string
}

// NewCluster prepares n hosts 127.0.0.(30+i) for daemon.
func NewCluster(t *testing.T, daemon string, n int) *Cluster {
	dir, err := os.MkdirTemp("", "sle2e")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{T: t, Daemon: daemon, Dir: dir, Procs: map[int]*exec.Cmd{}, Extra: map[int][]string{}, Env: map[int][]string{}}
	var m []string
	for i := 1; i <= n; i++ {
		ip := fmt.Sprintf("127.0.0.%d", 30+i)
		m = append(m, fmt.Sprintf("%d=%s:%d", i, ip, FreePort(t, ip)))
	}
	c.Members = strings.Join(m, ",")
	c.Key = KeyFile(t, dir)
	t.Cleanup(func() {
		for i, p := range c.Procs {
			if p.ProcessState == nil {
				p.Process.Kill()
				p.Wait()
			}
			if t.Failed() {
				b, _ := os.ReadFile(c.LogPath(i))
				t.Logf("host %d log:\n%s", i, b)
			}
		}
		os.RemoveAll(dir)
	})
	return c
}

// Control is host i's control socket.
func (c *Cluster) Control(i int) string { return filepath.Join(c.Dir, fmt.Sprintf("h%d.sock", i)) }

// LogPath is host i's log (stdout and stderr).
func (c *Cluster) LogPath(i int) string { return filepath.Join(c.Dir, fmt.Sprintf("h%d.log", i)) }

// Start starts host i as a member of the cluster, with args and Extra[i].
func (c *Cluster) Start(i int, args ...string) {
	c.T.Helper()
	c.StartAlone(i, append([]string{"--id", fmt.Sprint(i), "--members", c.Members}, args...)...)
}

// StartAlone starts host i without --id and --members (unless args has
// them): a daemon outside any cluster.
func (c *Cluster) StartAlone(i int, args ...string) {
	c.T.Helper()
	argv := append([]string{"run",
		"--control", c.Control(i), "--state-dir", filepath.Join(c.Dir, fmt.Sprintf("h%d.state", i)),
		"--tick", "5ms"}, args...)
	argv = append(argv, c.Extra[i]...)
	if !slices.Contains(argv, "--key-file") && !slices.Contains(argv, "--insecure") {
		argv = append(argv, "--key-file", c.Key)
	}
	bin := filepath.Join(binDir, c.Daemon)
	if b := c.Bin[i]; b != "" {
		bin = b
	}
	cmd := exec.Command(bin, argv...)
	cmd.Env = append(os.Environ(), c.Env[i]...)
	log, err := os.OpenFile(c.LogPath(i), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.T.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		c.T.Fatal(err)
	}
	c.Procs[i] = cmd
}

// Status runs `X status --json` against host i.
func (c *Cluster) Status(i int) (map[string]any, error) {
	out, err := exec.Command(filepath.Join(binDir, c.Daemon), "status", "--json", "--control", c.Control(i)).Output()
	if err != nil {
		return nil, err
	}
	var st map[string]any
	return st, json.Unmarshal(out, &st)
}

// Alive is how many other members host i believes alive.
func (c *Cluster) Alive(i int) int {
	st, err := c.Status(i)
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

// Eventually polls cond until it holds and returns how long that took,
// failing the test after within.
func (c *Cluster) Eventually(what string, within time.Duration, cond func() bool) time.Duration {
	c.T.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			c.T.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// KeyFile writes a new cluster key in dir with the binaries' own keygen
// code: every cluster a test starts is authenticated, as a lab's is.
func KeyFile(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "cluster.key")
	if _, err := app.WriteNewKeyFile(path, false); err != nil {
		t.Fatal(err)
	}
	return path
}

// ExitCode is the exit code of the command that returned err (-1: it did
// not exit).
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// Others are the hosts 1..n but except.
func Others(n, except int) []int {
	var hs []int
	for i := 1; i <= n; i++ {
		if i != except {
			hs = append(hs, i)
		}
	}
	return hs
}

// All are the hosts 1..n.
func All(n int) []int { return Others(n, 0) }

// AuthArgs is how a lab member is told its key: --key-file, or --insecure
// when key is "".
func AuthArgs(key string) []string {
	if key == "" {
		return []string{"--insecure"}
	}
	return []string{"--key-file", key}
}

// ShortDir is a temporary directory with a short path (unix socket paths
// are limited to 108 bytes), removed when the test ends.
func ShortDir(t *testing.T) string {
	d, err := os.MkdirTemp("", "slab")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}
