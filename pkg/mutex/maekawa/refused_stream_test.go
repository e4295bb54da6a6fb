package maekawa_test

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/mutex/maekawa"
	"github.com/synclab/synclab/pkg/wire"
)

// TestRefusedVotesResent: every vote frame goes on the members' TCP links
// (Message.Stream), and one that configuration agreement refuses at the
// receiver (an older build's run, unannounced for the 3 s window) or
// withholds at the sender (to that member meanwhile) is lost with the
// link still up: neither side's link closes, no core hears of it. Maekawa
// needs no hint: a collecting request asks its voters again every
// AttemptTimeout (refresh), so a request the refusal cut off is granted
// within AttemptTimeout of the refusal's end. Members 1-3 run agreement,
// member 4 none (an older build), all fresh; at 0.6 s member 4 asks for
// lock x (its cross {2,3,4}: its requests to 2 and 3 are refused) and
// member 2 for lock y (cross {1,2,4}: its request to 4 is withheld, 4's
// answer would be refused). Member 2 is granted within AttemptTimeout of
// the window's end; member 4, cut off both ways (the others' heartbeats
// withheld too), took 2 and 3 for down and found no live cross: it looks
// again every AttemptTimeout, and is granted within a heartbeat and
// AttemptTimeout of the window's end (4.61 s; 7.11 s before, when a
// request that found no live cross waited a whole collectTimeout).
func TestRefusedVotesResent(t *testing.T) {
	for _, f := range []mutex.Factory{maekawa.Factory, maekawa.MajorityFactory} {
		t.Run(f.Name, func(t *testing.T) {
			opt := mutex.Options{Lease: 3 * time.Second, Heartbeat: time.Second}
			s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond}})
			a := &node.Agreement{Algorithm: f.Name, Params: map[string]string{"lease": opt.Lease.String(), "heartbeat": opt.Heartbeat.String()}}
			var attempt time.Duration
			for id := uint32(1); id <= 4; id++ {
				s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
					c, err := f.New(env, opt)
					if err != nil {
						t.Fatal(err)
					}
					attempt = c.(*maekawa.Core).Config().AttemptTimeout
					return c
				}, clock.SimConfig{})
				if id != 4 {
					s.SetAgreement(id, a)
				}
			}
			granted := map[uint32]time.Duration{}
			s.OnReady(func(r sim.Ready) {
				for _, o := range r.Core.(mutex.Algorithm).Outcomes() {
					if _, ok := o.(mutex.Granted); ok {
						granted[r.Node] = r.At
					}
				}
			})
			var refusedVotes int
			var firstRefused, lastRefused time.Duration
			s.OnRefused(func(r sim.Refused) {
				if r.From == 4 && (r.Kind == wire.KindMaekawa || r.Kind == wire.KindQuorumLock) && errors.Is(r.Err, node.ErrConfigUnverified) {
					if refusedVotes == 0 {
						firstRefused = r.At
					}
					refusedVotes++
					lastRefused = r.At
				}
			})
			s.Start()
			s.Run(600 * time.Millisecond)
			acquire := func(id uint32, lock string) {
				if err := s.Do(id, func(c core.Core) {
					if _, err := c.(mutex.Algorithm).Acquire(s.Clock(id).Now(), mutex.Request{Lock: lock}); err != nil {
						t.Fatal(err)
					}
				}); err != nil {
					t.Fatal(err)
				}
			}
			acquire(4, "x")
			acquire(2, "y")
			s.RunUntil(func() bool { return granted[4] != 0 && granted[2] != 0 }, 10*time.Second)
			withheld := s.Node(2).Status().Dropped["withheld_"+wire.KindMaekawa.String()] + s.Node(2).Status().Dropped["withheld_"+wire.KindQuorumLock.String()]
			t.Logf("%s: member 4's vote frames refused %d times (%v to %v), member 2 withheld %d from it; granted: member 4 at %v, member 2 at %v (AttemptTimeout %v)",
				f.Name, refusedVotes, firstRefused, lastRefused, withheld, granted[4], granted[2], attempt)
			if refusedVotes == 0 || withheld == 0 {
				t.Fatalf("no vote frame refused (%d) or withheld (%d): the test no longer reaches the refusal", refusedVotes, withheld)
			}
			// Member 2's request lost only the frames withheld to 4 and
			// 4's refused answers: its refresh after the window carries
			// them. Member 4 heard no heartbeat of 1-3 in the window
			// either (withheld: the cut both ways, as a partition): it
			// took them for down and found no live cross, and asks again
			// within a heartbeat (their first beat to it) and
			// AttemptTimeout of the window's end. It waited a whole
			// collectTimeout (MaxLease + AttemptTimeout, 3.5 s) before:
			// granted at 7.11 s, 3.5 s after the window.
			hb := 1 * time.Second
			bound := map[uint32]time.Duration{2: lastRefused + attempt + 15*time.Millisecond, 4: lastRefused + hb + attempt + 15*time.Millisecond}
			for _, id := range []uint32{4, 2} {
				if g := granted[id]; g == 0 || g > bound[id] {
					t.Errorf("member %d granted at %v, want by %v (the refusal ended by %v)", id, fmt.Sprint(g), bound[id], lastRefused)
				}
			}
		})
	}
}

