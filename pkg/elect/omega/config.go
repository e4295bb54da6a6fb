package omega

import (
	"errors"
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/internal/electcount"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/wire"
)

// Config configures an Ω core; zero fields take DefaultLANConfig's. Every
// duration is of the local clock, used as given.
type Config struct {
	// Members are every member's IDs (empty: the Env's).
	Members []uint32
	// Heartbeat is how often a member sends its heartbeat. Default 50 ms.
	Heartbeat time.Duration
	// Interval is the first window over which candidates are collected;
	// it must exceed Heartbeat. Default 200 ms: four heartbeats.
	Interval time.Duration
	// Step is what the window grows by at every mistake: a leader lost
	// to silence heard again in the same life (the notes' Interval++,
	// which grows it at every leader change). Default 50 ms.
	Step time.Duration
	// MaxInterval caps the window. Default 5 s.
	MaxInterval time.Duration
	// Ask makes a follower ask its leader for a heartbeat before it
	// counts a window without one: in the window's last Asks x Ask, a
	// follower that has not heard its leader in the window sends it a
	// heartbeat of its own, to it alone, every Ask (Asks in all), and the
	// leader answers each with one of its own (see Core.Step). The window
	// closes Ask after the last ask at the earliest, so an ask made late
	// (a Tick after a stall) is given its round trip too. A lost heartbeat
	// then costs an ask's round trip, not a leader change. 0 (the
	// default): no asks, the window alone, as the notes. electd's
	// defaults (Probed) ask every 10 ms; Asks x Ask must not exceed
	// Interval - Heartbeat (the asks start once the window's first
	// heartbeat is due).
	Ask time.Duration
}

// Asks is how many times a follower asks its leader in a window that has
// not heard it (Config.Ask): at 5% loss, both of a window's heartbeats
// and all five asks' round trips lost is fewer than one window in ten
// million.
const Asks = 5

// DefaultStep is the window's growth at a mistake (Config.Step): 50 ms,
// or the heartbeat if shorter (FromOptions).
const DefaultStep = 50 * time.Millisecond

// DefaultLANConfig returns the durations for a LAN, without asks: the
// notes' algorithm with the deviations of the package's doc. electd runs
// Probed.
func DefaultLANConfig() Config {
	return Config{Heartbeat: 50 * time.Millisecond, Interval: 200 * time.Millisecond, Step: DefaultStep, MaxInterval: 5 * time.Second}
}

// Probed are electd's defaults for omega: heartbeats every 200 ms, a first
// window of 400 ms (two heartbeats), growing by DefaultStep at every
// mistake, and asks every 10 ms in a window's last 50 ms
// (Config.Ask). The leader of a 64-member cluster sends 315 frames a
// second, not 1,260 at 50 ms heartbeats, and a follower wakes 5 times a
// second for them; a window with both its heartbeats lost is saved by an
// ask's round trip, and a failover takes as long as at 50 / 400 ms
// (docs/benchmarks/2026-12-06-omega-step.md). What a live leader may be
// stalled before its successor chooses itself falls from about 350 ms
// (the window less a heartbeat at 50 / 400 ms) to about 200 ms, as for
// bully's Probed.
var Probed = elect.Options{Heartbeat: 200 * time.Millisecond, LeaderTimeout: 400 * time.Millisecond, Probe: 10 * time.Millisecond}

// FromOptions maps the operator's options: Heartbeat, LeaderTimeout as
// the first window, Probe as Ask (0: none). The window grows by
// DefaultStep, or by the heartbeat if that is shorter: not by a longer
// heartbeat (at 200 ms heartbeats that made each mistake cost 200 ms of
// every later failover, four times the growth at 50 ms).
func FromOptions(members []uint32, o elect.Options) Config {
	c := DefaultLANConfig()
	c.Members = members
	if o.Heartbeat != 0 {
		c.Heartbeat, c.Step = o.Heartbeat, min(o.Heartbeat, DefaultStep)
	}
	if o.LeaderTimeout != 0 {
		c.Interval = o.LeaderTimeout
	}
	c.Ask = o.Probe
	c.MaxInterval = max(c.MaxInterval, 4*c.Interval)
	return c
}

// CheckAsk says whether asks every ask fit a first window of interval at
// heartbeats every heartbeat: Asks x ask must be shorter than interval -
// heartbeat, so that the first ask comes after the window's first
// heartbeat is due (at equality a follower would ask whenever that
// heartbeat is a little late, with nothing lost).
func CheckAsk(heartbeat, interval, ask time.Duration) error {
	if ask == 0 {
		return nil
	}
	if err := liveness.CheckTimeout("Ask", ask); err != nil {
		return fmt.Errorf("omega: %w", err)
	}
	if Asks*ask >= interval-heartbeat {
		return fmt.Errorf("omega: %d asks every %v (%v) do not fit in the window (%v) less a heartbeat (%v): a follower would ask before the window's first heartbeat is due", Asks, ask, Asks*ask, interval, heartbeat)
	}
	return nil
}

func (c *Config) validate(self uint32, members []uint32) error {
	if len(c.Members) == 0 {
		c.Members = members
	}
	if err := liveness.CheckMembers(self, c.Members); err != nil {
		return fmt.Errorf("omega: %w", err)
	}
	def := DefaultLANConfig()
	if err := electcount.Durations("omega",
		liveness.Duration{Name: "Heartbeat", Value: &c.Heartbeat, Default: def.Heartbeat},
		liveness.Duration{Name: "Interval", Value: &c.Interval, Default: def.Interval},
		liveness.Duration{Name: "Step", Value: &c.Step, Default: def.Step},
		liveness.Duration{Name: "MaxInterval", Value: &c.MaxInterval, Default: def.MaxInterval}); err != nil {
		return err
	}
	switch {
	case c.Interval <= c.Heartbeat:
		return fmt.Errorf("omega: Interval (%v) must exceed Heartbeat (%v), or a window may hear no heartbeat of a live member", c.Interval, c.Heartbeat)
	case c.MaxInterval < c.Interval:
		return fmt.Errorf("omega: MaxInterval (%v) is below Interval (%v)", c.MaxInterval, c.Interval)
	case c.MaxInterval > wire.MaxOmegaInterval*time.Millisecond:
		return errors.New("omega: MaxInterval above an hour")
	}
	return CheckAsk(c.Heartbeat, c.Interval, c.Ask)
}
