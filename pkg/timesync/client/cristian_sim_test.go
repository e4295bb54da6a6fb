package client_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/client"
	"github.com/synclab/synclab/pkg/timesync/server"
	"github.com/synclab/synclab/pkg/wire"
)

var simCluster = wire.ClusterID("sim")

// addCristianServer adds a real timed server core (pkg/timesync/server) at
// local stratum 1 that answers Cristian's requests.
func addCristianServer(t *testing.T, s *sim.Sim, id uint32, clk clock.SimConfig) {
	s.AddNode(id, addr(id), func(core.Env) core.Core {
		srv, err := server.New(server.Config{LocalStratum: 1, RateLimit: server.RateLimit{Interval: -1},
			Cristian: server.CristianConfig{ID: id, Cluster: simCluster}})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}, clk)
}

// TestSimCristian: a client 50-100 ms and up to ±50 ppm off follows 1 to 3
// timed servers with Cristian's algorithm over lossy, jittery, asymmetric
// links; with three, one may be a falseticker a second off. The truth stays
// inside the error bound all along (the oracle), the clock is within 1 ms
// in 10 s and within 200 µs later, and the falseticker is rejected.
func TestSimCristian(t *testing.T) {
	sim.Seeds(t, 40, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 11))
		s := sim.New(sim.Config{Seed: seed})
		nsrv := 1 + rng.IntN(3)
		liar := uint32(0)
		if nsrv == 3 && rng.IntN(2) == 0 {
			liar = 4
		}
		cfg := client.DefaultLANConfig()
		cfg.ID, cfg.Cluster = clientID, simCluster
		for i := range nsrv {
			id := uint32(2 + i)
			var clk clock.SimConfig
			if id == liar {
				clk.Offset = time.Second
			}
			addCristianServer(t, s, id, clk)
			cfg.CristianServers = append(cfg.CristianServers, addr(id))
			out := time.Duration(100+rng.IntN(100)) * time.Microsecond
			s.SetLink(clientID, id, sim.LinkConfig{Delay: out, Jitter: 100 * time.Microsecond, Loss: 0.05, Duplicate: 0.02})
			s.SetLink(id, clientID, sim.LinkConfig{Delay: out * 2, Jitter: 200 * time.Microsecond, Loss: 0.05, Duplicate: 0.02})
		}
		clk := startClock(rng)
		addClient(t, s, clientID, cfg, clk)
		o := &oracle{t: t, s: s, id: clientID}
		took := runUntilWithin(s, clientID, time.Millisecond, 10*time.Second, o)
		if took < 0 {
			t.Fatalf("%d servers (liar %d), clock %v %+.1f ppm: |offset| %v after 10 s\n%s", nsrv, liar, clk.Offset, clk.DriftPPM,
				s.Clock(clientID).TrueOffset(), report(s))
		}
		run(s, time.Minute, o)
		o.worst = 0
		run(s, 30*time.Second, o)
		if o.worst > 200*time.Microsecond {
			t.Fatalf("|offset| up to %v a minute after convergence\n%s", o.worst, report(s))
		}
		st := s.Core(clientID).(*client.Client).Report()
		for _, src := range st.Sources {
			if src.Mode != "cristian" || src.CristianRounds < 1 || src.CristianRTTNS <= 0 {
				t.Errorf("source %+v", src)
			}
			if src.Address == addr(liar).String() && src.Verdict != "falseticker" {
				t.Errorf("the server a second off is %s (%s)", src.Verdict, src.Why)
			}
		}
		if st.Stratum != 2 || st.ErrorBoundNS <= 0 {
			t.Errorf("stratum %d, bound %d ns", st.Stratum, st.ErrorBoundNS)
		}
		t.Logf("%d servers (liar %d), clock %v %+.1f ppm: 1 ms after %v, then |offset| <= %v, bound ±%v",
			nsrv, liar, clk.Offset, clk.DriftPPM, took, o.worst, time.Duration(st.ErrorBoundNS))
	})
}
