package tokenring_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/tokenring"
)

// TestSimAnyWindowMakesAToken: a locate takes a check confirmed within
// (window + lease) / 3 for a live holder's, the window being the one a
// holder renews on (at most half the lease). Counted with the raw
// --confirm-window, a window past twice the lease made every check count
// as recent, so even a fresh ring, where no check was ever made, never
// made its first token (the audit's --lease 100ms with the default 250ms
// window: never granted in 20 s, no word; --lease 1s --confirm-window
// 2100ms likewise), and ConfigFor refused such flags. Every window now
// makes a token, and ConfigFor takes it.
func TestSimAnyWindowMakesAToken(t *testing.T) {
	for _, tc := range []struct{ lease, window time.Duration }{
		{100 * time.Millisecond, 250 * time.Millisecond}, {100 * time.Millisecond, 201 * time.Millisecond},
		{100 * time.Millisecond, 200 * time.Millisecond}, {100 * time.Millisecond, 190 * time.Millisecond},
		{time.Second, 2100 * time.Millisecond}, {time.Second, time.Hour},
	} {
		s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond}})
		for id := uint32(1); id <= 3; id++ {
			s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
				cfg := tokenring.DefaultLANConfig()
				cfg.ID, cfg.Members, cfg.Rand = env.ID, env.Members, env.Rand
				cfg.MaxLease, cfg.ConfirmWindow = tc.lease, tc.window
				c, err := tokenring.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}, clock.SimConfig{})
		}
		s.Run(10 * time.Millisecond)
		var req mutex.RequestID
		s.Do(1, func(c core.Core) { req, _ = c.(mutex.Algorithm).Acquire(s.Clock(1).Now(), mutex.Request{Lock: "x"}) })
		granted := false
		for s.Elapsed() < 5*time.Second && !granted {
			s.Run(5 * time.Millisecond)
			st, _ := s.Core(1).(mutex.Algorithm).Lookup(req)
			granted = st.Granted
		}
		if !granted {
			t.Errorf("--confirm-window %v with --lease %v: not granted in 5s", tc.window, tc.lease)
		}
		if _, err := tokenring.ConfigFor(core.Env{ID: 1, Members: []uint32{1, 2, 3}},
			mutex.Options{Lease: tc.lease, Params: map[string]time.Duration{tokenring.ParamConfirmWindow: tc.window}}); err != nil {
			t.Errorf("--confirm-window %v with --lease %v: ConfigFor refuses: %v", tc.window, tc.lease, err)
		}
	}
}
