package bully_test

import (
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/bully"
)

// Three members on a perfect network: every message is delivered at once,
// every node ticks every 10 ms (a driver may instead tick each when its
// Deadline comes). The highest-ranked member wins; when it
// resigns, the next one takes over in a higher term.
func Example() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	nodes := map[uint32]*bully.Core{}
	for _, id := range []uint32{1, 2, 3} {
		// The driver's environment: this member, the members, the clock,
		// the persisted state (none: a first start).
		env := core.Env{ID: id, Members: []uint32{1, 2, 3}, Now: now}
		b, err := bully.New(env, bully.DefaultLANConfig())
		if err != nil {
			panic(err)
		}
		nodes[id] = b
	}

	var queue []core.Message
	drain := func(id uint32) {
		rd := nodes[id].Ready()
		// (A driver persists rd.State here, before sending.)
		for _, m := range rd.Messages {
			m.From = id
			for _, to := range []uint32{1, 2, 3} {
				if to != id && (m.To == core.Broadcast || m.To == to) {
					c := m
					c.To = to
					queue = append(queue, c)
				}
			}
		}
		for _, e := range rd.Events {
			if e.Name == bully.EventElected {
				fmt.Printf("node %d elected %v\n", id, e.Args[2:])
			}
		}
	}
	run := func(ticks int) {
		for range ticks {
			now = now.Add(10 * time.Millisecond)
			for id := uint32(1); id <= 3; id++ {
				nodes[id].Tick(now)
				drain(id)
			}
			for len(queue) > 0 {
				m := queue[0]
				queue = queue[1:]
				if err := nodes[m.To].Step(m); err != nil {
					panic(err)
				}
				drain(m.To)
			}
		}
	}

	run(50)
	leader, term, _ := nodes[1].Leader()
	fmt.Println("node 1 follows", leader, "in term", term)

	if err := nodes[3].Resign(now); err != nil {
		panic(err)
	}
	drain(3)
	run(50)
	leader, term, _ = nodes[1].Leader()
	fmt.Printf("node 1 follows %d in term %d (round %d)\n", leader, term, bully.TermRound(term))
	// Output:
	// node 3 elected [term 3]
	// node 1 follows 3 in term 3
	// node 2 elected [term 4294967298]
	// node 1 follows 2 in term 4294967298 (round 1)
}

// Terms are owned: the low 32 bits name the only member that may lead.
func ExampleTermOwner() {
	t := bully.MakeTerm(7, 42)
	fmt.Println(t, bully.TermRound(t), bully.TermOwner(t))
	// Output: 30064771114 7 42
}
