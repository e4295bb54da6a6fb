package bully_test

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/elect/internal/electtest"
	"github.com/synclab/synclab/pkg/wire"
)

// cluster is a simulated bully cluster with the oracle's bookkeeping.
type cluster struct {
	t       *testing.T
	s       *sim.Sim
	members []bully.Member
	maxTerm map[uint32]uint64 // highest term each node had since its last restart
	// claimedBy is the node incarnation whose claim of a term (COORDINATOR,
	// heartbeat) left first: no other may ever send one.
	claimedBy map[uint64][2]uint32
	// faulty: some disk writes fail, so a node may restart below a term it
	// held in memory (never below one it sent) and claim again a term
	// whose claim never left.
	faulty bool
}

func newCluster(t *testing.T, s *sim.Sim, members []bully.Member, mod func(*bully.Config)) *cluster {
	return newClusterEach(t, s, members, func(_ uint32, cfg *bully.Config) {
		if mod != nil {
			mod(cfg)
		}
	})
}

// newClusterEach is newCluster with each member's own configuration: mod
// is called with the member's ID whenever its core is built (at every
// restart too), after Members is set.
func newClusterEach(t *testing.T, s *sim.Sim, members []bully.Member, mod func(uint32, *bully.Config)) *cluster {
	c := &cluster{t: t, s: s, members: members, maxTerm: map[uint32]uint64{}, claimedBy: map[uint64][2]uint32{}}
	s.OnSend(c.checkSent)
	rnd := rand.New(rand.NewPCG(uint64(s.Seed()), 99))
	for _, m := range members {
		id := m.ID
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			cfg := bully.DefaultLANConfig()
			cfg.Members = members
			mod(id, &cfg)
			env.Rand = s.NewRand() // the stream the golden results were made with
			b, err := bully.New(env, cfg)
			if err != nil {
				t.Fatalf("node %d: %v", id, err)
			}
			return b
		}, clock.SimConfig{Offset: time.Duration(rnd.IntN(2000)-1000) * time.Millisecond, DriftPPM: float64(rnd.IntN(200) - 100)})
	}
	return c
}

func (c *cluster) core(id uint32) *bully.Core { return c.s.Core(id).(*bully.Core) }

// checkSent is oracle (d), on every frame as it leaves: its term is on the
// sender's disk (nothing that depends on an unsaved term leaves, even when
// writes fail), and a claim of a term leaves from one node incarnation only.
func (c *cluster) checkSent(f sim.SentFrame) {
	saved, reserved, err := bully.RestoreReserved(f.Disk)
	if err != nil {
		c.t.Fatalf("node %d: disk: %v", f.From, err)
	}
	if f.Frame.Term > max(saved, reserved) {
		// A claim (and what follows it until the write that brings the
		// term up to it) may leave on the reservation (Config.Reserve):
		// a restart claims above it.
		c.t.Fatalf("node %d sent %v of term %#x with %#x on disk (reserved %#x)\n%s", f.From, f.Frame.Kind, f.Frame.Term, saved, reserved, c.s.Log())
	}
	if k := f.Frame.Kind; k == wire.KindCoordinator || k == wire.KindLeaderHeartbeat {
		who := [2]uint32{f.From, f.Incarnation}
		if prev, ok := c.claimedBy[f.Frame.Term]; ok && prev != who {
			c.t.Fatalf("term %#x claimed by node %d incarnation %d and by node %d incarnation %d", f.Frame.Term, prev[0], prev[1], who[0], who[1])
		}
		c.claimedBy[f.Frame.Term] = who
	}
}

// check is oracle (c), run after every simulator action: no node's term
// ever goes down, across restarts included (a restarted node's core must
// start from its persisted term).
func (c *cluster) check() {
	for _, m := range c.members {
		if !c.s.Up(m.ID) {
			continue
		}
		if c.faulty {
			// What a node held in memory but never wrote is lost with it:
			// the floor is its disk (checkSent makes sure nothing above it
			// ever left).
			saved, _ := bully.Restore(c.s.Disk(m.ID))
			c.maxTerm[m.ID] = min(c.maxTerm[m.ID], max(saved, c.core(m.ID).Term()))
		}
		tm := c.core(m.ID).Term()
		if tm < c.maxTerm[m.ID] {
			c.t.Fatalf("node %d: term went back %d -> %d\n%s", m.ID, c.maxTerm[m.ID], tm, c.s.Log())
		}
		c.maxTerm[m.ID] = tm
	}
}

