package client_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/timesync/client"
)

// BenchmarkSimBroadcastAccuracy measures ground truth on simulated clocks:
// the |true offset| of a client following one true server by unicast
// (timed's LAN polls) and by broadcast (calibrated, every 1 s and every
// 16 s), over the same links, after a two-minute warm-up, sampled every
// 100 ms for ten minutes, over 10 seeds (clock 50-100 ms and up to ±50 ppm
// off). Reported: p50 and p99 of |true offset| and the median error bound
// over the same samples, in microseconds (the truth must stay inside the
// bound). Run with -benchtime=1x:
//
//	go test ./pkg/timesync/client -run '^$' -bench SimBroadcastAccuracy -benchtime=1x
func BenchmarkSimBroadcastAccuracy(b *testing.B) {
	lans := []struct {
		name string
		link sim.LinkConfig
	}{
		{"lan", sim.LinkConfig{Delay: 150 * time.Microsecond, Jitter: 30 * time.Microsecond, Loss: 0.01}},
		{"busy", sim.LinkConfig{Delay: 150 * time.Microsecond, Jitter: 500 * time.Microsecond, Loss: 0.05}},
	}
	modes := []struct {
		name     string
		interval time.Duration // 0: unicast
	}{{"unicast", 0}, {"broadcast-1s", time.Second}, {"broadcast-16s", 16 * time.Second}}
	for _, lan := range lans {
		for _, m := range modes {
			b.Run(lan.name+"/"+m.name, func(b *testing.B) {
				for range b.N {
					var all, bounds []time.Duration
					for seed := int64(1); seed <= 10; seed++ {
						got, bound := simAccuracy(b, seed, lan.link, m.interval)
						all, bounds = append(all, got...), append(bounds, bound...)
					}
					slices.Sort(all)
					slices.Sort(bounds)
					b.ReportMetric(float64(pct(all, 50).Nanoseconds())/1e3, "p50-us")
					b.ReportMetric(float64(pct(all, 99).Nanoseconds())/1e3, "p99-us")
					b.ReportMetric(float64(pct(bounds, 50).Nanoseconds())/1e3, "p50-bound-us")
				}
			})
		}
	}
}

// simAccuracy runs one seed and returns the |true offset| samples after
// the warm-up and the error bounds reported with them. It fails if the
// truth ever leaves the bound.
func simAccuracy(b *testing.B, seed int64, link sim.LinkConfig, interval time.Duration) (offsets, bounds []time.Duration) {
	rng := rand.New(rand.NewPCG(uint64(seed), 35))
	s := sim.New(sim.Config{Seed: seed})
	cfg := broadcastConfig()
	if interval == 0 {
		addServer(s, 2, clock.SimConfig{})
		cfg = testConfig(2)
	} else {
		addBroadcaster(b, s, 2, interval)
	}
	s.SetLink(clientID, 2, link)
	s.SetLink(2, clientID, link)
	addClient(b, s, clientID, cfg, startClock(rng))
	s.RunUntil(func() bool { return false }, 2*time.Minute)
	for range 6000 {
		s.RunUntil(func() bool { return false }, 100*time.Millisecond)
		off := s.Clock(clientID).TrueOffset()
		st := s.Core(clientID).(*client.Client).Report()
		if !st.Synchronized {
			b.Fatalf("seed %d: not synchronised after the warm-up\n%s", seed, report(s))
		}
		if off.Abs() > time.Duration(st.ErrorBoundNS) {
			b.Fatalf("seed %d: true offset %v outside the bound ±%v", seed, off, time.Duration(st.ErrorBoundNS))
		}
		offsets, bounds = append(offsets, off.Abs()), append(bounds, time.Duration(st.ErrorBoundNS))
	}
	return offsets, bounds
}
