package permission_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/mutex/permission"
	"github.com/synclab/synclab/pkg/wire"
)

// TestRenewalWaitsPastLostBeat (review-perm7): a renewal whose wait
// for a majority heard since its asking is longer than a heartbeat (the
// first beat of member 2 after it lost, member 3 silent) but shorter
// than the lease left is confirmed at 2's next beat. TestRenewalNotCut
// never measures such a wait: its renewals are asked a second after each
// confirmation, so just after one of 2's beats, and wait either about a
// heartbeat or two (the lease runs out first); a build that never
// confirmed a renewal that waited over a heartbeat passed it.
func TestRenewalWaitsPastLostBeat(t *testing.T) {
	const h, tick = time.Second, 10 * time.Millisecond
	{ // grantedMember runs Ricart-Agrawala only (as in TestRenewalNotCut)
		{
			for _, askAt := range []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, 900 * time.Millisecond} {
				m, id := grantedMember(t, []uint32{1, 2, 3})
				start := m.now
				asked := false
				var confirmed time.Time
				for m.now.Before(start.Add(2*h + 5*tick)) {
					m.tick(tick)
					if el := m.now.Sub(start); el%h == 0 && el != h { // 2's beat at 1 s lost
						m.beat(2)
					}
					if !asked && !m.now.Before(start.Add(askAt)) {
						asked = true
						if err := m.c.Renew(m.now, id, 0); err != nil {
							t.Fatal(err)
						}
						m.drain()
					}
					for _, r := range renewed(m.c) {
						if confirmed.IsZero() {
							confirmed = m.now
							t.Logf("asked at %v, confirmed at %v, lease to %v after the start", askAt, m.now.Sub(start), r.Expires.Sub(start))
						}
					}
				}
				if want := start.Add(2*h + tick); !confirmed.Equal(want) {
					t.Errorf("renewal asked at %v, 2's beat at 1 s lost, beat at 2 s heard: confirmed at %v after the start (zero: never), want %v (the lease, from the grant, ends at 3 s)",
						askAt, confirmed.Sub(start), want.Sub(start))
				}
			}
		}
	}
}

// TestShortCopiesUnderLoss (review-perm7): TestForgedShortIdleCopiesDie
// with 20% loss and 5% duplicates, every member taking the lock in turn
// (so each has idle tails): how many copies members send while 2's
// 5-byte idle heartbeats are forged at 1, and after the forger stops.
func TestShortCopiesUnderLoss(t *testing.T) {
	sim.Seeds(t, 8, func(t *testing.T, seed int64) {
		opt := mutex.Options{Lease: 3 * time.Second, Heartbeat: time.Second}
		s := mutextest.NewLockSim(t, permission.RicartAgrawalaFactory, opt, 3, seed,
			sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 300 * time.Microsecond, Loss: 0.2, Duplicate: 0.05}, 3*time.Second)
		copies := func() [4]uint64 {
			var n [4]uint64
			for id := uint32(1); id <= 3; id++ {
				n[id] = s.Core(id).(mutex.Algorithm).Report().Counters["short_idle_copies"]
			}
			return n
		}
		round := func(i int, forge bool) {
			s.Acquire(uint32(i%3) + 1)
			for range 13 {
				if forge {
					l := s.Core(1).(*permission.Core).Config().Lamport.Now() + 1
					if err := s.Forge(2, 1, wire.KindPermHeartbeat, 0, l, wire.PermHeartbeat{Interval: 1000}); err != nil {
						t.Fatal(err)
					}
				}
				s.Run(300 * time.Millisecond)
			}
		}
		for i := range 15 {
			round(i, true)
		}
		during := copies()
		s.Run(10 * time.Second)
		settled := copies()
		for i := range 30 {
			round(i, false)
		}
		after := copies()
		d1, d2 := diff(settled, during), diff(after, settled)
		t.Logf("copies by members 1, 2, 3: forging (a minute) %v; the 10 s after %v; the next two minutes %v", during[1:], d1[1:], d2[1:])
		if d := diff(after, settled); d[1]+d[2]+d[3] != 0 {
			t.Errorf("copies sent with no 5-byte heartbeat forged for 10 s and more: %v by members 1, 2, 3", d[1:])
		}
	})
}

func diff(a, b [4]uint64) [4]uint64 {
	for i := range a {
		a[i] -= b[i]
	}
	return a
}

