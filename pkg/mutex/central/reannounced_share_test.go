package central_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
)

// TestReannouncedHoldOverShare: default MaxQueue and
// MaxLocks, 6 members (a member's share: 4096/2/5 = 409). Member 1 holds
// z from coordinator 6; 6 is SIGKILLed and, before the others notice,
// member 1's clients queue 420 requests for a (a member keeps up to 512).
// 5 takes over: member 1's sync lists a's 420 waiting first (locks
// sorted), its share fills, and its hold of z is not admitted. The Hold
// is skipped (6 quiet): member 2 is granted z inside member 1's lease, and
// member 1's renewal of z was refused "not held" although it synced
// (found by review). A re-announced hold is taken over the share.
func TestReannouncedHoldOverShare(t *testing.T) {
	r := reannounceRun(t, 6, 0)
	held := holdThenKill(r, 2*time.Second, "z", 6)
	r.s.Do(1, func(c core.Core) {
		for range 420 {
			if _, err := c.(*central.Core).Acquire(r.s.Clock(1).Now(), mutex.Request{Lock: "a"}); err != nil {
				t.Fatal(err)
			}
		}
	})
	for i := range 12 {
		r.s.Do(1, func(c core.Core) { _ = c.(*central.Core).Renew(r.s.Clock(1).Now(), held, 0) })
		if i == 2 {
			r.s.Do(2, func(c core.Core) { _, _ = c.(*central.Core).Acquire(r.s.Clock(2).Now(), mutex.Request{Lock: "z"}) })
		}
		r.s.Run(250 * time.Millisecond)
	}
	checkExclusive(t, r.s, "z")
	for _, e := range r.s.Events() {
		if lock, _ := e.Arg("lock"); e.Node == 1 && e.Name == mutex.EventLost && lock == "z" {
			t.Errorf("member 1 lost z: %s", e.String())
		}
	}
}