// run advances d, checking after every action.
func (c *cluster) run(d time.Duration) {
	c.s.RunUntil(func() bool { c.check(); return false }, d)
}

// top is the highest-ranked running member.
func (c *cluster) top() uint32 {
	var best *bully.Member
	for i, m := range c.members {
		if !c.s.Running(m.ID) {
			continue
		}
		if best == nil || m.Priority > best.Priority || (m.Priority == best.Priority && m.ID > best.ID) {
			best = &c.members[i]
		}
	}
	if best == nil {
		return 0
	}
	return best.ID
}

// agreed reports whether every running node follows want in one term.
func (c *cluster) agreed(want uint32) bool {
	if want == 0 || c.core(want).Role() != bully.RoleLeader {
		return false
	}
	term := c.core(want).Term()
	for _, m := range c.members {
		if !c.s.Running(m.ID) {
			continue
		}
		if l, tm, _ := c.core(m.ID).Leader(); l != want || tm != term {
			return false
		}
	}
	return true
}

// converge is oracle (b): within limit, exactly one leader, the
// highest-ranked running member, known to every running member.
func (c *cluster) converge(limit time.Duration) {
	c.t.Helper()
	c.s.Start()
	want := c.top()
	if !c.s.RunUntil(func() bool { c.check(); return c.agreed(want) }, limit) {
		var b []string
		for _, m := range c.members {
			if c.s.Running(m.ID) {
				v := c.core(m.ID).Report()
				b = append(b, fmt.Sprintf("%d:%v/leader=%d/term=%d", m.ID, v.Role, v.Leader, v.Term))
			}
		}
		c.t.Fatalf("no agreement on %d within %v: %v\n%s", want, limit, b, c.s.Log())
	}
}

// claims is oracle (a) over the whole event log: every leader a node
// reports for a term owns the term, no term has two leaders, and a node
// claims a term at most once (restarts included).
func (c *cluster) claims() {
	c.t.Helper()
	leaders := map[uint64]uint32{}
	self := map[uint64]int{}
	for _, e := range c.s.EventsNamed(bully.EventLeaderElected) {
		l, _ := e.Arg("leader")
		tm, _ := e.Arg("term")
		leader, term := l.(uint32), tm.(uint64)
		if prev, ok := leaders[term]; ok && prev != leader {
			c.t.Fatalf("two leaders in term %d: %d and %d\n%s", term, prev, leader, c.s.Log())
		}
		leaders[term] = leader
		if bully.TermOwner(term) != leader {
			c.t.Fatalf("leader %d of term %d it does not own", leader, term)
		}
		if leader == e.Node && !c.faulty {
			if self[term]++; self[term] > 1 {
				c.t.Fatalf("node %d claimed term %d twice\n%s", leader, term, c.s.Log())
			}
		}
	}
}

// reserveSome reserves the next claim (Config.Reserve, electd's bully) at
// two seeds of three, the others as the embedded elections run: a failed
// write after a claim that left on its reservation (the disk faults) is a
// crash between the COORDINATOR and the write that follows it.
func reserveSome(seed int64) func(*bully.Config) {
	return func(cfg *bully.Config) { cfg.Reserve = seed%3 != 0 }
}

