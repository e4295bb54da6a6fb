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
