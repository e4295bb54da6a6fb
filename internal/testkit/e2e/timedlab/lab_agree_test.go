package timedlab

import (
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

// Configuration agreement (issue 30, item 1) on three namespace hosts with
// the real binaries (e2e.AgreeLab): one host's configuration is wrong in
// one way. Once hosts 1 and 2 name one master there are never two; every daemon that
// sees the disagreement says so at WARN, naming the member and what
// differs; status and metrics show it; the misconfigured host steps back
// and the majority goes on without it.

// TestLabAgreeTimedBerkeleyOtherCluster: timed in Berkeley mode, host 3
// with another cluster name: host 3 steps back and never masters (nor
// corrects anyone); hosts 1 and 2 converge on one master and keep it.
func TestLabAgreeTimedBerkeleyOtherCluster(t *testing.T) {
	a := e2e.NewAgreeLab(t, "timed", 7300)
	full := a.Members(nil)
	berkeley := []string{"--mode", "berkeley", "--clock", "sim", "--sim-offset", "20ms"}
	a.Start(1, full, berkeley...)
	a.Start(2, full, berkeley...)
	a.Start(3, full, append([]string{"--cluster", "lab-b"}, berkeley...)...)
	// Host 3 never masters. Hosts 1 and 2 may both master at start, as
	// bully's start-up allows (host 2, tied with host 3 before it heard
	// host 1, answers no election meanwhile: host 1 elects itself and
	// yields at host 2's COORDINATOR); once both name one master, never
	// two again.
	var masters []int
	converged := false
	a.Poll(4*time.Second, func(round int) {
		masters = masters[:0]
		named := map[int]any{}
		for i := 1; i <= 3; i++ {
			st := a.Status(i)
			if e2e.Field(st, "node", "core", "cluster", "role") == "master" {
				masters = append(masters, i)
			}
			named[i] = e2e.Field(st, "node", "core", "cluster", "master")
		}
		if slices.Contains(masters, 3) {
			t.Fatalf("poll %d: host 3 masters (masters %v)", round, masters)
		}
		if !converged && len(masters) == 1 && named[1] != nil && named[1] == named[2] && named[1] == float64(masters[0]) {
			converged = true
		}
		if converged && len(masters) > 1 {
			t.Fatalf("poll %d: masters %v after hosts 1 and 2 both named %v", round, masters, named[1])
		}
	})
	if !converged || len(masters) != 1 {
		t.Fatalf("masters at the end: %v (converged: %v), want one of hosts 1 and 2, named by both", masters, converged)
	}
	a.CheckDisagreement("member 3's cluster name differs (synclab here, lab-b there)", "member 1's cluster name differs (lab-b here, synclab there)")
}
