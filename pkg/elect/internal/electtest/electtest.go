// Package electtest runs any election algorithm (an elect.Algorithm, as
// pkg/elect/algorithms lists them) on internal/sim and checks it against
// one oracle, whatever the algorithm:
//
//   - at most one leader per term, ever: no two members report (or
//     believe, at any instant) different leaders of one term;
//   - after the network heals, every running member follows the
//     algorithm's rightful leader (Cluster.Rightful: the highest-ranked
//     running member) in one term, within a bound.
//
// Chaos drives a cluster through random crashes, restarts, pauses,
// partitions and loss over many seeds and applies the oracle
// (ChaosMixedBuilds: with configuration agreement on some members only,
// as in a rolling upgrade); Cluster is
// the building block for an algorithm's own tests (failover times, message
// counts). It exists for tests only.
//
// It is internal to pkg/elect, beside the family's shared layer: its API
// names the simulator (internal/sim), which no other module can import,
// so it serves this module's algorithms' tests only.
package electtest

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
)

// Cluster is a simulated cluster running one algorithm, with the oracle's
// bookkeeping.
type Cluster struct {
	T   testing.TB
	S   *sim.Sim
	Alg elect.Algorithm
	IDs []uint32
	// Rightful is the leader the algorithm must end up with among the
	// running members (0: any one, all agreeing). Default: the
	// algorithm's (elect.Algorithm.Rightful), else the highest running ID
	// (bully without priorities, every ring election).
	Rightful func(running []uint32) uint32

	// believed is, per term, the member that believed it led it.
	believed map[uint64]uint32
	// Overlap is the virtual time during which two running members both
	// believed they led (in different terms: split brain), summed.
	Overlap time.Duration
	lastAt  time.Duration
}

// New adds members ids running alg with opts to s (each with its own
// clock offset and drift) and returns the cluster.
func New(t testing.TB, s *sim.Sim, alg elect.Algorithm, ids []uint32, opts elect.Options) *Cluster {
	c := &Cluster{T: t, S: s, Alg: alg, IDs: slices.Clone(ids), believed: map[uint64]uint32{}, Rightful: alg.Rightful}
	rnd := rand.New(rand.NewPCG(uint64(s.Seed()), 99))
	for _, id := range ids {
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			env.Rand = s.NewRand()
			e, err := alg.New(env, opts)
			if err != nil {
				t.Fatalf("%s: node %d: %v", alg.Name, id, err)
			}
			return e
		}, clock.SimConfig{Offset: time.Duration(rnd.IntN(2000)-1000) * time.Millisecond, DriftPPM: float64(rnd.IntN(200) - 100)})
	}
	return c
}

// Elector returns member id's core.
func (c *Cluster) Elector(id uint32) elect.Elector { return c.S.Core(id).(elect.Elector) }

// Running lists the running members.
func (c *Cluster) Running() []uint32 {
	var out []uint32
	for _, id := range c.IDs {
		if c.S.Running(id) {
			out = append(out, id)
		}
	}
	return out
}

// Want is the rightful leader among the running members (0: none runs,
// or any one will do).
func (c *Cluster) Want() uint32 {
	r := c.Running()
	if len(r) == 0 {
		return 0
	}
	if c.Rightful != nil {
		return c.Rightful(r)
	}
	return slices.Max(r)
}

// AnyLeader says whether the algorithm accepts any running member as its
// leader once all agree (Rightful returns 0).
func (c *Cluster) AnyLeader() bool {
	r := c.Running()
	return len(r) > 0 && c.Rightful != nil && c.Rightful(r) == 0
}

// Check is the instant oracle, run after every simulator action: no two
// running members believe they lead the same term, and no term has two
// leaders over the run; it sums the time two members both lead.
func (c *Cluster) Check() {
	c.T.Helper()
	leading := 0
	for _, id := range c.IDs {
		if !c.S.Up(id) {
			continue
		}
		e := c.Elector(id)
		if e.Role() != elect.RoleLeader {
			continue
		}
		if c.S.Running(id) {
			leading++
		}
		_, term, _ := e.Leader()
		if prev, ok := c.believed[term]; ok && prev != id {
			c.T.Fatalf("%s: members %d and %d both led term %#x\n%s", c.Alg.Name, prev, id, term, c.tail())
		}
		c.believed[term] = id
	}
	now := c.S.Elapsed()
	if leading > 1 {
		c.Overlap += now - c.lastAt
	}
	c.lastAt = now
}

