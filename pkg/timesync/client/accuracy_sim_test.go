package client_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/client"
	"github.com/synclab/synclab/pkg/wire"
)

// lanNoise is a namespace LAN as the timesync benchmark sees it on a busy
// two-core machine: a few microseconds of jitter most of the time, and
// now and then a second in which one direction is delayed by up to burst
// (the server or the client not scheduled at once), which is what gives
// the measured offsets their heavy tail.
type lanNoise struct {
	calm, burst time.Duration
	burstProb   float64
	loss        float64
}

// set draws the next second's links between the client and server.
func (n lanNoise) set(s *sim.Sim, rng *rand.Rand, server uint32) {
	up := sim.LinkConfig{Delay: 20 * time.Microsecond, Jitter: n.calm, Loss: n.loss}
	down := up
	if rng.Float64() < n.burstProb {
		if rng.IntN(2) == 0 {
			up.Jitter = n.burst
		} else {
			down.Jitter = n.burst
		}
	}
	s.SetLink(clientID, server, up)
	s.SetLink(server, clientID, down)
}

// labExchange is one recorded exchange of the namespace LAN
// (testdata/lan-noise.txt): the offset it measured against a clock that
// was right within about a microsecond, and its round trip.
type labExchange struct {
	noise, delay time.Duration
}

// readLabNoise reads testdata/lan-noise.txt (see its header).
func readLabNoise(t testing.TB) []labExchange {
	data, err := os.ReadFile("testdata/lan-noise.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out []labExchange
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var n, d int64
		if _, err := fmt.Sscan(line, &n, &d); err != nil {
			t.Fatalf("lan-noise.txt: %q: %v", line, err)
		}
		out = append(out, labExchange{time.Duration(n), time.Duration(d)})
	}
	return out
}

// replay sets the links between the client and server so that an
// exchange made now measures e: the round trip e.delay, split so that
// the offset is off by e.noise (half the difference of the legs).
func (e labExchange) replay(s *sim.Sim, server uint32) {
	up := min(max(e.delay/2+e.noise, 0), e.delay)
	s.SetLink(clientID, server, sim.LinkConfig{Delay: up})
	s.SetLink(server, clientID, sim.LinkConfig{Delay: e.delay - up})
}

// lanAccuracy runs one client polling one server every second over noise,
// with its clock off by up to ±100 ms and ±50 ppm, and returns its |true
// offset| sampled once a second (as the benchmark samples timed) over
// window after warmup, the oracle checking the bound and monotonicity
// after every action. step, when non-zero, changes the oscillator's
// frequency by that much halfway through the window.
func lanAccuracy(t *testing.T, seed int64, noise lanNoise, warmup, window time.Duration, step float64) []time.Duration {
	return lanRun(t, seed, func(s *sim.Sim, rng *rand.Rand, _ int) { noise.set(s, rng, 2) }, warmup, window, step, nil)
}

// lanRun is lanAccuracy with the links of each second set by links, and
// the client's configuration changed by mut (nil: the LAN defaults).
func lanRun(t *testing.T, seed int64, links func(s *sim.Sim, rng *rand.Rand, sec int), warmup, window time.Duration, step float64, mut func(*client.Config)) []time.Duration {
	rng := rand.New(rand.NewPCG(uint64(seed), 34))
	s := sim.New(sim.Config{Seed: seed})
	const server = 2
	addServer(s, server, clock.SimConfig{})
	cfg := testConfig(server)
	cfg.MinPoll, cfg.MaxPoll, cfg.PollRangeSet = 0, 0, true
	if mut != nil {
		mut(&cfg)
	}
	clk := startClock(rng)
	addClient(t, s, clientID, cfg, clk)
	o := &oracle{t: t, s: s, id: clientID}
	var errs []time.Duration
	for sec := time.Duration(0); sec < warmup+window; sec += time.Second {
		links(s, rng, int(sec/time.Second))
		if step != 0 && sec == warmup+window/2 {
			s.Clock(clientID).ChangeDrift(step)
		}
		run(s, time.Second, o)
		if sec >= warmup {
			errs = append(errs, s.Clock(clientID).TrueOffset().Abs())
		}
	}
	return errs
}

