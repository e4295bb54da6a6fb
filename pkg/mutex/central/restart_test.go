package central_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
)

// TestCoordinatorRestartTakeover: as TestCoordinatorCrashRecovery, but the
// SIGKILLed coordinator comes back (as systemd brings it back:
// mutexd.service has RestartSec=2s; here after 0.5, 1 or 2 s, at six
// instants of the beat), and a client at member 1 takes and releases the
// lock over and over: from the crash on, no request waits more than 4 s
// for its grant. (Before, the restarted member, the highest ID, took the
// coordination back from its successor as bully has it, or claimed it
// before anyone noticed its death, and waited a lease from its own start,
// as a member that cannot know what it answered before its crash must:
// up to 6.6 s without a grant; issue 29 measured 7.0 s.)
func TestCoordinatorRestartTakeover(t *testing.T) {
	for _, back := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second} {
		for k := range 6 {
			s := defaultCluster(t, int64(k+1))
			s.Run(time.Duration(k) * 173 * time.Millisecond)
			s.Crash(5)
			crashed := s.Elapsed()
			var req mutex.RequestID
			var asked time.Duration
			ask := func() {
				asked = s.Elapsed()
				s.Do(1, func(x core.Core) {
					req, _ = x.(mutex.Algorithm).Acquire(s.Clock(1).Now(), mutex.Request{Lock: "x"})
				})
			}
			ask()
			var longest time.Duration
			restarted := false
			for s.Elapsed()-crashed < 12*time.Second {
				s.Run(10 * time.Millisecond)
				if !restarted && s.Elapsed()-crashed >= back {
					s.Restart(5)
					restarted = true
				}
				st, ok := s.Core(1).(mutex.Algorithm).Lookup(req)
				switch {
				case ok && st.Granted:
					longest = max(longest, s.Elapsed()-asked)
					s.Do(1, func(x core.Core) { _ = x.(mutex.Algorithm).Release(s.Clock(1).Now(), req) })
					ask()
				case !ok:
					ask() // lost or refused: ask again
				}
				longest = max(longest, s.Elapsed()-asked)
			}
			t.Logf("back after %v, crash %v into the run: coordinator %d, longest wait %v", back, crashed.Round(time.Millisecond), coordinator(s), longest.Round(time.Millisecond))
			if longest > 4*time.Second {
				t.Errorf("back after %v, crash %v into the run: a request waited %v, want at most 4 s", back, crashed.Round(time.Millisecond), longest)
			}
		}
	}
}

// TestTakeoverWithJoiningSyncsLost: the members' first syncs to a new
// coordinator are lost (a coordinator that restarted shortly before
// refuses frames of its peers' epochs until they move to new series: the
// lab's case, where the SIGKILL of the coordinator a second after another
// member's restart cost 6.9 s), and the syncs that answer its next beat
// arrive: it still grants within 4 s of the crash. (Before, a member's
// later syncs reported its answers to the new coordinator's own beats as
// its backing of an older one, and the new coordinator waited a lease
// from its next beat: 4.5 s after its start.)
func TestTakeoverWithJoiningSyncsLost(t *testing.T) {
	for k := range 6 {
		s := defaultCluster(t, int64(k+1))
		s.Run(time.Duration(k) * 173 * time.Millisecond)
		s.Crash(5)
		crashed := s.Elapsed()
		if !s.RunUntil(func() bool { return coordinator(s) == 4 }, 5*time.Second) {
			t.Fatalf("offset %d: member 4 did not take over", k)
		}
		for _, id := range []uint32{1, 2, 3} {
			s.Cut(id, 4)
		}
		s.Run(50 * time.Millisecond)
		s.Heal()
		if !acquired(s, 1, 10*time.Second) {
			t.Fatalf("offset %d: not granted", k)
		}
		took := s.Elapsed() - crashed
		t.Logf("crash %v into the run, the joining syncs lost: granted %v after it", crashed.Round(time.Millisecond), took.Round(time.Millisecond))
		if took > 4*time.Second {
			t.Errorf("crash %v into the run, the joining syncs lost: granted %v after it, want at most 4 s", crashed.Round(time.Millisecond), took)
		}
	}
}

// defaultCluster is five members with the defaults on a 1 ms LAN, run
// for 6 s: past the first coordinator's hold.
func defaultCluster(t *testing.T, seed int64) *sim.Sim {
	s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: time.Millisecond}})
	for id := uint32(1); id <= 5; id++ {
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			c, err := central.New(env, central.DefaultLANConfig())
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, clock.SimConfig{})
	}
	s.Run(6 * time.Second)
	return s
}

// acquired asks for lock x at member id and runs the simulator until it
// is granted, at most within; it reports whether it was.
func acquired(s *sim.Sim, id uint32, within time.Duration) bool {
	var req mutex.RequestID
	s.Do(id, func(x core.Core) {
		req, _ = x.(mutex.Algorithm).Acquire(s.Clock(id).Now(), mutex.Request{Lock: "x"})
	})
	return s.RunUntil(func() bool {
		st, ok := s.Core(id).(mutex.Algorithm).Lookup(req)
		return ok && st.Granted
	}, within)
}
