package client_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/client"
)

// A host whose clock is 80 ms behind and 40 ppm slow polls two servers with
// true clocks on a simulated LAN. The burst fills the clock filters, the
// first update slews the 80 ms away in about a second, and a minute later
// the frequency is learned and the clock is within tens of microseconds,
// inside the error bound the client reports.
func Example() {
	s := sim.New(sim.Config{Seed: 7})
	for _, id := range []uint32{2, 3} {
		s.AddNode(id, addr(id), func(core.Env) core.Core { return &testServer{} }, clock.SimConfig{})
	}
	s.AddNode(1, addr(1), func(core.Env) core.Core {
		cfg := client.DefaultLANConfig()
		cfg.Servers = []netip.AddrPort{addr(2), addr(3)}
		cfg.Rand = s.NewRand()
		c, err := client.New(cfg)
		if err != nil {
			panic(err)
		}
		return c
	}, clock.SimConfig{Offset: -80 * time.Millisecond, DriftPPM: -40})

	within := func() bool { return s.Clock(1).TrueOffset().Abs() < time.Millisecond }
	fmt.Println("within 1 ms in 10 s:", s.RunUntil(within, 10*time.Second))
	s.Run(time.Minute)

	st := s.Core(1).(*client.Client).Report()
	truth := s.Clock(1).TrueOffset()
	fmt.Println("synchronised:", st.Synchronized, "stratum:", st.Stratum)
	fmt.Println("within 100 µs:", truth.Abs() < 100*time.Microsecond)
	fmt.Println("inside the bound:", truth.Abs() <= time.Duration(st.ErrorBoundNS))
	fmt.Printf("frequency: %+.0f ppm\n", st.FrequencyPPM)
	// Both servers are equally good: which one is the system peer is a
	// coin toss of the network's jitter; one is, the other is combined.
	verdicts := map[string]int{}
	for _, src := range st.Sources {
		fmt.Println(src.Address, src.Reach)
		verdicts[src.Verdict]++
	}
	fmt.Println("system peer:", verdicts["sys_peer"], "combined:", verdicts["combined"])
	// Output:
	// within 1 ms in 10 s: true
	// synchronised: true stratum: 2
	// within 100 µs: true
	// inside the bound: true
	// frequency: +40 ppm
	// 10.0.0.2:123 377
	// 10.0.0.3:123 377
	// system peer: 1 combined: 1
}
