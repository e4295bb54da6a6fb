package permission_test

import (
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/permission"
)

// TestRenewalNotCut measures what mutexd's lease floor assumes of the
// permission family's renewals: counted from their asking (the zero
// mutex.Renewal), whatever the phase against the others' beats. Member 1
// of three holds x and renews a second after each renewal is confirmed
// (mutexd lock's schedule at the default 3 s lease) while the others beat
// every heartbeat (1 s), in every phase against the renewals and each
// other, and with member 3 silent. Confirmed at once on the majority last
// heard, as before review-mutex3, a renewal was cut by up to a heartbeat
// (960 ms with every beat heard, 1.46 s with beats lost: what the floor
// was about to warn of); now it waits for a majority heard since its
// asking (renewFrom) and is never cut. The wait is a round trip where the
// others acknowledge its heartbeat (this build: a tick here); where they
// never do (a majority of a build older than the lease ends) it is their
// next heartbeat heard, up to a heartbeat; one of them lost, the wait is
// two, and the 3 s lease renewed a second after its last confirmation
// runs out first (mutexd's floor does not model that wait:
// docs/mutexd.md, "How short a lease can be").
//
// Every renewal confirmed must be confirmed at the first reading of the
// clock after the first frame of a majority heard since its asking: no
// sooner (on the majority last heard) and no later. With beats lost, the
// run must confirm a renewal asked after a lost beat (review-permfix: the
// check with beats lost held whatever the code did there; a build that
// never confirmed a renewal asked with the majority last heard over a
// heartbeat ago, its client losing the lease, passed it, as such a
// renewal merely stopped the loop, and a wait longer than a heartbeat,
// two with beats a heartbeat apart, outlasts the lease and was never
// measured).
func TestRenewalNotCut(t *testing.T) {
	const h, tick = time.Second, 10 * time.Millisecond
	for _, f := range []mutex.Factory{permission.RicartAgrawalaFactory, permission.LamportFactory, permission.BakeryFactory} {
		if f.Renewal != nil {
			t.Fatalf("%s: renewal rule %+v, want none (counted from the asking)", f.Name, f.Renewal(mutex.Options{Lease: 3 * time.Second, Heartbeat: h}))
		}
	}
	// worst runs member 1 with member 2 beating at whole heartbeats from
	// the start (but the beats lose drops), member 3 at phase3 (negative:
	// silent), the first renewal at phase past a second; the others
	// acknowledge each renewal's heartbeat a tick later if ack. It
	// returns the worst cut (negative: none), the longest wait, how many
	// renewals were confirmed, and for them: how long before the first
	// frame of a majority heard since its asking (2's or 3's: a majority
	// of three) one was confirmed (early; negative: none), how long after
	// that frame's next reading of the clock (late; negative: none), and
	// how many were asked with member 2 unheard for over a heartbeat (a
	// beat of it lost just before, member 3 silent: the majority last
	// heard is that old).
	type result struct {
		cut, wait, early, late time.Duration
		n, afterLost           int
	}
	worst := func(phase3, phase time.Duration, lose func(n int) bool, ack bool) result {
		m, id := grantedMember(t, []uint32{1, 2, 3})
		start := m.now
		next2, next3 := start.Add(h), start.Add(phase3)
		res := result{cut: -time.Hour, early: -time.Hour, late: -time.Hour}
		var (
			asked, answer time.Time
			stamp         uint64
			num           int
			heard         []time.Time // frames of 2 and 3 fed
			last2         = start     // 2 answered the grant
			lostBefore    bool
		)
		renewAt := start.Add(time.Second + phase)
		for m.now.Before(start.Add(20 * time.Second)) {
			m.tick(tick)
			if !m.now.Before(next2) {
				if num++; !lose(num) {
					m.beat(2)
					heard, last2 = append(heard, m.now), m.now
				}
				next2 = next2.Add(h)
			}
			if phase3 >= 0 && !m.now.Before(next3) {
				m.beat(3)
				heard = append(heard, m.now)
				next3 = next3.Add(h)
			}
			if !answer.IsZero() && !m.now.Before(answer) {
				m.ack(2, stamp)
				heard = append(heard, m.now)
				if phase3 >= 0 {
					m.ack(3, stamp)
				}
				answer = time.Time{}
				m.tick(0) // confirmed at a reading of the clock
			}
			if asked.IsZero() && !m.now.Before(renewAt) {
				asked = m.now
				lostBefore = phase3 < 0 && m.now.Sub(last2) > h
				if err := m.c.Renew(m.now, id, 0); err != nil {
					t.Fatalf("renewal at %v: %v", asked.Sub(start), err)
				}
				m.drain()
				if s, hb, ok := m.announcement(); ok && hb.AckWanted && ack {
					stamp, answer = s, m.now.Add(tick)
				}
			}
			for _, r := range renewed(m.c) {
				res.n++
				if lostBefore {
					res.afterLost++
				}
				res.cut = max(res.cut, asked.Add(3*time.Second).Sub(r.Expires))
				res.wait = max(res.wait, m.now.Sub(asked))
				// The first frame of a majority at or after the asking
				// (a frame fed at the asking's instant counts: it is
				// not before it), and the reading of the clock after it
				// (a frame's confirmation waits for one: a tick here).
				i := slices.IndexFunc(heard, func(at time.Time) bool { return !at.Before(asked) })
				if i < 0 {
					res.early = max(res.early, time.Hour) // confirmed with no majority heard since: an hour early, say
				} else {
					res.early = max(res.early, heard[i].Sub(m.now))
					res.late = max(res.late, m.now.Sub(heard[i].Add(tick)))
				}
				asked, renewAt = time.Time{}, m.now.Add(time.Second)
			}
		}
		return res
	}
	var most, acked, heard, lost, early, late time.Duration
	early, late = -time.Hour, -time.Hour
	for phase := 5 * time.Millisecond; phase < h; phase += 50 * time.Millisecond {
		for _, phase3 := range []time.Duration{-1, 0, 250 * time.Millisecond, 500 * time.Millisecond} {
			for _, ack := range []bool{true, false} {
				r := worst(phase3, phase, func(int) bool { return false }, ack)
				if r.n < 9 {
					t.Fatalf("member 3 at %v, renewals at %v, acknowledged %v: %d confirmed in 19 s", phase3, phase, ack, r.n)
				}
				most, early, late = max(most, r.cut), max(early, r.early), max(late, r.late)
				if ack {
					acked = max(acked, r.wait)
				} else {
					heard = max(heard, r.wait)
				}
			}
		}
		// Member 3 silent, every third of member 2's beats lost, nothing
		// acknowledged: the majority last heard is up to two heartbeats
		// old. A renewal asked after a lost beat must wait for 2's next
		// beat, not be confirmed on the majority heard before it (up to
		// FreshWindow old), and must not wait for more. One asked just
		// before a lost beat waits two heartbeats, and the 3 s lease
		// renewed a second after its last confirmation runs out first:
		// the loop stops renewing there, so each run must show at least
		// one renewal asked after a lost beat, or it measured nothing of
		// lost beats (before review-permfix it did not check that, and
		// its wait bound held whatever the code did: a wait longer than a
		// heartbeat is two, which the lease does not outlast, so it was
		// never measured; confirmed on the majority last heard, only the
		// cut, which every-beat runs already show, failed).
		r := worst(-1, phase, func(n int) bool { return n%3 == 0 }, false)
		if r.afterLost < 1 {
			t.Fatalf("renewals at %v, member 3 silent, beats lost: %d confirmed, none asked after a lost beat", phase, r.n)
		}
		if r.early > 0 || r.late > 0 {
			t.Errorf("renewals at %v, member 3 silent, beats lost (%d confirmed, %d asked after a lost beat): one confirmed %v before member 2's first beat since its asking, one %v after that beat's next tick: want at that tick",
				phase, r.n, r.afterLost, max(r.early, 0), max(r.late, 0))
		}
		most, lost, early, late = max(most, r.cut), max(lost, r.wait), max(early, r.early), max(late, r.late)
	}
	t.Logf("worst cut %v; longest wait %v acknowledged, %v unacknowledged with every beat heard, %v of those confirmed with beats lost (heartbeat %v); confirmed before a majority heard since its asking by %v, later than the tick after it by %v", most, acked, heard, lost, h, early, late)
	if most > 0 {
		t.Errorf("a renewal cut by %v: want none (counted from its asking)", most)
	}
	if early > 0 || late > 0 {
		t.Errorf("a renewal confirmed %v before the first frame of a majority heard since its asking, or %v after the tick after it: want at that tick", max(early, 0), max(late, 0))
	}
	if acked > 2*tick {
		t.Errorf("acknowledged a tick after it was asked, a renewal waited %v", acked)
	}
	if heard > h+tick || lost > h+tick {
		t.Errorf("unacknowledged, a renewal waited %v with every beat heard, %v with beats lost: want at most a heartbeat", heard, lost)
	}
}
