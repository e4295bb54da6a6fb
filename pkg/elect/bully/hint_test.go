package bully_test

import (
	"github.com/synclab/synclab/pkg/wire"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/bully"
)

// TestSimHintOnlyWithHintProbe: a hint that the leader's port closed
// moves nothing without Config.HintProbe (electd's defaults: the leader
// is given up by its timeout alone, 400 ms after its last heartbeat);
// with it, the member below the dead leader claims HintProbes probes
// later (HintProbes x HintProbe after the hint, never sooner), and a live
// leader's answer to the first probe ends the matter.
func TestSimHintOnlyWithHintProbe(t *testing.T) {
	const probe = 10 * time.Millisecond
	for _, tc := range []struct {
		name   string
		mod    func(*bully.Config)
		lo, hi time.Duration // the new leader's claim, after the hint
	}{
		{"electd defaults", nil, 300 * time.Millisecond, 460 * time.Millisecond},
		{"HintProbe", func(c *bully.Config) { c.HintProbe = probe }, bully.HintProbes*probe - time.Millisecond /* the member's clock against the simulator's */, bully.HintProbes*probe + 5*time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			members := []bully.Member{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}, {ID: 5}}
			s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond}})
			c := newCluster(t, s, members, tc.mod)
			c.converge(3 * time.Second)

			// A forged hint about the live leader: nothing changes.
			term := c.core(1).Report().Term
			for id := uint32(1); id <= 4; id++ {
				if err := s.Hint(id, 5, core.HintStreamClosed); err != nil {
					t.Fatal(err)
				}
			}
			c.run(time.Second)
			if r := c.core(1).Report(); r.Term != term || r.Leader != 5 {
				t.Fatalf("after a forged hint: term %d leader %d, want %d and 5", r.Term, r.Leader, term)
			}
			s.Run(2 * time.Second) // past the hints' rest

			s.Crash(5)
			s.Run(time.Millisecond)
			hinted := s.Elapsed()
			for id := uint32(1); id <= 4; id++ {
				if err := s.Hint(id, 5, core.HintStreamClosed); err != nil {
					t.Fatal(err)
				}
			}
			if !s.RunUntil(func() bool { return c.core(4).Report().Leader == 4 }, 2*time.Second) {
				t.Fatal("no successor")
			}
			took := s.Elapsed() - hinted
			t.Logf("member 4 claimed %v after the hint", took)
			if took < tc.lo || took > tc.hi {
				t.Errorf("member 4 claimed %v after the hint, want %v to %v", took, tc.lo, tc.hi)
			}
			d := c.core(3).Detail()
			if tc.mod == nil && (d.Hints != 0 || d.HintProbes != 0 || d.HintsIgnored != 2) {
				t.Errorf("hints acted on without HintProbe: %+v", d)
			}
			if tc.mod != nil && (d.Hints != 2 || d.HintsCancelled != 1 || d.HintProbes != 1+bully.HintProbes) {
				t.Errorf("member 3's hint counters %+v: want the forged hint cancelled by the first probe's answer, then %d probes", d, bully.HintProbes)
			}
		})
	}
}

// TestHintEndsWithTheLeader: a follower probing its leader after a hint,
// that adopts a newer term (an ELECTION of it from another member) and so
// no longer follows that leader, forgets the episode: its Deadline is not
// left in the past, which had the driver tick it every StaleRetry until a
// COORDINATOR came.
func TestHintEndsWithTheLeader(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cfg := bully.DefaultLANConfig()
	cfg.HintProbe = 10 * time.Millisecond
	b := hintFollower(t, cfg, t0)
	b.Hint(core.Hint{Member: 3, Cause: core.HintStreamClosed, Time: t0.Add(time.Millisecond)})
	b.Ready()
	el := frame(t, 1, wire.KindElection, bully.MakeTerm(4, 1), wire.Election{Reason: wire.ReasonLeaderLost})
	el.Time = t0.Add(2 * time.Millisecond)
	if err := b.Step(el); err != nil {
		t.Fatal(err)
	}
	b.Ready()
	now := t0.Add(50 * time.Millisecond)
	b.Tick(now)
	b.Ready()
	if d := b.Deadline(); !d.IsZero() && !d.After(now) {
		t.Errorf("Deadline %v, not after the Tick at %v: a hint episode about a leader no longer followed kept it", d.Sub(t0), now.Sub(t0))
	}
}

// TestHintDuringRecheck: with probes and hints both on, a hint near the
// end of the leader's silence and a Tick late enough to recheck the
// timeout: while the recheck runs the episode asks for no Tick (it asked
// for its next probe, already past, and the driver ticked at once until
// the recheck ended).
func TestHintDuringRecheck(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cfg := bully.DefaultLANConfig()
	cfg.Heartbeat, cfg.LeaderTimeout, cfg.Probe = bully.FastFailover.Heartbeat, bully.FastFailover.LeaderTimeout, bully.FastFailover.Probe
	cfg.HintProbe = 10 * time.Millisecond
	b := hintFollower(t, cfg, t0)
	for d := time.Millisecond; d < 200*time.Millisecond; d += time.Millisecond {
		b.Tick(t0.Add(d))
		b.Ready()
	}
	b.Hint(core.Hint{Member: 3, Cause: core.HintStreamClosed, Time: t0.Add(200 * time.Millisecond)})
	b.Ready()
	late := t0.Add(250 * time.Millisecond) // past the 240 ms timeout, more than Probe late
	b.Tick(late)
	b.Ready()
	if d := b.Deadline(); !d.After(late) {
		t.Errorf("Deadline %v after a Tick at %v: in the past while the recheck runs", d.Sub(t0), late.Sub(t0))
	}
}

// hintFollower is member 2 of 1..3 with cfg, following 3 from t0.
func hintFollower(t *testing.T, cfg bully.Config, t0 time.Time) *bully.Core {
	t.Helper()
	b, err := bully.New(core.Env{ID: 2, Members: []uint32{1, 2, 3}, Now: t0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.Ready()
	claim := frame(t, 3, wire.KindCoordinator, bully.MakeTerm(3, 3), wire.Coordinator{})
	claim.Time = t0
	if err := b.Step(claim); err != nil {
		t.Fatal(err)
	}
	b.Ready()
	return b
}