// TestIdleTailShortToOlder (review-perm7): member 2, heard sending a
// busy 5-byte heartbeat while 1 holds (taken for older; its next idle
// heartbeat is due to be the extended probe, olderProbe), must get 1's
// whole idle tail (the notice and two more) in the 5-byte form, the only
// idle heartbeats that spend, at an older build, the leave it gave 1; the
// probe comes after the tail. The package doc counts on it ("its leaves
// were spent by the idle tail's 5-byte heartbeats, during which none
// goes"); no test of the branch fails when olderProbe also fires in the
// tail.
func TestIdleTailShortToOlder(t *testing.T) {
	m, id := grantedMember(t, []uint32{1, 2, 3})
	cfg := m.c.Config()
	if err := m.step(2, wire.KindPermHeartbeat, wire.PermHeartbeat{Interval: 1000, Busy: true}, cfg.Lamport.Now()+1); err != nil {
		t.Fatal(err)
	}
	if err := m.c.Release(m.now, id); err != nil {
		t.Fatal(err)
	}
	m.drain()
	released := m.now
	var forms []string
	const step = 10 * time.Millisecond
	for m.now.Sub(released) < 2*time.Second {
		m.out = nil
		m.tick(step)
		for _, msg := range m.out {
			var hb wire.PermHeartbeat
			if msg.Kind != wire.KindPermHeartbeat || hb.UnmarshalBinary(msg.Payload) != nil || hb.Busy || hb.Ack != 0 || (msg.To != 2 && msg.To != core.Broadcast) {
				continue
			}
			f := "5-byte"
			if hb.Ext {
				f = "ext"
			}
			forms = append(forms, fmt.Sprintf("%v %s", m.now.Sub(released), f))
		}
	}
	t.Logf("idle heartbeats to 2 after the release: %v", forms)
	if len(forms) < 4 || forms[0] != fmt.Sprintf("%v 5-byte", cfg.IdleNotice()) ||
		!strings.HasSuffix(forms[1], "5-byte") || !strings.HasSuffix(forms[2], "5-byte") || !strings.HasSuffix(forms[3], "ext") {
		t.Errorf("idle heartbeats to member 2 (taken for older) after the release: %v; want the tail (3) 5-byte, the notice at %v, then the extended probe", forms, cfg.IdleNotice())
	}
}

// TestKeptForgingOlderStaysCapped (review-perm7): TestForgedShortBusyStaysCapped
// with the forger forging 5-byte busy heartbeats of 2 and 3 at 1 every
// period until the partition (not once): the documented "for as long as
// a forger keeps forging". Each frame of 2 or 3 counted while the mark
// stands (countDirect runs before stepFrame undoes it) counts uncapped.
func TestKeptForgingOlderStaysCapped(t *testing.T) {
	for _, period := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second} {
		t.Run(period.String(), func(t *testing.T) {
			sim.Seeds(t, 8, func(t *testing.T, seed int64) {
				const idle, waiter, other = 1, 2, 3
				s, tm := stallSim(t, permission.RicartAgrawalaFactory, seed)
				rng := s.NewRand()
				s.Run(3*tm.HeartbeatInterval + time.Duration(rng.Int64N(int64(tm.HeartbeatInterval))))
				forge := func() {
					// In 2's and 3's names at 1 only: 1 then counts
					// their frames uncapped (olderBuild). Frames forged
					// in 1's name would be heard as 1's through the cut.
					for _, m := range []uint32{waiter, other} {
						forgeShortBusy(t, s, m, idle)
					}
				}
				for range int(10 * time.Second / period) {
					forge()
					s.Run(period)
				}
				g0, c0 := givenUpAndCutOff(s, idle, waiter)
				s.Cut(idle, waiter)
				s.Cut(idle, other)
				cutFor := 2*tm.HeartbeatInterval + time.Duration(rng.Int64N(int64(900*time.Millisecond)))
				for d := time.Duration(0); d < cutFor; d += period {
					forge()
					s.Run(min(period, cutFor-d))
				}
				s.Partition([]uint32{idle}, []uint32{waiter, other})
				rw := s.Acquire(waiter)
				cutOffBeforeGivenUpSince(t, s, tm, idle, waiter, rw, "with forged 5-byte busy heartbeats every "+period.String(), g0, c0)
			})
		})
	}
}

