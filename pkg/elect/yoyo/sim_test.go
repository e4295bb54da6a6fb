package yoyo_test

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/yoyo"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

// randomGraph is a random connected graph on 1..n: a random spanning tree
// plus up to n extra edges.
func randomGraph(rnd *rand.Rand, n int) []yoyo.Edge {
	perm := rnd.Perm(n)
	seen := map[yoyo.Edge]bool{}
	var edges []yoyo.Edge
	add := func(a, b uint32) {
		e := yoyo.Edge{min(a, b), max(a, b)}
		if a != b && !seen[e] {
			seen[e] = true
			edges = append(edges, e)
		}
	}
	for i := 1; i < n; i++ {
		add(uint32(perm[i]+1), uint32(perm[rnd.IntN(i)]+1))
	}
	for range rnd.IntN(n + 1) {
		add(uint32(1+rnd.IntN(n)), uint32(1+rnd.IntN(n)))
	}
	return edges
}

type cluster struct {
	t     *testing.T
	s     *sim.Sim
	edges []yoyo.Edge
}

func newCluster(t *testing.T, seed int64, n int, edges []yoyo.Edge, link sim.LinkConfig) *cluster {
	c := &cluster{t: t, s: sim.New(sim.Config{Seed: seed, DefaultLink: link}), edges: edges}
	cfg := yoyo.DefaultLANConfig()
	cfg.Topology = edges
	nb := map[uint32]map[uint32]bool{}
	for _, e := range edges {
		for _, x := range [][2]uint32{{e[0], e[1]}, {e[1], e[0]}} {
			if nb[x[0]] == nil {
				nb[x[0]] = map[uint32]bool{}
			}
			nb[x[0]][x[1]] = true
		}
	}
	rnd := rand.New(rand.NewPCG(uint64(seed), 0x79))
	for i := 1; i <= n; i++ {
		id := uint32(i)
		c.s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			el, err := yoyo.New(env, cfg)
			if err != nil {
				t.Fatalf("node %d: %v", id, err)
			}
			return el
		}, clock.SimConfig{Offset: time.Duration(rnd.IntN(2000)-1000) * time.Millisecond, DriftPPM: float64(rnd.IntN(200) - 100)})
	}
	c.s.OnSend(func(f sim.SentFrame) {
		// Members talk to their neighbours only, and nothing leaves with
		// a round its sender's disk does not hold.
		if !nb[f.From][f.Frame.Receiver] {
			t.Fatalf("%d sent %v to %d, not a neighbour", f.From, f.Frame.Kind, f.Frame.Receiver)
		}
		stored, err := elect.DecodeWord("yoyo", 'Y', f.Disk)
		if err != nil || f.Frame.Term > stored {
			t.Fatalf("%d sent %v of round %#x with %#x stored (%v)", f.From, f.Frame.Kind, f.Frame.Term, stored, err)
		}
	})
	return c
}

func (c *cluster) core(id uint32) *yoyo.Core { return c.s.Core(id).(*yoyo.Core) }

func (c *cluster) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "topology %v\n", c.edges)
	for _, id := range c.s.IDs() {
		if !c.s.Up(id) {
			fmt.Fprintf(&b, "%d down\n", id)
			continue
		}
		v := c.core(id).Report()
		fmt.Fprintf(&b, "%d %v leader=%d %s edges=%v\n", id, v.Role, v.Leader, v.Phase, v.Detail.(yoyo.Detail).Edges)
	}
	return b.String()
}

// agreed: every member follows the smallest ID, in one round.
func (c *cluster) agreed() bool {
	var round uint64
	for _, id := range c.s.IDs() {
		l, r, ok := c.core(id).Leader()
		if !ok || l != 1 || (round != 0 && r != round) {
			return false
		}
		round = r
	}
	return true
}

