package main

import (
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/order"
	"github.com/synclab/synclab/pkg/wire"
)

// TestIdleFramesAtDefaults counts what an idle cluster of three orderd
// cores costs a second on the simulator, with the flags' defaults: the
// sequencer's heartbeats, 5 a second to each of two members, and no
// probe while nothing is lost, against 20 a second with the former
// defaults (50 ms heartbeats): so that issue 34's idle CPU, which is
// these frames' wake-ups, cannot silently come back.
func TestIdleFramesAtDefaults(t *testing.T) {
	measure := func(args ...string) (frames, wakeups, probes float64) {
		cfg, err := configWith(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		s := sim.New(sim.Config{Seed: 5, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: 50 * time.Microsecond}})
		ids := []uint32{1, 2, 3}
		for _, id := range ids {
			s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
				c, err := order.New(env, cfg)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}, clock.SimConfig{})
		}
		s.Run(5 * time.Second) // elected, the start's frames done
		before := map[uint32]sim.Counters{}
		for _, id := range ids {
			before[id] = s.Counters(id)
		}
		s.ResetCounts()
		const window = 10 * time.Second
		s.Run(window)
		for _, id := range ids {
			a, b := before[id], s.Counters(id)
			frames += float64(b.Sent-a.Sent) / window.Seconds()
			wakeups = max(wakeups, float64(b.Ticks-a.Ticks+b.Delivered-a.Delivered)/window.Seconds())
		}
		return frames, wakeups, float64(s.Sent(wire.KindLeaderProbe)) / window.Seconds()
	}
	frames, wakeups, probes := measure()
	oldFrames, oldWakeups, _ := measure("--heartbeat", "50ms", "--leader-timeout", "400ms", "--probe", "0")
	t.Logf("an idle second of three members: %.1f frames, the busiest member woken %.1f times (former defaults: %.1f, %.1f)", frames, wakeups, oldFrames, oldWakeups)
	if frames > 10.5 || wakeups > 10.5 || probes != 0 {
		t.Errorf("idle at the defaults: %.1f frames a second, the busiest member woken %.1f times, %.1f probes; want <= 10.5, <= 10.5 and none", frames, wakeups, probes)
	}
	if frames > oldFrames/3.5 {
		t.Errorf("idle at the defaults: %.1f frames a second against %.1f with 50 ms heartbeats", frames, oldFrames)
	}
}
