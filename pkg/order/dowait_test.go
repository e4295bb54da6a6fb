package order

import (
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
)

// TestSimDoWaitsForWrite: a multicast asked while its member's loop is
// inside a write (SetWriteLatency) that then fails is made after the
// write, as the daemon's control call waits for its loop. Member 1's
// multicast a is in a 100 ms write that fails (a withdrawn: answered not
// sent); b is asked 10 ms into that write, or 1 µs after it; then c and
// d. Every member delivers b, c, d of member 1, in that order. The
// simulator used to step b mid-write, before a's withdrawal, which the
// daemon never does: b went out in a's place and c was delivered before
// it (review-time3's TestRevDoMidWriteWithdraw).
func TestSimDoWaitsForWrite(t *testing.T) {
	for _, ord := range []Order{FIFO, Causal} {
		for _, bAt := range []time.Duration{10 * time.Millisecond, 101 * time.Millisecond} {
			t.Run(fmt.Sprintf("%v-b-at-%v", ord, bAt), func(t *testing.T) {
				s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond}})
				addMembers(t, s, 3, DefaultLANConfig())
				got := map[uint32][]string{}
				s.OnReady(func(r sim.Ready) {
					for _, d := range r.Core.(*Core).Deliveries() {
						if d.Sender == 1 && d.Order == ord {
							got[r.Node] = append(got[r.Node], string(d.Message))
						}
					}
				})
				s.Run(2 * time.Second)
				send := func(text string) {
					t.Helper()
					var err error
					if e := s.Do(1, func(c core.Core) { err = c.(*Core).Multicast(s.Clock(1).Now(), ord, []byte(text)) }); e != nil || err != nil {
						t.Fatal(e, err)
					}
				}
				s.SetWriteLatency(1, 100*time.Millisecond, 100*time.Millisecond)
				s.SetDiskFaults(1, 1) // a's write fails when it ends, at +100 ms
				t0 := s.Elapsed()
				send("a")
				s.Run(bAt)
				send("b") // mid-write: waits for a's write to end
				if past := s.Elapsed() - t0; past <= 100*time.Millisecond {
					s.Run(100*time.Millisecond + time.Microsecond - past)
				}
				s.SetDiskFaults(1, 0)
				s.Run(time.Second)
				send("c")
				s.Run(time.Second)
				send("d")
				s.Run(5 * time.Second)
				cn := s.Counters(1)
				if cn.WriteFailures == 0 {
					t.Fatal("a's write did not fail: the test proves nothing")
				}
				for _, id := range []uint32{1, 2, 3} {
					if fmt.Sprint(got[id]) != "[b c d]" {
						t.Errorf("member %d delivered %v of member 1's %v messages, want [b c d] (a withdrawn; %d write failures, %d withdrawn)", id, got[id], ord, cn.WriteFailures, cn.Withdrawn)
					}
				}
			})
		}
	}
}
