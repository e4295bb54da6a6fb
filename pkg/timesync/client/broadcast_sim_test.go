package client_test

import (
	"math"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/client"
	"github.com/synclab/synclab/pkg/timesync/server"
	"github.com/synclab/synclab/pkg/wire"
)

// bcastGroup is the simulated LAN's broadcast address.
var bcastGroup = netip.MustParseAddrPort("10.0.0.255:123")

// bcastKeys is the key the broadcaster signs with and the clients know.
var bcastKeys = []wire.NTPKey{{ID: 7, Type: "SHA256", Secret: []byte("broadcast-secret-0123456789")}}

// addBroadcaster adds timed's server core as a stratum-1 broadcast
// server sending to bcastGroup every interval, signed with bcastKeys.
func addBroadcaster(t testing.TB, s *sim.Sim, id uint32, interval time.Duration) {
	s.AddGroup(bcastGroup)
	s.AddNode(id, addr(id), func(core.Env) core.Core {
		srv, err := server.New(server.Config{LocalStratum: 1, Keys: bcastKeys,
			Broadcast: server.BroadcastConfig{Addr: bcastGroup, Interval: interval, KeyID: 7}})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}, clock.SimConfig{})
}

func broadcastConfig() client.Config {
	cfg := client.DefaultLANConfig()
	cfg.Broadcast = client.BroadcastConfig{Enabled: true, Listen: bcastGroup.String(), Keys: bcastKeys}
	return cfg
}

// settled runs the simulation for d after convergence and returns the
// |true offset| of node id sampled every 100 ms, sorted.
func settled(s *sim.Sim, id uint32, d time.Duration, o *oracle) []time.Duration {
	var out []time.Duration
	for end := s.Elapsed() + d; s.Elapsed() < end; {
		run(s, 100*time.Millisecond, o)
		out = append(out, s.Clock(id).TrueOffset().Abs())
	}
	slices.Sort(out)
	return out
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(p/100*float64(len(d))))]
}

// TestSimBroadcast: a broadcast client 50-100 ms and up to ±50 ppm off
// follows timed's broadcast server (signed, every 2 s) over a LAN with
// jitter and loss: it calibrates the delay with client/server exchanges,
// gets within 1 ms in 15 s, stays within 100 us, and keeps the truth
// inside its error bound all along.
func TestSimBroadcast(t *testing.T) {
	sim.Seeds(t, 20, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 33))
		s := sim.New(sim.Config{Seed: seed})
		addBroadcaster(t, s, 2, 2*time.Second)
		link := sim.LinkConfig{Delay: time.Duration(100+rng.IntN(100)) * time.Microsecond, Jitter: 30 * time.Microsecond, Loss: 0.05}
		s.SetLink(clientID, 2, link)
		s.SetLink(2, clientID, link)
		clk := startClock(rng)
		addClient(t, s, clientID, broadcastConfig(), clk)
		o := &oracle{t: t, s: s, id: clientID}
		took := runUntilWithin(s, clientID, time.Millisecond, 15*time.Second, o)
		if took < 0 {
			t.Fatalf("clock %v %+.1f ppm: not within 1 ms after 15 s\n%s", clk.Offset, clk.DriftPPM, report(s))
		}
		run(s, time.Minute, o)
		got := settled(s, clientID, 2*time.Minute, o)
		if p99 := pct(got, 99); p99 > 100*time.Microsecond {
			t.Fatalf("|true offset| p99 %v after convergence\n%s", p99, report(s))
		}
		st := s.Core(clientID).(*client.Client).Report()
		if len(st.Sources) != 1 || st.Sources[0].Mode != "broadcast" || st.Sources[0].Broadcast == nil {
			t.Fatalf("sources %+v", st.Sources)
		}
		b := st.Sources[0].Broadcast
		// One calibration, and one more if the first ran while the clock
		// slewed its initial offset away.
		if b.State != "following" || b.Calibrations < 1 || b.Calibrations > 2 || st.Counters["broadcasts"] == 0 || st.SysPeer != addr(2).String() || st.Stratum != 2 {
			t.Fatalf("broadcast status %+v, counters %v, sys peer %q stratum %d", b, st.Counters, st.SysPeer, st.Stratum)
		}
		// The calibrated delay is what the broadcast amid the exchanges
		// took (the link's, and up to its jitter) plus the exchanges' own
		// error. Each exchange's offset is off by half the difference of
		// its two one-way delays, at most Jitter/2 here; the client's
		// bound allows half the round trip, at least Delay, for each, and
		// weighs them through the line it interpolates
		// (CalibrationErrorNS = Σ|c_i|·rtt_i/2). So the exchanges' error
		// is at most CalibrationErrorNS·(Jitter/2)/Delay: about 15 us
		// when the line's Σ|c_i| is 1, and more when the broadcast came
		// off the middle of the exchanges (seed 299: 5.14 us past the
		// jitter, within its 16.9 us).
		exch := time.Duration(math.Ceil(float64(b.CalibrationErrorNS) * float64(link.Jitter/2) / float64(link.Delay)))
		if d := time.Duration(b.DelayNS); d < link.Delay-exch || d > link.Delay+link.Jitter+exch {
			t.Fatalf("calibrated delay %v, link %v + up to %v, exchanges' error up to %v (calibration error %v)", d, link.Delay, link.Jitter, exch, time.Duration(b.CalibrationErrorNS))
		}
		t.Logf("clock %v %+.1f ppm: 1 ms after %v; |true offset| p50 %v p99 %v; delay %v (link %v, exchanges' error up to %v)", clk.Offset, clk.DriftPPM,
			took, pct(got, 50), pct(got, 99), time.Duration(b.DelayNS), link.Delay, exch)
	})
}