// TestOlderFlapSaidRarely (review-perm7): 5-byte busy heartbeats of
// 2 and 3 forged at 1 every 700 ms for five minutes: the probe (955b345c)
// unmarks them within a heartbeat, so they are marked again and again;
// member_older_build stays within its limits (an INFO per member and a
// WARN in all per 10 minutes).
func TestOlderFlapSaidRarely(t *testing.T) {
	sim.Seeds(t, 4, func(t *testing.T, seed int64) {
		s, tm := stallSim(t, permission.RicartAgrawalaFactory, seed)
		s.Run(3 * tm.HeartbeatInterval)
		marks := 0
		for range int(5 * time.Minute / (700 * time.Millisecond)) {
			for _, m := range []uint32{2, 3} {
				if !slices.Contains(s.Core(1).(*permission.Core).Report().Detail.(permission.Detail).Older, m) {
					marks++
				}
				forgeShortBusy(t, s, m, 1)
			}
			s.Run(700 * time.Millisecond)
		}
		var info, warn int
		for _, e := range s.EventsNamed(permission.EventOlderBuild) {
			if e.Node != 1 {
				continue
			}
			if e.Warn {
				warn++
			} else {
				info++
			}
		}
		unsaid := s.Core(1).(mutex.Algorithm).Report().Counters["older_build_unsaid"]
		t.Logf("marks %d in 5 min; member_older_build at 1: %d INFO, %d WARN; older_build_unsaid %d", marks, info, warn, unsaid)
		if info > 2 || warn > 1 {
			t.Errorf("member_older_build said %d times at INFO and %d at WARN in 5 minutes (%d marks)", info, warn, marks)
		}
	})
}

// TestOneForgedPairStaysCapped (review-perm7): one 5-byte busy heartbeat of 2
// and one of 3, forged at 1 once, half a second before every frame of 1
// begins to be lost (the cut of TestForgedShortBusyStaysCapped, 2.2-2.9
// s, then the partition), or 0.1 s or 1.1 s into the cut. olderBuild
// zeroed peer.ackedAt; 2's next extended frame undid the mark but not
// that, and 2, which hears nothing of 1, acknowledged no ask of 1's
// again: 1 counted 2's and 3's frames uncapped for the rest of the cut.
// Now a member that acknowledged in its incarnation is never marked
// (TestAckedMemberNotTakenForOlder).
func TestOneForgedPairStaysCapped(t *testing.T) {
	// at: when the pair is forged, from the start of the cut (negative:
	// before it); not forged: the control, same timing.
	for _, at := range []time.Duration{-3 * time.Second, -1500 * time.Millisecond, -500 * time.Millisecond, 100 * time.Millisecond, 1100 * time.Millisecond} {
		for _, forged := range []bool{false, true} {
			t.Run(fmt.Sprintf("at=%v/forged=%v", at, forged), func(t *testing.T) { onePair(t, at, forged) })
		}
	}
}

func onePair(t *testing.T, at time.Duration, forged bool) {
	t.Helper()
	what := fmt.Sprintf("after one forged pair %v from the start of the cut", at)
	sim.Seeds(t, 8, func(t *testing.T, seed int64) {
		const idle, waiter, other = 1, 2, 3
		s, tm := stallSim(t, permission.RicartAgrawalaFactory, seed)
		rng := s.NewRand()
		s.Run(13*tm.HeartbeatInterval + time.Duration(rng.Int64N(int64(tm.HeartbeatInterval))))
		forge := func() {
			if forged {
				forgeShortBusy(t, s, waiter, idle)
				forgeShortBusy(t, s, other, idle)
			}
		}
		end := 2200*time.Millisecond + time.Duration(rng.Int64N(int64(700*time.Millisecond)))
		if at < 0 {
			forge()
			s.Run(-at) // the cut starts -at after the forged pair
		}
		g0, c0 := givenUpAndCutOff(s, idle, waiter)
		s.Cut(idle, waiter)
		s.Cut(idle, other)
		if at >= 0 {
			s.Run(at)
			forge()
			s.Run(end - at)
		} else {
			s.Run(end)
		}
		s.Partition([]uint32{idle}, []uint32{waiter, other})
		rw := s.Acquire(waiter)
		cutOffBeforeGivenUpSince(t, s, tm, idle, waiter, rw, what, g0, c0)
	})
}

