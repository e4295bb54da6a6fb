package order

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/wire"
)

// TestSimSequencerKilledPortHint: orderd's sequencer election with
// --hint-probe 30ms (bully's HintProbe and Watch, at orderd's 200 / 400 /
// 4 ms): every member watches the sequencer over its TCP link; the
// sequencer crashes, the FIN reaches each member a link delay later, and
// member 4 leads 150 ms after it (5 probes unanswered), where the
// timeout alone takes 200-400 ms. Then a hint forged about the new,
// live sequencer changes nothing. Without the core's Hint (core.Hinter)
// the hint never reaches the election and the timeout decides.
func TestSimSequencerKilledPortHint(t *testing.T) {
	opts := elect.Options{Heartbeat: 200 * time.Millisecond, LeaderTimeout: 400 * time.Millisecond, Probe: 4 * time.Millisecond, HintProbe: 30 * time.Millisecond}
	sim.Seeds(t, 10, func(t *testing.T, seed int64) {
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: 200 * time.Microsecond}})
		cfg := DefaultLANConfig()
		cfg.Election = func(env core.Env) (elect.Elector, error) { return bully.New(env, bully.FromOptions(env.Members, opts)) }
		addMembers(t, s, 5, cfg)
		leader := func(id uint32) uint32 {
			l, _, _ := s.Core(id).(*Core).Election().Leader()
			return l
		}
		if !s.RunUntil(func() bool {
			for id := uint32(1); id <= 5; id++ {
				if leader(id) != 5 {
					return false
				}
			}
			return true
		}, 5*time.Second) {
			t.Fatal("no sequencer 5")
		}
		s.Run(time.Duration(seed*37%1000) * time.Millisecond)
		for id := uint32(1); id <= 4; id++ {
			if n := s.Core(id).(*Core).Election().Report().Sent[wire.KindLeaderWatch.String()]; n == 0 {
				t.Fatalf("member %d sent the sequencer no watch", id)
			}
		}
		s.Crash(5)
		killed := s.Elapsed()
		s.Run(300 * time.Microsecond)
		for id := uint32(1); id <= 4; id++ {
			if err := s.Hint(id, 5, core.HintStreamClosed); err != nil {
				t.Fatal(err)
			}
		}
		if !s.RunUntil(func() bool { return leader(4) == 4 && leader(1) == 4 }, 2*time.Second) {
			t.Fatal("no new sequencer")
		}
		if took := s.Elapsed() - killed; took < 150*time.Millisecond || took > 160*time.Millisecond {
			t.Errorf("member 4 led %v after the sequencer's crash, want 150-160 ms", took)
		}
		term := s.Core(1).(*Core).Election().Report().Term
		s.Run(time.Second)
		for id := uint32(1); id <= 3; id++ {
			if err := s.Hint(id, 4, core.HintStreamClosed); err != nil {
				t.Fatal(err)
			}
		}
		s.Run(time.Second)
		for id := uint32(1); id <= 3; id++ {
			if r := s.Core(id).(*Core).Election().Report(); r.Leader != 4 || r.Term != term {
				t.Errorf("member %d after a forged hint about live sequencer 4: leader %d term %d, want 4 and %d", id, r.Leader, r.Term, term)
			}
		}
	})
}
