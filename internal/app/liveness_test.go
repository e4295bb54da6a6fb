package app

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/liveness"
)

// timed's members run the daemons' profile of the detector: sparse
// heartbeats with probes (issue 34), the same 500 ms suspicion.
func TestLivenessCoreProfile(t *testing.T) {
	c, err := LivenessCore(&daemon.Config{})(core.Env{ID: 1, Members: []uint32{1, 2, 3}, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.(*liveness.Core).Config(); got != liveness.QuietLANConfig() || got.SuspectAfter != 500*time.Millisecond {
		t.Errorf("timed's detector runs %+v, want %+v", got, liveness.QuietLANConfig())
	}
}