// lanScenarios are the conditions TestSimLANAccuracy grades the client
// under, each with the largest |error| p99 it allows: the median over the
// seeds and the worst seed. The client polls every second, as in the
// timesync benchmark; it measured median / worst 0.78 / 1.45, 0.90 /
// 1.30, 0.84 / 1.07 and 8.7 / 11.4 us (2026-12-06). A guard: the limits
// leave room for the seeds, not for a worse servo.
var lanScenarios = []struct {
	name        string
	noise       lanNoise
	step        float64 // ppm, halfway through the window
	median, max time.Duration
}{
	{"calm", lanNoise{calm: 4 * time.Microsecond}, 0, time.Microsecond, 2 * time.Microsecond},
	{"bursty", lanNoise{calm: 4 * time.Microsecond, burst: 60 * time.Microsecond, burstProb: 0.1}, 0, 1200 * time.Nanosecond, 2 * time.Microsecond},
	{"bursty-loss", lanNoise{calm: 4 * time.Microsecond, burst: 60 * time.Microsecond, burstProb: 0.1, loss: 0.05}, 0, 1200 * time.Nanosecond, 3 * time.Microsecond},
	// A 1 ppm step of the oscillator's frequency (temperature) at
	// the fifth minute: the regression's runs test cuts the window.
	{"bursty-step", lanNoise{calm: 4 * time.Microsecond, burst: 60 * time.Microsecond, burstProb: 0.1}, 1, 10 * time.Microsecond, 15 * time.Microsecond},
}

// TestSimLANAccuracy: the client's |true offset| p99, sampled every second
// over 8 minutes after a 2-minute warm-up, under each of lanScenarios,
// over 12 seeds; the oracle checks the bound and the monotonic clock after
// every action.
func TestSimLANAccuracy(t *testing.T) {
	for _, sc := range lanScenarios {
		t.Run(sc.name, func(t *testing.T) {
			var p99s []time.Duration
			sim.Seeds(t, 12, func(t *testing.T, seed int64) {
				errs := lanAccuracy(t, seed, sc.noise, 2*time.Minute, 8*time.Minute, sc.step)
				p99s = append(p99s, pctl(errs, 99))
			})
			if len(p99s) == 0 {
				return // the seed that failed said why (a panic here hid it)
			}
			slices.Sort(p99s)
			med, worst := p99s[len(p99s)/2], p99s[len(p99s)-1]
			t.Logf("%s: |error| p99 over %d seeds: median %v, max %v, all %v", sc.name, len(p99s), med, worst, p99s)
			if med > sc.median || worst > sc.max {
				t.Errorf("%s: |error| p99 median %v, worst %v; want at most %v and %v", sc.name, med, worst, sc.median, sc.max)
			}
		})
	}
}

// TestSimLabNoise replays the namespace LAN's own noise, recorded by
// chronyd -x in the timesync benchmark (testdata/lan-noise.txt: 266
// exchanges, one a second; round trips 8-95 us, p50 30 us; offsets off by
// p50 / p90 / p99 1.5 / 5.9 / 25 us, the worst ones on the most delayed
// exchanges), through the whole client polling every second, from 12
// points of the recording (replayed in a loop). It measured |error| p50
// 1.18 us and p99 3.42 us (median over the starts; worst start 3.50 us).
//
// What it does not hold: the offsets are chronyd's measurements against
// its own steered clock, which follows the lab's slow, load-driven error
// that every client of the server shares (its 2-minute medians move
// between 0.4 and 4.5 us, the same way for timed and chronyd), so the
// replay lacks it. A client that weighed every sample by its delay
// instead of taking RFC 5905's minimum-delay one measured 0.55 / 2.35 us
// here and was worse in the lab, p99 1.4-2.5 times main's in 4 of 5
// paired runs (docs/benchmarks/2026-12-06-timesync-servo.md). A guard,
// not a measure of the lab.
func TestSimLabNoise(t *testing.T) {
	ex := readLabNoise(t)
	var p50s, p99s []time.Duration
	sim.Seeds(t, 12, func(t *testing.T, seed int64) {
		start := int(seed) * len(ex) / 12
		errs := lanRun(t, seed, func(s *sim.Sim, _ *rand.Rand, sec int) { ex[(start+sec)%len(ex)].replay(s, 2) },
			2*time.Minute, 8*time.Minute, 0, nil)
		p50s = append(p50s, pctl(errs, 50))
		p99s = append(p99s, pctl(errs, 99))
	})
	if len(p99s) == 0 {
		return // the seed that failed said why
	}
	slices.Sort(p99s)
	p50, p99, worst := pctl(p50s, 50), p99s[len(p99s)/2], p99s[len(p99s)-1]
	t.Logf("|error| over %d starts: p50 median %v; p99 median %v, max %v, all %v", len(p99s), p50, p99, worst, p99s)
	if p50 > 1500*time.Nanosecond || p99 > 4*time.Microsecond || worst > 4500*time.Nanosecond {
		t.Errorf("|error| p50 %v, p99 %v (worst start %v); want at most 1.5us, 4us and 4.5us", p50, p99, worst)
	}
}

