package electd

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"

	"github.com/synclab/synclab/pkg/wire"
)

// The attacks of issue 29 on values read from the wire without a key
// (items 1 to 5): Lamport stamps, incarnations and lock names forged from
// another lab host with a member's source address, and a flood of
// half-sent requests on a metrics endpoint bound to a LAN address. Each
// test logs what it measured, which on main was the failure the issue
// describes; with a key the frames are bad MACs and change nothing.

// TestLabAttackLamportCutOff is issue 29's first attack on real electd
// daemons (bully): two frames "from 1" to member 3, the leader, each
// 2^40-1 ahead of its Lamport clock. On main member 3 merged both, its
// clock jumped by 2^41, and members 1 and 2 refused every later frame of
// it as lamport_ahead: they lost their leader and elected member 2 while
// member 3 still led (two leaders, for as long as member 3 ran). Now
// member 3 refuses both (nobody can have gone that far since member 1
// was last heard): no member refuses member 3, and member 3 leads on in
// its term, through a restart too.
func TestLabAttackLamportCutOff(t *testing.T) {
	e2e.ForEachSecurity(t, func(t *testing.T, keyed bool) {
		a := e2e.NewAttackLab(t, "electd", 7700, 3, keyed, func(int) []string {
			return []string{"--leader-timeout", e2e.AttackLeaderTimeout.String()}
		})
		// Member 3 first: the others' start-up elections then reach it,
		// and it knows their stamps (in a bully cluster at rest only the
		// leader sends).
		a.Start(3)
		a.Eventually("member 3 answers", 10*time.Second, func() bool { _, err := a.Status(3); return err == nil })
		a.Start(1)
		a.Start(2)
		var term uint64
		a.Eventually("the members agree on leader 3, which heard the others", 20*time.Second, func() bool {
			var lead uint32
			lead, term = a.AgreedLeader()
			return lead == 3 && e2e.PeerSeq(t, "electd", a.Control(3), 1) > 0 && e2e.PeerSeq(t, "electd", a.Control(3), 2) > 0
		})
		clk := a.LamportOf(3)
		const step = 1<<40 - 1
		a.ForgeBurst(
			e2e.Forged{From: 1, To: 3, Kind: wire.KindLeaderHeartbeat, Term: term, Payload: wire.LeaderHeartbeat{}, Lamport: clk + step},
			e2e.Forged{From: 1, To: 3, Kind: wire.KindLeaderHeartbeat, Term: term, Payload: wire.LeaderHeartbeat{}, Lamport: clk + 1 + 2*step})
		if keyed {
			a.Refused(3, 2)
		} else {
			a.Refused(3, 2, "node", "dropped", "lamport_ahead")
		}
		// Five seconds: on main members 1 and 2 gave member 3 up within
		// the leader timeout (1.5 s).
		split := 0
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if l, tm := a.AgreedLeader(); l != 3 || tm != term {
				split++
			}
		}
		refusing := e2e.Num(a.MustStatus(1), "node", "dropped", "lamport_ahead") + e2e.Num(a.MustStatus(2), "node", "dropped", "lamport_ahead")
		jump := a.LamportOf(3) - clk
		t.Logf("after the attack: member 3's clock moved %d; members 1 and 2 refused %v of member 3's frames (lamport_ahead); %d of 50 samples without leader 3 in term %#x agreed",
			jump, refusing, split, term)
		if refusing > 0 || split > 0 || jump > 1<<30 {
			t.Errorf("member 3 cut off: its clock moved %d, %v of its frames refused, %d samples without an agreed leader 3", jump, refusing, split)
		}
		refusedBefore := e2e.Num(a.MustStatus(1), "node", "dropped", "lamport_ahead")
		a.Procs[3].Kill()
		a.Start(3)
		a.Eventually("member 3 leads again after a restart", 15*time.Second, func() bool {
			a.Alive(3)
			l, _ := a.AgreedLeader()
			return l == 3
		})
		if n := e2e.Num(a.MustStatus(1), "node", "dropped", "lamport_ahead") - refusedBefore; n > 0 {
			t.Errorf("member 1 refused %v frames of member 3 after its restart", n)
		}
	})
}
