package order

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/order/rsm"
)

// A member acknowledges an Append that carries only the commit point
// before its record of it is written (the commit point is not a promise:
// a majority holds it). A member that crashes in between restarts with
// the older commit point and entries it cannot tell are committed; in an
// idle cluster no Append follows, so unless it says where it stands its
// state machine (orderd state) stays behind indefinitely. The commit
// point's write fails here (as a crash right after the acknowledgement
// leaves it unwritten), the member crashes and restarts, and nothing more
// is multicast: its machine must catch up within a few heartbeats.
func TestSimIdleRestartLearnsCommitPoint(t *testing.T) {
	sim.SoakSeeds(t, 10, 200, func(t *testing.T, seed int64) {
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 300 * time.Microsecond}})
		cfg := DefaultLANConfig()
		cfg.Machine = func() StateMachine { return rsm.New() }
		addMembers(t, s, 3, cfg)
		s.Run(time.Second)
		seq := s.Core(1).(*Core).seqr.leader
		if seq == 0 {
			t.Fatal("no sequencer elected")
		}
		victim, sender := uint32(1), uint32(2)
		if seq == 1 {
			victim = 3
		} else if seq == 2 {
			sender = 3
		}
		core1 := func(id uint32) *Core { return s.Core(id).(*Core) }
		written := false
		s.OnReady(func(r sim.Ready) {
			if r.Node != victim || written {
				return
			}
			if c := r.Core.(*Core); c.st.Log.last() >= 1 {
				// The entry is written and acknowledged: what comes next
				// (the commit point alone) is never written.
				written = true
				s.SetDiskFaults(victim, 1)
			}
		})
		_ = s.Do(sender, func(c core.Core) {
			if err := c.(*Core).Multicast(s.Clock(sender).Now(), TotalOrder, []byte("deposit 100")); err != nil {
				t.Fatal(err)
			}
		})
		if !s.RunUntil(func() bool { return core1(victim).st.Log.Applied >= 1 }, 2*time.Second) {
			t.Fatalf("member %d never applied the deposit", victim)
		}
		if !written {
			t.Fatalf("member %d applied the deposit before its entry was written", victim)
		}
		s.Crash(victim)
		s.SetDiskFaults(victim, 0)
		s.Run(100 * time.Millisecond)
		s.Restart(victim)
		if got := core1(victim).st.Log.Applied; got != 0 {
			t.Fatalf("restarted member %d applied %d: the commit point was written after all", victim, got)
		}
		s.Run(10 * cfg.Heartbeat) // idle: nothing else is multicast
		want := string(core1(sender).Machine().Snapshot())
		if got := string(core1(victim).Machine().Snapshot()); got != want {
			r := core1(victim).Report()
			t.Fatalf("restarted member %d's state %s, the others' %s, %v after its restart in an idle cluster\n%+v", victim, got, want, 10*cfg.Heartbeat, *r.Sequencer)
		}
	})
}
