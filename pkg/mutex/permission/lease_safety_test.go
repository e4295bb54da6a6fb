package permission_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/mutex/permission"
	"github.com/synclab/synclab/pkg/wire"
)

// leaseFactories are the algorithms that give a holder up at its lease end
// (Lamport's queue vouches for nothing).
var leaseFactories = []mutex.Factory{permission.RicartAgrawalaFactory, permission.BakeryFactory}

// renew renews member id's request req now (its outcome reaches the
// oracle as any renewal's).
func renew(t *testing.T, c *mutextest.Cluster, id uint32, req mutex.RequestID) {
	t.Helper()
	s := c.Sim()
	if err := s.Do(id, func(cc core.Core) {
		if err := cc.(mutex.Algorithm).Renew(s.Clock(id).Now(), req, 0); err != nil {
			t.Errorf("member %d: renew %d: %v", id, req, err)
		}
	}); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseEndAnswersAfterEnd: the review's first finding, a lease longer
// than SuspectAfter: 500 ms heartbeats (SuspectAfter 1.7 s) and a 3 s
// lease, a 5 s lease with mutexd's 1 s heartbeat (SuspectAfter 3.2 s), or
// a 30 s one with 2 s heartbeats (SuspectAfter 6.2 s). Holder 1 renews,
// and is cut off from 2 (which waits for it) and 3; once 3 has answered
// 2's probe, vouching for 1's lease end, the link between 1 and 3 heals
// (the one between 1 and 2 stays cut, and so, that no relay carries 1's
// frames to 2, does the one between 2 and 3: 2 last heard 3 as it
// answered, so a majority is fresh at 2 for 1.5 heartbeats more), 1
// renews again, and 3 acknowledges the renewal's end: 1 holds past the end
// 3 vouched for. Member 2 must not give 1 up at that end on answers to a
// probe sent before it (the oracle saw two holders): it asks again once
// the end and the margin have passed, and then 3 has heard 1. The seeds
// vary when 1 renews before the cut (so that its end, with the margin,
// comes while 2 still hears a fresh majority) and after the heal, and how
// long after 3's answer the link heals.
func TestLeaseEndAnswersAfterEnd(t *testing.T) {
	for _, opt := range []mutex.Options{
		{Lease: 3 * time.Second, Heartbeat: 500 * time.Millisecond},
		{Lease: 5 * time.Second, Heartbeat: time.Second},
		{Lease: 30 * time.Second, Heartbeat: 2 * time.Second},
	} {
		for _, f := range leaseFactories {
			t.Run(fmt.Sprintf("%s/lease %v heartbeat %v", f.Name, opt.Lease, opt.Heartbeat), func(t *testing.T) {
				sim.Seeds(t, 16, func(t *testing.T, seed int64) {
					leaseEndAnswersAfterEnd(t, f, opt, seed)
				})
			})
		}
	}
}

func leaseEndAnswersAfterEnd(t *testing.T, f mutex.Factory, opt mutex.Options, seed int64) {
	const holder, waiter, voucher = 1, 2, 3
	c := mutextest.New(t, seed, mutextest.Config{Factory: f, Members: 3, Options: opt, Faults: []mutex.Fault{}})
	s := c.Sim()
	rng := s.NewRand()
	vouched := false // 3 answered 2's probe about 1, vouching for its end
	s.OnSend(func(sf sim.SentFrame) {
		var r wire.PermProbeReply
		if sf.From == voucher && sf.Frame.Receiver == waiter && sf.Frame.Kind == wire.KindPermProbeReply &&
			r.UnmarshalBinary(sf.Frame.Payload) == nil && r.Member == holder && r.Covered {
			vouched = true
		}
	})
	c.Run(3*time.Second, false)
	tm := s.Core(holder).(*permission.Core).Config()
	req := c.Hold(holder, "x", opt.Lease)
	expires := func() time.Time {
		exp, _ := s.Core(holder).(*permission.Core).Expires(req)
		return exp
	}
	c.Run(50*time.Millisecond, false)
	if !c.Holding(holder) {
		t.Fatalf("member %d not granted on an idle cluster\n%s", holder, c.Tail())
	}
	c.Hold(waiter, "x", opt.Lease)
	// A few busy heartbeats: 1 is bounded, its end announced.
	c.Run(tm.HeartbeatInterval+time.Duration(rng.Int64N(int64(tm.HeartbeatInterval))), false)
	renew(t, c, holder, req)
	// 2 asks 3 SuspectAfter after it last heard 1 (a busy heartbeat
	// before the cut at most); 1's end comes then, or within 1.5
	// heartbeats less the margin.
	lo := opt.Lease - tm.SuspectAfter - tm.FreshWindow + tm.Margin + tm.BusyHeartbeat() + 50*time.Millisecond
	hi := opt.Lease - tm.SuspectAfter - 150*time.Millisecond // and 1 renews before it
	c.Run(lo+time.Duration(rng.Int64N(int64(hi-lo))), false)
	s.Partition([]uint32{holder}, []uint32{waiter, voucher})
	vouchedEnd := expires()
	for !vouched {
		if s.Elapsed() > 30*time.Second+2*opt.Lease {
			t.Fatalf("member %d never vouched to %d for %d's lease end\n%s", voucher, waiter, holder, c.Tail())
		}
		c.Run(time.Millisecond, false)
	}
	c.Run(time.Duration(1+rng.IntN(50))*time.Millisecond, false)
	s.Heal()
	s.Partition([]uint32{holder}, []uint32{waiter})
	s.Partition([]uint32{waiter}, []uint32{voucher})
	c.Run(time.Duration(10+rng.IntN(40))*time.Millisecond, false)
	renew(t, c, holder, req)
	c.Run(50*time.Millisecond, false)
	if exp := expires(); !exp.After(vouchedEnd.Add(tm.Margin)) {
		t.Fatalf("member %d's renewal after the heal not confirmed past the end vouched for (%v, then %v): the scenario did not happen\n%s",
			holder, vouchedEnd, exp, c.Tail())
	}
	c.Run(2*opt.Lease+5*time.Second, false) // 1's client lets go at the latest two leases after its grant
	s.Heal()
	c.Run(8*time.Second, false)
	if w := c.Waiting(); len(w) > 0 {
		t.Fatalf("members %v still wait\n%s", w, c.Tail())
	}
	c.Check()
	if testing.Verbose() {
		t.Logf("%v; member %d: %v", c, waiter, s.Core(waiter).(mutex.Algorithm).Report().Counters)
	}
}

// TestHugeEndFallsBackToTimeout: the review's second finding. The holder
// announces an end far ahead (up to 2^31 ms, 24.8 days: a frame forged in
// its name on a cluster without a key, or a member's own bug), bounded,
// no request waiting, to every member, and crashes. Nobody may wait for
// that end: it passes DeadAfter from the holder's last frame, which every
// lease it may hold ends within, so the waiter gives it up as without an
// announcement, DeadAfter after its silence began (before the fix it set
// its next probe to that end, and waited for it). 3 to 5 members, the end
// from 5 s to 2^31-1 ms.
func TestHugeEndFallsBackToTimeout(t *testing.T) {
	const holder, waiter = 1, 2
	for _, f := range leaseFactories {
		t.Run(f.Name, func(t *testing.T) {
			sim.Seeds(t, 24, func(t *testing.T, seed int64) {
				opt := mutex.Options{Lease: 3 * time.Second, Heartbeat: time.Second} // mutexd's
				c := mutextest.New(t, seed, mutextest.Config{Factory: f, Members: 3 + int(seed%3), Options: opt, Faults: []mutex.Fault{}})
				s := c.Sim()
				rng := s.NewRand()
				c.Run(3*time.Second, false)
				tm := s.Core(waiter).(*permission.Core).Config()
				c.Hold(holder, "x", tm.MaxLease)
				c.Run(50*time.Millisecond, false)
				if !c.Holding(holder) {
					t.Fatalf("member %d not granted on an idle cluster\n%s", holder, c.Tail())
				}
				c.Hold(waiter, "x", tm.MaxLease)
				c.Run(time.Duration(300+rng.IntN(1500))*time.Millisecond, false)
				if c.Holding(waiter) {
					t.Fatalf("member %d granted while %d holds\n%s", waiter, holder, c.Tail())
				}
				endMS := int32(5000 + rng.Int64N(1<<31-1-5000))
				if seed%4 == 0 {
					endMS = 1<<31 - 1
				}
				hb := wire.PermHeartbeat{Interval: uint32(tm.HeartbeatInterval.Milliseconds()), Ext: true, Busy: true, Bounded: true, EndMS: endMS}
				stamp := s.Core(holder).(*permission.Core).Config().Lamport.Now() + 1
				for _, id := range c.IDs() {
					if id != holder {
						if err := s.Forge(holder, id, wire.KindPermHeartbeat, 0, stamp, hb); err != nil {
							t.Fatalf("announcement to %d: %v", id, err)
						}
					}
				}
				s.Crash(holder)
				crashed := s.Elapsed()
				for !c.Holding(waiter) {
					if s.Elapsed()-crashed > tm.DeadAfter+time.Second {
						t.Fatalf("member %d still waits %v after member %d crashed, having announced an end %d ms ahead (DeadAfter %v): %v\n%s",
							waiter, s.Elapsed()-crashed, holder, endMS, tm.DeadAfter, s.Core(waiter).(mutex.Algorithm).Report().Counters, c.Tail())
					}
					c.Run(time.Millisecond, false)
				}
				took := s.Elapsed() - crashed
				if lo := tm.DeadAfter - tm.BusyHeartbeat(); took < lo {
					t.Errorf("member %d granted %v after the crash, before DeadAfter's %v", waiter, took, lo)
				}
				if w := s.EventsNamed(permission.EventEndPastTimeout); len(w) == 0 {
					t.Errorf("no %s warning at member %d", permission.EventEndPastTimeout, waiter)
				} else if testing.Verbose() {
					t.Log(w[0], w[0].Msg)
				}
				c.Run(8*time.Second, false)
				c.Check()
				if testing.Verbose() {
					t.Logf("granted %v after the crash (end announced %d ms ahead)", took, endMS)
				}
			})
		})
	}
}

// TestLeaseEndNotBeforeMajoritySilence: the SuspectAfter floor of the
// lease end rule in a cluster. Of seven members, holder 2 (by 1's leave)
// and waiter 1 cannot talk, and no relay carries 2's frames to 1: the
// links between 1 and 2 are cut both ways, those from 3 and 4 (2's
// relays for 1) to 1, and those from 5, 6 and 7 to 2 (so 2 picks none of
// them as a relay). 1 still hears a majority (5, 6, 7); 2 hears 3 and 4
// only and takes itself for cut off; 3 to 7 hear 2 throughout. 2's lease,
// not renewed, ends 2 to 3 s after the cut; 1, silent from 2 for
// SuspectAfter, asks once that end and the margin have passed, and the
// members that vouch for it heard 2 moments ago: nobody is given up while
// the cuts last, nor is 1 granted (a majority silent from 2 over
// SuspectAfter is what shows that 2, if alive, rejoins before it acts
// again; the package doc, "Lease ends"). Once the links heal, 1 is
// granted. Without the floor, 1 gave 2 up 3.0 s after the cut.
func TestLeaseEndNotBeforeMajoritySilence(t *testing.T) {
	const waiter, holder = 1, 2
	for _, f := range leaseFactories {
		t.Run(f.Name, func(t *testing.T) {
			sim.Seeds(t, 4, func(t *testing.T, seed int64) {
				s := mutextest.NewLockSim(t, f, mutex.Options{}, 7, seed, sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 300 * time.Microsecond}, 3*time.Second)
				tm := s.Core(waiter).(*permission.Core).Config()
				rh := s.Acquire(holder)
				if !s.RunUntil(func() bool { return s.Granted[holder] == rh }, time.Second) {
					t.Fatalf("member %d not granted on an idle cluster", holder)
				}
				rw := s.Acquire(waiter)
				s.Run(tm.BusyHeartbeat() + time.Duration(s.NewRand().Int64N(int64(tm.HeartbeatInterval)))) // 2 bounded, its end announced
				s.Cut(waiter, holder)
				s.Cut(holder, waiter)
				for _, r := range []uint32{3, 4} {
					s.Cut(r, waiter)
				}
				for _, r := range []uint32{5, 6, 7} {
					s.Cut(r, holder)
				}
				cut := s.Elapsed()
				s.Run(2 * tm.DeadAfter)
				if downs := s.EventsNamed(liveness.EventMemberDown); len(downs) > 0 {
					t.Errorf("%d members given up while every member but 1 heard 2, the first %v after the cut: %v", len(downs), downs[0].At-cut, downs[0])
				}
				if s.Granted[waiter] == rw {
					t.Errorf("member %d granted while it could not hear %d", waiter, holder)
				}
				cnt := s.Core(waiter).(mutex.Algorithm).Report().Counters
				if cnt["probes_sent"] == 0 {
					t.Errorf("member %d never asked about %d (counters %v): the rule was not exercised", waiter, holder, cnt)
				}
				if hc := s.Core(holder).(mutex.Algorithm).Report().Counters; hc["cut_off"] == 0 {
					t.Errorf("member %d never took itself for cut off (counters %v)", holder, hc)
				}
				s.Heal()
				if !s.RunUntil(func() bool { return s.Granted[waiter] == rw }, 2*tm.DeadAfter) {
					t.Fatalf("member %d not granted %v after the links healed", waiter, 2*tm.DeadAfter)
				}
				if testing.Verbose() {
					t.Logf("member %d: %v", waiter, cnt)
				}
			})
		})
	}
}
