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
	// Step is what the window grows by at every leader change (the
	// notes' Interval++). Default 50 ms.
	Step time.Duration
	// MaxInterval caps the window. Default 5 s.
	MaxInterval time.Duration
}

// DefaultLANConfig returns the durations for a LAN.
func DefaultLANConfig() Config {
	return Config{Heartbeat: 50 * time.Millisecond, Interval: 200 * time.Millisecond, Step: 50 * time.Millisecond, MaxInterval: 5 * time.Second}
}

// FromOptions maps the operator's options: Heartbeat, and LeaderTimeout
// as the first window; the step follows the heartbeat.
func FromOptions(members []uint32, o elect.Options) Config {
	c := DefaultLANConfig()
	c.Members = members
	if o.Heartbeat != 0 {
		c.Heartbeat, c.Step = o.Heartbeat, o.Heartbeat
	}
	if o.LeaderTimeout != 0 {
		c.Interval = o.LeaderTimeout
	}
	c.MaxInterval = max(c.MaxInterval, 4*c.Interval)
	return c
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
	return nil
}
