package sim_test

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/wire"
)

// TestLivenessOracle runs the liveness detector, as the daemons run it, over
// many random clusters and checks it against what the simulator knows to be
// true:
//
//   - a crashed member is suspected by every live member within SuspectAfter
//     of the crash plus one network delay (its last heartbeat may still be
//     in flight), and never trusted again while it is down;
//   - without loss, no live member ever suspects a member it is connected
//     to;
//   - after a partition heals (or a crashed member restarts, or a paused
//     one resumes), every live member trusts every other within a
//     heartbeat interval and a delay (without loss), or within a few
//     intervals (with loss).
func TestLivenessOracle(t *testing.T) {
	sim.Seeds(t, 200, func(t *testing.T, seed int64) {
		rnd := rand.New(rand.NewPCG(uint64(seed), 99))
		n := 3 + rnd.IntN(7)
		loss, dup := 0.0, 0.0
		if seed%3 != 0 {
			loss, dup = 0.2*rnd.Float64(), 0.05*rnd.Float64()
		}
		jitter := time.Duration(rnd.IntN(3000)) * time.Microsecond
		if rnd.IntN(5) == 0 {
			// More than a heartbeat interval: heartbeats overtake each other.
			jitter = time.Duration(rnd.IntN(150)) * time.Millisecond
		}
		link := sim.LinkConfig{
			Delay:     time.Duration(50+rnd.IntN(2000)) * time.Microsecond,
			Jitter:    jitter,
			Loss:      loss,
			Duplicate: dup,
		}
		s := sim.New(sim.Config{Seed: seed, DefaultLink: link, Multicast: rnd.IntN(2) == 0})
		// The notes' heartbeats, or the daemons' sparse heartbeats with
		// probes on a missed one (timed runs QuietLANConfig): the same
		// bounds hold for both.
		cfg := liveness.DefaultLANConfig()
		if seed%2 == 0 {
			cfg = liveness.QuietLANConfig()
		}
		ids := make([]uint32, n)
		for i := range ids {
			ids[i] = uint32(i + 1)
		}
		for _, id := range ids {
			drift := (rnd.Float64()*2 - 1) * 100
			s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
				env.Members, env.Rand = ids, s.NewRand() // the stream the golden results were made with
				c, err := liveness.New(env, cfg)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}, clock.SimConfig{Offset: time.Duration(rnd.Int64N(int64(2 * time.Second))), DriftPPM: drift})
		}
		tick := s.Config().TickInterval
		slack := tick / 100 // drift of +-100 ppm over a few hundred ticks, and rounding
		maxDelay := link.MaxDelay()
		// The detector acts at the first tick at or after its deadline:
		// one tick later at most, while the simulator ticks at a fixed
		// interval.
		detect := cfg.SuspectAfter + tick + maxDelay + slack
		rejoin := cfg.Heartbeat + tick + maxDelay + slack
		if loss > 0 {
			// Ten heartbeats in a row lost at 20%: 1e-7 per link.
			rejoin = 10*cfg.Heartbeat + tick + maxDelay + slack
		}
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("n=%d loss=%.3f link=%+v cfg=%+v: "+format+"\n%s", append([]any{n, loss, link, cfg}, append(args, s.Log())...)...)
		}

		// Phase 1: start; everyone must trust everyone once heartbeats
		// flowed (loss may make that instant late, not absent).
		all := func() bool {
			for _, o := range ids {
				if s.Running(o) && live(s, o).AliveCount() != n {
					return false
				}
			}
			return true
		}
		if !s.RunUntil(all, rejoin+cfg.Heartbeat) {
			fail("members never all up after start")
		}
		s.Run(time.Duration(rnd.IntN(1000)) * time.Millisecond)

		// Phase 2: crash a random member.
		victim := ids[rnd.IntN(n)]
		crashAt := s.Elapsed()
		s.Crash(victim)
		s.Run(detect + 200*time.Millisecond)
		for _, o := range ids {
			if o == victim {
				continue
			}
			if st := live(s, o).State(victim); st != liveness.Suspect {
				fail("member %d sees crashed %d as %v", o, victim, st)
			}
			var down time.Duration = -1
			for _, e := range s.EventsNamed(liveness.EventMemberDown) {
				if e.Node == o && e.Args[1] == victim {
					down = e.At
				}
			}
			if down < 0 || down > crashAt+detect {
				fail("member %d suspected %d at %v, crash at %v, bound %v", o, victim, down, crashAt, detect)
			}
		}

		// Phase 3: restart it; it rejoins everywhere.
		s.Restart(victim)
		restartAt := s.Elapsed()
		if !s.RunUntil(all, rejoin+cfg.Heartbeat) {
			fail("restarted %d not trusted by all (and trusting all) within %v", victim, rejoin)
		}

		// Phase 4: partition into two random non-empty sides, then heal.
		s.Run(300 * time.Millisecond)
		var a, b []uint32
		side := map[uint32]bool{}
		for i, id := range rnd.Perm(n) {
			if i <= rnd.IntN(n-1) {
				a = append(a, ids[id])
				side[ids[id]] = true
			} else {
				b = append(b, ids[id])
			}
		}
		if len(a) == 0 || len(b) == 0 {
			a, b = ids[:1], ids[1:]
			side = map[uint32]bool{ids[0]: true}
		}
		partAt := s.Elapsed()
		s.Partition(a, b)
		s.Run(detect + 200*time.Millisecond)
		for _, o := range ids {
			for _, m := range ids {
				if o != m && side[o] != side[m] && live(s, o).Alive(m) {
					fail("member %d trusts %d across the partition %v|%v", o, m, a, b)
				}
			}
		}
		s.Heal()
		healAt := s.Elapsed()
		// Each pair must be trusted at some instant within the bound; without
		// loss, all pairs at once, and from then on.
		trusted := map[[2]uint32]bool{}
		pairs := func() bool {
			for _, o := range ids {
				for _, m := range ids {
					if o != m && live(s, o).Alive(m) {
						trusted[[2]uint32{o, m}] = true
					}
				}
			}
			return len(trusted) == n*(n-1)
		}
		if !s.RunUntil(pairs, rejoin) {
			fail("after heal at %v only %d of %d pairs trusted within %v", healAt, len(trusted), n*(n-1), rejoin)
		}
		if loss == 0 && !all() {
			fail("after heal, pairs trusted at different times but not all at once")
		}
		s.Run(time.Second)

		// Phase 5: pause a member longer than SuspectAfter (SIGSTOP). The
		// others suspect it; when it resumes, its own tick count has not
		// moved, so it suspects nobody for its silence, and everyone trusts
		// everyone again.
		paused := ids[rnd.IntN(n)]
		pauseAt := s.Elapsed()
		s.Pause(paused)
		s.Run(detect + 200*time.Millisecond)
		for _, o := range ids {
			if o != paused && live(s, o).Alive(paused) {
				fail("member %d trusts %d, paused since %v", o, paused, pauseAt)
			}
		}
		s.Resume(paused)
		resumeAt := s.Elapsed()
		if !s.RunUntil(all, rejoin+cfg.Heartbeat) {
			fail("resumed %d not trusted by all (and trusting all) within %v", paused, rejoin)
		}
		s.Run(500 * time.Millisecond)

		// Without loss nobody ever suspected a live, connected member:
		// suspicion only of the crashed member while down, and across the
		// partition while it lasted (plus the last heartbeat's flight).
		if loss == 0 {
			for _, e := range s.EventsNamed(liveness.EventMemberDown) {
				m := e.Args[1].(uint32)
				switch {
				case m == victim && e.At >= crashAt && e.At < restartAt:
				case side[e.Node] != side[m] && e.At >= partAt && e.At <= healAt+maxDelay:
				case m == paused && e.At >= pauseAt && e.At < resumeAt:
				default:
					fail("without loss, %d suspected live connected member %d at %v", e.Node, m, e.At)
				}
			}
		}
		// The framing layer refused only the link's duplicates.
		for _, id := range ids {
			st := s.Node(id).Status()
			if st.TotalDropped() != st.Dropped["replay"] || (dup == 0 && st.TotalDropped() != 0) {
				fail("member %d dropped frames: %v", id, st.Dropped)
			}
			if c := s.Counters(id); c.ClockAnomalies != 0 || c.AdjustErrors != 0 {
				fail("member %d: %d clock anomalies, %d adjustment errors", id, c.ClockAnomalies, c.AdjustErrors)
			}
		}
	})
}

