package tracecheck_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/diagram"
	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/tracecheck"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
)

// centralRun runs central's coordinator (bully elects 4) on the
// simulator with each member's clock drifting as drift says: member 1
// holds x, member 2 asks for it, then member 1 is cut off; the
// coordinator grants x to 2 once 1's lease has run out on its own clock.
// It returns the check of the run's traces.
func centralRun(t *testing.T, drift map[uint32]float64) *tracecheck.Report {
	t.Helper()
	s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: time.Millisecond}})
	var members []bully.Member
	for id := uint32(1); id <= 4; id++ {
		members = append(members, bully.Member{ID: id})
	}
	for id := uint32(1); id <= 4; id++ {
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			cfg := central.DefaultLANConfig()
			cfg.MaxLease = time.Second
			cfg.Election = func(env core.Env) (elect.Elector, error) {
				bc := bully.DefaultLANConfig()
				bc.Members = members
				return bully.New(env, bc)
			}
			c, err := central.New(env, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, clock.SimConfig{DriftPPM: drift[id]})
	}
	traces := diagram.RecordSim(t, s, "mutexd")
	s.Start()
	s.Run(2 * time.Second)
	acquire := func(id uint32) {
		if err := s.Do(id, func(c core.Core) {
			if _, err := c.(mutex.Algorithm).Acquire(s.Clock(id).Now(), mutex.Request{Lock: "x", Client: "test"}); err != nil {
				t.Fatal(err)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	acquire(1)
	s.Run(10 * time.Millisecond)
	acquire(2)
	s.Run(10 * time.Millisecond)
	s.Isolate(1)
	s.Run(4 * time.Second)
	rep, err := tracecheck.Check(traces.Files(t, s), tracecheck.Options{ClockBound: -1})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestBrokenClocksCaught: central's leases are safe while the members'
// clocks keep within the drift its configuration allows. With clocks
// that do, the handoff after the holder is cut off holds; with the
// holder's clock 10% slow and the coordinator's 10% fast, far beyond it,
// the coordinator's wait for the lease ends (on its fast clock) before
// the holder's lease does (on its slow one): two holders at once, which
// the check finds from the simulator's traces, where each member's clock
// error is recorded.
func TestBrokenClocksCaught(t *testing.T) {
	rep := centralRun(t, map[uint32]float64{1: -50, 4: 50})
	if err := rep.Expect(); err != nil {
		t.Errorf("clocks within the allowed drift: %v", err)
	}
	if r := rep.Results[0]; r.Property != "exclusive" || r.Verdict != tracecheck.Holds || r.Checked != 2 {
		t.Errorf("clocks within the allowed drift: %+v", r)
	}
	rep = centralRun(t, map[uint32]float64{1: -100000, 4: 100000})
	if err := rep.Expect("exclusive"); err != nil {
		t.Errorf("clocks beyond the allowed drift: %v", err)
	}
	var b strings.Builder
	rep.WriteText(&b)
	t.Logf("clocks beyond the allowed drift:\n%s", b.String())
}
