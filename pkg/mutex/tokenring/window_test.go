package tokenring_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/tokenring"
)

// TestSimWindowOfTwiceTheLeaseMakesNoToken is why ConfigFor refuses a
// confirm window of twice the lease or more: a locate takes any check
// confirmed within (window + lease) / 3 for a live holder's, and that is
// then longer than a lease can run (past twice the lease), so even a fresh ring, where no check
// was ever made, never makes its first token (the audit's --lease 100ms:
// never granted in 20 s, no word). Just under it, the token is made.
func TestSimWindowOfTwiceTheLeaseMakesNoToken(t *testing.T) {
	for _, tc := range []struct {
		window  time.Duration
		granted bool
	}{{250 * time.Millisecond, false}, {201 * time.Millisecond, false}, {200 * time.Millisecond, true}, {190 * time.Millisecond, true}} {
		s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond}})
		for id := uint32(1); id <= 3; id++ {
			s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
				cfg := tokenring.DefaultLANConfig()
				cfg.ID, cfg.Members, cfg.Rand = env.ID, env.Members, env.Rand
				cfg.MaxLease, cfg.ConfirmWindow = 100*time.Millisecond, tc.window
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
		if granted != tc.granted {
			t.Errorf("--confirm-window %v with --lease 100ms: granted %v in 5s, want %v", tc.window, granted, tc.granted)
		}
		_, err := tokenring.ConfigFor(core.Env{ID: 1, Members: []uint32{1, 2, 3}},
			mutex.Options{Lease: 100 * time.Millisecond, Params: map[string]time.Duration{tokenring.ParamConfirmWindow: tc.window}})
		if refused := err != nil && strings.Contains(err.Error(), "--confirm-window "+tc.window.String()+" with --lease 100ms: the ring would never make a token"); refused == tc.granted {
			t.Errorf("--confirm-window %v with --lease 100ms: ConfigFor says %v", tc.window, err)
		}
	}
}