// TestSimOracle: random clusters of 3-9 members, some with priorities,
// under loss up to 20%, jitter and duplication, with crashes and restarts
// of the leader and others, pauses, partitions and isolation, then healed.
func TestSimOracle(t *testing.T) {
	sim.Seeds(t, 300, func(t *testing.T, seed int64) {
		rnd := rand.New(rand.NewPCG(uint64(seed), 7))
		size := 3 + rnd.IntN(7)
		members := make([]bully.Member, size)
		for i := range members {
			members[i] = bully.Member{ID: uint32(i + 1)}
			if seed%2 == 0 {
				members[i].Priority = uint32(rnd.IntN(3))
			}
		}
		rnd.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		link := sim.LinkConfig{
			Delay:     100 * time.Microsecond,
			Jitter:    time.Duration(rnd.IntN(3000)) * time.Microsecond,
			Loss:      rnd.Float64() * 0.2,
			Duplicate: 0.01,
		}
		s := sim.New(sim.Config{Seed: seed, DefaultLink: link, Multicast: seed%3 == 0})
		c := newCluster(t, s, members, reserveSome(seed))
		if seed%4 == 1 {
			// Disks that fail writes, up to half of them, at a few
			// members: checkSent watches every frame.
			c.faulty = true
			for range 1 + rnd.IntN(2) {
				s.SetDiskFaults(members[rnd.IntN(size)].ID, 0.1+rnd.Float64()*0.4)
			}
		}
		c.run(time.Second)

		ids := s.IDs()
		electtest.Disrupt(s, rnd, func(id uint32) uint32 { l, _, _ := c.core(id).Leader(); return l }, c.run)
		if c.top() == 0 {
			s.Restart(ids[rnd.IntN(len(ids))])
		}
		c.converge(10 * time.Second)
		c.claims()
		if testing.Verbose() {
			t.Logf("%d members, loss %.2f: %v virtual, %d claims, %d elections, %d crashes, %d partitions",
				size, link.Loss, s.Elapsed(), len(s.EventsNamed(bully.EventElected)),
				len(s.EventsNamed(bully.EventElectionStarted)), len(s.EventsNamed("sim.crash")), len(s.EventsNamed("sim.partition")))
		}
	})
}

// TestSimFailingDisks: every member's disk fails half its writes, through
// startup, leader crashes and restarts. Frames are withheld (they depend on
// terms not yet written), yet none leaves with an unsaved term (checkSent),
// no term is claimed by two incarnations, and the cluster converges on the
// highest member.
func TestSimFailingDisks(t *testing.T) {
	var failed, withheld uint64
	sim.Seeds(t, 30, func(t *testing.T, seed int64) {
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: time.Millisecond, Loss: 0.05}})
		c := newCluster(t, s, []bully.Member{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}, {ID: 5}}, reserveSome(seed))
		c.faulty = true
		for _, id := range s.IDs() {
			s.SetDiskFaults(id, 0.5)
		}
		c.converge(10 * time.Second)
		for range 3 {
			l, _, _ := c.core(5).Leader()
			s.Crash(l)
			c.run(time.Second)
			s.Restart(l)
			c.converge(10 * time.Second)
		}
		c.claims()
		for _, id := range s.IDs() {
			failed += s.Counters(id).WriteFailures
			withheld += s.Counters(id).Withheld
		}
	})
	if failed == 0 || withheld == 0 {
		t.Fatalf("%d failed writes, %d frames withheld: the test did not test", failed, withheld)
	}
}

// TestSimBestCase: the leader dies and the member ranked just below it
// notices first (the stagger makes sure of it): no ELECTION, no ANSWER, and
// N-2 COORDINATOR deliveries, the notes' best case.
func TestSimBestCase(t *testing.T) {
	sim.Seeds(t, 20, func(t *testing.T, seed int64) {
		size := 3 + int(seed)%7
		members := make([]bully.Member, size)
		for i := range members {
			members[i] = bully.Member{ID: uint32(i + 1)}
		}
		s := sim.New(sim.Config{Seed: seed})
		c := newCluster(t, s, members, nil)
		c.converge(2 * time.Second)
		c.run(time.Duration(seed%10) * 10 * time.Millisecond)
		s.Crash(uint32(size))
		s.ResetCounts()
		c.converge(2 * time.Second)
		c.run(50 * time.Millisecond) // anything late would show now
		if got := s.Delivered(wire.KindElection) + s.Delivered(wire.KindAnswer); got != 0 {
			t.Errorf("%d ELECTION/ANSWER delivered, want 0\n%s", got, s.Log())
		}
		if got := s.Delivered(wire.KindCoordinator); got != uint64(size-2) {
			t.Errorf("COORDINATOR delivered %d, want N-2 = %d", got, size-2)
		}
		c.claims()
	})
}

