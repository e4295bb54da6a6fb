package app

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/liveness"
)

// LivenessCore runs the heartbeat failure detector with LAN defaults: the
// core every daemon runs until its protocol core takes over.
func LivenessCore(cfg *daemon.Config) daemon.CoreFactory {
	return func(env core.Env) (core.Core, error) {
		rnd := env.Rand
		lc := liveness.DefaultLANConfig()
		lc.ID = cfg.ID
		lc.Members = slices.Sorted(maps.Keys(cfg.Members))
		lc.TickInterval = cfg.TickInterval
		// Keep the default 100 ms heartbeat whatever the tick length.
		lc.HeartbeatTicks = max(1, int(100*time.Millisecond/cfg.TickInterval))
		lc.SuspectTicks = liveness.DefaultSuspectFactor * lc.HeartbeatTicks
		lc.Rand = rnd
		return liveness.New(lc)
	}
}

// RenderLiveness prints the detector's member table.
func RenderLiveness(w io.Writer, raw []byte, _ time.Time) error {
	var st liveness.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("unexpected liveness status: %w", err)
	}
	return st.WriteTable(w)
}
