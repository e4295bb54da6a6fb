package orderd

import (
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

// The whole lab in one table (issue 30, item 5): `orderd status --cluster` on
// three namespace hosts (e2e.AgreeLab, e2e.ClusterTable), asked from a
// member that does not lead, with one member SIGKILLed and one
// misconfigured; the table, --json and the exit status (3) asserted.

// TestLabClusterStatusOrderd: host 3's member list has member 2 at a wrong
// address (it answers host 1, and differs), host 2 (the sequencer) is
// SIGKILLed; host 1, a member that does not sequence, asks.
func TestLabClusterStatusOrderd(t *testing.T) {
	a := e2e.NewAgreeLab(t, "orderd", 7600)
	full := a.Members(nil)
	wrong := "10.255.255.254:7600"
	// Host 1 gives up on a silent sequencer only after 5 s, and not from
	// its closed port (--hint-probe 0, which would take 150 ms): it
	// still names it when it asks, as a member would in the moment
	// after it died.
	a.Start(1, full, "--leader-timeout", "5s", "--hint-probe", "0")
	a.Start(2, full)
	a.Start(3, a.Members(map[int]string{2: wrong}))
	// Member 3 hears member 1 differ and never hears 2 (the wrong
	// address): it waits out its start grace (500 ms: the tie may be the
	// order the announcements came in) before it steps back.
	a.Eventually("host 1 sees member 3 differ and 2 sequence, member 3 stepped back", 5*time.Second, func() bool {
		v := a.MemberView(1, 3)
		return v != nil && v["state"] == "differs" && e2e.Num(a.Status(1), "node", "core", "sequencer", "sequencer") == 2 &&
			a.Standing(3) == "stepped_back"
	})
	if out, err := a.CLI(1, "apply", "set greeting hello"); err != nil {
		t.Fatalf("send on host 1: %v: %s", err, out)
	}
	a.Procs[2].Kill()
	human, tab, codes := a.Table(1, "500ms")
	t.Logf("orderd status --cluster on host 1:\n%s", human)
	r1, r2, r3 := tab.Row(t, 1), tab.Row(t, 2), tab.Row(t, 3)
	if codes != [2]int{3, 3} || tab.Answered != 2 {
		t.Errorf("exit statuses %v, answered %d", codes, tab.Answered)
	}
	if r1.Role != "member" || e2e.Fact(r1, "sequencer") != 2 || e2e.Fact(r1, "delivered") < 1 || r1.Algorithm != "sequencer" {
		t.Errorf("member 1's row %+v", r1)
	}
	if r2.Reachable || r2.HeardAgoNs == nil || !strings.Contains(r2.Why, "no answer within 500ms") {
		t.Errorf("member 2's row (killed) %+v", r2)
	}
	h2 := a.Lab.Host(2).Addr().String() + ":7600"
	if !r3.Reachable || r3.Config != "differs" || !r3.SteppedBack || len(r3.Differs) == 0 ||
		r3.Differs[0] != "member 3's member list has member 2 at "+wrong+", ours at "+h2 {
		t.Errorf("member 3's row (misconfigured) %+v", r3)
	}
	if l := e2e.TableLine(human, 3); !strings.Contains(l, "DIFFERS, STEPPED BACK") || !strings.Contains(l, "stepped back") {
		t.Errorf("member 3's line %q", l)
	}
	if f := strings.Fields(e2e.TableLine(human, 1)); len(f) < 7 || f[2] != "(self)" || f[4] != "sequencer" || f[5] != "member" || f[6] != "2" {
		t.Errorf("member 1's line %q: want its order, role and sequencer", f)
	}
	e2e.Wants(t, human, "Member 2: no answer within 500ms; last heard", "Member 3 DIFFERS (configuration ")
}
