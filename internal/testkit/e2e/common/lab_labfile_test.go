package common

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"

	"github.com/synclab/synclab/internal/app"
	"github.com/synclab/synclab/internal/testkit/labnet"
)

// labFileText is a 3-host lab's lab file: every daemon of every host reads
// it and nothing else (no --id, no --members, no key flag): the hosts, the
// key beside the file, each daemon's port and settings, host 2's own
// settings for electd.
func labFileText(lab *labnet.Lab) string {
	var b strings.Builder
	b.WriteString("# a 3-host lab, the same file on every host\ncluster = \"e2e-lab\"\nkey-file = \"cluster.key\"\n\n")
	for _, h := range lab.Hosts() {
		fmt.Fprintf(&b, "[[host]]\nid = %d\naddress = \"%s\"\nname = \"pc%d\"\n", h.Index(), h.Addr(), h.Index())
		if h.Index() == 2 {
			b.WriteString("[host.electd]\nleader-timeout = \"350ms\"\n")
		}
		b.WriteString("\n")
	}
	b.WriteString(`[timed]
port = 7300
mode = "berkeley"
clock = "sim"
sim-offset = "-20ms"
sim-drift = 20

[mutexd]
algorithm = "central"

[electd]
heartbeat = "40ms"
leader-timeout = "300ms"

[orderd]
total = "sequencer"
`)
	return b.String()
}