// TestSimBroadcastPathChange: the path gets 1 ms longer each way after the
// client converged. Its broadcasts' apparent delay jumps, the client
// holds them back, calibrates again (the new delay within the jitter of
// the new path) and stays within 100 us of true time: with the old delay
// it would be 1 ms off.
func TestSimBroadcastPathChange(t *testing.T) {
	sim.Seeds(t, 10, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 34))
		s := sim.New(sim.Config{Seed: seed})
		addBroadcaster(t, s, 2, 2*time.Second)
		link := sim.LinkConfig{Delay: 150 * time.Microsecond, Jitter: 20 * time.Microsecond}
		s.SetLink(clientID, 2, link)
		s.SetLink(2, clientID, link)
		addClient(t, s, clientID, broadcastConfig(), startClock(rng))
		o := &oracle{t: t, s: s, id: clientID}
		if runUntilWithin(s, clientID, time.Millisecond, 15*time.Second, o) < 0 {
			t.Fatalf("not within 1 ms after 15 s\n%s", report(s))
		}
		run(s, 2*time.Minute, o)
		calibrations := s.Core(clientID).(*client.Client).Report().Sources[0].Broadcast.Calibrations
		longer := link
		longer.Delay += time.Millisecond
		s.SetLink(clientID, 2, longer)
		s.SetLink(2, clientID, longer)
		run(s, 30*time.Second, o)
		if n := len(s.EventsNamed(client.EventPathChanged)); n != 1 {
			t.Fatalf("%d path changes seen, want 1\n%s", n, report(s))
		}
		o.worst = 0
		run(s, 2*time.Minute, o)
		st := s.Core(clientID).(*client.Client).Report()
		b := st.Sources[0].Broadcast
		if d := time.Duration(b.DelayNS); b.Calibrations != calibrations+1 || d < longer.Delay-5*time.Microsecond || d > longer.Delay+longer.Jitter+5*time.Microsecond {
			t.Fatalf("after the change: %d calibrations (%d before), delay %v; want one more and %v + up to %v\n%s", b.Calibrations, calibrations, d, longer.Delay, longer.Jitter, report(s))
		}
		if o.worst > 100*time.Microsecond {
			t.Fatalf("|true offset| up to %v after the recalibration\n%s", o.worst, report(s))
		}
		t.Logf("path +1 ms: recalibrated to %v, |true offset| then <= %v", time.Duration(b.DelayNS), o.worst)
	})
}