// TestAckedMemberNotTakenForOlder: a member that acknowledged one of this
// member's heartbeats in its current incarnation runs the extended form,
// and a build changes only with a restart: a 5-byte busy heartbeat in its
// name (forged, without a key) marks nothing, and its frames stay capped
// by its acknowledgements (review-perm7: one forged frame per member name
// turned the cap off for as long as this member's frames were lost,
// TestOneForgedPairStaysCapped). A new incarnation of it (a downgrade) is
// taken for older at its first busy 5-byte heartbeat, as before.
func TestAckedMemberNotTakenForOlder(t *testing.T) {
	m := newMember(t, 1, []uint32{1, 2, 3})
	cfg := m.c.Config()
	m.tick(cfg.HeartbeatInterval)
	stamp, _, ok := m.announcement()
	if !ok {
		t.Fatal("member 1 sent no extended heartbeat asking for acknowledgement")
	}
	m.ack(2, stamp)
	shortBusy := func() {
		t.Helper()
		if err := m.step(2, wire.KindPermHeartbeat, wire.PermHeartbeat{Interval: 1000, Busy: true}, cfg.Lamport.Now()+1); err != nil {
			t.Fatal(err)
		}
	}
	shortBusy()
	if older := m.c.Report().Detail.(permission.Detail).Older; len(older) != 0 {
		t.Fatalf("member 2 acknowledged in this incarnation, then a 5-byte busy heartbeat in its name: taken for older %v", older)
	}
	if n := m.c.Report().Counters["older_marks_refused"]; n != 1 {
		t.Fatalf("older_marks_refused %d, want 1", n)
	}
	// Member 2 restarts as an older build: its request names a new
	// incarnation, and its busy heartbeats are 5 bytes.
	if err := m.step(2, wire.KindRARequest, wire.PermRequest{Name: "x", Incarnation: 7, Stamp: cfg.Lamport.Now() + 1}, cfg.Lamport.Now()+1); err != nil {
		t.Fatal(err)
	}
	shortBusy()
	if older := m.c.Report().Detail.(permission.Detail).Older; !slices.Equal(older, []uint32{2}) {
		t.Fatalf("member 2 restarted (incarnation 7) and sends 5-byte busy heartbeats: taken for older %v, want [2]", older)
	}
}

// TestDowngradedPlainHeartbeatsTakenForOlder: member 2 acknowledged 1's
// heartbeats, then restarts as a build before perm_heartbeat (plain
// KindHeartbeat), idle: it sends no request nor reply, so 1's record of its
// incarnation never moves; 5c62a9ab refused the mark (review-mine2), and
// its frames stayed capped by the stale acknowledgement, unsaid. A plain
// heartbeat frame marks again (only a busy 5-byte one asks ackedThisRun),
// whether or not a frame naming 2's new incarnation came first (moved).
func TestDowngradedPlainHeartbeatsTakenForOlder(t *testing.T) {
	for _, moved := range []bool{false, true} {
		t.Run(fmt.Sprintf("moved=%v", moved), func(t *testing.T) {
			m := newMember(t, 1, []uint32{1, 2, 3})
			cfg := m.c.Config()
			m.tick(cfg.HeartbeatInterval)
			stamp, _, ok := m.announcement()
			if !ok {
				t.Fatal("member 1 sent no extended heartbeat asking for acknowledgement")
			}
			m.ack(2, stamp)
			if moved {
				if err := m.step(2, wire.KindRARequest, wire.PermRequest{Name: "y", Incarnation: 7, Stamp: cfg.Lamport.Now() + 1}, cfg.Lamport.Now()+1); err != nil {
					t.Fatal(err)
				}
			}
			for range 3 {
				m.tick(cfg.HeartbeatInterval)
				if err := m.step(2, wire.KindHeartbeat, wire.Heartbeat{}, cfg.Lamport.Now()+1); err != nil {
					t.Fatal(err)
				}
			}
			r := m.c.Report()
			if older := r.Detail.(permission.Detail).Older; !slices.Equal(older, []uint32{2}) {
				t.Errorf("member 2, restarted as a build before perm_heartbeat and heard sending plain heartbeats, taken for older: %v, want [2] (%d marks refused)", older, r.Counters["older_marks_refused"])
			}
		})
	}
}
