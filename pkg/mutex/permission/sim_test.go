package permission_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/lamport"
	"github.com/synclab/synclab/pkg/mutex/mutextest"
	"github.com/synclab/synclab/pkg/mutex/ricartagrawala"
)

var factories = []mutex.Factory{ricartagrawala.Factory, lamport.Factory}

// TestOracle: both algorithms keep the generic oracle (pkg/mutex/mutextest:
// exclusion in real time, fences above every earlier grant, every request
// granted once the faults stop) on 3 to 7 members over lossy links, with
// the faults they claim to survive (crashes and restarts of the holder and
// of others, pauses longer than the lease, bursts of loss) and a holder
// partitioned alone.
func TestOracle(t *testing.T) {
	for _, f := range factories {
		t.Run(f.Name, func(t *testing.T) {
			sim.Seeds(t, 12, func(t *testing.T, seed int64) {
				faults := append(f.Guarantees.Survives, mutex.Partition)
				c := mutextest.Run(t, seed, mutextest.Config{Factory: f, Faults: faults})
				t.Log(c)
			})
		})
	}
}

// TestMinorityAndDeadMember: the faults the textbook algorithms cannot
// survive. A minority of two (the holder among it) is cut off from the
// majority for longer than the failure detector's timeout, then the
// network heals; a member crashes for good and the others go on without
// it. Over lossy links, with the oracle.
func TestMinorityAndDeadMember(t *testing.T) {
	for _, f := range factories {
		t.Run(f.Name, func(t *testing.T) {
			sim.Seeds(t, 8, func(t *testing.T, seed int64) {
				c := mutextest.New(t, seed, mutextest.Config{Factory: f, Members: 5 + int(seed%3), Faults: []mutex.Fault{mutex.Loss}})
				s, ids := c.Sim(), c.IDs()
				c.Run(3*time.Second, true)
				for round := range 3 {
					h := c.Holder()
					minority := []uint32{h}
					var majority []uint32
					for _, id := range ids {
						switch {
						case id == h:
						case len(minority) < 2 && (int(id)+round)%2 == 0:
							minority = append(minority, id)
						default:
							majority = append(majority, id)
						}
					}
					s.Partition(minority, majority)
					c.Run(time.Duration(2+round*3)*time.Second, true)
					s.Heal()
					c.Run(2*time.Second, true)
				}
				// Let every client finish, then crash one member for good.
				c.Run(4*time.Second, false)
				dead := ids[int(seed)%len(ids)]
				s.Crash(dead)
				c.Run(10*time.Second, true)
				c.Run(10*time.Second, false)
				if w := slices.DeleteFunc(c.Waiting(), func(id uint32) bool { return id == dead }); len(w) > 0 {
					t.Fatalf("members %v still wait with member %d dead\n%s", w, dead, c.Tail())
				}
				c.Check()
				t.Log(c)
			})
		})
	}
}

// TestMessagesPerEntry: an uncontended entry costs exactly what seed 004
// says: 2(N-1) messages for Ricart-Agrawala, 3(N-1) for Lamport's queue.
func TestMessagesPerEntry(t *testing.T) {
	for _, f := range factories {
		for _, n := range []int{3, 5, 8} {
			t.Run(fmt.Sprintf("%s/%d", f.Name, n), func(t *testing.T) {
				got := mutextest.MessagesPerEntry(t, f, mutex.Options{}, n)
				lo, hi := f.Cost.Messages(n)
				t.Logf("%s, %d members: %.2f messages per entry (notes: %s = %v)", f.Name, n, got, f.Cost.Text, lo)
				if got != lo || lo != hi {
					t.Errorf("%d members: %.2f messages per entry, the notes say %s = %v", n, got, f.Cost.Text, lo)
				}
			})
		}
	}
}