// TestLivenessIdleCost counts what an idle member of three costs a second
// on the simulator: the frames it sends and the times it runs (its ticks
// and the frames delivered to it: each is a wake-up of a daemon). The
// daemons' profile (QuietLANConfig, timed's) must cost at most 40% of the
// notes' 100 ms heartbeats, with no probe while nothing is lost, so that
// the idle CPU of issue 34 cannot silently come back.
func TestLivenessIdleCost(t *testing.T) {
	type cost struct{ frames, wakeups, probes float64 }
	measure := func(cfg liveness.Config) cost {
		s := sim.New(sim.Config{Seed: 3, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: 50 * time.Microsecond}})
		ids := []uint32{1, 2, 3}
		for _, id := range ids {
			s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
				env.Members, env.Rand = ids, s.NewRand()
				c, err := liveness.New(env, cfg)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}, clock.SimConfig{DriftPPM: float64(id) * 10})
		}
		s.Run(2 * time.Second)
		before := map[uint32]sim.Counters{}
		for _, id := range ids {
			before[id] = s.Counters(id)
		}
		s.ResetCounts()
		const window = 10 * time.Second
		s.Run(window)
		var most cost
		for _, id := range ids {
			a, b := before[id], s.Counters(id)
			wake := float64(b.Ticks-a.Ticks+b.Delivered-a.Delivered) / window.Seconds()
			frames := float64(b.Sent-a.Sent) / window.Seconds()
			most.wakeups, most.frames = max(most.wakeups, wake), max(most.frames, frames)
			if n := live(s, id).AliveCount(); n != 3 {
				t.Errorf("%+v: member %d sees %d alive", cfg, id, n)
			}
		}
		most.probes = float64(s.Sent(wire.KindHeartbeatProbe)) / window.Seconds()
		return most
	}
	notes, quiet := measure(liveness.DefaultLANConfig()), measure(liveness.QuietLANConfig())
	t.Logf("a member's idle second, the most of three: notes' heartbeats %+v, the daemons' %+v", notes, quiet)
	// 2 peers x 1/300ms: 6.7 frames; 3.3 ticks + 6.7 deliveries.
	if quiet.frames > 7 || quiet.wakeups > 10.5 || quiet.probes != 0 {
		t.Errorf("the daemons' profile: %+v a second, want <= 7 frames, <= 10.5 wake-ups, no probe", quiet)
	}
	if quiet.wakeups > 0.4*notes.wakeups || quiet.frames > 0.4*notes.frames {
		t.Errorf("the daemons' profile costs %+v against the notes' %+v: more than 40%%", quiet, notes)
	}
}

