package client_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/timesync/client"
)

// skipAdjust drives a client as `timed run --no-adjust` does: the daemon
// (internal/daemon Config.SkipAdjust) drops every clock adjustment the core
// asks for, and counts them.
type skipAdjust struct {
	*client.Client
	dropped int
}

func (d *skipAdjust) Ready() core.Ready {
	rd := d.Client.Ready()
	d.dropped += len(rd.Adjustments)
	rd.Adjustments = nil
	return rd
}

// TestSimNoAdjustReportsUntouchedClock: with NoAdjust (timed run
// --no-adjust) the clock is never corrected, so every offset the client
// reports must be the offset of the clock as it is: reference minus local,
// the negative of the clock's true error, all along (not the offset left
// after the slews it would have made, which is what a client that believes
// its corrections were applied reports: 0 now, a few ms last, while the
// clock stays 30 ms off). Its frequency is the correction it would make
// (minus the drift), its bound holds the truth, it asks for no adjustment,
// saves no state, says it is not synchronised, and polls less often once
// its open-loop model (offset and drift) predicts the offsets.
func TestSimNoAdjustReportsUntouchedClock(t *testing.T) {
	sim.Seeds(t, 12, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		s := sim.New(sim.Config{Seed: seed})
		const srv = 2
		addServer(s, srv, clock.SimConfig{})
		delay := time.Duration(100+rng.IntN(200)) * time.Microsecond
		s.SetLink(clientID, srv, sim.LinkConfig{Delay: delay, Jitter: 20 * time.Microsecond, Loss: 0.05})
		s.SetLink(srv, clientID, sim.LinkConfig{Delay: delay, Jitter: 20 * time.Microsecond, Loss: 0.05})
		clk := startClock(rng)
		if rng.IntN(2) == 0 {
			clk.Offset = 30 * time.Millisecond // the reported case
		}
		cfg := testConfig(srv)
		cfg.MinPoll, cfg.MaxPoll = -3, 0
		cfg.NoAdjust = true
		cfg.StepThreshold = time.Millisecond // would step; must not
		var drv *skipAdjust
		s.AddNode(clientID, addr(clientID), func(env core.Env) core.Core {
			cfg := cfg
			cfg.Rand, cfg.TickInterval = s.NewRand(), s.Config().TickInterval
			c, err := client.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			drv = &skipAdjust{Client: c}
			return drv
		}, clk)

		free := func() time.Duration { // the untouched clock's error now
			return clk.Offset + time.Duration(clk.DriftPPM*1e-6*float64(s.Elapsed()))
		}
		var checks int
		s.RunUntil(func() bool {
			c := drv.Client
			now := s.Clock(clientID).Now()
			if lo, hi := c.Bound(now); !lo.IsZero() {
				if truth := s.Now(); truth.Before(lo) || truth.After(hi) {
					t.Fatalf("at +%v: true offset %v outside the bound [%v, %v]", s.Elapsed(), s.Clock(clientID).TrueOffset(), now.Sub(hi), now.Sub(lo))
				}
			}
			st := c.Report()
			if st.Updates == 0 {
				return false
			}
			checks++
			want := -s.Clock(clientID).TrueOffset()
			if d := time.Duration(st.OffsetNS) - want; d.Abs() > time.Millisecond {
				t.Fatalf("at +%v after %d updates: offset_ns %v, want the clock's %v (true error %v)",
					s.Elapsed(), st.Updates, time.Duration(st.OffsetNS), want, -want)
			}
			if d := time.Duration(st.LastOffsetNS) - want; d.Abs() > time.Millisecond {
				t.Fatalf("at +%v after %d updates: last_offset_ns %v, want about %v", s.Elapsed(), st.Updates, time.Duration(st.LastOffsetNS), want)
			}
			for _, src := range st.Sources {
				if d := time.Duration(src.OffsetNS) - want; src.Samples > 0 && d.Abs() > time.Millisecond {
					t.Fatalf("at +%v: source %s offset_ns %v, want about %v", s.Elapsed(), src.Address, time.Duration(src.OffsetNS), want)
				}
				if d := time.Duration(src.LastOffsetNS) - want; src.Samples > 0 && d.Abs() > time.Millisecond {
					t.Fatalf("at +%v: source %s last_offset_ns %v, want about %v", s.Elapsed(), src.Address, time.Duration(src.LastOffsetNS), want)
				}
			}
			return false
		}, 40*time.Second)
		st := drv.Client.Report()
		if checks == 0 || st.Updates < 5 {
			t.Fatalf("%d updates in 40 s\n%s", st.Updates, report(s))
		}
		if got := s.Clock(clientID).TrueOffset(); (got - free()).Abs() > time.Microsecond {
			t.Fatalf("the clock moved: error %v, untouched it would be %v", got, free())
		}
		if drv.dropped != 0 {
			t.Errorf("the client asked for %d clock adjustments with NoAdjust", drv.dropped)
		}
		if p := st.Sources[0].Poll; p <= cfg.MinPoll {
			t.Errorf("poll 2^%d s after %d updates: the offsets are predictable, the poll must grow as a disciplined clock's does", p, st.Updates)
		}
		if math.Abs(st.FrequencyPPM+clk.DriftPPM) > 1 {
			t.Errorf("frequency %.3f ppm, want the correction it would make, %.3f", st.FrequencyPPM, -clk.DriftPPM)
		}
		if st.Synchronized || !st.MeasureOnly || st.Stratum != 16 {
			t.Errorf("status: synchronized %v measure_only %v stratum %d, want false, true, 16", st.Synchronized, st.MeasureOnly, st.Stratum)
		}
		if s.Disk(clientID) != nil {
			t.Errorf("state saved with NoAdjust")
		}
		t.Logf("poll %d; clock %v %+.2f ppm: %d updates, offset %v (true error %v), frequency %+.2f ppm, bound ±%v",
			st.Sources[0].Poll, clk.Offset, clk.DriftPPM, st.Updates, time.Duration(st.OffsetNS), s.Clock(clientID).TrueOffset(), st.FrequencyPPM, time.Duration(st.ErrorBoundNS))
	})
}
