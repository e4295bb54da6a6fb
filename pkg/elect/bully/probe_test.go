package bully_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/wire"
)

// fastFailover is bully with FastFailover's settings: 200 ms heartbeats,
// a 240 ms leader timeout and 4 ms probes.
func fastFailover(c *bully.Config) {
	d := bully.FromOptions(nil, bully.FastFailover)
	c.Heartbeat, c.LeaderTimeout, c.Probe = d.Heartbeat, d.LeaderTimeout, d.Probe
	c.CoordinatorTimeout, c.Stagger = d.CoordinatorTimeout, d.Stagger
}

// labLoss is the benchmark's loss as one frame sees it: 5% dropped on
// every host in each direction, so 1-0.95^2 of the frames between two
// hosts.
const labLoss = 0.0975

// idleElections runs members 1-5 ten idle minutes at labLoss and returns
// the elections started after the first agreement, with the probes the
// followers sent and the leader answered. It fails the test if leadership
// or the term moved.
func idleElections(t *testing.T, seed int64, mod func(*bully.Config)) (elections int, probes, answered uint64) {
	t.Helper()
	members := []bully.Member{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}, {ID: 5}}
	s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: 100 * time.Microsecond, Loss: labLoss}})
	c := newCluster(t, s, members, mod)
	c.converge(3 * time.Second)
	before := len(s.EventsNamed(bully.EventElectionStarted))
	c.run(10 * time.Minute)
	for _, m := range members {
		d := c.core(m.ID).Detail()
		probes += d.ProbesSent
		answered += d.ProbesAnswered
	}
	return len(s.EventsNamed(bully.EventElectionStarted)) - before, probes, answered
}

// TestSimProbeIdleLoss: with the fast-failover settings (a leader timeout only 40
// ms above the 200 ms heartbeat) ten idle minutes at the lab's 5% loss per
// host start no election: each lost heartbeat is made good by a probe's
// answer. The same timeouts without probes start elections all the time
// (one lost heartbeat is a suspicion), which is what the probes are for.
func TestSimProbeIdleLoss(t *testing.T) {
	sim.Seeds(t, 3, func(t *testing.T, seed int64) {
		n, probes, answered := idleElections(t, seed, fastFailover)
		if n != 0 {
			t.Errorf("%d elections in 10 idle minutes at %.4f loss with probes", n, labLoss)
		}
		// About one lost heartbeat in ten, to each of four followers, at
		// 5 a second: ~1200 probing episodes in ten minutes.
		if probes < 500 || answered < probes/2 {
			t.Errorf("probes sent %d, answered %d: want hundreds, most answered", probes, answered)
		}
		without, _, _ := idleElections(t, seed, func(c *bully.Config) { fastFailover(c); c.Probe = 0 })
		if without < 50 {
			t.Errorf("without probes only %d elections: the test does not show what probes do", without)
		}
		t.Logf("probes sent %d, answered %d; elections with probes %d, without %d", probes, answered, n, without)
	})
}

// TestSimProbeFailover: with the fast-failover settings a SIGKILLed leader is
// replaced within its 240 ms timeout plus a LAN round, at any phase of its
// heartbeat: the probes, unanswered, change nothing for a dead leader.
func TestSimProbeFailover(t *testing.T) {
	simFailover(t, fastFailover, 245*time.Millisecond)
}

