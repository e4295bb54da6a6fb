package client_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// TestSimUpstreamCorrectsItself: one truthful upstream (every answer's root
// dispersion is twice its clock's true error plus 1 ms) starts 5-50 ms
// behind and slews to the truth at a random instant of the client's first
// burst, on a rough network (2 ms jitter). The filter then often picks a
// sample of the time the upstream was off; its bound must use the root
// dispersion that sample's packet carried, not the newest packet's (main
// before the fix: 30 of 300 seeds missed, by up to 28 ms).
func TestSimUpstreamCorrectsItself(t *testing.T) {
	sim.Seeds(t, 60, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 77))
		s := sim.New(sim.Config{Seed: seed,
			DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 2 * time.Millisecond}})
		x := time.Duration(5+rng.IntN(46)) * time.Millisecond
		slewAt := time.Duration(1000+rng.IntN(3000)) * time.Millisecond
		s.AddNode(2, addr(2), func(core.Env) core.Core {
			return &testServer{edit: func(_ core.Datagram, rep *wire.NTPPacket) {
				rep.Stratum, rep.ReferenceID = 2, wire.RefIDFromText("UPST")
				rep.RootDispersion = wire.NTPShortFromDuration(2*s.Clock(2).TrueOffset().Abs() + time.Millisecond)
			}}
		}, clock.SimConfig{Offset: -x})
		addClient(t, s, clientID, testConfig(2), clock.SimConfig{})
		o := &oracle{t: t, s: s, id: clientID}
		run(s, slewAt, o)
		if err := s.Clock(2).Slew(x); err != nil {
			t.Fatal(err)
		}
		run(s, 30*time.Second, o)
		if o.checks == 0 {
			t.Fatal("the client never had a bound to check")
		}
	})
}
