package permission_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/permission"
)

// TestUnboundedRenewalCut measures what mutexd's lease floor assumes of
// Ricart-Agrawala's renewals before a majority first acknowledged the
// member's lease end (Lamport's always): confirmed at once, counted from
// when a majority was last heard. Member 1 of three holds x and renews
// every second (mutexd lock's schedule at the default 3 s lease) while
// the others beat every heartbeat (1 s), in every phase against the
// renewals and each other, and with member 3 silent. The worst cut is
// within a tick of a heartbeat: what the factory's rule says (EarlyCut),
// and no more than its late bound (EarlyCutMax, FreshWindow) when beats
// are lost. The floor before this rule took no cut at all (a 1 s cut
// loses a 2 s lease at its first renewal).
func TestUnboundedRenewalCut(t *testing.T) {
	const h = time.Second
	rn := permission.RicartAgrawalaFactory.Renewal(mutex.Options{Lease: 3 * time.Second, Heartbeat: h})
	lamport := permission.LamportFactory.Renewal(mutex.Options{Lease: 3 * time.Second, Heartbeat: h})
	if rn.Cut != 0 || rn.EarlyCut != h || rn.EarlyCutMax != h*3/2 || lamport.Cut != 0 || lamport.EarlyCut != h || lamport.EarlyCutMax != h*3/2 {
		t.Fatalf("rules: ricartagrawala %+v, lamport %+v: want a heartbeat's cut, 1.5 late, before the bound (Lamport's always), warned of", rn, lamport)
	}
	// worst runs member 1 with member 2 beating at whole heartbeats from
	// the start (but the beats lose drops), member 3 at phase3 (negative:
	// silent), renewals at phase past each second; it returns the worst
	// cut and how many renewals were confirmed.
	worst := func(phase3, phase time.Duration, lose func(n int) bool) (time.Duration, int) {
		m, id := grantedMember(t, []uint32{1, 2, 3})
		start := m.now
		next2, next3 := start.Add(h), start.Add(phase3)
		var (
			cut    time.Duration
			asked  time.Time
			n, num int
		)
		for renewAt := start.Add(time.Second + phase); m.now.Before(start.Add(20 * time.Second)); {
			m.tick(10 * time.Millisecond)
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
			if !m.now.Before(renewAt) {
				asked = m.now
				if err := m.c.Renew(m.now, id, 0); err != nil {
					t.Fatalf("renewal at %v: %v", asked.Sub(start), err)
				}
				m.drain()
				renewAt = renewAt.Add(time.Second)
			}
			for _, r := range renewed(m.c) {
				n++
				cut = max(cut, asked.Add(3*time.Second).Sub(r.Expires))
			}
		}
		return cut, n
	}
	var most, late time.Duration
	for phase := 5 * time.Millisecond; phase < h; phase += 50 * time.Millisecond {
		for _, phase3 := range []time.Duration{-1, 0, 250 * time.Millisecond, 500 * time.Millisecond} {
			c, n := worst(phase3, phase, func(int) bool { return false })
			if n < 18 {
				t.Fatalf("member 3 at %v, renewals at %v: %d confirmed in 19 s", phase3, phase, n)
			}
			most = max(most, c)
		}
		// Member 3 silent, every third of member 2's beats lost.
		c, _ := worst(-1, phase, func(n int) bool { return n%3 == 0 })
		late = max(late, c)
	}
	if most > rn.EarlyCut || most < rn.EarlyCut*9/10 {
		t.Errorf("worst cut %v with every beat heard: want within a tenth below the rule's %v", most, rn.EarlyCut)
	}
	if late > rn.EarlyCutMax || late <= rn.EarlyCut {
		t.Errorf("worst cut %v with beats lost: want past a heartbeat, within the rule's %v", late, rn.EarlyCutMax)
	}
	t.Logf("worst cut: %v with every beat heard, %v with beats lost (heartbeat %v)", most, late, h)
}
