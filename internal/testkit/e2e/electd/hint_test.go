package electd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

// TestElectdLeaderKilledPortHint: three real electd on loopback, bully
// with a 3 s leader timeout (so that silence alone takes 2.5-3 s after
// the kill at 500 ms heartbeats) and --hint-probe at its default. Each
// follower holds a TCP link to the leader (its leader_watch). The leader
// is SIGKILLed; its kernel closes the link, the followers' transports
// say so, they probe it five times 30 ms apart, and member 2 leads well
// before the timeout could have told anyone: under 1.5 s here, about 0.2
// s on a quiet host. The survivors' status names the dead member's closed
// port and the log says why the leader was given up. With --hint-probe 0
// the same kill takes the timeout (the control run).
func TestElectdLeaderKilledPortHint(t *testing.T) {
	for _, tc := range []struct {
		name      string
		hintProbe string
		lo, hi    time.Duration
	}{
		{"hint", "30ms", 0, 1500 * time.Millisecond},
		{"timeout alone", "0", 2500 * time.Millisecond, 20 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, "electd", 3)
			for i := 1; i <= 3; i++ {
				c.Start(i, "--heartbeat", "500ms", "--leader-timeout", "3s", "--hint-probe", tc.hintProbe)
			}
			c.Eventually("all hosts agree on leader 3", electWithin, func() bool {
				lead, _ := c.agreed(1, 2, 3)
				return lead == 3
			})
			// The followers' watches have gone (at once on adopting
			// the leader): the leader has counted one from each.
			if tc.hintProbe != "0" {
				c.Eventually("leader 3 counts a watch from each follower", 5*time.Second, func() bool {
					st, err := c.Status(3)
					n, _ := e2e.Field(st, "node", "core", "received", "leader_watch").(float64)
					return err == nil && n >= 2
				})
			}
			c.Procs[3].Process.Kill()
			killed := time.Now()
			var took time.Duration
			for {
				if v, code := c.leader(2); code == 0 && v.Leader == 2 {
					took = time.Since(killed)
					break
				}
				if time.Since(killed) > tc.hi+5*time.Second {
					t.Fatalf("member 2 did not lead within %v of the kill", time.Since(killed))
				}
				time.Sleep(2 * time.Millisecond)
			}
			t.Logf("leader 3 SIGKILLed; member 2 leads %v later", took.Round(time.Millisecond))
			if took < tc.lo || took > tc.hi {
				t.Errorf("member 2 led %v after the kill: want %v to %v", took.Round(time.Millisecond), tc.lo, tc.hi)
			}
			if tc.hintProbe == "0" {
				return
			}
			out, err := exec.Command(filepath.Join(e2e.BinDir(), "electd"), "status", "--control", c.Control(2)).CombinedOutput()
			if err != nil {
				t.Fatalf("status: %v\n%s", err, out)
			}
			if want := "member 3: port closed at"; !strings.Contains(string(out), want) {
				t.Errorf("status of member 2 does not say %q:\n%s", want, out)
			}
			log, _ := os.ReadFile(c.LogPath(2))
			if want := fmt.Sprintf("leader %d's port closed", 3); !strings.Contains(string(log), want) {
				t.Errorf("member 2's log does not say %q:\n%s", want, log)
			}
		})
	}
}
