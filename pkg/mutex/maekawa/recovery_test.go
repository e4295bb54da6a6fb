package maekawa_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/mutex/maekawa"
)

// TestRecoveryAtLeaseEnd: with mutexd's defaults (3 s lease, --heartbeat
// 1s), 5 members on reliable links, member 1 takes the lock, member 2
// asks for it, and member 1 crashes soon after its grant (before or after
// a heartbeat of its, by the instant). Member 2 is granted once every
// vote member 1 could have held on has ended: not before its lease's end,
// and within the stretch (clock rates, Margin) and a few ms of it.
// Member 1 is in member 2's cross (row 1 2 3): Maekawa's waiter must also
// have left it out, DeadAfter (3 s) after member 1's last frame, which is
// by then unless a heartbeat of member 1's came after its grant (crashes
// at 1.3 s and 2.5 s: bound by that frame plus 3 s). Before: 3.5 s after the grant for both (a recorded
// vote was kept for MaxLease + AttemptTimeout, Maekawa's detector waited
// 3.5 heartbeats), half a second past the lease.
func TestRecoveryAtLeaseEnd(t *testing.T) {
	const lease = 3 * time.Second
	opt := mutex.Options{Lease: lease, Heartbeat: time.Second}
	stretch := time.Duration(float64(lease)*(1+2*mutex.DefaultMaxDriftPPM*1e-6)) + maekawa.DefaultLANConfig().Margin
	const slack = 15 * time.Millisecond // ticks, links, a commit round
	const deadAfter = 3 * time.Second   // Maekawa's, at --heartbeat 1s (ConfigFor)
	for _, f := range []mutex.Factory{maekawa.Factory, maekawa.MajorityFactory} {
		for _, crashAfter := range []time.Duration{10 * time.Millisecond, 150 * time.Millisecond, 400 * time.Millisecond, 1300 * time.Millisecond, 2500 * time.Millisecond} {
			t.Run(fmt.Sprintf("%s/crash%v", f.Name, crashAfter), func(t *testing.T) {
				s := mutextest.NewLockSim(t, f, opt, 5, int64(crashAfter), sim.LinkConfig{Delay: 200 * time.Microsecond}, 4*time.Second) // every member has heard every other
				granted := map[uint32]time.Duration{}
				s.OnOutcome = func(node uint32, o mutex.Outcome) {
					if _, ok := o.(mutex.Granted); ok {
						granted[node] = s.GrantedAt
					}
				}
				var last1 time.Duration // member 1's last frame
				s.OnSend(func(f sim.SentFrame) {
					if f.From == 1 {
						last1 = s.Elapsed()
					}
				})
				s.AcquireFor(1, lease)
				s.Run(20 * time.Millisecond)
				g1, ok := granted[1]
				if !ok {
					t.Fatal("member 1 not granted on an idle cluster")
				}
				s.AcquireFor(2, lease)
				s.Run(g1 + crashAfter - s.Elapsed())
				s.Crash(1)
				for {
					if _, ok := granted[2]; ok || s.Elapsed()-g1 > 10*time.Second {
						break
					}
					s.Run(time.Millisecond)
				}
				g2, ok := granted[2]
				if !ok {
					t.Fatal("member 2 not granted 10 s after member 1's grant")
				}
				took, hi := g2-g1, stretch
				if f.Name == "maekawa" {
					// Member 2 leaves member 1 out of its cross DeadAfter
					// after 1's last frame (a heartbeat after its grant).
					hi = max(hi, last1-g1+deadAfter)
				}
				t.Logf("member 2 granted %v after member 1's grant (%v after its crash %v into the lease, %v after its last frame); lease %v, stretched %v", took, g2-g1-crashAfter, crashAfter, g2-last1, lease, stretch)
				if took < lease || took > hi+slack {
					t.Errorf("member 2 granted %v after member 1's grant, want %v to %v", took, lease, hi+slack)
				}
			})
		}
	}
}

