package timedcore_test

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/client"
	"github.com/synclab/synclab/pkg/timesync/server"
	"github.com/synclab/synclab/pkg/timesync/timedcore"
)

// TestSimChainBoundHolds: stratum 1 (node 1) -> timed --serve (node 2,
// its clock 200-400 ppm fast or slow, over a link with 5 ms jitter and 20%
// loss) -> a timed client (node 3, on a clean LAN to node 2). Node 3's
// bound is built from node 2's served root delay and dispersion: it holds
// the truth only if they bound node 2's error, frequency not learned yet
// included. When node 2 served the RFC's accumulation alone, seed 4 failed:
// "node 3 at +31.43s: true offset 2.266474ms outside its bound [-8.121792ms,
// 2.100146ms] (node 2, 371 ppm, is off by 5.277823ms)".
func TestSimChainBoundHolds(t *testing.T) {
	sim.Seeds(t, 30, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 91))
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 50 * time.Microsecond, Jitter: 5 * time.Microsecond}})
		s.AddNode(1, simAddr(1), func(core.Env) core.Core {
			srv, err := server.New(server.Config{LocalStratum: 1})
			if err != nil {
				t.Fatal(err)
			}
			return srv
		}, clock.SimConfig{})
		newClient := func(up uint32) client.Config {
			cfg := client.DefaultLANConfig()
			cfg.Servers = []netip.AddrPort{simAddr(up)}
			cfg.Rand, cfg.TickInterval = s.NewRand(), s.Config().TickInterval
			return cfg
		}
		drift := 200 + 200*rng.Float64()
		if rng.IntN(2) == 0 {
			drift = -drift
		}
		s.AddNode(2, simAddr(2), func(core.Env) core.Core {
			cl, err := client.New(newClient(1))
			if err != nil {
				t.Fatal(err)
			}
			srv, err := server.New(server.Config{})
			if err != nil {
				t.Fatal(err)
			}
			c, err := timedcore.New(timedcore.Config{Client: cl, Server: srv})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, clock.SimConfig{Offset: time.Duration(rng.IntN(40)-20) * time.Millisecond, DriftPPM: drift})
		s.SetLinkBoth(1, 2, sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 5 * time.Millisecond, Loss: 0.2})
		s.AddNode(3, simAddr(3), func(core.Env) core.Core {
			c, err := client.New(newClient(2))
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, clock.SimConfig{})
		checks := 0
		s.RunUntil(func() bool {
			c := s.Core(3).(*client.Client)
			now := s.Clock(3).Now()
			if lo, hi := c.Bound(now); !lo.IsZero() {
				checks++
				if truth := s.Now(); truth.Before(lo) || truth.After(hi) {
					t.Fatalf("node 3 at +%v: true offset %v outside its bound [%v, %v] (node 2, %.0f ppm, is off by %v)",
						s.Elapsed(), s.Clock(3).TrueOffset(), now.Sub(hi), now.Sub(lo), drift, s.Clock(2).TrueOffset())
				}
			}
			return false
		}, 5*time.Minute)
		if checks == 0 {
			t.Fatal("node 3 never had a bound")
		}
	})
}