// Run advances d, checking after every action.
func (c *Cluster) Run(d time.Duration) {
	c.S.RunUntil(func() bool { c.Check(); return false }, d)
}

// Agreed reports whether every running member follows want in one term,
// and want leads it; want 0 with AnyLeader: whichever running member the
// first one follows.
func (c *Cluster) Agreed(want uint32) bool {
	if want == 0 && c.AnyLeader() {
		want, _, _ = c.Elector(c.Running()[0]).Leader()
		if want == 0 || !c.S.Running(want) {
			return false
		}
	}
	if want == 0 || c.Elector(want).Role() != elect.RoleLeader {
		return false
	}
	_, term, _ := c.Elector(want).Leader()
	for _, id := range c.Running() {
		if l, tm, _ := c.Elector(id).Leader(); l != want || tm != term {
			return false
		}
	}
	return true
}

// Converge is the liveness oracle: within limit every running member
// follows the rightful leader in one term. It returns how long it took.
func (c *Cluster) Converge(limit time.Duration) time.Duration {
	c.T.Helper()
	c.S.Start()
	start := c.S.Elapsed()
	want := c.Want()
	if !c.S.RunUntil(func() bool { c.Check(); return c.Agreed(want) }, limit) {
		c.T.Fatalf("%s: no agreement on %d within %v: %s\n%s", c.Alg.Name, want, limit, c.Views(), c.tail())
	}
	return c.S.Elapsed() - start
}

// Views is every running member's role, leader and term, for failures.
func (c *Cluster) Views() string {
	var b []string
	for _, id := range c.Running() {
		v := c.Elector(id).Report()
		b = append(b, fmt.Sprintf("%d:%v/leader=%d/term=%#x/%s", id, v.Role, v.Leader, v.Term, v.Phase))
	}
	return strings.Join(b, " ")
}

// Claims is the oracle over the whole event log: every leader_elected a
// member reported names one leader per term, and no member reports
// itself leader of one term in two lives (a term led twice hands one
// fencing token, ELECTD_TERM_RAW, to two leaderships). omega is spared
// the second: it has no terms (its "term" is the leader's incarnation).
func (c *Cluster) Claims() {
	c.T.Helper()
	leaders := map[uint64]uint32{}
	life := map[uint32]int{}  // per member, its restarts so far
	ledIn := map[uint64]int{} // per term, the life its leader reported it in
	for _, e := range c.S.Events() {
		if e.Name == "sim.restart" {
			life[e.Node]++
			continue
		}
		if e.Name != elect.EventLeaderElected {
			continue
		}
		l, _ := e.Arg("leader")
		tm, _ := e.Arg("term")
		leader, term := l.(uint32), tm.(uint64)
		if prev, ok := leaders[term]; ok && prev != leader {
			c.T.Fatalf("%s: two leaders of term %#x: %d and %d\n%s", c.Alg.Name, term, prev, leader, c.tail())
		}
		leaders[term] = leader
		if leader != e.Node || c.Alg.Name == "omega" {
			continue
		}
		if prev, ok := ledIn[term]; ok && prev != life[e.Node] {
			c.T.Fatalf("%s: node %d led term %#x in two lives (restart %d, then %d)\n%s", c.Alg.Name, e.Node, term, prev, life[e.Node], c.tail())
		}
		ledIn[term] = life[e.Node]
	}
}

// tail is the end of the simulator's log, enough to see a failure.
func (c *Cluster) tail() string {
	log := c.S.Log()
	if len(log) > 20000 {
		log = "...\n" + log[len(log)-20000:]
	}
	return log
}

