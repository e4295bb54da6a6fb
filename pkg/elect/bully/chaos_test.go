package bully

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestChaos runs the synchronous test network through random loss,
// crashes, restarts and partitions. The network itself enforces at most one
// leader per term, persist-before-send and terms that never go back (see
// drain); after healing, the highest-ranked live member must lead everyone.
// The simulator tests (sim_test.go) add delays, jitter, reordering,
// duplication and drifting clocks.
func TestChaos(t *testing.T) {
	for seed := range uint64(150) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 3))
			size := 2 + rnd.IntN(8)
			ms := ids(size)
			if seed%3 == 0 {
				for i := range ms {
					ms[i].Priority = uint32(rnd.IntN(3))
				}
			}
			n := newNetwork(t, ms, nil)
			n.rnd = rand.New(rand.NewPCG(seed, 4))
			n.loss = rnd.Float64() * 0.3
			pick := func() uint32 { return uint32(1 + rnd.IntN(size)) }
			for range 8 {
				switch rnd.IntN(6) {
				case 0:
					if id := pick(); !n.down[id] {
						n.crash(id)
					}
				case 1:
					if id := pick(); n.down[id] {
						n.start(id)
					}
				case 2:
					n.isolate(pick(), true)
				case 3:
					a, b := pick(), pick()
					n.cut[[2]uint32{a, b}], n.cut[[2]uint32{b, a}] = a != b, a != b
				case 4:
					clear(n.cut)
				case 5:
					if id := pick(); !n.down[id] && n.nodes[id].Role() == RoleLeader {
						if err := n.nodes[id].Resign(n.now); err != nil {
							t.Fatal(err)
						}
						n.drain(id)
					}
				}
				n.tick(rnd.IntN(150))
			}
			clear(n.cut)
			n.loss = 0
			live := 0
			for _, id := range n.order {
				if !n.down[id] {
					live++
				}
			}
			if live == 0 {
				n.start(pick())
			}
			// A member that resigned yields to whoever leads until that
			// leader fails: the leader must be the highest-ranked live
			// member that is not yielding.
			n.tick(300)
			want := n.topLive(func(id uint32) bool { return !n.nodes[id].Detail().Yielding })
			if want == 0 {
				want = n.topLive(func(uint32) bool { return true })
			}
			n.settle(want, 300)
		})
	}
}

// topLive is the highest-ranked live member for which ok holds (0: none).
func (n *network) topLive(ok func(uint32) bool) uint32 {
	var best Member
	for _, m := range n.members {
		if !n.down[m.ID] && ok(m.ID) && (best.ID == 0 || m.outranks(best)) {
			best = m
		}
	}
	return best.ID
}
