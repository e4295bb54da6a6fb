package permission_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/mutex/permission"
	"github.com/synclab/synclab/pkg/wire"
)

// forgeShortBusy forges, at member to, a 5-byte busy heartbeat of member
// from (what a member of the build before the extended form sends).
func forgeShortBusy(t *testing.T, s *mutextest.LockSim, from, to uint32) {
	t.Helper()
	l := s.Core(to).(*permission.Core).Config().Lamport.Now() + 1
	if err := s.Forge(from, to, wire.KindPermHeartbeat, 0, l, wire.PermHeartbeat{Interval: 1000, Busy: true}); err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeRestartLossStaysCapped (review-perm6): members 2 and 3 take
// member 1 for an older build (it ran one: here a 5-byte busy heartbeat
// of it, forged while it is down); 1 restarts on this build and its
// frames to them are lost for its whole restart hold, so they still send
// it 5-byte idle heartbeats. A branch that took a member for older on a
// 5-byte idle heartbeat from which no extended frame had come made 1 take
// 2 and 3 for older in turn: each then sent the others only the 5-byte
// form, for good while idle, and 1 counted their frames by its own beats
// alone, uncapped by acknowledgements: a minute later, every frame of 1
// lost for two heartbeats and then partitioned, "member 2 gave 1 up
// 129.887902ms after 1 was partitioned ... and 1, alive, had not taken
// itself for cut off" (Lamport 739.703217ms). A 5-byte idle heartbeat
// marks nothing now.
func TestUpgradeRestartLossStaysCapped(t *testing.T) {
	for _, f := range factories {
		t.Run(f.Name, func(t *testing.T) {
			sim.Seeds(t, 8, func(t *testing.T, seed int64) {
				const idle, waiter, other = 1, 2, 3
				s, tm := stallSim(t, f, seed)
				rng := s.NewRand()
				s.Crash(idle)
				forgeShortBusy(t, s, idle, waiter)
				forgeShortBusy(t, s, idle, other)
				s.Run(time.Second)
				s.Cut(idle, waiter)
				s.Cut(idle, other)
				s.Restart(idle)
				s.Run(tm.RestartHold() + time.Second)
				s.Heal()
				s.Run(60*time.Second + time.Duration(rng.Int64N(int64(tm.HeartbeatInterval))))
				lostThenPartitioned(t, s, tm, rng, idle, waiter, other, "after every frame of it was lost for two heartbeats or more, a minute after its upgrade restart")
			})
		})
	}
}

// TestOlderBuildSaidRateLimited (review-perm6): without a key, forged
// extended and 5-byte busy heartbeats in turn marked and unmarked member
// 2 as an older build at member 1 as fast as they came, and each mark was
// said: 200 forged triples in a second made 202 member_older_build lines,
// 200 at WARN. Each member is said at most once every 10 minutes, the
// WARN at most once in all.
func TestOlderBuildSaidRateLimited(t *testing.T) {
	s, _ := stallSim(t, permission.RicartAgrawalaFactory, 1)
	forgeShortBusy(t, s, 3, 1)
	for range 200 {
		l := s.Core(1).(*permission.Core).Config().Lamport.Now() + 1
		if err := s.Forge(2, 1, wire.KindPermHeartbeat, 0, l, wire.PermHeartbeat{Interval: 1000, Ext: true}); err != nil {
			t.Fatal(err)
		}
		forgeShortBusy(t, s, 2, 1)
		forgeShortBusy(t, s, 3, 1) // keeps 3 marked (its real extended beats undo it)
		s.Run(5 * time.Millisecond)
	}
	lines, warns := 0, 0
	for _, e := range s.EventsNamed(permission.EventOlderBuild) {
		if e.Node == 1 {
			lines++
			if e.Warn {
				warns++
			}
		}
	}
	if lines > 2 || warns > 1 {
		t.Errorf("200 forged frame triples in 1 s made member 1 log %d member_older_build lines, %d at WARN; want at most one per member, one WARN", lines, warns)
	}
}

// TestOlderMajorityWarnNotHidden (review-last): member 1 of five (a
// majority of the others is older once 3 of 4 are). 2 and 3 are taken for
// older (INFO each); 2 is upgraded (an extended frame: unmarked) and
// rolled back a minute later (or one extended frame is forged in its
// name); meanwhile 4 is taken for older. 2's next busy 5-byte heartbeat
// makes {2, 3, 4} a majority of the others: the per-member limit on 2's
// INFO hid the WARN, never said. It is said.
func TestOlderMajorityWarnNotHidden(t *testing.T) {
	m := newMember(t, 1, []uint32{1, 2, 3, 4, 5})
	cfg := m.c.Config()
	feed := func(from uint32, p wire.PermHeartbeat) {
		t.Helper()
		if err := m.step(from, wire.KindPermHeartbeat, p, cfg.Lamport.Now()+1); err != nil {
			t.Fatal(err)
		}
	}
	busy := func(from uint32) { feed(from, wire.PermHeartbeat{Interval: 1000, Busy: true}) }
	ext := func(from uint32) { feed(from, wire.PermHeartbeat{Interval: 1000, Ext: true}) }
	ext(5)
	busy(2)
	busy(3)
	m.tick(time.Minute)
	ext(2) // upgraded
	m.tick(time.Minute)
	busy(4)
	m.tick(time.Minute)
	busy(2) // rolled back
	older := m.c.Report().Detail.(permission.Detail).Older
	warns := 0
	for _, e := range m.events(permission.EventOlderBuild) {
		if e.Warn {
			warns++
		}
	}
	if len(older) != 3 || warns != 1 {
		t.Errorf("members %v taken for older (want 3 of the 4 others), %d member_older_build WARN said (want 1)", older, warns)
	}
}

// TestForgedShortBusyStaysCapped (keyless): four forged 5-byte busy
// heartbeats, both ways between idle member 1 and each of 2 and 3, make
// each take the other for an older build. Idle, none of them sent an
// extended frame to the other again, so 1 counted 2's and 3's frames by
// its beats alone (no acknowledgement cap) for good: seconds later,
// every frame of 1 lost for two heartbeats and more and then partitioned,
// 2 gave 1 up before 1 took itself for cut off ("member 2 gave 1 up
// 131.386236ms after 1 was partitioned", as with the cap disabled). A
// member taken for older now gets this member's idle heartbeat in the
// extended form at the first beat after it is marked and every
// olderProbeEvery beats since (an older build takes it as a sign of
// life), and its extended answer undoes the mark on both sides.
func TestForgedShortBusyStaysCapped(t *testing.T) {
	for _, f := range factories {
		t.Run(f.Name, func(t *testing.T) {
			sim.Seeds(t, 8, func(t *testing.T, seed int64) {
				const idle, waiter, other = 1, 2, 3
				s, tm := stallSim(t, f, seed)
				rng := s.NewRand()
				s.Run(3*tm.HeartbeatInterval + time.Duration(rng.Int64N(int64(tm.HeartbeatInterval))))
				for _, m := range []uint32{waiter, other} {
					forgeShortBusy(t, s, idle, m)
					forgeShortBusy(t, s, m, idle)
				}
				s.Run(10*tm.HeartbeatInterval + time.Duration(rng.Int64N(int64(tm.HeartbeatInterval))))
				for _, id := range s.IDs() {
					if older := s.Core(id).(*permission.Core).Report().Detail.(permission.Detail).Older; len(older) != 0 {
						t.Errorf("member %d still takes members %v for older, 10 s after forged 5-byte busy heartbeats", id, older)
					}
				}
				lostThenPartitioned(t, s, tm, rng, idle, waiter, other, "after forged 5-byte busy heartbeats and every frame of it lost for two heartbeats or more")
			})
		})
	}
}

// TestForgedShortIdleCopiesDie: 5-byte idle heartbeats forged in member
// 2's name at member 1 every 300 ms make 1 send 2 5-byte copies of its
// idle heartbeats (shortCopies: 2 might be an idle older build), at every
// idle tail (1 takes the lock every 4 s, its lease ending after 3) and
// every eighth idle heartbeat. 2 and 3 must send none: a copy reaches
// them before the extended heartbeat it goes with, which undoes what the
// copy set (peer.shortIdle), so members of this build never take each
// other for members that send 5-byte idle heartbeats.
func TestForgedShortIdleCopiesDie(t *testing.T) {
	sim.Seeds(t, 8, func(t *testing.T, seed int64) {
		s, tm := stallSim(t, permission.RicartAgrawalaFactory, seed)
		s.Run(3 * tm.HeartbeatInterval)
		copies := func(id uint32) uint64 {
			return s.Core(id).(mutex.Algorithm).Report().Counters["short_idle_copies"]
		}
		for range 15 {
			s.Acquire(1)
			for range 13 {
				l := s.Core(1).(*permission.Core).Config().Lamport.Now() + 1
				if err := s.Forge(2, 1, wire.KindPermHeartbeat, 0, l, wire.PermHeartbeat{Interval: 1000}); err != nil {
					t.Fatal(err)
				}
				s.Run(300 * time.Millisecond)
			}
		}
		if testing.Verbose() {
			t.Logf("copies sent in a minute: %d, %d, %d by members 1, 2, 3", copies(1), copies(2), copies(3))
		}
		if copies(1) < 15 || copies(2) != 0 || copies(3) != 0 {
			t.Errorf("copies sent in a minute: %d, %d, %d by members 1, 2, 3; want at least 15 by 1 (its idle tails, to 2) and none by the others", copies(1), copies(2), copies(3))
		}
	})
}