// TestLivenessQuietUnderLoss: the daemons' sparse heartbeats lean on
// probes when one is lost. At 10% loss on every link, five members over
// a simulated ten minutes never suspect each other (the notes'
// heartbeats need 4 losses in a row for a false suspicion, 1e-4 per
// heartbeat here; the probes need a heartbeat and 19 probe round trips,
// 1e-15), and the probes that stood in for lost heartbeats were sent and
// answered.
func TestLivenessQuietUnderLoss(t *testing.T) {
	s := sim.New(sim.Config{Seed: 7, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 2 * time.Millisecond, Loss: 0.1}})
	ids := []uint32{1, 2, 3, 4, 5}
	for _, id := range ids {
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			env.Members, env.Rand = ids, s.NewRand()
			c, err := liveness.New(env, liveness.QuietLANConfig())
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, clock.SimConfig{DriftPPM: float64(id) * 20})
	}
	s.Run(10 * time.Minute)
	if down := s.EventsNamed(liveness.EventMemberDown); len(down) != 0 {
		t.Errorf("%d suspicions of live members at 10%% loss, the first %+v", len(down), down[0])
	}
	var probes, answered uint64
	for _, id := range ids {
		st := live(s, id).StatusView()
		probes, answered = probes+st.Probes, answered+st.Answered
	}
	t.Logf("10 minutes at 10%% loss: %d probes sent, %d answered", probes, answered)
	// Every lost heartbeat (10% of 5 x 4 x 2000) is made up by probes.
	if probes < 4000 || answered < 3000 {
		t.Errorf("%d probes sent, %d answered over 10 minutes at 10%% loss", probes, answered)
	}
}