// TestWithdrawnAtGrant: in the majority quorum a granted request's
// release goes at once to the coordinators that have not answered it
// (withdraw), so it does not wait in their queues to be voted for after
// its holder died. Member 4 is down and member 5 restarted just before,
// so 5 votes on nothing for a stretched lease and queues member 1's
// request; 1 is granted by 1, 2 and 3, member 2 asks, and 1 crashes. 2
// needs 5's vote (1 and 4 are down): 5 gives it to 2 when its hold ends,
// and 2 holds once 1's votes at 2 and 3 end, a stretched lease after 1's
// grant. Before, 5 voted for 1's queued request when its hold ended and
// kept that vote a stretched lease more: 2 was granted 5.95 s after 1's
// grant.
func TestWithdrawnAtGrant(t *testing.T) {
	const lease = 3 * time.Second
	opt := mutex.Options{Lease: lease, Heartbeat: time.Second}
	stretch := time.Duration(float64(lease)*(1+2*mutex.DefaultMaxDriftPPM*1e-6)) + maekawa.DefaultLANConfig().Margin
	s, granted := restartedFifth(t, opt)
	s.AcquireFor(1, lease)
	s.Run(20 * time.Millisecond)
	g1, ok := granted[1]
	if !ok {
		t.Fatal("member 1 not granted by 1, 2 and 3")
	}
	s.AcquireFor(2, lease)
	s.Run(100 * time.Millisecond)
	s.Crash(1)
	for granted[2] == 0 && s.Elapsed()-g1 < 10*time.Second {
		s.Run(time.Millisecond)
	}
	took := granted[2] - g1
	t.Logf("member 2 granted %v after member 1's grant", took)
	if took < lease || took > stretch+15*time.Millisecond {
		t.Errorf("member 2 granted %v after member 1's grant, want %v to %v", took, lease, stretch+15*time.Millisecond)
	}
}

// TestLostWithdraw: the withdraw itself is lost (member 1's link to 5 is
// cut just after 1's request reaches 5, which holds its votes after a
// restart and queues it, for the 20 ms around 1's grant). 5 votes for 1's
// request once its hold ends, 2.93 s after 1's grant. 1 answers that vote
// with a release, whether it still holds (held) or released long before
// (released: the answer is stale), so 5 is free for member 2 at once,
// which needs it (3 and 4 are down). Before, no one released it: 2 waited
// a stretched lease more (5.96 s after 1's grant, against about 3 s).
func TestLostWithdraw(t *testing.T) {
	const lease = 3 * time.Second
	opt := mutex.Options{Lease: lease, Heartbeat: time.Second}
	stretch := time.Duration(float64(lease)*(1+2*mutex.DefaultMaxDriftPPM*1e-6)) + maekawa.DefaultLANConfig().Margin
	for _, tc := range []struct {
		name    string
		release time.Duration // after 1's grant
	}{{"released", 100 * time.Millisecond}, {"held", 2980 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			s, granted := restartedFifth(t, opt)
			req := s.AcquireFor(1, lease)
			s.Run(300 * time.Microsecond)
			s.Cut(1, 5)
			s.Run(20 * time.Millisecond)
			s.Heal()
			g1, ok := granted[1]
			if !ok {
				t.Fatal("member 1 not granted by 1, 2 and 3")
			}
			s.Run(tc.release - (s.Elapsed() - g1))
			s.Do(1, func(c core.Core) {
				if err := c.(mutex.Algorithm).Release(s.Clock(1).Now(), req); err != nil {
					t.Fatal(err)
				}
			})
			s.Run(time.Millisecond)
			s.Crash(3)
			s.AcquireFor(2, lease)
			for granted[2] == 0 && s.Elapsed()-g1 < 10*time.Second {
				s.Run(time.Millisecond)
			}
			took := granted[2] - g1
			t.Logf("member 2 granted %v after member 1's grant", took)
			if granted[2] == 0 || took > stretch+15*time.Millisecond {
				t.Errorf("member 2 granted %v after member 1's grant, want at most %v", took, stretch+15*time.Millisecond)
			}
		})
	}
}

// restartedFifth is 5 majority members, 4 down and 5 restarted 100 ms
// before (its votes held a stretched lease), and when each was granted
// last.
func restartedFifth(t *testing.T, opt mutex.Options) (*mutextest.LockSim, map[uint32]time.Duration) {
	s := mutextest.NewLockSim(t, maekawa.MajorityFactory, opt, 5, 1, sim.LinkConfig{Delay: 200 * time.Microsecond}, 4*time.Second)
	granted := map[uint32]time.Duration{}
	s.OnOutcome = func(node uint32, o mutex.Outcome) {
		if _, ok := o.(mutex.Granted); ok {
			granted[node] = s.GrantedAt
		}
	}
	s.Crash(4)
	s.Crash(5)
	s.Restart(5)
	s.Run(100 * time.Millisecond)
	return s, granted
}
