package timedcore_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/berkeley"
	"github.com/synclab/synclab/pkg/timesync/client"
	"github.com/synclab/synclab/pkg/timesync/server"
	"github.com/synclab/synclab/pkg/timesync/timedcore"
)

func simAddr(id uint32) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(id)}), 123)
}

// TestSimBerkeleyServesTruthfully: three Berkeley members whose clocks are
// +80, +20 and -25 ms off true time agree on their average, about 25 ms
// off, and serve it over NTP at stratum 8 (timed --mode berkeley --serve
// --stratum 8); an NTP client (-40 ms) follows them. The group's time is
// nobody's reference:
//
//   - without --local-error the members serve it unsynchronised (leap 3),
//     say why in their status, and the client refuses it: no bound, rather
//     than one that does not hold (root dispersion 0, as chronyd's local
//     advertises, gave the client a bound of ~100 us around a time 25 ms
//     off);
//   - with --local-error 100ms the root dispersion is that plus the
//     member's bound relative to the group, and the client's bound holds
//     the true time at every 100 ms of two minutes.
func TestSimBerkeleyServesTruthfully(t *testing.T) {
	for _, tc := range []struct {
		name     string
		localErr time.Duration
	}{{"no local error", 0}, {"local error 100ms", 100 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			s := sim.New(sim.Config{Seed: 7})
			members := []uint32{1, 2, 3}
			for i, off := range []time.Duration{80 * time.Millisecond, 20 * time.Millisecond, -25 * time.Millisecond} {
				id := members[i]
				s.AddNode(id, simAddr(id), func(env core.Env) core.Core {
					env.Members, env.Rand = members, s.NewRand()
					bk, err := berkeley.New(env, berkeley.Config{})
					if err != nil {
						t.Fatal(err)
					}
					srv, err := server.New(server.Config{LocalStratum: 8, LocalError: tc.localErr, Group: true})
					if err != nil {
						t.Fatal(err)
					}
					c, err := timedcore.New(timedcore.Config{Cluster: bk, Server: srv})
					if err != nil {
						t.Fatal(err)
					}
					return c
				}, clock.SimConfig{Offset: off, DriftPPM: float64(10 * (i - 1))})
			}
			const cl = 4
			s.AddNode(cl, simAddr(cl), func(env core.Env) core.Core {
				cfg := client.DefaultLANConfig()
				cfg.Servers = []netip.AddrPort{simAddr(1), simAddr(2), simAddr(3)}
				cfg.Rand, cfg.TickInterval = s.NewRand(), s.Config().TickInterval
				c, err := client.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}, clock.SimConfig{Offset: -40 * time.Millisecond})
			c := func() *client.Client { return s.Core(cl).(*client.Client) }
			checks, synced := 0, false
			var widest time.Duration
			for range 1200 { // two minutes
				s.Run(100 * time.Millisecond)
				now := s.Clock(cl).Now()
				lo, hi := c().Bound(now)
				if !c().Synchronized() {
					continue
				}
				synced = true
				truth := s.Now()
				if truth.Before(lo) || truth.After(hi) {
					t.Fatalf("at %v: true time outside the client's bound [%v, %v] around its reading (true offset %v; the group's %v)\n%+v",
						s.Elapsed(), lo.Sub(now), hi.Sub(now), s.Clock(cl).TrueOffset(), s.Clock(3).TrueOffset(), c().Report().Sources)
				}
				widest = max(widest, s.Clock(cl).TrueOffset().Abs())
				checks++
			}
			group := s.Clock(3).TrueOffset()
			st := s.Core(3).Status().(timedcore.Status)
			if tc.localErr == 0 {
				if synced || st.Server.System.Synchronized || st.Server.Unsynchronised == "" {
					t.Fatalf("the group's time served without a local error: client synchronised %v, server %+v (%q)", synced, st.Server.System, st.Server.Unsynchronised)
				}
				if n := c().Report().Counters["rejected_unsynchronized"]; n == 0 {
					t.Fatalf("the client did not refuse the unsynchronised answers: counters %v", c().Report().Counters)
				}
				t.Logf("group %v off true time: served unsynchronised (%s); the client refused it", group, st.Server.Unsynchronised)
				return
			}
			if checks < 600 || group.Abs() < 10*time.Millisecond || widest < 10*time.Millisecond {
				t.Fatalf("%d checks synchronised, the group %v off true time, the client up to %v: the test did not test", checks, group, widest)
			}
			if d := time.Duration(st.Server.System.RootDispersionNs); st.Server.System.Stratum != 8 || d < tc.localErr || d > tc.localErr+time.Millisecond {
				t.Fatalf("served %+v: want stratum 8, root dispersion the local error plus the member's bound", st.Server.System)
			}
			rep := c().Report()
			t.Logf("group %v off true time; the client %v off at the end, bound ±%v; %d checks held; served root dispersion %v",
				group, s.Clock(cl).TrueOffset(), time.Duration(rep.ErrorBoundNS), checks, time.Duration(st.Server.System.RootDispersionNs))
		})
	}
}