// oneLeaderPerRound: no round was won by two members.
func (c *cluster) oneLeaderPerRound() {
	won := map[uint64]uint32{}
	for _, e := range c.s.EventsNamed(elect.EventElected) {
		tm, _ := e.Arg("term")
		r := tm.(uint64)
		if prev, ok := won[r]; ok && prev != e.Node {
			c.t.Fatalf("round %d.%d won by %d and %d\n%s", epoch.Round(r), epoch.Owner(r), prev, e.Node, c.describe())
		}
		won[r] = e.Node
	}
}

// TestSimYoYo: random connected graphs of 2-14 members with random link
// delays: every member learns the smallest ID as leader within a second,
// talking to its neighbours only, and the election costs at most the
// setup (2E) plus 2E per iteration over at most log2(N)+2 iterations.
func TestSimYoYo(t *testing.T) {
	sim.Seeds(t, 40, func(t *testing.T, seed int64) {
		rnd := rand.New(rand.NewPCG(uint64(seed), 1))
		n := 2 + rnd.IntN(13)
		edges := randomGraph(rnd, n)
		c := newCluster(t, seed, n, edges, sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: time.Duration(rnd.IntN(5000)) * time.Microsecond})
		if !c.s.RunUntil(c.agreed, time.Second) {
			t.Fatalf("no agreement on 1 within a second\n%s", c.describe())
		}
		election := c.s.Sent(wire.KindYoYoHello) + c.s.Sent(wire.KindYoYoDown) + c.s.Sent(wire.KindYoYoUp)
		e := uint64(len(edges))
		iters := uint64(2)
		for k := 1; k < n; k *= 2 {
			iters++
		}
		// Startup rounds that lost to a higher one cost their hellos too:
		// every member may have started one.
		if bound := uint64(n)*2*e + 2*e*iters; election > bound {
			t.Errorf("%d members, %d edges: %d election messages, more than %d", n, e, election, bound)
		}
		c.oneLeaderPerRound()
		if testing.Verbose() {
			t.Logf("%d members, %d edges: leader 1 after %v, %d hello, %d values, %d votes",
				n, e, c.s.Elapsed(), c.s.Sent(wire.KindYoYoHello), c.s.Sent(wire.KindYoYoDown), c.s.Sent(wire.KindYoYoUp))
		}
	})
}

// TestSimYoYoFaults: the same graphs under crashes and restarts (member 1
// included), partitions and loss of the leader's flood; once every member
// is back and the links heal, all agree on 1 again within a bound, and no
// round ever had two winners.
func TestSimYoYoFaults(t *testing.T) {
	sim.Seeds(t, 30, func(t *testing.T, seed int64) {
		rnd := rand.New(rand.NewPCG(uint64(seed), 2))
		n := 3 + rnd.IntN(10)
		edges := randomGraph(rnd, n)
		c := newCluster(t, seed, n, edges, sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: 2 * time.Millisecond, Loss: rnd.Float64() * 0.1})
		c.s.Run(time.Second)
		pick := func() uint32 { return uint32(1 + rnd.IntN(n)) }
		for range 3 + rnd.IntN(5) {
			switch rnd.IntN(5) {
			case 0:
				c.s.Crash(1)
			case 1:
				c.s.Crash(pick())
			case 2:
				c.s.Restart(pick())
			case 3:
				a := pick()
				var rest []uint32
				for id := uint32(1); id <= uint32(n); id++ {
					if id != a {
						rest = append(rest, id)
					}
				}
				c.s.Partition([]uint32{a}, rest)
			case 4:
				c.s.Heal()
			}
			c.s.Run(time.Duration(200+rnd.IntN(2000)) * time.Millisecond)
		}
		c.s.Heal()
		for _, id := range c.s.IDs() {
			if !c.s.Up(id) {
				c.s.Restart(id)
			}
		}
		c.s.SetDefaultLink(sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: time.Millisecond})
		if !c.s.RunUntil(c.agreed, 5*time.Second) {
			t.Fatalf("no agreement on 1 within 5 s of the heal\n%s\n%s", c.describe(), c.s.Log())
		}
		c.oneLeaderPerRound()
	})
}
