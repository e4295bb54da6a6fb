package permission_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/mutex/permission"
)

// TestNoStaleDeadlineUnderLoad (review-hunt): TestNoStaleDeadlineWithMemberDown
// only covers idle members. Here a member is down while the others contend
// for the lock, then a link is cut, then a member restarts; every live
// member's StaleDeadlines is reported (and must stay 0).
func TestNoStaleDeadlineUnderLoad(t *testing.T) {
	for _, f := range factories {
		for _, n := range []uint32{3, 5} {
			t.Run(fmt.Sprintf("%s/%d", f.Name, n), func(t *testing.T) {
				ls := mutextest.NewLockSim(t, f, mutex.Options{Heartbeat: 100 * time.Millisecond, Lease: time.Second}, n, 1, sim.LinkConfig{Delay: time.Millisecond}, 2*time.Second)
				ls.Crash(n)
				held := map[uint32]mutex.RequestID{}
				waiting := map[uint32]bool{}
				rnd := ls.NewRand()
				askedAt := map[uint32]time.Duration{}
				var waits []time.Duration
				ls.OnOutcome = func(id uint32, o mutex.Outcome) {
					waiting[id] = false
					if g, ok := o.(mutex.Granted); ok {
						held[id] = g.ID
						waits = append(waits, ls.Elapsed()-askedAt[id])
					}
				}
				stale := func() (s []uint64) {
					for id := uint32(1); id < n; id++ {
						s = append(s, ls.Node(id).Status().StaleDeadlines)
					}
					return s
				}
				before := stale()
				phase := func(name string, d time.Duration) {
					for end := ls.Elapsed() + d; ls.Elapsed() < end; {
						for id := uint32(1); id < n; id++ {
							if r, ok := held[id]; ok {
								delete(held, id)
								ls.Do(id, func(c core.Core) { _ = c.(mutex.Algorithm).Release(ls.Clock(id).Now(), r) })
							}
						}
						for id := uint32(1); id < n; id++ {
							if _, h := held[id]; !h && !waiting[id] && rnd.IntN(3) == 0 {
								waiting[id] = true
								askedAt[id] = ls.Elapsed()
								ls.Acquire(id)
							}
						}
						ls.Run(50 * time.Millisecond)
					}
					now := stale()
					var sum, mx time.Duration
					for _, w := range waits {
						sum += w
						mx = max(mx, w)
					}
					if len(waits) > 0 {
						t.Logf("%s: %d grants, mean wait %v, max %v", name, len(waits), sum/time.Duration(len(waits)), mx)
					}
					waits = nil
					t.Logf("%s: stale deadlines per live member %v (before %v)", name, now, before)
					for i := range now {
						if now[i] != before[i] {
							t.Errorf("%s: member %d left %d stale deadlines", name, i+1, now[i]-before[i])
						}
					}
					before = now
				}
				phase("member down, contended", 6*time.Second)
				ls.Cut(1, 2)
				ls.Cut(2, 1)
				phase("link 1-2 cut", 6*time.Second)
				ls.Heal()
				ls.Restart(1)
				delete(held, 1)
				waiting[1] = false
				phase("member 1 restarted", 8*time.Second)
				_ = permission.RicartAgrawala
			})
		}
	}
}

// TestLinkDownOnTime (review-hunt): the package doc says a member that
// has heard nothing directly from another for SuspectAfter while its
// frames come through a relay logs EventLinkDown; docs/mutexd.md says
// "no frame has come directly from that member for 3.2 s". checkLinks
// runs only in Tick and its timers are not in Deadline: before the merge
// the stale cut-off deadline of the unheard peer ticked the core every
// 10 ms, now the WARN waits for the next heartbeat's Tick.
func TestLinkDownOnTime(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		ls := mutextest.NewLockSim(t, permission.RicartAgrawalaFactory, mutex.Options{}, 3, seed, sim.LinkConfig{Delay: time.Millisecond}, 2*time.Second+time.Duration(seed)*37*time.Millisecond)
		suspect := ls.Core(1).(*permission.Core).Config().SuspectAfter
		cut := ls.Elapsed()
		ls.Cut(1, 2)
		ls.Cut(2, 1)
		ls.Run(suspect + 2*time.Second)
		for _, e := range ls.EventsNamed(permission.EventLinkDown) {
			late := e.At - cut - suspect
			t.Logf("seed %d: member %d link_down %v after the cut (SuspectAfter %v): %v past it", seed, e.Node, e.At-cut, suspect, late)
			if late > 20*time.Millisecond {
				t.Errorf("seed %d: member %d said link_down %v after the cut, %v past SuspectAfter (%v)", seed, e.Node, e.At-cut, late, suspect)
			}
		}
	}
}
