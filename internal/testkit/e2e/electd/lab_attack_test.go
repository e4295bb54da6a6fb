package electd

import (
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/forge"
	"github.com/synclab/synclab/internal/testkit/e2e"
	"github.com/synclab/synclab/internal/testkit/labnet"
	"github.com/synclab/synclab/pkg/wire"
)

// TestLabAttackElectdAbsurdTerm is the first attack: COORDINATOR
// and heartbeat "from 3" (the leader) with term 0xffffffff00000003 to the
// other members. electd used to panic half a second later (no term left to
// claim) and, the term being persisted, on every restart after. Now the
// frames are refused and counted (term_absurd), every member keeps leader
// 3 in its term, and a member restarted afterwards rejoins.
//
// The members run with attackLeaderTimeout: the term must not change, and
// at the default 400 ms a loaded host's stall alone changed it.
func TestLabAttackElectdAbsurdTerm(t *testing.T) {
	e2e.ForEachSecurity(t, func(t *testing.T, keyed bool) {
		a := e2e.NewAttackLab(t, "electd", 7500, 3, keyed, func(int) []string {
			return []string{"--leader-timeout", e2e.AttackLeaderTimeout.String()}
		})
		a.StartAll()
		var lead uint32
		var term uint64
		a.Eventually("the members agree on leader 3", 10*time.Second, func() bool {
			lead, term = a.AgreedLeader()
			return lead == 3
		})
		const absurd = 0xffffffff00000003
		for _, to := range []uint32{1, 2} {
			a.Forge(3, to, wire.KindCoordinator, absurd, wire.Coordinator{})
			a.Forge(3, to, wire.KindLeaderHeartbeat, absurd, wire.LeaderHeartbeat{})
		}
		time.Sleep(time.Second) // the old build panicked within half a second
		for i := 1; i <= 3; i++ {
			a.Alive(i)
		}
		for _, i := range []int{1, 2} {
			a.Refused(i, 2, "node", "core", "rejected", "term_absurd")
		}
		if l, tm := a.AgreedLeader(); l != lead || tm != term {
			t.Fatalf("after the attack: leader %d term %#x, want %d %#x", l, tm, lead, term)
		}
		// A member restarted after the attack starts from its own state.
		a.Procs[2].Kill()
		a.Start(2)
		a.Eventually("member 2 rejoins leader 3 after a restart", 10*time.Second, func() bool {
			a.Alive(2)
			l, tm := a.AgreedLeader()
			return l == lead && tm == term
		})
	})
}

// TestLabAttackElectd: three electd members and an attacker host. The
// sequence-number split of issue 13 (one frame "from 3" numbered
// 0xffffffffffffff00 made node 2 refuse node 3 and lead alone), sent from the
// attacker's own address, from node 3's machine on another port (a student
// logged on it), and with node 3's address spoofed; a frame from a wrong
// source (node 1's frame, with node 3's address spoofed); and, without a
// key, a plausible forged jump of node 3's numbers. The three keep one
// leader in one term throughout (at attackLeaderTimeout: a member that
// refused node 3's frames would suspect it one timeout after the attack).
func TestLabAttackElectd(t *testing.T) {
	labnet.Require(t)
	const n = 3
	for _, m := range e2e.Modes {
		t.Run(m.Name, func(t *testing.T) {
			lab := labnet.New(t, n+1)
			l := &labElectd{t: t, lab: lab, dir: e2e.ShortDir(t), n: n, procs: map[int]*labnet.Proc{},
				extra: []string{"--leader-timeout", e2e.AttackLeaderTimeout.String()}}
			if m.Keyed {
				l.key = e2e.KeyFile(t, l.dir)
			}
			for i := 1; i <= n; i++ {
				l.start(i)
			}
			term, _ := l.waitAgree("start", 10*time.Second, 3, e2e.All(n)...)
			attacker := lab.Host(n + 1)
			node2 := netip.AddrPortFrom(lab.Host(2).Addr(), 7500)
			node3 := netip.AddrPortFrom(lab.Host(3).Addr(), 7500)
			hb, _ := wire.LeaderHeartbeat{Priority: 0}.AppendBinary(nil)
			frame := func(seq uint64) []byte {
				b, err := forge.Raw(wire.Header{Kind: wire.KindLeaderHeartbeat, Cluster: wire.ServiceClusterID("electd", "synclab"),
					Sender: 3, Receiver: 2, Term: term, Seq: seq, Lamport: 1}, hb, nil)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			split := frame(0xffffffffffffff00)
			from1, err := forge.Raw(wire.Header{Kind: wire.KindHeartbeat, Cluster: wire.ServiceClusterID("electd", "synclab"),
				Sender: 1, Receiver: 2, Seq: 1, Lamport: 1}, make([]byte, wire.HeartbeatLen), nil)
			if err != nil {
				t.Fatal(err)
			}
			before := e2e.StatusOf(t, "electd", l.control(2))
			dropped := func(st map[string]any, reason string) float64 { return e2e.Num(st, "node", "dropped", reason) }

			// From the attacker's own address and from node 3's machine
			// on another port: no member's address, dropped unread. With
			// node 3's address spoofed: the split frame reaches the node;
			// so does node 1's frame, from the wrong member.
			e2e.Send(t, attacker, netip.AddrPortFrom(attacker.Addr(), 0), node2, split)
			e2e.Send(t, lab.Host(3), netip.AddrPortFrom(lab.Host(3).Addr(), 0), node2, split)
			e2e.Spoof(t, attacker, node3, node2, split)
			e2e.Spoof(t, attacker, node3, node2, from1)
			// Without a key, also a jump a real node 3 could have made:
			// accepted like any unauthenticated frame, but node 3's next
			// real frame restarts the window instead of being refused.
			var jumped bool
			if !m.Keyed {
				top := e2e.PeerSeq(t, "electd", l.control(2), 3)
				e2e.Spoof(t, attacker, node3, node2, frame(top+2*wire.ReplayWindow))
				jumped = true
			}

			time.Sleep(2 * e2e.AttackLeaderTimeout) // node 2, had it refused node 3, would have suspected it by now
			after := e2e.StatusOf(t, "electd", l.control(2))
			if got := e2e.Num(after, "transport", "udp_strangers") - e2e.Num(before, "transport", "udp_strangers"); got != 2 {
				t.Errorf("udp_strangers counted %v times, want 2 (the attacker's address, node 3's machine on another port)", got)
			}
			if got := dropped(after, "wrong_source") - dropped(before, "wrong_source"); got != 1 {
				t.Errorf("wrong_source counted %v times, want 1 (node 1's frame from node 3's address)", got)
			}
			want := "implausible_seq"
			if m.Keyed {
				want = "no_mac"
			}
			if got := dropped(after, want) - dropped(before, want); got != 1 {
				t.Errorf("the spoofed split frame: %s counted %v times, want 1 (dropped %v)", want, got, after["node"].(map[string]any)["dropped"])
			}
			if jumped && e2e.Num(after, "node", "resynced") < 1 {
				t.Errorf("node 3's frames after the forged jump were not taken (resynced %v, dropped %v)", e2e.Num(after, "node", "resynced"), after["node"].(map[string]any)["dropped"])
			}
			if lead, tm := l.agreed(e2e.All(n)...); lead != 3 || tm != term {
				t.Fatalf("after the attacks: leader %d term %#x, want 3 and %#x everywhere (a split)", lead, tm, term)
			}
			t.Logf("%s: node 2 refused the split frame (%s), the strangers' (udp_strangers) and node 1's from node 3's address (wrong_source), and kept leader 3 in term %#x", m.Name, want, term)
		})
	}
}