// Disrupt is the chaos schedule: 3 to 8 random disruptions, each
// followed by run for 0.2-2 s: the leader (as leader(id) says for a random
// member) or any member crashes, a member restarts, the members split in
// two, one is isolated or paused; a third of the time everything heals
// after one. At the end every link heals and every paused member resumes.
func Disrupt(s *sim.Sim, rnd *rand.Rand, leader func(id uint32) uint32, run func(time.Duration)) {
	ids := s.IDs()
	pick := func() uint32 { return ids[rnd.IntN(len(ids))] }
	for range 3 + rnd.IntN(6) {
		switch rnd.IntN(7) {
		case 0, 1:
			if l := leader(pick()); l != 0 && s.Up(l) {
				s.Crash(l)
			}
		case 2:
			s.Crash(pick())
		case 3:
			s.Restart(pick())
		case 4:
			if len(ids) < 2 {
				s.Isolate(ids[0]) // nothing to split
				break
			}
			cut := rnd.IntN(len(ids)-1) + 1
			perm := slices.Clone(ids)
			rnd.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			s.Partition(perm[:cut], perm[cut:])
		case 5:
			s.Isolate(pick())
		case 6:
			s.Pause(pick())
		}
		run(time.Duration(200+rnd.IntN(1800)) * time.Millisecond)
		if rnd.IntN(3) == 0 {
			s.Heal()
		}
	}
	s.Heal()
	for _, id := range ids {
		if s.Paused(id) {
			s.Resume(id)
		}
	}
}

// Chaos runs alg over seeds: random clusters of 3 to 9 members (in a
// fifth of the seeds 1 or 2: smallCluster) under loss up to 20%, jitter
// and duplication, with crashes and restarts of the leader and of others,
// pauses, partitions and isolation, then healed; in a quarter of the seeds
// one or two members' state writes fail (diskFaults); a quorum's votes
// are weighted in a third of the seeds (weights: sometimes one member's
// weight is a majority alone).
// At every step at most one leader per term (Check, Claims); after the
// heal, agreement on the rightful leader within converge.
func Chaos(t *testing.T, alg elect.Algorithm, seeds int, converge time.Duration) {
	chaos(t, alg, seeds, converge, false)
}

// ChaosMixedBuilds is Chaos in a cluster whose members mix builds with
// configuration agreement (sim.SetAgreement, one configuration) and
// without, at least one of each where there are two members or more,
// drawn from the seed: the agreeing members refuse an older build's
// incarnation for three announce intervals from the first frame they
// hear of it, and send it none of their cores' frames meanwhile (a cut
// both ways, renewed at each of its restarts). Frames on the TCP links
// (core.Message.Stream) that are refused or withheld are lost with the
// link up, as every other: no core hears of it.
func ChaosMixedBuilds(t *testing.T, alg elect.Algorithm, seeds int, converge time.Duration) {
	chaos(t, alg, seeds, converge, true)
}

func chaos(t *testing.T, alg elect.Algorithm, seeds int, converge time.Duration, mixed bool) {
	sim.Seeds(t, seeds, func(t *testing.T, seed int64) {
		rnd := rand.New(rand.NewPCG(uint64(seed), 7))
		size := 3 + rnd.IntN(7)
		if n := smallCluster(seed); n != 0 {
			size = n
		}
		ids := make([]uint32, size)
		for i := range ids {
			ids[i] = uint32(i + 1)
		}
		rnd.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		link := sim.LinkConfig{
			Delay:     100 * time.Microsecond,
			Jitter:    time.Duration(rnd.IntN(3000)) * time.Microsecond,
			Loss:      rnd.Float64() * 0.2,
			Duplicate: 0.01,
		}
		s := sim.New(sim.Config{Seed: seed, DefaultLink: link, Multicast: seed%3 == 0})
		prio := weights(alg, seed, ids)
		opts := elect.Options{Priorities: prio}
		if mixed {
			// Bully's followers then keep a TCP link to the leader
			// open (its LEADER_WATCH frames: Config.Watch).
			opts.HintProbe = 30 * time.Millisecond
		}
		c := New(t, s, alg, ids, opts)
		if mixed {
			mixBuilds(s, alg, seed, ids)
		}
		broken := diskFaults(s, seed, ids)
		c.Run(time.Second)
		Disrupt(s, rnd, func(id uint32) uint32 { l, _, _ := c.Elector(id).Leader(); return l }, c.Run)
		c.brokenDisks(broken, seed)
		if len(c.Running()) == 0 {
			s.Restart(ids[rnd.IntN(len(ids))])
		}
		// An algorithm that needs a majority elects nobody without one:
		// bring members back until a majority of the weight runs.
		for _, id := range ids {
			if alg.Quorum && 2*weightOf(prio, c.Running()) <= weightOf(prio, ids) && !s.Up(id) {
				s.Restart(id)
			}
		}
		c.Converge(converge)
		c.Claims()
	})
}

