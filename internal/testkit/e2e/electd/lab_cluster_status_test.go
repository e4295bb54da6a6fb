package electd

import (
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

// The whole lab in one table (issue 30, item 5): `electd status --cluster` on
// three namespace hosts (e2e.AgreeLab, e2e.ClusterTable), asked from a
// member that does not lead, with one member SIGKILLed and one
// misconfigured; the table, --json and the exit status (3) asserted.

// TestLabClusterStatusElectd: host 3's member list lacks member 2 (it
// answers, and differs), host 2 (the leader) is SIGKILLed; host 1, a
// follower, asks.
func TestLabClusterStatusElectd(t *testing.T) {
	a := e2e.NewAgreeLab(t, "electd", 7500)
	full := a.Members(nil)
	// Host 1 gives up on a silent leader only after 5 s, and not from
	// its closed port (--hint-probe 0, which would take 150 ms): it
	// still names it when it asks, as a member would in the moment
	// after it died.
	a.Start(1, full, "--leader-timeout", "5s", "--hint-probe", "0")
	a.Start(2, full)
	a.Start(3, a.Members(nil, 2))
	// Member 3 never hears member 2 (not in its list): it waits out its
	// start grace (500 ms) before it steps back.
	a.Eventually("host 1 sees member 3 differ and 2 lead, member 3 stepped back", 5*time.Second, func() bool {
		v := a.MemberView(1, 3)
		views, _ := leaders(a)
		return v != nil && v["state"] == "differs" && views[1] == 2 && a.Standing(3) == "stepped_back"
	})
	a.Procs[2].Kill()
	killed := time.Now()
	human, tab, codes := a.Table(1, "500ms")
	t.Logf("electd status --cluster on host 1:\n%s", human)
	if codes != [2]int{3, 3} {
		t.Errorf("exit statuses %v, want 3 (a member did not answer, one differs)", codes)
	}
	if tab.Daemon != "electd" || tab.From != 1 || tab.Members != 3 || tab.Answered != 2 || tab.Complete {
		t.Errorf("table %+v", tab)
	}
	r1, r2, r3 := tab.Row(t, 1), tab.Row(t, 2), tab.Row(t, 3)
	if !r1.Self || !r1.Reachable || r1.Version == "" || r1.Algorithm != "bully" || r1.Clock == nil || !r1.Clock.Wall ||
		r1.Role != "follower" || e2e.Fact(r1, "leader") != 2 {
		t.Errorf("member 1's row %+v", r1)
	}
	if r2.Reachable || r2.HeardAgoNs == nil || time.Duration(*r2.HeardAgoNs) > time.Since(killed)+time.Second ||
		!strings.Contains(r2.Why, "no answer within 500ms") || !strings.Contains(r2.Why, "ago") || r2.Version != "" {
		t.Errorf("member 2's row (killed) %+v", r2)
	}
	if !r3.Reachable || r3.Agrees || r3.Config != "differs" || !r3.SteppedBack || r3.Standing != "stepped_back" ||
		len(r3.Differs) == 0 || r3.Differs[0] != "member 3's member list lacks member 2" || r3.Version == "" || r3.UptimeSeconds > 60 {
		t.Errorf("member 3's row (misconfigured) %+v", r3)
	}
	if _, ok := r3.Facts["term"]; !ok {
		t.Errorf("member 3's facts %v", r3.Facts)
	}
	// One clock, shared by every namespace: the offset measured is 0
	// within its bound, exactly.
	if c := r3.Clock; c == nil || c.OffsetNs == nil || max(*c.OffsetNs, -*c.OffsetNs) > c.OffsetBoundNs+1000 {
		t.Errorf("member 3's clock %+v", c)
	}
	e2e.Wants(t, human, `electd cluster "synclab" seen from member 1`, "2 of 3 members answered within 500ms",
		"Member 2: no answer within 500ms; last heard", "Member 3 DIFFERS (configuration ", "): member 3's member list lacks member 2.",
		"Member 3 stepped back:")
	if l := e2e.TableLine(human, 2); !strings.Contains(l, "NONE, heard") {
		t.Errorf("member 2's line %q", l)
	}
	if l := e2e.TableLine(human, 3); !strings.Contains(l, "DIFFERS, STEPPED BACK") || !strings.Contains(l, "stepped back") || !strings.Contains(l, "rtt ") {
		t.Errorf("member 3's line %q", l)
	}
	if l := e2e.TableLine(human, 1); !strings.Contains(l, "(self)") || !strings.Contains(l, "follower") || !strings.Contains(l, " by 2") {
		t.Errorf("member 1's line %q (its term shown as round by owner)", l)
	}
}
