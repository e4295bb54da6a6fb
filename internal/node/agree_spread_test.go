package node

import (
	"maps"
	"testing"
	"time"
)

// TestRefreshesSpreadAtScale is point 5 of
// docs/benchmarks/2026-12-07-omega64-check.md at node level: 64 members
// started at the same instant, at rest, their cores silent. Each node's
// refreshes used to fall due in the same round (rounds every 8 s, every
// member's spacing, 63 s, passed in the same one), and nodes started
// together stayed in phase: a node sent its 63 refreshes in one tick, the
// cluster some 4,000 in one round. Now each member has its slot in the
// spacing: a node sends at most about ceil(63 / (63 s / tick)) refreshes
// a tick, the cluster about 64 x tick / 1 s; no member waits longer
// between two refreshes than the spacing (before: up to a spacing and a
// round, 71 s), and no member is ever taken as silent.
func TestRefreshesSpreadAtScale(t *testing.T) {
	const n = 64
	const step = 100 * time.Millisecond
	l := scaleLAN(t, n, step)
	l.run(90 * time.Second) // the start, and the first refreshes
	for id := range l.nodes {
		l.notices(id)
	}
	spacing := l.nodes[1].agree.spacing
	if spacing != 63*time.Second {
		t.Fatalf("spacing %v at %d members, want 63s", spacing, n)
	}
	last := map[[2]uint32]time.Time{}
	prev := maps.Clone(l.pairs)
	prevRefreshes := maps.Clone(l.refreshes)
	mostNode, mostCluster := 0, 0
	var longest time.Duration
	const rest = 150 * time.Second
	for end := l.now.Add(rest); l.now.Before(end); {
		at := l.now
		l.run(step)
		cluster := 0
		for id := uint32(1); id <= n; id++ {
			d := l.refreshes[id] - prevRefreshes[id]
			cluster += d
			mostNode = max(mostNode, d)
		}
		mostCluster = max(mostCluster, cluster)
		prevRefreshes = maps.Clone(l.refreshes)
		for p, c := range l.pairs {
			if c == prev[p] {
				continue
			}
			if c != prev[p]+1 {
				t.Fatalf("at %v node %d sent %d announcements or refreshes to %d in one tick", at.Sub(t0), p[0], c-prev[p], p[1])
			}
			if s, ok := last[p]; ok {
				longest = max(longest, at.Sub(s))
			}
			last[p] = at
			prev[p] = c
		}
		for id := uint32(1); id <= n; id++ {
			a := l.nodes[id].agree
			for mid, m := range a.members {
				if a.stateOf(m, l.now) != stAgrees {
					t.Fatalf("at %v node %d takes member %d as %v, want agreeing", at.Sub(t0), id, mid, a.stateOf(m, l.now))
				}
			}
		}
	}
	if len(last) != n*(n-1) {
		t.Fatalf("%d pairs refreshed in %v at rest, want %d", len(last), rest, n*(n-1))
	}
	// One slot a second (63 s / 63 members): a tick of 100 ms holds at
	// most one of a node's slots; the cluster's 64 nodes, each a 64th of
	// a slot apart, about 6.4.
	if want := 2; mostNode > want {
		t.Errorf("a node sent %d refreshes in one %v tick, want at most %d (before: 63)", mostNode, step, want)
	}
	if want := 10; mostCluster > want {
		t.Errorf("the cluster sent %d refreshes in one %v tick, want at most %d (its nodes not in phase)", mostCluster, step, want)
	}
	if longest > spacing+step {
		t.Errorf("a member waited %v between two refreshes, want at most the spacing, %v", longest, spacing)
	}
	for id := uint32(1); id <= n; id++ {
		// A driver that ticks at the node's deadline (NextTick) comes
		// at the next slot, not at the next round, 8 s away.
		a := l.nodes[id].agree
		want := maxTime(minTime(a.next, a.refreshAt), l.now) // due since the last tick: at once
		if dl := l.nodes[id].agreeDeadline(l.now); a.refreshAt.IsZero() || !dl.Equal(want) || dl.Sub(l.now) > spacing/(n-1) {
			t.Errorf("node %d's deadline %v from now, its next refresh due %v from now, want the refresh's, within %v", id, dl.Sub(l.now), a.refreshAt.Sub(l.now), spacing/(n-1))
		}
		if got := l.notices(id); got != "" {
			t.Fatalf("node %d noticed at rest:\n%s", id, got)
		}
	}
	t.Logf("%d members at rest for %v: at most %d refreshes a %v tick from a node, %d from the cluster; the longest wait between two refreshes %v (spacing %v)",
		n, rest, mostNode, step, mostCluster, longest, spacing)
}

// TestRefreshSlots: placeSlots gives the members of a node distinct slots
// a spacing / (N-1) apart, and in each slot every node of the cluster
// refreshes a different member; refreshDue is never later than a spacing
// after the last send, never at or before it, and a spacing apart once
// on the slot.
func TestRefreshSlots(t *testing.T) {
	for _, n := range []int{2, 3, 5, 9, 10, 64} {
		all := scaleMembers(n)
		nodes := map[uint32]*agreement{}
		for id := uint32(1); id <= uint32(n); id++ {
			nodes[id] = newAgreement(&Config{ID: id, Members: maps.Clone(all), Agreement: &Agreement{}})
		}
		spacing := nodes[1].spacing
		slot := spacing / time.Duration(n-1)
		// In slot j, node i refreshes one member, each node another.
		for j := 0; j < n-1; j++ {
			to := map[uint32]uint32{}
			for id, a := range nodes {
				got := 0
				for mid, m := range a.members {
					if m.slot/slot != time.Duration(j) {
						continue
					}
					got++
					if other, ok := to[mid]; ok {
						t.Fatalf("%d members: in slot %d nodes %d and %d both refresh %d", n, j, other, id, mid)
					}
					to[mid] = id
				}
				if got != 1 {
					t.Fatalf("%d members: node %d has %d members in slot %d, want 1", n, id, got, j)
				}
			}
		}
		a := nodes[uint32(n)]
		for mid, m := range a.members {
			for _, sent := range []time.Time{t0, t0.Add(123456789), t0.Add(m.slot), t0.Add(-time.Hour + 7*time.Millisecond)} {
				m.sentAt = sent
				due := a.refreshDue(m)
				if !due.After(sent) || due.After(sent.Add(spacing)) {
					t.Fatalf("%d members: refresh to %d sent at %v due at %v, want within (0, %v] after it", n, mid, sent, due, spacing)
				}
				m.sentAt = due
				if next := a.refreshDue(m); next.Sub(due) != spacing {
					t.Fatalf("%d members: refresh to %d on its slot at %v, the next due %v later, want %v", n, mid, due, next.Sub(due), spacing)
				}
			}
		}
	}
}
