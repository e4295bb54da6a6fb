package berkeley_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/wire"
)

// TestForgedMasterCannotMoveAWorker is the Berkeley attack: three
// frames "from the master" (a heartbeat in a newer term, a poll, an
// adjustment of +10 s) to a synchronised worker. The worker used to slew
// by seconds while refusing the real master's frames as stale; now the
// correction is held back as a spike (its error bound rules it out), the
// real master takes its term back at its next heartbeat, and the worker's
// clock stays with the group.
func TestForgedMasterCannotMoveAWorker(t *testing.T) {
	sim.Seeds(t, 5, func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewPCG(uint64(seed), 5))
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: 50 * time.Microsecond}})
		g := newGroup(t, s, 3, nil, rng)
		s.OnSend(func(f sim.SentFrame) { checkPersisted(t, f) })
		g.worst(40 * time.Second)
		master, st := g.master()
		if master != 3 {
			t.Fatalf("master %d\n%s", master, g.dump())
		}
		const victim = 2
		before := g.precision()
		forged := bully.MakeTerm(bully.TermRound(st.Term)+1, master)
		at := func() time.Time { return s.Clock(victim).Now() }
		step := func(k wire.Kind, p interface{ AppendBinary([]byte) ([]byte, error) }) error {
			b, _ := p.AppendBinary(nil)
			var err error
			s.Do(victim, func(c core.Core) {
				err = c.Step(core.Message{From: master, To: victim, Kind: k, Term: forged, Payload: b, Sent: at().Add(-time.Millisecond), Time: at()})
			})
			return err
		}
		if err := step(wire.KindLeaderHeartbeat, wire.LeaderHeartbeat{}); err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
		if err := step(wire.KindClockPoll, wire.ClockPoll{Round: 1, Sample: 0}); err != nil {
			t.Fatalf("poll: %v", err)
		}
		if err := step(wire.KindClockAdjust, wire.ClockAdjust{Round: 1, Sample: 0, Correction: int64(10 * time.Second), Error: uint64(10 * time.Second)}); err != nil {
			t.Fatalf("adjust: %v", err)
		}
		g.worst(5 * time.Second)
		if p := g.worst(5 * time.Second); p > 500*time.Microsecond {
			t.Fatalf("precision %v after the attack (%v before)\n%s", p, before, g.dump())
		}
		vst := report(s, victim)
		if vst.Counters["adjust_spike"] != 1 || vst.Counters["adjust_stepout"] != 0 {
			t.Errorf("victim's counters %v: want the spike counted once", vst.Counters)
		}
		if vst.Election.Detail.(bully.Detail).LeaderContested == 0 {
			t.Errorf("the stale heartbeat of the real master was not contested: %+v", vst.Election)
		}
		if id, st := g.master(); id != master || st.Term <= forged {
			t.Errorf("master %d in %#x, want %d above the forged %#x\n%s", id, st.Term, master, forged, g.dump())
		}
	})
}

// TestDisturbedClockRecoversAfterStepout: a worker whose clock was really
// moved (an operator's date -s) gets corrections its bound rules out; they
// are held back for the stepout, then applied: the spike filter delays an
// honest repair, it does not prevent it.
func TestDisturbedClockRecoversAfterStepout(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 6))
	s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: 50 * time.Microsecond}})
	g := newGroup(t, s, 3, nil, rng)
	g.worst(40 * time.Second)
	if err := s.Clock(1).Step(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// Held back for the stepout (10 rounds), then applied and slewed out.
	if p := g.worst(5 * time.Second); p < 100*time.Millisecond {
		t.Fatalf("a 200 ms disturbance was corrected within 5 s (precision %v): no stepout", p)
	}
	g.worst(20 * time.Second)
	if p := g.worst(5 * time.Second); p > 500*time.Microsecond {
		t.Fatalf("precision %v 30 s after the disturbance\n%s", p, g.dump())
	}
	if st := report(s, 1); st.Counters["adjust_stepout"] != 1 {
		t.Errorf("counters %v: want one stepout", st.Counters)
	}
}
