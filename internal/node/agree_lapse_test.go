package node

import (
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/wire"
)

// wakeLAN drives n keyed members whose cores are idle schedulers (no
// deadline of their own) the way the daemon does: each node is ticked only
// at NextTick (MaxSleep at most), frames delivered at once. It counts each
// node's ticks (loop wake-ups) and its config frames in a window at rest.
func wakeLAN(t *testing.T, n int, settle, rest time.Duration, jitter time.Duration) (wakes, frames map[uint32]int, notices map[uint32][]string) {
	all := scaleMembers(n)
	nodes := map[uint32]*Node{}
	byAddr := map[string]*Node{}
	for id := uint32(1); id <= uint32(n); id++ {
		c := Config{ID: id, Members: maps.Clone(all), Keys: []wire.Key{testKey}, Cluster: "lab", Service: "electd", Incarnation: 1,
			Agreement: &Agreement{Algorithm: "bully", Params: map[string]string{"priorities": ""}}}
		nd, err := New(c, &scheduler{})
		if err != nil {
			t.Fatal(err)
		}
		nodes[id] = nd
		byAddr[all[id].String()] = nd
	}
	wakes, frames, notices = map[uint32]int{}, map[uint32]int{}, map[uint32][]string{}
	next := map[uint32]time.Time{}
	for id := range nodes {
		// First tick a driver's TickInterval after the start, nodes a little apart.
		next[id] = t0.Add(10*time.Millisecond + time.Duration(id)*time.Millisecond)
	}
	startRest := t0.Add(settle)
	end := startRest.Add(rest)
	var flush func(nd *Node, now time.Time)
	flush = func(nd *Node, now time.Time) {
		from := nd.cfg.Members[nd.cfg.ID]
		for _, s := range nd.Ready().Sends {
			if !now.Before(startRest) && (s.Kind == wire.KindConfig || s.Kind == wire.KindConfigRefresh || s.Kind == wire.KindConfigTimings) {
				frames[nd.cfg.ID]++
			}
			to := byAddr[s.To.String()]
			if to == nil {
				continue
			}
			to.Receive(Inbound{From: from, Data: nd.Finalize(s, now), Time: now})
			flush(to, now)
		}
	}
	for {
		var id uint32
		var at time.Time
		for i, w := range next {
			if id == 0 || w.Before(at) || (w.Equal(at) && i < id) {
				id, at = i, w
			}
		}
		if !at.Before(end) {
			break
		}
		nd := nodes[id]
		nd.Tick(at)
		if !at.Before(startRest) {
			wakes[id]++
		}
		flush(nd, at)
		for _, nt := range nd.Notices() {
			if !at.Before(startRest) {
				notices[id] = append(notices[id], nt.Msg)
			}
		}
		// Every node's next wake: a frame may have moved a receiver's.
		for i, o := range nodes {
			w, ok := o.NextTick(at)
			if !ok {
				w = at.Add(10 * time.Millisecond)
			}
			if i == id || w.Before(next[i]) {
				// The timer fires a little late, as a real one does.
				next[i] = maxTime(w, at).Add(jitter)
			}
		}
	}
	return wakes, frames, notices
}

// TestRefreshWakeups counts an idle node's loop wake-ups per minute at
// rest (cores idle schedulers: MaxSleep bounds every sleep), before and
// after the spread, at 3, 4, 5, 9 and 64 members.
func TestRefreshWakeups(t *testing.T) {
	for _, n := range []int{3, 4, 5, 9, 64} {
		rest := 3 * time.Minute
		wakes, frames, notices := wakeLAN(t, n, 90*time.Second, rest, 200*time.Microsecond)
		most, least, total, ftotal := 0, 1<<30, 0, 0
		for id := uint32(1); id <= uint32(n); id++ {
			most, least = max(most, wakes[id]), min(least, wakes[id])
			total += wakes[id]
			ftotal += frames[id]
			if len(notices[id]) > 0 {
				t.Errorf("%d members: node %d noticed at rest: %q", n, id, notices[id])
			}
		}
		perMin := float64(total) / float64(n) / rest.Minutes()
		t.Logf("%d members: wake-ups per node per minute at rest: mean %.1f (least %.1f, most %.1f); config frames per node per minute %.1f",
			n, perMin, float64(least)/rest.Minutes(), float64(most)/rest.Minutes(), float64(ftotal)/float64(n)/rest.Minutes())
	}
}