// TestMixedBuilds: Maekawa and the majority quorum keep the oracle in a
// cluster whose members mix builds with configuration agreement and
// without (mutextest.BuildsMixed), on calm and harsh hosts: the vote
// frames (all on the TCP links) that the agreeing members refuse or
// withhold during an older build's window are lost with the links up,
// and the requests' refreshes carry what they lost (100 seeds each
// passed, -sim.seeds).
func TestMixedBuilds(t *testing.T) {
	for _, f := range []mutex.Factory{maekawa.Factory, maekawa.MajorityFactory} {
		for _, h := range []mutextest.Hosts{mutextest.Calm, mutextest.Harsh} {
			t.Run(f.Name+"/"+h.Name, func(t *testing.T) {
				sim.Seeds(t, 6, func(t *testing.T, seed int64) {
					c := mutextest.Run(t, seed, mutextest.Config{Factory: f, Hosts: h, Builds: mutextest.BuildsMixed})
					t.Log(c)
				})
			})
		}
	}
}

// TestLostLockedCostsCollect: a voter's locked lost on its way (here the
// link cut as it leaves and healed 10 ms later: a stream frame sent before
// a cut is never delivered, as a reset link loses it, and as configuration
// agreement loses one it refuses or withholds, with the link up and no
// hint to either core) is not said again: the voter takes the requester's
// refreshes for repeats (a copy of a vote, which the requester cannot tell
// from the vote, once followed the requester's relinquish across a
// reconnect or an inquire and gave two holders: review-stream,
// review-locked). The requester waits out its collectTimeout (MaxLease +
// AttemptTimeout), gives up (its votes released) and asks again: the
// bound that maekawa's doc.go gives for a lost vote.
func TestLostLockedCostsCollect(t *testing.T) {
	for _, f := range []mutex.Factory{maekawa.Factory, maekawa.MajorityFactory} {
		t.Run(f.Name, func(t *testing.T) {
			n := uint32(4) // member 1's cross is {1, 2, 3}
			if f.Name == maekawa.MajorityFactory.Name {
				n = 2 // a majority of 2 needs member 2's vote
			}
			l := newVoteLoss(t, f, n)
			l.lose(2, 1, wire.VoteLocked)
			asked := l.s.Elapsed()
			l.s.AcquireFor(1, 0)
			l.runUntilGranted(1, asked)
			took := l.granted[1] - asked
			t.Logf("%s: member 2's locked to member 1 lost at %v; member 1 granted %v after it asked (AttemptTimeout %v)",
				f.Name, l.cutAt-asked, took, l.attempt)
			if l.cutAt < 0 {
				t.Fatal("member 2 sent member 1 no locked: the test no longer loses one")
			}
			if bound := l.opt.Lease + 2*l.attempt; l.granted[1] == 0 || took > bound {
				t.Errorf("member 1 granted %v after it asked, want within its collectTimeout and a backoff (%v)", took, bound)
			}
		})
	}
}