// probeNode is member id of 1..3 with the fast-failover settings at local time t0.
func probeNode(t *testing.T, id uint32, t0 time.Time) *bully.Core {
	t.Helper()
	cfg := bully.DefaultLANConfig()
	fastFailover(&cfg)
	b, err := bully.New(core.Env{ID: id, Members: []uint32{1, 2, 3}, Now: t0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.Ready()
	return b
}

func frame(t *testing.T, from uint32, k wire.Kind, term uint64, p interface{ AppendBinary([]byte) ([]byte, error) }) core.Message {
	t.Helper()
	b, err := p.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	return core.Message{From: from, Kind: k, Term: term, Payload: b}
}

// TestProbeSchedule: a follower probes its leader only once the heartbeat
// it expected is Probe late, then every Probe until its leader timeout,
// which it keeps: probes alone never suspect. A heartbeat stops them.
func TestProbeSchedule(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := probeNode(t, 2, t0)
	term := uint64(3)<<32 | 3 // a term owned by 3
	claim := frame(t, 3, wire.KindCoordinator, term, wire.Coordinator{})
	claim.Time = t0
	if err := b.Step(claim); err != nil {
		t.Fatal(err)
	}
	b.Ready()
	probesAt := func(from, to time.Duration) (n int) {
		for d := from; d <= to; d += time.Millisecond {
			b.Tick(t0.Add(d))
			for _, m := range b.Ready().Messages {
				if m.Kind != wire.KindLeaderProbe || m.To != 3 || m.Term != term {
					t.Fatalf("at %v: sent %v to %d in term %d", d, m.Kind, m.To, m.Term)
				}
				n++
			}
		}
		return n
	}
	if n := probesAt(time.Millisecond, 203*time.Millisecond); n != 0 {
		t.Errorf("%d probes before the heartbeat was 4 ms late", n)
	}
	if dl := b.Deadline(); !dl.Equal(t0.Add(204 * time.Millisecond)) {
		t.Errorf("deadline %v after the claim, want the first probe at 204ms", dl.Sub(t0))
	}
	// 204, 208, ... 236 ms: nine probes, then the timeout at 240 ms.
	if n := probesAt(204*time.Millisecond, 239*time.Millisecond); n != 9 {
		t.Errorf("%d probes between 204 and 239 ms, want 9", n)
	}
	if l, _, _ := b.Leader(); l != 3 || b.Role() != bully.RoleFollower {
		t.Fatalf("suspected before the leader timeout: leader %d role %v", l, b.Role())
	}
	hb := frame(t, 3, wire.KindLeaderHeartbeat, term, wire.LeaderHeartbeat{})
	hb.Time = t0.Add(239 * time.Millisecond)
	if err := b.Step(hb); err != nil {
		t.Fatal(err)
	}
	if n := probesAt(240*time.Millisecond, 239*time.Millisecond+204*time.Millisecond-time.Millisecond); n != 0 {
		t.Errorf("%d probes after the answer, before the next heartbeat was late", n)
	}
	if d := b.Detail(); d.ProbesSent != 9 || d.Probe != 4*time.Millisecond {
		t.Errorf("detail %+v", d)
	}
	// That heartbeat came 39 ms late: the timeout grows by twice that.
	if d := b.Detail(); d.LeaderTimeoutNow != 318*time.Millisecond {
		t.Errorf("timeout now %v, want 240ms + 2 x 39ms", d.LeaderTimeoutNow)
	}
	// Sixteen heartbeats on time and it is back at 240 ms.
	at := hb.Time
	for range 16 {
		at = at.Add(200 * time.Millisecond)
		b.Tick(at)
		m := frame(t, 3, wire.KindLeaderHeartbeat, term, wire.LeaderHeartbeat{})
		m.Time = at
		if err := b.Step(m); err != nil {
			t.Fatal(err)
		}
	}
	if d := b.Detail(); d.LeaderTimeoutNow != 240*time.Millisecond {
		t.Errorf("timeout now %v after 16 heartbeats on time, want 240ms", d.LeaderTimeoutNow)
	}
	// Unanswered: the timeout, 240 ms after the last heartbeat, suspects.
	b.Tick(at.Add(239 * time.Millisecond))
	if l, _, _ := b.Leader(); l != 3 {
		t.Fatalf("leader %d before the timeout", l)
	}
	b.Tick(at.Add(240 * time.Millisecond))
	if l, _, _ := b.Leader(); l == 3 {
		t.Errorf("leader %d still followed after the timeout", l)
	}
}

// TestLateLeaderKept: a leader whose heartbeats and answers run 30, then
// 60 ms late (a loaded host) is not suspected: the follower's timeout
// grows with the lateness it sees, where a fixed 240 ms would elect at
// each heartbeat 60 ms late.
func TestLateLeaderKept(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := probeNode(t, 2, t0)
	term := uint64(3)<<32 | 3
	at := t0
	for i := range 40 {
		late := time.Duration(0)
		switch {
		case i%4 != 3:
		case i < 20:
			late = 30 * time.Millisecond // within the 40 ms a fixed timeout leaves
		default:
			late = 60 * time.Millisecond // beyond it
		}
		at = at.Add(200*time.Millisecond + late)
		for d := at.Add(-200*time.Millisecond - late); d.Before(at); d = d.Add(time.Millisecond) {
			b.Tick(d)
		}
		m := frame(t, 3, wire.KindLeaderHeartbeat, term, wire.LeaderHeartbeat{})
		if i == 0 {
			m = frame(t, 3, wire.KindCoordinator, term, wire.Coordinator{})
		}
		m.Time = at
		if err := b.Step(m); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			if l, _, _ := b.Leader(); l != 3 {
				t.Fatalf("heartbeat %d: leader %d: a late leader was suspected", i, l)
			}
		}
		at = at.Add(-late) // the next is due on the leader's schedule
	}
	if d := b.Detail(); d.LeaderTimeoutNow != 360*time.Millisecond || b.Report().ElectionsStarted != 1 {
		t.Errorf("timeout now %v (want 240 + 2 x 60 ms), elections %d (the startup one)", d.LeaderTimeoutNow, b.Report().ElectionsStarted)
	}
}

// TestLeaderAnswersProbe: the leader answers a probe of its term with a
// heartbeat to the prober alone, at most once a millisecond per member,
// and ignores a probe of a newer term (nobody's) ; a follower ignores
// probes.
func TestLeaderAnswersProbe(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := probeNode(t, 3, t0)
	b.Tick(t0)
	b.Tick(t0.Add(250 * time.Millisecond)) // nobody above it: it claims after the startup wait
	b.Ready()
	if b.Role() != bully.RoleLeader {
		t.Fatalf("role %v", b.Role())
	}
	term := b.Term()
	probe := func(from uint32, at time.Duration, term uint64) []core.Message {
		m := frame(t, from, wire.KindLeaderProbe, term, wire.LeaderProbe{})
		m.Time = t0.Add(time.Second + at)
		if err := b.Step(m); err != nil {
			t.Fatal(err)
		}
		return b.Ready().Messages
	}
	out := probe(1, 0, term)
	if len(out) != 1 || out[0].Kind != wire.KindLeaderHeartbeat || out[0].To != 1 || out[0].Term != term {
		t.Fatalf("answer %+v, want one heartbeat to 1", out)
	}
	if out := probe(1, 500*time.Microsecond, term); len(out) != 0 {
		t.Errorf("second answer to 1 within a millisecond: %+v", out)
	}
	if out := probe(2, 500*time.Microsecond, term); len(out) != 1 || out[0].To != 2 {
		t.Errorf("member 2's probe: %+v", out)
	}
	if out := probe(1, 1500*time.Microsecond, term); len(out) != 1 {
		t.Errorf("1's probe a millisecond later: %+v", out)
	}
	if out := probe(1, 3*time.Millisecond, term+1); len(out) != 0 {
		t.Errorf("probe of a newer term answered: %+v", out)
	}
	if d := b.Detail(); d.ProbesAnswered != 3 {
		t.Errorf("probes answered %d, want 3", d.ProbesAnswered)
	}
	if st := b.Report(); st.Role != elect.RoleLeader || st.Term != term {
		t.Errorf("a probe moved the leader: %+v", st)
	}
}

// TestProbeConfig: probes off by default (the embedded elections of
// mutexd, timed and orderd), and a probe that cannot fit between the
// missed heartbeat and the timeout is refused.
func TestProbeConfig(t *testing.T) {
	if bully.DefaultLANConfig().Probe != 0 || bully.FromOptions(nil, elect.Options{}).Probe != 0 {
		t.Error("probes on without being asked for")
	}
	cfg := bully.DefaultLANConfig()
	cfg.Heartbeat, cfg.LeaderTimeout, cfg.Probe = 200*time.Millisecond, 240*time.Millisecond, 40*time.Millisecond
	_, err := bully.New(core.Env{ID: 1, Members: []uint32{1, 2}, Now: time.Unix(1, 0)}, cfg)
	if err == nil || err.Error() != "bully: Heartbeat (200ms) + Probe (40ms) must be below LeaderTimeout (240ms): a follower probes a silent leader only between the heartbeat it missed and its leader timeout (0 turns probing off)" {
		t.Errorf("error %v", err)
	}
}

// TestTimeoutNowIsTheDetectors: status says the timeout the follower
// really gives its leader, the stagger for the members ranked between
// them included (member 1 following 3: 240 ms and one Stagger), and 0 on
// a member that follows nobody.
func TestTimeoutNowIsTheDetectors(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := probeNode(t, 1, t0)
	if d := b.Detail(); d.LeaderTimeoutNow != 0 {
		t.Errorf("timeout now %v before following anyone, want 0", d.LeaderTimeoutNow)
	}
	claim := frame(t, 3, wire.KindCoordinator, uint64(3)<<32|3, wire.Coordinator{})
	claim.Time = t0
	if err := b.Step(claim); err != nil {
		t.Fatal(err)
	}
	cfg := bully.DefaultLANConfig()
	fastFailover(&cfg)
	if d := b.Detail(); d.LeaderTimeoutNow != cfg.LeaderTimeout+cfg.Stagger {
		t.Errorf("member 1 following 3: timeout now %v, want %v + one stagger (%v)", d.LeaderTimeoutNow, cfg.LeaderTimeout, cfg.Stagger)
	}
}
