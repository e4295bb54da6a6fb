package permission_test

import (
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
	// returns the worst cut (negative: none), the longest wait, and how
	// many renewals were confirmed.
	worst := func(phase3, phase time.Duration, lose func(n int) bool, ack bool) (cut, wait time.Duration, n int) {
		m, id := grantedMember(t, []uint32{1, 2, 3})
		start := m.now
		next2, next3 := start.Add(h), start.Add(phase3)
		cut = -time.Hour
		var (
			asked, answer time.Time
			stamp         uint64
			num           int
		)
		renewAt := start.Add(time.Second + phase)
		for m.now.Before(start.Add(20 * time.Second)) {
			m.tick(tick)
			if !m.now.Before(next2) {
				if num++; !lose(num) {
					m.beat(2)
				}
				next2 = next2.Add(h)
			}
			if phase3 >= 0 && !m.now.Before(next3) {
				m.beat(3)
				next3 = next3.Add(h)
			}
			if !answer.IsZero() && !m.now.Before(answer) {
				m.ack(2, stamp)
				if phase3 >= 0 {
					m.ack(3, stamp)
				}
				answer = time.Time{}
				m.tick(0) // confirmed at a reading of the clock
			}
			if asked.IsZero() && !m.now.Before(renewAt) {
				asked = m.now
				if err := m.c.Renew(m.now, id, 0); err != nil {
					t.Fatalf("renewal at %v: %v", asked.Sub(start), err)
				}
				m.drain()
				if s, hb, ok := m.announcement(); ok && hb.AckWanted && ack {
					stamp, answer = s, m.now.Add(tick)
				}
			}
			for _, r := range renewed(m.c) {
				n++
				cut = max(cut, asked.Add(3*time.Second).Sub(r.Expires))
				wait = max(wait, m.now.Sub(asked))
				asked, renewAt = time.Time{}, m.now.Add(time.Second)
			}
		}
		return cut, wait, n
	}
	var most, acked, heard, lost time.Duration
	for phase := 5 * time.Millisecond; phase < h; phase += 50 * time.Millisecond {
		for _, phase3 := range []time.Duration{-1, 0, 250 * time.Millisecond, 500 * time.Millisecond} {
			for _, ack := range []bool{true, false} {
				c, w, n := worst(phase3, phase, func(int) bool { return false }, ack)
				if n < 9 {
					t.Fatalf("member 3 at %v, renewals at %v, acknowledged %v: %d confirmed in 19 s", phase3, phase, ack, n)
				}
				most = max(most, c)
				if ack {
					acked = max(acked, w)
				} else {
					heard = max(heard, w)
				}
			}
		}
		// Member 3 silent, every third of member 2's beats lost, nothing
		// acknowledged.
		// (A renewal asked just before a lost beat is not confirmed
		// before the lease ends: the loop stops renewing there.)
		c, w, n := worst(-1, phase, func(n int) bool { return n%3 == 0 }, false)
		if n < 1 {
			t.Fatalf("renewals at %v, member 3 silent, beats lost: none confirmed", phase)
		}
		most, lost = max(most, c), max(lost, w)
	}
	t.Logf("worst cut %v; longest wait %v acknowledged, %v unacknowledged with every beat heard, %v of those confirmed with beats lost (heartbeat %v)", most, acked, heard, lost, h)
	if most > 0 {
		t.Errorf("a renewal cut by %v: want none (counted from its asking)", most)
	}
	if acked > 2*tick {
		t.Errorf("acknowledged a tick after it was asked, a renewal waited %v", acked)
	}
	if heard > h+tick || lost > h+tick {
		t.Errorf("unacknowledged, a renewal waited %v with every beat heard, %v with beats lost: want at most a heartbeat", heard, lost)
	}
}
