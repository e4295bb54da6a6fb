package timedlab

import (
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

// Configuration agreement (issue 30, item 1) on three namespace hosts with
// the real binaries (e2e.AgreeLab): one host's configuration is wrong in
// one way. At every poll there are never two Berkeley masters; every daemon that
// sees the disagreement says so at WARN, naming the member and what
// differs; status and metrics show it; the misconfigured host steps back
// and the majority goes on without it.

// TestLabAgreeTimedBerkeleyOtherCluster: timed in Berkeley mode, host 3
// with another cluster name: host 3 steps back and never masters (nor
// corrects anyone); one master among hosts 1 and 2 at every poll.
func TestLabAgreeTimedBerkeleyOtherCluster(t *testing.T) {
	a := e2e.NewAgreeLab(t, "timed", 7300)
	full := a.Members(nil)
	berkeley := []string{"--mode", "berkeley", "--clock", "sim", "--sim-offset", "20ms"}
	a.Start(1, full, berkeley...)
	a.Start(2, full, berkeley...)
	a.Start(3, full, append([]string{"--cluster", "lab-b"}, berkeley...)...)
	var masters []int
	a.Poll(4*time.Second, func(round int) {
		masters = masters[:0]
		for i := 1; i <= 3; i++ {
			if e2e.Field(a.Status(i), "node", "core", "cluster", "role") == "master" {
				masters = append(masters, i)
			}
		}
		if len(masters) > 1 || slices.Contains(masters, 3) {
			t.Fatalf("poll %d: masters %v", round, masters)
		}
	})
	if len(masters) != 1 {
		t.Fatalf("masters at the end: %v, want one of hosts 1 and 2", masters)
	}
	a.CheckDisagreement("member 3's cluster name differs (synclab here, lab-b there)", "member 1's cluster name differs (lab-b here, synclab there)")
}
