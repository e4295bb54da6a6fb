package app

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/liveness"
)

// LivenessCore runs the heartbeat failure detector with a daemon's LAN
// profile (liveness.QuietLANConfig: heartbeats every 300 ms, a member
// that missed one probed every 10 ms, suspected after 500 ms of silence):
// timed's members run it beside their NTP part.
func LivenessCore(cfg *daemon.Config) daemon.CoreFactory {
	return func(env core.Env) (core.Core, error) {
		return liveness.New(env, liveness.QuietLANConfig())
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
