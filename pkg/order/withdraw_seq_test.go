package order

import (
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
)

// spyCore records what Withdraw answered: the daemon answers every send
// call of the step ErrWithdrawn (503 not_sent: "delivered nowhere, ever")
// whenever all is true (internal/daemon/run.go), whatever taken is.
type spyCore struct {
	*Core
	withdrawn []struct {
		taken int
		all   bool
	}
}

func (s *spyCore) Withdraw(events []core.Event) ([]core.Event, int, bool) {
	kept, taken, all := s.Core.Withdraw(events)
	s.withdrawn = append(s.withdrawn, struct {
		taken int
		all   bool
	}{taken, all})
	return kept, taken, all
}

// TestWithdrawKeepsSequencedSends: a send in sequencer total order is a
// submission, which Withdraw does not take back (the sequencer numbers it
// once a write holds it), so a failed write that carried one is not "all
// taken back" (core.Withdrawer), alone or beside a FIFO send of the same
// batch: a driver that trusts the contract would answer it "not sent,
// never will be" and see it delivered (a review: taken=0 or 1 with
// all=true, and "q" delivered everywhere). orderd itself answers
// sequenced sends without waiting for the write (DoActive).
func TestWithdrawKeepsSequencedSends(t *testing.T) {
	for _, tc := range []struct {
		name   string
		leader bool // send from the sequencer itself
		mixed  bool // a FIFO send in the same batch (group commit)
		prior  bool // a FIFO send withdrawn in an earlier failed write
	}{{"leader-mixed", true, true, false}, {"follower-mixed", false, true, false}, {"follower-alone-after-failure", false, false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond}})
			cfg := DefaultLANConfig()
			cfg.Total = Sequencer
			spies := map[uint32]*spyCore{}
			for id := uint32(1); id <= 3; id++ {
				s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
					c, err := New(env, cfg)
					if err != nil {
						t.Fatal(err)
					}
					sp := &spyCore{Core: c}
					spies[env.ID] = sp
					return sp
				}, clock.SimConfig{})
			}
			got := map[uint32]map[string]int{1: {}, 2: {}, 3: {}}
			s.OnReady(func(r sim.Ready) {
				for _, d := range r.Core.(*spyCore).Deliveries() {
					got[r.Node][string(d.Message)]++
				}
			})
			s.Run(2 * time.Second)
			var lead, from uint32
			for id := uint32(1); id <= 3; id++ {
				if spies[id].seqr.leader == id {
					lead = id
				}
			}
			if lead == 0 {
				t.Fatal("no sequencer")
			}
			from = lead
			if !tc.leader {
				from = lead%3 + 1
			}
			sp := spies[from]
			s.SetDiskFaults(from, 1)
			if tc.prior {
				if err := s.Do(from, func(cc core.Core) {
					if err := cc.(*spyCore).Multicast(s.Clock(from).Now(), FIFO, []byte("p")); err != nil {
						t.Fatal(err)
					}
				}); err != nil {
					t.Fatal(err)
				}
				sp.withdrawn = nil
			}
			failed := s.Counters(from).WriteFailures
			if err := s.Do(from, func(cc core.Core) {
				c := cc.(*spyCore)
				if tc.mixed {
					if err := c.Multicast(s.Clock(from).Now(), FIFO, []byte("f")); err != nil {
						t.Fatal(err)
					}
				}
				if err := c.Multicast(s.Clock(from).Now(), TotalOrder, []byte("q")); err != nil {
					t.Fatal(err)
				}
			}); err != nil {
				t.Fatal(err)
			}
			if s.Counters(from).WriteFailures == failed || len(sp.withdrawn) == 0 {
				t.Fatalf("the send's write did not fail / no Withdraw call (%d)", len(sp.withdrawn))
			}
			w := sp.withdrawn[0]
			s.Run(50 * time.Millisecond)
			s.SetDiskFaults(from, 0)
			s.Run(3 * time.Second)
			if w.all {
				t.Errorf("Withdraw said all was taken back (taken %d) of a write that carried a sequenced send", w.taken)
			}
			for id := uint32(1); id <= 3; id++ {
				if got[id]["q"] != 1 {
					t.Errorf("member %d delivered the sequenced send %d times, want once", id, got[id]["q"])
				}
			}
		})
	}
}
