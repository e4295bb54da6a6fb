package mutexd

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

// The whole lab in one table (issue 30, item 5): `mutexd status --cluster` on
// three namespace hosts (e2e.AgreeLab, e2e.ClusterTable), asked from a
// member that does not lead, with one member SIGKILLed and one
// misconfigured; the table, --json and the exit status (3) asserted.

// TestLabClusterStatusMutexd: host 3 made its own key (it cannot answer
// authentically: its row is what agreement's evidence says), host 2 is
// SIGKILLed after a first look at the lab in which host 1 holds a lock.
func TestLabClusterStatusMutexd(t *testing.T) {
	a := e2e.NewAgreeLab(t, "mutexd", 7400)
	other := a.Dir + "/other.key"
	if _, err := writeOtherKey(other); err != nil {
		t.Fatal(err)
	}
	full := a.Members(nil)
	// A short heartbeat and lease: the ring skips member 3 sooner, and a
	// regenerated token waits a shorter lease out: host 1's lock comes
	// sooner.
	quick := []string{"--heartbeat", "200ms", "--lease", "1s"}
	a.Start(1, full, quick...)
	a.Start(2, full, quick...)
	a.Start(3, full, append([]string{"--key-file", other}, quick...)...)
	a.Eventually("host 1 sees member 3's key differ", 5*time.Second, func() bool {
		v := a.MemberView(1, 3)
		return v != nil && v["state"] == "differs" && a.Standing(1) == "agreed"
	})
	marker := a.Dir + "/holding"
	lock := exec.Command(filepath.Join(e2e.BinDir(), "mutexd"), "lock", "backup", "--timeout", "10s", "--control", a.Control(1), "--",
		"sh", "-c", "touch "+marker+"; sleep 30")
	if err := lock.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Process.Kill(); lock.Wait() })
	a.Eventually("host 1 holds backup", 10*time.Second, func() bool { return exec.Command("test", "-e", marker).Run() == nil })

	human, tab, codes := a.Table(1, "1s")
	t.Logf("mutexd status --cluster on host 1:\n%s", human)
	if codes != [2]int{3, 3} || tab.Answered != 2 {
		t.Errorf("exit statuses %v, answered %d", codes, tab.Answered)
	}
	r1, r2, r3 := tab.Row(t, 1), tab.Row(t, 2), tab.Row(t, 3)
	if e2e.Fact(r1, "held") != 1 || r1.Role != "backup" || r1.Algorithm != "tokenring" || r1.Clock == nil || r1.Clock.Wall {
		t.Errorf("member 1's row %+v", r1)
	}
	if !r2.Reachable || !r2.Agrees || e2e.Fact(r2, "held") != 0 || r2.Clock == nil || r2.Clock.OffsetNs != nil {
		t.Errorf("member 2's row %+v (a steady clock: no offset)", r2)
	}
	if r3.Reachable || r3.Config != "differs" || r3.Authenticated || len(r3.Differs) == 0 ||
		!strings.HasPrefix(r3.Differs[0], "member 3's key differs (key id ") || !strings.Contains(r3.Why, "no authenticated answer is possible") {
		t.Errorf("member 3's row (another key) %+v", r3)
	}
	if l := e2e.TableLine(human, 1); !strings.Contains(l, "1 (backup)") || !strings.Contains(l, "steady") {
		t.Errorf("member 1's line %q", l)
	}
	if l := e2e.TableLine(human, 3); !strings.Contains(l, "NONE, fails auth") || !strings.Contains(l, "DIFFERS") {
		t.Errorf("member 3's line %q", l)
	}
	e2e.Wants(t, human, "Member 3: no authenticated answer is possible", "Member 3 DIFFERS: member 3's key differs (key id ")

	a.Procs[2].Kill()
	human, tab, codes = a.Table(1, "300ms")
	r2 = tab.Row(t, 2)
	if codes != [2]int{3, 3} || tab.Answered != 1 || r2.Reachable || r2.HeardAgoNs == nil || !strings.Contains(r2.Why, "no answer within 300ms") {
		t.Errorf("after member 2's SIGKILL: exit %v, member 2's row %+v", codes, r2)
	}
	if l := e2e.TableLine(human, 2); !strings.Contains(l, "NONE, heard") {
		t.Errorf("member 2's line %q", l)
	}
	e2e.Wants(t, human, "1 of 3 members answered within 300ms", "Member 2: no answer within 300ms; last heard")
}