// pctl is the nearest-rank p-th percentile.
func pctl(v []time.Duration, p int) time.Duration {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[max((len(v)*p+99)/100-1, 0)]
}

// coldServer is a stratum-1 server behind the namespace LAN's cold path:
// a request that comes more than warm after the last one (a poll's first,
// after a second of silence) took cold longer to arrive than its link
// says, as the bench's bridge showed (the first request of a poll 45 us
// there and back, its request leg 5 us slower than its answer's; the next
// one, sent at once, 21-28 us, its legs within 1-2 us). The sim delivers
// every datagram on its link's delay, so the server stamps the request's
// receipt cold later and its answer's departure when it truly leaves,
// which gives the client the offset and the round trip the late request
// would have (T3 before T2 by cold; the client only subtracts them).
type coldServer struct {
	testServer
	cold, warm time.Duration
	last       time.Time
}

func newColdServer(cold, warm time.Duration) *coldServer {
	s := &coldServer{cold: cold, warm: warm}
	s.edit = func(d core.Datagram, rep *wire.NTPPacket) {
		if s.last.IsZero() || d.Time.Sub(s.last) > s.warm {
			rep.Receive = wire.NTPTimeFromTime(d.Time.Add(s.cold))
		}
		s.last = d.Time
	}
	return s
}

// TestSimPollSamplesColdPath: a poll's first request after a second of
// silence is 20 us late on its way to the server, the rest of the path
// 20 us each way with 2 us of jitter. One request a poll puts the client
// ahead by half of that; with PollSamples 2 the second request, sent on
// the first's answer, is the poll's sample, and the client is within a
// microsecond. The oracle checks the bound and the monotonic clock
// throughout, 4 seeds each.
func TestSimPollSamplesColdPath(t *testing.T) {
	const cold = 20 * time.Microsecond
	for _, tc := range []struct {
		samples  int
		min, max time.Duration // the median true offset, + ahead
	}{
		{1, cold/2 - 2*time.Microsecond, cold/2 + 2*time.Microsecond},
		{2, -time.Microsecond, time.Microsecond},
	} {
		sim.Seeds(t, 4, func(t *testing.T, seed int64) {
			srv := newColdServer(cold, 50*time.Millisecond)
			s, offs := steadyOffsets(t, seed, srv, sim.LinkConfig{Delay: 20 * time.Microsecond, Jitter: 2 * time.Microsecond}, 120,
				func(c *client.Config) { c.PollSamples = tc.samples })
			med := offs[len(offs)/2]
			if med < tc.min || med > tc.max {
				t.Fatalf("PollSamples %d: median true offset %v, want within [%v, %v]\n%s", tc.samples, med, tc.min, tc.max, report(s))
			}
			t.Logf("PollSamples %d: median true offset %v, extremes %v and %v", tc.samples, med, offs[0], offs[len(offs)-1])
		})
	}
}
