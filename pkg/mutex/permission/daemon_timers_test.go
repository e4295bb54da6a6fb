package permission_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
)

// TestOracleDaemonTimers: the harsh oracle at mutexd's own timers (1 s
// heartbeats, 3 s leases) instead of the harness's 100 ms: bounds that
// scale differently with the heartbeat (the acknowledgement cap's window
// against the busy beats, the lease-end floor) only part at these
// (review-floor: a floor of 2.8 s failed a directed test here while every
// 100 ms oracle passed). The quiet end is long enough for a member given
// up to rejoin and every queue to drain at these timers.
func TestOracleDaemonTimers(t *testing.T) {
	for _, f := range factories {
		for _, h := range []mutextest.Hosts{mutextest.Harsh, mutextest.HarshInterleaved} {
			t.Run(f.Name+"/"+h.Name, func(t *testing.T) {
				sim.Seeds(t, 2, func(t *testing.T, seed int64) {
					c := mutextest.Run(t, seed, mutextest.Config{Factory: f, Hosts: h, Quiet: 40 * time.Second,
						Options: mutex.Options{Lease: 3 * time.Second, Heartbeat: time.Second}})
					t.Log(c)
				})
			})
		}
	}
}