// TestFirstRefreshLost: at 64 members (spacing 63 s), node 1's first
// refresh to node 2 (the one that tells it node 1 refreshes) is lost. Node 2
// holds node 1 for a QuietInterval's window (24 s) only, node 1 sends it
// nothing until its next refresh (up to 63 s): node 2 takes a live,
// agreeing member for silent, and warns "member 1 not heard for 30s".
// Known, older than spreadrefresh; fails on main and on the branch.
func TestFirstRefreshLost(t *testing.T) {
	l := scaleLAN(t, 64, 100*time.Millisecond)
	lost := 0
	l.drop = func(from, to uint32, k wire.Kind) bool {
		if from == 1 && to == 2 && k == wire.KindConfigRefresh && lost == 0 {
			lost++
			return true
		}
		return false
	}
	silent := time.Duration(0)
	for end := l.now.Add(150 * time.Second); l.now.Before(end); {
		l.run(100 * time.Millisecond)
		a := l.nodes[2].agree
		if a.standing == StandingAgreed && a.stateOf(a.members[1], l.now) != stAgrees && lost > 0 {
			silent += 100 * time.Millisecond
		}
	}
	got := l.notices(2)
	if silent > 0 || strings.Contains(got, "member 1 ") {
		t.Errorf("node 1's first refresh to node 2 lost: node 2 took member 1 (alive, agreeing) as not agreeing for %v; its notices:\n%s", silent, got)
	}
}

// TestStartLossNotHeard: 64 members, a share of every frame lost in the first
// 20 s (start-up), then none; counts the "not heard" WARNs and the
// member-seconds a live agreeing member was taken as not agreeing, in the
// 150 s after.
func TestStartLossNotHeard(t *testing.T) {
	for _, pct := range []int{30} {
		l := scaleLAN(t, 64, 100*time.Millisecond)
		rng := rand.New(rand.NewPCG(uint64(pct), 7))
		l.drop = func(from, to uint32, k wire.Kind) bool {
			return l.now.Before(t0.Add(20*time.Second)) && rng.IntN(100) < pct
		}
		warns := 0
		var notAgreeing time.Duration
		for end := t0.Add(170 * time.Second); l.now.Before(end); {
			l.run(100 * time.Millisecond)
			for id := uint32(1); id <= 64; id++ {
				warns += strings.Count(l.notices(id), "not heard")
				a := l.nodes[id].agree
				if l.now.After(t0.Add(25*time.Second)) && a.standing == StandingAgreed {
					for _, m := range a.members {
						if a.stateOf(m, l.now) != stAgrees {
							notAgreeing += 100 * time.Millisecond
						}
					}
				}
			}
		}
		t.Logf("%d%% start-up loss: %d \"not heard\" WARNs, %v member-time taken as not agreeing after 25 s", pct, warns, notAgreeing)
		if warns > 0 || notAgreeing > 0 {
			t.Errorf("%d%% start-up loss: %d \"not heard\" WARNs and %v member-time a live, agreeing member taken as not agreeing, want none (a member about to lapse is asked)", pct, warns, notAgreeing)
		}
	}
}

// TestRefreshClockStep: node 1's clock steps back (or forward) by S at rest
// at 64 members (spacing 63 s); the longest real-time gap between two
// frames from node 1 to any member, any member-time node 1 is taken as not
// agreeing, node 1's most refreshes in one 100 ms tick after the step, and
// the "not heard" notices about node 1.
func TestRefreshClockStep(t *testing.T) {
	for _, s := range []time.Duration{-62 * time.Second, 40 * time.Second} {
		l := scaleLAN(t, 64, 100*time.Millisecond)
		l.run(100 * time.Second)
		for id := range l.nodes {
			l.notices(id)
		}
		last := map[uint32]time.Time{}
		var longest, notAgreeing time.Duration
		burst := 0
		prev := maps.Clone(l.pairs)
		l.off[1] = s
		for end := l.now.Add(200 * time.Second); l.now.Before(end); {
			before := l.refreshes[1]
			l.run(100 * time.Millisecond)
			burst = max(burst, l.refreshes[1]-before)
			for to := uint32(2); to <= 64; to++ {
				p := [2]uint32{1, to}
				if l.pairs[p] != prev[p] {
					if w, ok := last[to]; ok {
						longest = max(longest, l.now.Sub(w))
					}
					last[to] = l.now
				}
				a := l.nodes[to].agree
				if a.stateOf(a.members[1], l.now.Add(l.off[to])) != stAgrees {
					notAgreeing += 100 * time.Millisecond
				}
			}
			prev = maps.Clone(l.pairs)
		}
		warns := 0
		for id := uint32(2); id <= 64; id++ {
			warns += strings.Count(l.notices(id), "member 1 not heard")
		}
		t.Logf("node 1 stepped %v: longest gap to a member %v (spacing 63s, held 189s), node 1 not agreeing %v member-time, %d WARNs, at most %d refreshes in a tick", s, longest, notAgreeing, warns, burst)
		if longest > 63*time.Second || notAgreeing > 0 || warns > 0 {
			t.Errorf("node 1 stepped %v: longest gap to a member %v (want at most the spacing, 63s), taken as not agreeing %v member-time, %d WARNs (want none)", s, longest, notAgreeing, warns)
		}
	}
}