// TestSimStartupWorstCase: all members start together, each asks every
// member above it: (N-1)+...+1 ELECTIONs, as many ANSWERs, then N-1
// COORDINATOR deliveries.
func TestSimStartupWorstCase(t *testing.T) {
	sim.Seeds(t, 20, func(t *testing.T, seed int64) {
		size := 3 + int(seed)%7
		members := make([]bully.Member, size)
		for i := range members {
			members[i] = bully.Member{ID: uint32(i + 1)}
		}
		s := sim.New(sim.Config{Seed: seed})
		c := newCluster(t, s, members, nil)
		c.converge(2 * time.Second)
		pairs := uint64(size * (size - 1) / 2)
		if e, a := s.Delivered(wire.KindElection), s.Delivered(wire.KindAnswer); e != pairs || a != pairs {
			t.Errorf("ELECTION %d, ANSWER %d delivered, want %d each", e, a, pairs)
		}
		if got := s.Delivered(wire.KindCoordinator); got != uint64(size-1) {
			t.Errorf("COORDINATOR delivered %d, want %d", got, size-1)
		}
	})
}

// TestSimFailoverTime: with the default LAN settings on a clean LAN, a dead
// leader is replaced everywhere within the 500 ms the issue sets as the lab's
// p99 target (LeaderTimeout 400 ms, counted from the last heartbeat heard,
// plus a LAN round).
func TestSimFailoverTime(t *testing.T) {
	simFailover(t, nil, 500*time.Millisecond)
}

// simFailover SIGKILLs leader 5 of members 1-5, configured by mod, at a
// different phase of its heartbeat for each of 30 seeds, and fails any
// failover longer than limit or not won by 4.
func simFailover(t *testing.T, mod func(*bully.Config), limit time.Duration) {
	worst := simFailoverN(t, 5, 30, mod, limit)
	t.Logf("worst failover %v", worst)
}

// simFailoverN crashes the leader of members 1..n once per seed (seeds of
// them), at a phase of its heartbeat that moves with the seed, checks that
// n-1 takes over within limit, and returns the longest failover.
func simFailoverN(t *testing.T, n, seeds int, mod func(*bully.Config), limit time.Duration) time.Duration {
	var worst time.Duration
	sim.Seeds(t, seeds, func(t *testing.T, seed int64) {
		var members []bully.Member
		for id := 1; id <= n; id++ {
			members = append(members, bully.Member{ID: uint32(id)})
		}
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: 200 * time.Microsecond}})
		c := newCluster(t, s, members, mod)
		c.converge(3 * time.Second)
		c.run(time.Duration(seed*37%1000) * time.Millisecond)
		s.Crash(uint32(n))
		start := s.Elapsed()
		c.converge(3 * time.Second)
		d := s.Elapsed() - start
		worst = max(worst, d)
		if d > limit {
			t.Errorf("failover took %v", d)
		}
		if l, _, _ := c.core(uint32(n - 1)).Leader(); l != uint32(n-1) {
			t.Errorf("leader %d, want %d", l, n-1)
		}
	})
	return worst
}

// TestSimFailoverAt64: at the fast-failover settings a cluster of 64
// fails over as fast as one of 5 (issue 34: within 1.2x): the member
// ranked just below the dead leader times out first whatever the size,
// and its one COORDINATOR broadcast ends it; the others' stagger grows
// with their rank, so none of them stands.
func TestSimFailoverAt64(t *testing.T) {
	if testing.Short() {
		t.Skip("64 members")
	}
	at5 := simFailoverN(t, 5, 10, fastFailover, 245*time.Millisecond)
	at64 := simFailoverN(t, 64, 10, fastFailover, 245*time.Millisecond)
	if float64(at64) > 1.2*float64(at5) {
		t.Errorf("worst failover at 64 members %v, at 5 %v: more than 1.2x", at64, at5)
	}
	t.Logf("worst failover: 5 members %v, 64 members %v", at5, at64)
}

