package bully_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/elect/bully"
)

// With Sticky, a member that comes back follows the sitting leader it
// outranks (bully's rule would have it take over in a newer term): the
// highest member, SIGKILLed and restarted, finds 4 leading and stays a
// follower, in 4's term; without Sticky it takes over. Over seeds.
func TestStickyKeepsTheSittingLeader(t *testing.T) {
	members := []bully.Member{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}, {ID: 5}}
	for _, sticky := range []bool{false, true} {
		sim.Seeds(t, 10, func(t *testing.T, seed int64) {
			s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: time.Millisecond}})
			c := newCluster(t, s, members, func(cfg *bully.Config) { cfg.Sticky = sticky })
			s.Run(2 * time.Second)
			s.Crash(5)
			s.Run(time.Second) // 4 notices after the 400 ms leader timeout and takes over
			lead, term, _ := c.core(1).Leader()
			if lead != 4 {
				t.Fatalf("sticky %v: leader %d after 5's crash, want 4", sticky, lead)
			}
			s.Restart(5)
			s.Run(2 * time.Second)
			want := uint32(5)
			if sticky {
				want = 4
			}
			for id := uint32(1); id <= 5; id++ {
				l, tm, _ := c.core(id).Leader()
				if l != want || sticky && tm != term {
					t.Fatalf("sticky %v: member %d follows %d in term %#x, want %d (4 led %#x)", sticky, id, l, tm, want, term)
				}
			}
		})
	}
}

// With Sticky a leader need not be the highest-ranked member, so a leader
// SIGKILLed and back before its followers' leader timeout runs an election
// among members that still follow it: the members above it answered (a
// follower with a leader it heard does not run an election of its own)
// and waited for it to lead, while it waited for their COORDINATOR, for
// ever (mutexd's central under test: a restarted coordinator starting an
// election every 0.73 s for two minutes, no grant). A follower whose own
// leader runs an election knows that leader no longer leads.
func TestStickyLeaderBackBeforeItsTimeout(t *testing.T) {
	members := []bully.Member{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}, {ID: 5}}
	sim.Seeds(t, 10, func(t *testing.T, seed int64) {
		s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: time.Millisecond}})
		c := newCluster(t, s, members, func(cfg *bully.Config) { cfg.Sticky = true })
		s.Run(2 * time.Second)
		s.Crash(5)
		s.Run(time.Second)
		s.Restart(5)
		s.Run(2 * time.Second) // 4 leads, 5 follows it
		if l, _, _ := c.core(5).Leader(); l != 4 {
			t.Fatalf("member 5 follows %d, want 4", l)
		}
		s.Crash(4)
		s.Run(50 * time.Millisecond) // back well before the 400 ms leader timeout
		s.Restart(4)
		s.Run(3 * time.Second)
		lead, term, _ := c.core(1).Leader()
		if lead == 0 {
			t.Fatalf("no leader 3 s after leader 4 came back")
		}
		for id := uint32(1); id <= 5; id++ {
			if l, tm, _ := c.core(id).Leader(); l != lead || tm != term {
				t.Fatalf("member %d follows %d in term %#x; member 1 follows %d in %#x", id, l, tm, lead, term)
			}
		}
	})
}
