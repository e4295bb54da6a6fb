package bully_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
)

// A rolling upgrade from electd's former bully defaults (50 ms
// heartbeats, a 400 ms timeout, no probes) to its present ones
// (bully.Probed: 200 ms heartbeats, the same timeout, 4 ms probes), as
// electd builds both (bully.FromOptions with a 50 ms answer timeout):
// which mixes keep a live leader at 5% loss (docs/electd.md, Upgrades).

var (
	oldTimings = elect.Options{Heartbeat: 50 * time.Millisecond, LeaderTimeout: 400 * time.Millisecond, AnswerTimeout: 50 * time.Millisecond}
	newTimings = elect.Options{Heartbeat: bully.Probed.Heartbeat, LeaderTimeout: bully.Probed.LeaderTimeout, Probe: bully.Probed.Probe, AnswerTimeout: 50 * time.Millisecond}
)

// mixedCluster is five members at 5% loss, those in upgraded at the new
// timings (read at every core build: a restart picks its member's
// present entry), the others at the old; late is every loop's lateness
// (sim.SetLate), the stalls of a loaded host.
func mixedCluster(t *testing.T, seed int64, upgraded map[uint32]bool, late time.Duration) *cluster {
	members := []bully.Member{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}, {ID: 5}}
	s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 100 * time.Microsecond, Jitter: 100 * time.Microsecond, Loss: 0.05}})
	c := newClusterEach(t, s, members, func(id uint32, cfg *bully.Config) {
		o := oldTimings
		if upgraded[id] {
			o = newTimings
		}
		*cfg = bully.FromOptions(nil, o)
		cfg.Members = members
	})
	if late > 0 {
		for _, m := range members {
			s.SetLate(m.ID, late)
		}
	}
	return c
}

// changes counts the leadership changes the members saw: leader changes,
// losses and demotions.
func changes(s *sim.Sim) int {
	return len(s.EventsNamed(bully.EventLeaderChanged)) + len(s.EventsNamed(bully.EventLeaderLost)) + len(s.EventsNamed(bully.EventDemoted))
}

// idleChanges converges c on leader 5, runs it idle for d and returns the
// leadership changes meanwhile and the leader timeouts by member.
func idleChanges(t *testing.T, c *cluster, d time.Duration) (int, map[uint32]int) {
	t.Helper()
	c.converge(5 * time.Second)
	before, timeouts := changes(c.s), len(c.s.EventsNamed(bully.EventLeaderTimeout))
	c.run(d)
	by := map[uint32]int{}
	for _, e := range c.s.EventsNamed(bully.EventLeaderTimeout)[timeouts:] {
		by[e.Node]++
	}
	return changes(c.s) - before, by
}

// TestUpgradeOldFollowersOfNewLeader: an old follower (no probes, a 400
// ms timeout it never adapts) of a new leader (heartbeats every 200 ms)
// has two heartbeats in its timeout, not eight: one lost heartbeat leaves
// it a silence of 400 ms and a hop, and the member ranked just below the
// leader, whose timeout has no stagger, gives the leader up and claims
// (every member sees the leadership go and come back). At 5% loss that
// is every few seconds; the members further down (a stagger of 25 ms and
// more) need two heartbeats lost in a row. So a new member must not lead
// old ones: upgrade in rank order, the leader last.
func TestUpgradeOldFollowersOfNewLeader(t *testing.T) {
	sim.Seeds(t, 2, func(t *testing.T, seed int64) {
		c := mixedCluster(t, seed, map[uint32]bool{5: true}, 0)
		n, by := idleChanges(t, c, time.Minute)
		t.Logf("new leader 5, old members 1-4, one idle minute at 5%% loss: %d leadership changes, leader timeouts by member %v", n, by)
		if n == 0 || by[4] == 0 {
			t.Errorf("an old follower of a new leader elected no leader in an idle minute at 5%% loss (%d changes, timeouts %v): docs/electd.md's upgrade order rests on it", n, by)
		}
	})
}

// TestUpgradeNewFollowersOfOldLeader: a new follower of an old leader
// (heartbeats every 50 ms) keeps it: eight heartbeats in its 400 ms
// timeout and its probes on top (an old leader of this version answers
// them; an older one drops them, and the timeout alone still spans eight
// heartbeats). Its adapted timeout stays 400 ms: heartbeats closer than
// half its own period say nothing of lateness.
func TestUpgradeNewFollowersOfOldLeader(t *testing.T) {
	sim.Seeds(t, 2, func(t *testing.T, seed int64) {
		c := mixedCluster(t, seed, map[uint32]bool{1: true, 2: true, 3: true, 4: true}, 0)
		if n, by := idleChanges(t, c, 10*time.Minute); n != 0 || len(by) != 0 {
			t.Errorf("old leader 5, new members 1-4, 10 idle minutes at 5%% loss: %d leadership changes, leader timeouts by member %v\n%s", n, by, c.s.Log())
		}
		if d := c.core(4).Report().Detail.(bully.Detail); d.LeaderTimeoutNow != 400*time.Millisecond {
			t.Errorf("new follower 4 of an old leader: timeout now %v, want 400ms", d.LeaderTimeoutNow)
		}
	})
}

// TestUpgradeInRankOrder: the upgrade docs/electd.md gives, the lowest-
// ranked member first and the leader last, each restarted with the new
// timings in turn, keeps every old member following an old leader: no
// leadership change but the restarts' own, at 5% loss and with every loop
// up to 20 ms late, and at the end the new timings everywhere keep leader
// 5 through two idle minutes.
func TestUpgradeInRankOrder(t *testing.T) {
	sim.Seeds(t, 2, func(t *testing.T, seed int64) {
		upgraded := map[uint32]bool{}
		c := mixedCluster(t, seed, upgraded, 20*time.Millisecond)
		c.converge(5 * time.Second)
		for id := uint32(1); id <= 5; id++ {
			upgraded[id] = true
			c.s.Restart(id)
			c.converge(5 * time.Second)
			// The restart's own changes are over once every member
			// follows 5 again; from here on, nothing may move.
			if n, by := idleChanges(t, c, 2*time.Minute); n != 0 || len(by) != 0 {
				t.Fatalf("members 1-%d upgraded: %d leadership changes in 2 idle minutes at 5%% loss, leader timeouts by member %v\n%s", id, n, by, c.s.Log())
			}
		}
		if d := c.core(4).Report().Detail.(bully.Detail); d.Heartbeat != 200*time.Millisecond || d.Probe != 4*time.Millisecond {
			t.Errorf("member 4 after the upgrade: %v heartbeats, %v probes", d.Heartbeat, d.Probe)
		}
		c.claims()
	})
}