// TestLabLabFile: four daemons on each of three namespace hosts, started
// with nothing but the lab file's path (and their own sockets): each finds
// its host by its interface address, its members, its cluster, its key and
// its settings in the one file, and they work together: one leader, the
// same replicated state, one Berkeley master, a lock. A host's own section
// beats the daemon's; an environment variable beats both. A file that says
// something contradictory is refused at start, naming the line.
func TestLabLabFile(t *testing.T) {
	labnet.Require(t)
	lab := labnet.New(t, 3)
	dir := lab.Dir()
	if _, err := app.WriteNewKeyFile(filepath.Join(dir, "cluster.key"), false); err != nil {
		t.Fatal(err)
	}
	labFile := filepath.Join(dir, "lab.toml")
	if err := os.WriteFile(labFile, []byte(labFileText(lab)), 0o644); err != nil {
		t.Fatal(err)
	}
	control := func(d string, i int) string { return filepath.Join(dir, fmt.Sprintf("%s-h%d.sock", d, i)) }
	for _, h := range lab.Hosts() {
		for _, d := range []string{"timed", "mutexd", "electd", "orderd"} {
			argv := e2e.NoSysTime(filepath.Join(e2e.BinDir(), d), "run", "--lab-file", labFile,
				"--control", control(d, h.Index()), "--state-dir", filepath.Join(dir, fmt.Sprintf("%s-h%d.state", d, h.Index())))
			var env []string
			if d == "electd" && h.Index() == 3 {
				env = []string{"ELECTD_LEADER_TIMEOUT=320ms"} // the environment beats the file
			}
			h.Start(t, d, argv, env)
		}
	}
	cli := func(d string, i int, args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(e2e.BinDir(), d), append([]string{args[0], "--control", control(d, i)}, args[1:]...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	status := func(d string, i int) map[string]any {
		out, err := cli(d, i, "status", "--json")
		var st map[string]any
		if err != nil || json.Unmarshal([]byte(out), &st) != nil {
			return nil
		}
		return st
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				for _, d := range []string{"timed", "mutexd", "electd", "orderd"} {
					out, _ := cli(d, 1, "status")
					t.Logf("%s status on host 1:\n%s", d, out)
				}
				t.Fatalf("not within 20s: %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// Every daemon knows which host it is, and why, and its cluster.
	for _, h := range lab.Hosts() {
		for _, d := range []string{"timed", "mutexd", "electd", "orderd"} {
			var st map[string]any
			eventually(fmt.Sprintf("%s on host %d answers", d, h.Index()), func() bool { st = status(d, h.Index()); return st != nil })
			want := fmt.Sprintf("lab file %s, host %d (pc%d), address %s on %s", labFile, h.Index(), h.Index(), h.Addr(), h.Interface())
			members, _ := st["members"].([]any)
			if st["config_source"] != want || st["id"] != float64(h.Index()) || len(members) != 3 || st["cluster"] != "e2e-lab" || st["auth"] != true {
				t.Errorf("%s on host %d: config_source %v, id %v, %d members, cluster %v, auth %v; want %q, %d, 3, e2e-lab, true",
					d, h.Index(), st["config_source"], st["id"], len(members), st["cluster"], st["auth"], want, h.Index())
			}
		}
	}

	// electd: one leader everywhere (bully: the highest, 3), with the
	// section's timeouts.
	eventually("every electd follows leader 3", func() bool {
		for i := 1; i <= 3; i++ {
			out, err := cli("electd", i, "leader", "--json")
			var v struct{ Leader uint32 }
			if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Leader != 3 {
				return false
			}
		}
		return true
	})
	// The section's leader timeout; host 2's own; host 3's environment.
	for i, want := range map[int]time.Duration{1: 300 * time.Millisecond, 2: 350 * time.Millisecond, 3: 320 * time.Millisecond} {
		core, _ := status("electd", i)["node"].(map[string]any)["core"].(map[string]any)
		if d, _ := core["detail"].(map[string]any); d["leader_timeout_ns"] != float64(want) || d["heartbeat_ns"] != float64(40*time.Millisecond) {
			t.Errorf("electd on host %d: leader timeout %v, heartbeat %v; want %v and the section's 40ms", i, d["leader_timeout_ns"], d["heartbeat_ns"], want)
		}
	}

	// orderd: the replicated state, the same everywhere.
	eventually("orderd applies on host 1", func() bool {
		out, err := cli("orderd", 1, "apply", "--timeout", "3s", "deposit 7")
		return err == nil && strings.Contains(out, "balance 7.00")
	})
	eventually("every orderd holds the deposit", func() bool {
		for i := 1; i <= 3; i++ {
			if out, err := cli("orderd", i, "state"); err != nil || !strings.Contains(out, "balance 7.00") {
				return false
			}
		}
		return true
	})

	// mutexd: the section's algorithm, and a lock.
	if out, err := cli("mutexd", 2, "lock", "--timeout", "10s", "lab", "--", "true"); err != nil {
		t.Errorf("mutexd lock on host 2: %v %s", err, out)
	}
	if core, _ := status("mutexd", 2)["node"].(map[string]any)["core"].(map[string]any); core["algorithm"] != "central" {
		t.Errorf("mutexd's algorithm %v, want the lab file's central", core["algorithm"])
	}

	// timed: Berkeley among the three (the section's port and mode), on
	// simulated clocks (its clock, started 20 ms off).
	eventually("one Berkeley master, agreed, on simulated clocks", func() bool {
		var master any
		for i := 1; i <= 3; i++ {
			st := status("timed", i)
			if st == nil || st["clock"].(map[string]any)["kind"] != "sim" {
				return false
			}
			cl, _ := st["node"].(map[string]any)["core"].(map[string]any)["cluster"].(map[string]any)
			if cl == nil || cl["master"] == float64(0) || (master != nil && cl["master"] != master) {
				return false
			}
			master = cl["master"]
		}
		return true
	})

	// A contradictory file is refused at start, in one line naming it.
	bad := filepath.Join(dir, "bad.toml")
	text := strings.Replace(labFileText(lab), "[electd]\n", "[electd]\nport = 7400\n", 1)
	if err := os.WriteFile(bad, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := lab.Host(1).Run(t, filepath.Join(e2e.BinDir(), "electd"), "run", "--lab-file", bad, "--control", filepath.Join(dir, "bad.sock"), "--state-dir", filepath.Join(dir, "bad.state"))
	if e2e.ExitCode(errorsUnwrap(err)) != 2 || !strings.Contains(out, bad+":") || !strings.Contains(out, "electd.port 7400 on host 1 (pc1) is mutexd's too") {
		t.Errorf("a contradictory lab file: %v\n%s", err, out)
	}
}

// errorsUnwrap is the *exec.ExitError inside a labnet.CmdError.
func errorsUnwrap(err error) error {
	if ce, ok := err.(*labnet.CmdError); ok {
		return ce.Err
	}
	return err
}
