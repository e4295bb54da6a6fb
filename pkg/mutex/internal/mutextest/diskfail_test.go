package mutextest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/mutex/algorithms"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
)

// TestFailingDiskFence: a member whose every state write fails, cut off,
// crashed and restarted three times, then its disk mended, never grants
// a fence twice (the oracle), and every request waiting at the end is
// granted. A lone member (a one-member cluster) grants alone: before the
// fix it handed its clients grants whose fences were built on an
// incarnation (era, generation) it had not written, and each restart
// read the older one and granted the same fences again ("printer granted
// fence 2199023255553 at member 1 (exclusive) after member 1's fence
// 2199023255553 (exclusive) ended"). Maekawa's exclusive fences are
// proposed from the clock, which hid it there until the clock the
// restarted member reads is behind the last run's (clock_back: the wall
// time mutexd's clock is anchored at was stepped back); central's
// coordinator already waited for its term's write (bully's reservation).
// With two or three members whose disks all fail the withheld messages
// stopped it: a restarted member could ask nobody. mutexcount.Hold now
// keeps every outcome from the driver until the promises it may depend
// on are on disk.
func TestFailingDiskFence(t *testing.T) {
	for _, f := range algorithms.All {
		for _, tc := range []struct {
			n    int
			back bool
		}{{1, false}, {1, true}, {2, false}, {3, false}} {
			n, back := tc.n, tc.back
			name := fmt.Sprintf("%s/%d", f.Name, n)
			if back {
				name += "/clock_back"
			}
			t.Run(name, func(t *testing.T) {
				sim.Seeds(t, 4, func(t *testing.T, seed int64) {
					c := mutextest.New(t, seed, mutextest.Config{Factory: f, Members: n})
					s := c.Sim()
					c.Run(2*time.Second, true)
					for _, id := range c.IDs() {
						s.SetDiskFaults(id, 1)
					}
					for range 3 {
						c.Isolate(1)
						c.Run(2*time.Second, true)
						c.Crash(1)
						if back {
							if err := s.Clock(1).Step(-time.Minute); err != nil {
								t.Fatal(err)
							}
						}
						c.Restart(1)
						c.Run(2*time.Second, true)
					}
					for _, id := range c.IDs() {
						s.SetDiskFaults(id, 0)
					}
					c.Heal()
					c.Settle()
					t.Log(c)
				})
			})
		}
	}
}

// TestEveryAlgorithm: every algorithm of mutexd keeps the oracle under
// the faults it claims to survive, with healthy disks and with every
// member's state writes failing one time in five through the fault
// rounds (DiskFaults: a grant that waited for a write must still be
// handed over with its lease running, or dropped). Each algorithm's own
// package runs its oracle too; this is the one command that runs them
// all (-sim.seeds=N for the wide search).
func TestEveryAlgorithm(t *testing.T) {
	for _, f := range algorithms.All {
		for _, disk := range []float64{0, 0.2} {
			name := f.Name
			if disk > 0 {
				name += "/disk_faults"
			}
			t.Run(name, func(t *testing.T) {
				sim.Seeds(t, 2, func(t *testing.T, seed int64) {
					c := mutextest.Run(t, seed, mutextest.Config{Factory: f, DiskFaults: disk})
					t.Log(c)
				})
			})
		}
	}
}
