package daemon

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
)

// slewer decides at every tick, like a servo, to absorb what is left of
// the clock's slew plus extra more, from the tick's reading on.
type slewer struct {
	clk   clock.Clock
	extra time.Duration
	rd    core.Ready
}

func (s *slewer) Step(core.Message) error          { return nil }
func (s *slewer) StepDatagram(core.Datagram) error { return nil }
func (s *slewer) Status() any                      { return nil }
func (s *slewer) Ready() core.Ready                { rd := s.rd; s.rd = core.Ready{}; return rd }
func (s *slewer) Tick(time.Time) {
	st, _ := s.clk.State()
	s.rd.Adjustments = append(s.rd.Adjustments, clock.Adjustment{Kind: clock.AdjustSlew, Offset: st.SlewLeft + s.extra})
}

// TestSlewAppliedLateEndsWherePlanned: a slew decided at a tick and applied
// 5 ms later (a busy host: the loop did not run meanwhile) replaces the
// slew in progress, which went on absorbing for those 5 ms (416 us at
// 83,333 ppm); the daemon takes that off, so the clock ends exactly where
// the core planned from the tick's reading, not 416 us further.
func TestSlewAppliedLateEndsWherePlanned(t *testing.T) {
	real := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	sim := clock.NewSim(clock.SimConfig{}, func() time.Time { return real })
	cfg := testConfig(t, transport.NewMemNetwork(), shortDir(t), 1, 1)
	cfg.Clock = sim
	s := &slewer{clk: sim, extra: 100 * time.Microsecond}
	d, err := New(cfg, func(core.Env) (core.Core, error) { return s, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer d.state.close()
	if err := sim.Slew(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	before := sim.TrueOffset()
	d.tick() // plans 1 ms + 100 us from here
	real = real.Add(5 * time.Millisecond)
	d.process() // applied 5 ms late
	real = real.Add(time.Second)
	if st, _ := sim.State(); st.SlewLeft != 0 {
		t.Fatalf("slew not over: %v left", st.SlewLeft)
	}
	if moved := sim.TrueOffset() - before; moved != 1100*time.Microsecond {
		t.Errorf("the clock moved %v, want the 1.1 ms planned at the tick (not 416 us more)", moved)
	}
}