// mixBuilds gives some of ids (at least one, and not all when there are
// two or more) configuration agreement, drawn from a stream of its own.
func mixBuilds(s *sim.Sim, alg elect.Algorithm, seed int64, ids []uint32) {
	rng := rand.New(rand.NewPCG(uint64(seed), 11))
	a := &node.Agreement{Algorithm: alg.Name, Params: map[string]string{}}
	for {
		var agreeing []uint32
		for _, id := range ids {
			if rng.IntN(2) == 0 {
				agreeing = append(agreeing, id)
			}
		}
		if len(agreeing) > 0 && (len(agreeing) < len(ids) || len(ids) == 1) {
			for _, id := range agreeing {
				s.SetAgreement(id, a)
			}
			return
		}
	}
}

// smallCluster is, in a fifth of the seeds, a cluster of 1 or 2 members
// (0: the seed's usual size): a member alone, or one of two, wins with
// few votes or none, the case where a win sends nothing a failed write
// would withhold. Its own generator, as diskFaults'.
func smallCluster(seed int64) int {
	if seed%5 != 3 {
		return 0
	}
	return 1 + rand.New(rand.NewPCG(uint64(seed), 13)).IntN(2)
}

// weights are, for an algorithm that counts weighted votes (Quorum) and
// in a third of the seeds, the members' vote weights (elect.Options.
// Priorities), 1 to 3 each; in half of those one member weighs more than
// all the others together, so that it elects itself alone (electd's
// documented --priorities 1=3 on three members). Nil otherwise: the
// rings refuse priorities, and bully's would change its rightful leader.
// Its own generator, as diskFaults'.
func weights(alg elect.Algorithm, seed int64, ids []uint32) map[uint32]uint32 {
	if !alg.Quorum || seed%3 != 1 {
		return nil
	}
	rnd := rand.New(rand.NewPCG(uint64(seed), 17))
	w := map[uint32]uint32{}
	for _, id := range ids {
		w[id] = 1 + uint32(rnd.IntN(3))
	}
	if rnd.IntN(2) == 0 {
		heavy := ids[rnd.IntN(len(ids))]
		others := slices.DeleteFunc(slices.Clone(ids), func(id uint32) bool { return id == heavy })
		w[heavy] = uint32(weightOf(w, others)) + 1
	}
	return w
}

// weightOf is the weight of ids under w (0 or absent: 1, as the
// majority election's FromOptions says).
func weightOf(w map[uint32]uint32, ids []uint32) uint64 {
	var sum uint64
	for _, id := range ids {
		sum += uint64(max(w[id], 1))
	}
	return sum
}

// diskFaults makes, in a quarter of the seeds, the state writes of one or
// two members fail: every one (a full or read-only disk: those members
// are returned, for brokenDisks) or a third of them (a flaky disk, left
// so). Its own generator, so that every seed's schedule is the one it
// was before disk faults came.
func diskFaults(s *sim.Sim, seed int64, ids []uint32) (broken []uint32) {
	if seed%4 != 1 {
		return nil
	}
	rnd := rand.New(rand.NewPCG(uint64(seed), 11))
	for range 1 + rnd.IntN(2) {
		id := ids[rnd.IntN(len(ids))]
		if rnd.IntN(2) == 0 {
			s.SetDiskFaults(id, 0.3)
			continue
		}
		s.SetDiskFaults(id, 1)
		broken = append(broken, id)
	}
	return broken
}

// brokenDisks ends the life of each member whose disk is broken the way
// that shows a term led before it was written: cut off, it runs alone
// for a while (a member alone sends nothing a failed write withholds),
// crashes and restarts, runs alone again from the older term on its
// disk, and only then is its disk mended and the network healed. A term
// it led in both lives is one fencing token for two leaderships (Claims).
func (c *Cluster) brokenDisks(broken []uint32, seed int64) {
	for i, id := range broken {
		alone := time.Duration(500+(seed*97+int64(i)*331)%1500) * time.Millisecond
		if !c.S.Up(id) {
			c.S.Restart(id)
		}
		c.S.Isolate(id)
		c.Run(alone)
		c.S.Crash(id)
		c.S.Restart(id)
		c.Run(alone)
		c.S.SetDiskFaults(id, 0)
		c.S.Heal()
	}
}
