package app

import (
	"fmt"

	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/clock"
)

// ReadOnlySystemClock gives a daemon that only reads time (mutexd, electd)
// the system clock, refusing every write: only timed ever corrects a clock.
func ReadOnlySystemClock(cfg *daemon.Config) error {
	clk, err := clock.NewSystem(clock.SystemOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("system clock: %w", err)
	}
	cfg.Clock, cfg.ClockName = clk, "system"
	return nil
}

// SteadyClock gives a daemon whose promises are durations (mutexd's
// leases) a clock that nobody adjusts: the oscillator itself, so that a
// step of the system clock, or timed slewing it at up to 8%, cannot make a
// lease last longer in real time than the protocol allows for (see
// clock.Steady).
func SteadyClock(cfg *daemon.Config) {
	cfg.Clock, cfg.ClockName = clock.NewSteady(), "steady"
}
