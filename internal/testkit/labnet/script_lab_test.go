package labnet_test

import (
	"crypto/rand"
	"encoding/hex"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synclab/synclab/internal/testkit/labnet"
)

// TestLabScript drives scripts/lab.sh, the shell twin of this package, through
// a whole life: up, exec, partition, loss, status, heal, down, down again.
func TestLabScript(t *testing.T) {
	labnet.Require(t)
	script, err := filepath.Abs("../../../scripts/lab.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"bridge", "switch"} {
		t.Run(mode, func(t *testing.T) {
			var b [3]byte
			rand.Read(b[:])
			prefix := "sh" + hex.EncodeToString(b[:])
			lab := func(args ...string) (string, error) {
				out, err := exec.Command(script, append([]string{"--prefix", prefix}, args...)...).CombinedOutput()
				return string(out), err
			}
			must := func(args ...string) string {
				t.Helper()
				out, err := lab(args...)
				if err != nil {
					t.Fatalf("lab.sh %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return out
			}
			up := []string{"up", "3"}
			if mode == "switch" {
				up = append(up, "--switch")
			}
			t.Cleanup(func() { lab("down") })
			out := must(up...)
			if !strings.Contains(out, "h3 10.77.0.3 "+prefix+"-h3 eth0") {
				t.Errorf("up printed:\n%s", out)
			}
			if out, err := lab("up", "2"); err == nil {
				t.Errorf("second up with the same prefix succeeded:\n%s", out)
			}
			if out := must("exec", "h2", "ip", "-4", "-o", "addr", "show", "eth0"); !strings.Contains(out, "10.77.0.2/24") {
				t.Errorf("exec h2: %s", out)
			}
			must("partition", "1", "3")
			must("loss", "h2", "20")
			st := must("status")
			if mode == "bridge" && (!strings.Contains(st, "h1 -> h3") || !strings.Contains(st, `iifname "p2" meta l4proto udp numgen random mod 100 < 20 drop`)) {
				t.Errorf("status:\n%s", st)
			}
			if mode == "switch" {
				if !strings.Contains(st, "loss of UDP to and from h2: 20%") || !strings.Contains(st, "h1->h3") {
					t.Errorf("status:\n%s", st)
				}
				must("delay", "1", "2", "2ms", "100us")
				if st := must("status"); !strings.Contains(st, "2ms") {
					t.Errorf("status after delay:\n%s", st)
				}
			} else if out, err := lab("delay", "1", "2", "2ms"); err == nil {
				t.Errorf("delay on a bridged lab succeeded:\n%s", out)
			}
			must("heal")
			must("loss", "2", "0")
			must("down")
			if out := must("down"); !strings.Contains(out, "0 namespaces") {
				t.Errorf("second down: %s", out)
			}
			if out, _ := exec.Command("ip", "netns", "list").CombinedOutput(); strings.Contains(string(out), prefix) {
				t.Errorf("namespaces left:\n%s", out)
			}
		})
	}
}
