package common

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

// TestNoKeyExits2: a daemon given other members and no key refuses to start
// and says what to run; with --insecure it starts, warns, and says so in its
// status. A daemon alone needs neither.
func TestNoKeyExits2(t *testing.T) {
	for _, d := range []string{"timed", "mutexd", "electd", "orderd"} {
		c := newCluster(t, d, 2)
		args := []string{"run", "--id", "1", "--members", c.Members, "--control", c.Control(1),
			"--state-dir", filepath.Join(c.Dir, "h1.state")}
		if d == "timed" {
			args = append(args, "--clock", "sim")
		}
		out, err := exec.Command(filepath.Join(e2e.BinDir(), d), args...).CombinedOutput()
		env := strings.ToUpper(d)
		for _, want := range []string{
			"needs a shared key (--key-file), or --insecure",
			d + " keygen /etc/synclab/cluster.key",
			"copy that same file to every member",
			env + "_KEY_FILE=/etc/synclab/cluster.key",
			"--insecure (" + env + "_INSECURE=true)",
		} {
			if e2e.ExitCode(err) != 2 || !strings.Contains(string(out), want) {
				t.Errorf("%s without a key: exit %d, want 2 and %q in:\n%s", d, e2e.ExitCode(err), want, out)
			}
		}
		insecure := []string{"--insecure"}
		if d == "timed" {
			insecure = append(insecure, "--clock", "sim") // never the real clock
		}
		c.Start(1, insecure...)
		c.Eventually(d+" --insecure up", 5*time.Second, func() bool { _, err := c.Status(1); return err == nil })
		st, _ := c.Status(1)
		if st["insecure"] != true || st["auth"] != false {
			t.Errorf("%s --insecure: status insecure %v auth %v", d, st["insecure"], st["auth"])
		}
		human, _ := exec.Command(filepath.Join(e2e.BinDir(), d), "status", "--control", c.Control(1)).CombinedOutput()
		if !strings.Contains(string(human), "authentication OFF (--insecure") {
			t.Errorf("%s status does not say it runs --insecure:\n%s", d, human)
		}
		c.Eventually(d+" warned", 2*time.Second, func() bool {
			b, _ := os.ReadFile(c.LogPath(1))
			return strings.Contains(string(b), "level=WARN") && strings.Contains(string(b), "without authentication (--insecure)")
		})
	}
}
