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

// TestNoStaleDeadlineWithMemberDown (hunt): one member of three is down
// and the other two idle. A core's deadline at or before the Tick that
// just ran is stale: internal/node counts it (StaleDeadlines, "a bug in
// the core") and ticks the core every StaleRetry (10 ms) until it moves.
func TestNoStaleDeadlineWithMemberDown(t *testing.T) {
	for _, f := range factories {
		t.Run(f.Name, func(t *testing.T) {
			s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: time.Millisecond}})
			for id := uint32(1); id <= 3; id++ {
				s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
					a, err := f.New(env, mutex.Options{Heartbeat: 100 * time.Millisecond, Lease: time.Second})
					if err != nil {
						t.Fatal(err)
					}
					return a
				}, clock.SimConfig{})
			}
			s.Start()
			s.Run(2 * time.Second)
			s.Crash(3)
			s.Run(time.Second)
			before := s.Node(1).Status().StaleDeadlines
			s.Run(10 * time.Second)
			if n := s.Node(1).Status().StaleDeadlines - before; n > 0 {
				t.Errorf("member 1 left %d stale deadlines in 10 s with member 3 down (a Tick every 10 ms)", n)
			}
		})
	}
}
