package permission_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
)

// lockSim is n members of one algorithm in the simulator, started, with
// each member's last grant noted (and every outcome passed to onOutcome,
// if set), for the tests that time one handoff.
type lockSim struct {
	*sim.Sim
	t         *testing.T
	granted   map[uint32]mutex.RequestID
	grantedAt time.Duration // the last grant's
	onOutcome func(node uint32, o mutex.Outcome)
}

// newLockSim starts n members of f with opt over link, and runs them for
// warm before returning.
func newLockSim(t *testing.T, f mutex.Factory, opt mutex.Options, n uint32, seed int64, link sim.LinkConfig, warm time.Duration) *lockSim {
	t.Helper()
	ls := &lockSim{Sim: sim.New(sim.Config{Seed: seed, DefaultLink: link}), t: t, granted: map[uint32]mutex.RequestID{}}
	for id := uint32(1); id <= n; id++ {
		ls.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			a, err := f.New(env, opt)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}, clock.SimConfig{})
	}
	ls.OnReady(func(r sim.Ready) {
		for _, o := range r.Core.(mutex.Algorithm).Outcomes() {
			if g, ok := o.(mutex.Granted); ok {
				ls.granted[r.Node], ls.grantedAt = g.ID, r.At
			}
			if ls.onOutcome != nil {
				ls.onOutcome(r.Node, o)
			}
		}
	})
	ls.Start()
	ls.Run(warm)
	return ls
}

// acquire asks for lock x at member id.
func (ls *lockSim) acquire(id uint32) (req mutex.RequestID) {
	ls.Do(id, func(c core.Core) {
		var err error
		if req, err = c.(mutex.Algorithm).Acquire(ls.Clock(id).Now(), mutex.Request{Lock: "x"}); err != nil {
			ls.t.Fatal(err)
		}
	})
	return req
}
