package sim_test

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// gossip is a core small enough to read at a glance: every 100 ms of its
// clock it tells the others the largest value it knows, takes a larger one
// when it hears it (an "adopted" event), and keeps it on disk.
type gossip struct {
	core.Durable
	value uint64
	next  time.Time
	rd    core.Ready
}

func newGossip(env core.Env) core.Core {
	g := &gossip{}
	if len(env.State) == 8 {
		g.value = binary.BigEndian.Uint64(env.State)
	}
	return g
}

func (g *gossip) set(v uint64) { g.value = v; g.Change(false) }

func (g *gossip) Step(m core.Message) error {
	if len(m.Payload) != 8 {
		return core.ErrUnexpectedKind
	}
	if v := binary.BigEndian.Uint64(m.Payload); v > g.value {
		g.set(v)
		g.rd.Events = append(g.rd.Events, core.Event{Name: "adopted", Args: []any{"value", v, "from", m.From}})
	}
	return nil
}
func (g *gossip) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }
func (g *gossip) Status() any                      { return g.value }
func (g *gossip) Deadline() time.Time              { return g.next }
func (g *gossip) Tick(now time.Time) {
	if !now.Before(g.next) {
		g.rd.Messages = append(g.rd.Messages, core.Message{To: core.Broadcast, Kind: wire.KindHeartbeat,
			Payload: binary.BigEndian.AppendUint64(nil, g.value)})
		g.next = now.Add(100 * time.Millisecond)
	}
}
func (g *gossip) Ready() core.Ready {
	rd := g.rd
	g.rd = core.Ready{}
	g.Durable.Ready(&rd, func() []byte { return binary.BigEndian.AppendUint64(nil, g.value) })
	return rd
}

// The simulator's walk-through: build a cluster from a core constructor,
// run it, act on it as an operator would (Do), break it (Partition, Crash)
// and heal it, and check what the cores did. A real test does this over
// many seeds (sim.Seeds) against an oracle; s.Log() is the readable trace
// for its failure message.
func Example_walkthrough() {
	s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: time.Millisecond, Loss: 0.05}})
	for _, id := range []uint32{1, 2, 3} {
		// The constructor gets what a daemon gives a core (core.Env): its
		// ID and members, a seeded Rand, the node's Lamport clock, and its
		// disk (nil at the first start).
		s.AddNode(id, netip.AddrPort{}, newGossip, clock.SimConfig{Offset: time.Duration(id) * time.Millisecond, DriftPPM: 20 * float64(id)})
	}
	value := func(id uint32) uint64 { return s.Core(id).(*gossip).value }
	all := func(v uint64) func() bool {
		return func() bool { return value(1) == v && value(2) == v && value(3) == v }
	}

	// An operator action goes through Do, which drains the core's output
	// like a tick.
	_ = s.Do(1, func(c core.Core) { c.(*gossip).set(42) })
	fmt.Println("everyone has 42:", s.RunUntil(all(42), 5*time.Second))

	s.Partition([]uint32{1, 2}, []uint32{3})
	_ = s.Do(1, func(c core.Core) { c.(*gossip).set(43) })
	s.Run(time.Second)
	fmt.Println("partitioned: 2 has", value(2), "and 3 has", value(3))
	s.Heal()
	fmt.Println("healed, everyone has 43:", s.RunUntil(all(43), 5*time.Second))

	// A crash loses the process, not the disk: the restarted core reads
	// its value back from its last persisted state.
	s.Crash(2)
	s.Restart(2)
	fmt.Println("restarted 2 has", value(2))
	// Each of 2 and 3 adopted 42 and then 43 once.
	fmt.Println("adopted events:", len(s.EventsNamed("adopted")))
	// Output:
	// everyone has 42: true
	// partitioned: 2 has 43 and 3 has 42
	// healed, everyone has 43: true
	// restarted 2 has 43
	// adopted events: 4
}