// TestSimResign: the leader resigns; the next member takes over at once and
// the resigner follows it instead of preempting it.
func TestSimResign(t *testing.T) {
	sim.Seeds(t, 20, func(t *testing.T, seed int64) {
		members := []bully.Member{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}}
		s := sim.New(sim.Config{Seed: seed})
		c := newCluster(t, s, members, nil)
		c.converge(2 * time.Second)
		if err := s.Do(4, func(cc core.Core) {
			if err := cc.(*bully.Core).Resign(s.Clock(4).Now()); err != nil {
				t.Fatal(err)
			}
		}); err != nil {
			t.Fatal(err)
		}
		start := s.Elapsed()
		if !s.RunUntil(func() bool { return c.agreed(3) }, time.Second) {
			t.Fatalf("3 did not take over\n%s", s.Log())
		}
		if d := s.Elapsed() - start; d > 50*time.Millisecond {
			t.Errorf("takeover after resign took %v", d)
		}
		c.run(3 * time.Second)
		if !c.agreed(3) {
			t.Fatalf("leadership moved after the resignation\n%s", s.Log())
		}
		c.claims()
	})
}

// TestSimIdleLossNoFalseElection: ten idle minutes at 5% loss (the issue's
// benchmark) move leadership nowhere: no leader change, no demotion, the
// term unchanged. (Four heartbeats lost in a row to one follower can still
// make it ask; the leader then answers and nothing changes.)
func TestSimIdleLossNoFalseElection(t *testing.T) {
	sim.Seeds(t, 3, func(t *testing.T, seed int64) {
		members := []bully.Member{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}, {ID: 5}}
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: 100 * time.Microsecond, Loss: 0.05}})
		c := newCluster(t, s, members, nil)
		c.converge(3 * time.Second)
		term := c.core(5).Term()
		changes := len(s.EventsNamed(bully.EventLeaderChanged)) + len(s.EventsNamed(bully.EventDemoted))
		c.run(10 * time.Minute)
		if got := len(s.EventsNamed(bully.EventLeaderChanged)) + len(s.EventsNamed(bully.EventDemoted)); got != changes {
			t.Errorf("%d leader changes in 10 idle minutes\n%s", got-changes, s.Log())
		}
		if c.core(5).Term() != term || c.core(5).Role() != bully.RoleLeader {
			t.Errorf("leader 5 moved from term %d to %d, role %v", term, c.core(5).Term(), c.core(5).Role())
		}
		t.Logf("elections started by lost heartbeats: %d", len(s.EventsNamed(bully.EventElectionStarted))-len(members))
	})
}

// TestSimPausedLeaderComesBack: the leader is stopped (SIGSTOP) long enough
// to be replaced, then resumes believing it still leads its old term. It
// must learn the current term and take over above it (it outranks the new
// leader), never sharing a term with it.
func TestSimPausedLeaderComesBack(t *testing.T) {
	sim.Seeds(t, 20, func(t *testing.T, seed int64) {
		members := []bully.Member{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}, {ID: 5}}
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: time.Millisecond, Loss: 0.05}})
		c := newCluster(t, s, members, nil)
		c.converge(3 * time.Second)
		old := c.core(5).Term()
		s.Pause(5)
		if !s.RunUntil(func() bool { c.check(); l, _, _ := c.core(1).Leader(); return l == 4 }, 3*time.Second) {
			t.Fatalf("4 did not take over\n%s", s.Log())
		}
		t4 := c.core(4).Term()
		s.Resume(5)
		if c.core(5).Role() != bully.RoleLeader || c.core(5).Term() != old {
			t.Fatal("paused leader should resume as the leader of its old term")
		}
		c.converge(3 * time.Second)
		if got := c.core(5).Term(); got <= t4 {
			t.Errorf("5 leads term %d, not above 4's %d", got, t4)
		}
		c.claims()
	})
}
