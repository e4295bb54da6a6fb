package timedlab

import (
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

// The whole lab in one table (issue 30, item 5): `timed status --cluster` on
// three namespace hosts (e2e.AgreeLab, e2e.ClusterTable), asked from a
// member that does not lead, with one member SIGKILLed and one
// misconfigured; the table, --json and the exit status (3) asserted.

// TestLabClusterStatusTimed: timed in Berkeley mode on simulated clocks,
// host 3 with another cluster name: its frames carry another cluster's
// ID, so it cannot take host 1's query; its row says what its
// authenticated announcements told. Host 2's clock starts 20 ms ahead of
// host 1's: the offset the table measures is the clocks' true difference
// (read before and after: Berkeley corrects them meanwhile), within the
// bound it states.
func TestLabClusterStatusTimed(t *testing.T) {
	a := e2e.NewAgreeLab(t, "timed", 7300)
	full := a.Members(nil)
	sim := func(offset string) []string {
		return []string{"--mode", "berkeley", "--clock", "sim", "--sim-offset", offset}
	}
	a.Start(1, full, sim("0s")...)
	a.Start(2, full, sim("20ms")...)
	a.Start(3, full, append(sim("0s"), "--cluster", "lab-b")...)
	a.Eventually("host 1 sees member 3 differ, and a master", 5*time.Second, func() bool {
		v := a.MemberView(1, 3)
		roles := map[any]bool{e2e.Field(a.Status(1), "node", "core", "cluster", "role"): true, e2e.Field(a.Status(2), "node", "core", "cluster", "role"): true}
		return v != nil && v["state"] == "differs" && roles["master"] && roles["worker"]
	})
	truth := func() int64 {
		return int64(e2e.Num(a.Status(2), "true_offset_ns") - e2e.Num(a.Status(1), "true_offset_ns"))
	}
	before := truth()
	human, tab, codes := a.Table(1, "500ms")
	after := truth()
	t.Logf("timed status --cluster on host 1 (true difference %v, then %v):\n%s", time.Duration(before), time.Duration(after), human)
	if codes != [2]int{3, 3} || tab.Answered != 2 {
		t.Errorf("exit statuses %v, answered %d", codes, tab.Answered)
	}
	r2, r3 := tab.Row(t, 2), tab.Row(t, 3)
	slack := int64(10 * time.Microsecond) // the NTP time format's rounding, and the sim clock's reading
	if c := r2.Clock; !r2.Reachable || !r2.Agrees || r2.Algorithm != "berkeley" || c == nil || !c.Wall || c.OffsetNs == nil ||
		*c.OffsetNs < min(before, after)-c.OffsetBoundNs-slack || *c.OffsetNs > max(before, after)+c.OffsetBoundNs+slack {
		t.Errorf("member 2's row %+v, clock %+v (true difference %v, then %v)", r2, r2.Clock, time.Duration(before), time.Duration(after))
	}
	if r2.Role != "master" && r2.Role != "worker" {
		t.Errorf("member 2's role %q", r2.Role)
	}
	if r3.Reachable || r3.Config != "differs" || !r3.Authenticated || len(r3.Differs) == 0 ||
		r3.Differs[0] != "member 3's cluster name differs (synclab here, lab-b there)" || !strings.Contains(r3.Why, "refuses this member's frames") {
		t.Errorf("member 3's row (another cluster name) %+v", r3)
	}
	e2e.Wants(t, human, "Member 3: no answer within 500ms: its configuration differs", "Member 3 DIFFERS: member 3's cluster name differs (synclab here, lab-b there).")
}
