package mutextest

import (
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
)

// LockSim is n members of one algorithm in the simulator, started, with
// each member's last grant noted (and every outcome passed to OnOutcome,
// if set), for the tests that time one handoff or one recovery.
type LockSim struct {
	*sim.Sim
	t         testing.TB
	Granted   map[uint32]mutex.RequestID
	GrantedAt time.Duration // the last grant's
	OnOutcome func(node uint32, o mutex.Outcome)
}

// NewLockSim starts n members of f with opt over link, and runs them for
// warm before returning.
func NewLockSim(t testing.TB, f mutex.Factory, opt mutex.Options, n uint32, seed int64, link sim.LinkConfig, warm time.Duration) *LockSim {
	t.Helper()
	ls := &LockSim{Sim: sim.New(sim.Config{Seed: seed, DefaultLink: link}), t: t, Granted: map[uint32]mutex.RequestID{}}
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
				ls.Granted[r.Node], ls.GrantedAt = g.ID, r.At
			}
			if ls.OnOutcome != nil {
				ls.OnOutcome(r.Node, o)
			}
		}
	})
	ls.Start()
	ls.Run(warm)
	return ls
}

// Acquire asks for lock x at member id, with the cluster's lease.
func (ls *LockSim) Acquire(id uint32) mutex.RequestID {
	return ls.AcquireFor(id, 0)
}

// AcquireFor asks for lock x at member id, for lease (0: the cluster's).
func (ls *LockSim) AcquireFor(id uint32, lease time.Duration) (req mutex.RequestID) {
	ls.Do(id, func(c core.Core) {
		var err error
		if req, err = c.(mutex.Algorithm).Acquire(ls.Clock(id).Now(), mutex.Request{Lock: "x", Lease: lease}); err != nil {
			ls.t.Fatal(err)
		}
	})
	return req
}
