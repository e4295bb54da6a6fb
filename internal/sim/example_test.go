package sim_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/wire"
)

// Three members run the liveness detector on drifting clocks; member 3
// crashes, and the others suspect it half a second later (SuspectTicks = 50
// ticks of 10 ms), counted from its last heartbeat.
func Example() {
	s := sim.New(sim.Config{Seed: 1})
	ids := []uint32{1, 2, 3}
	for _, id := range ids {
		s.AddNode(id, netip.AddrPort{}, func(core.Env) core.Core {
			cfg := liveness.DefaultLANConfig()
			cfg.ID, cfg.Members, cfg.Rand = id, ids, s.NewRand()
			c, err := liveness.New(cfg)
			if err != nil {
				panic(err)
			}
			return c
		}, clock.SimConfig{Offset: time.Duration(id) * time.Millisecond, DriftPPM: 50 * float64(id)})
	}
	s.Run(time.Second)
	fmt.Println("heartbeats in the first second:", s.Sent(wire.KindHeartbeat))

	s.Crash(3)
	crashed := s.Elapsed()
	suspected := func() bool {
		return s.Core(1).(*liveness.Core).State(3) == liveness.Suspect &&
			s.Core(2).(*liveness.Core).State(3) == liveness.Suspect
	}
	fmt.Println("suspected:", s.RunUntil(suspected, time.Second))
	for _, e := range s.EventsNamed(liveness.EventMemberDown) {
		fmt.Printf("member %d suspects %v, %v after the crash\n", e.Node, e.Args[1], (e.At - crashed).Round(10*time.Millisecond))
	}
	// Output:
	// heartbeats in the first second: 60
	// suspected: true
	// member 2 suspects 3, 450ms after the crash
	// member 1 suspects 3, 460ms after the crash
}
