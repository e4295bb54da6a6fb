package permission_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/mutex/permission"
)

// simTimers are the recovery timers of a member with mutextest's options
// (1 s lease, 100 ms heartbeats).
func simTimers(t *testing.T) permission.Config {
	t.Helper()
	cfg := permission.DefaultLANConfig()
	cfg.Variant, cfg.ID, cfg.Members = permission.RicartAgrawala, 1, []uint32{1, 2, 3}
	cfg.MaxLease, cfg.HeartbeatInterval = time.Second, 100*time.Millisecond
	c, err := permission.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c.Config()
}

// TestFaultBoundaries: pauses, lone and two-member partitions of the
// holder, of a bystander, and crashes, whose lengths straddle every timer
// of the recovery rules (StallAfter, the cut-off, SuspectAfter, the lease,
// DeadAfter), over lossy links, with the oracle: no two holders of a lock
// at any real instant, fences strictly increasing, and every request
// granted once the faults stop. The timers are short on purpose (suspect
// after 0.5 s, give up a member that may hold after 1.26 s), so a rule off
// by a heartbeat shows as two holders.
func TestFaultBoundaries(t *testing.T) {
	tm := simTimers(t)
	cutOff := tm.SuspectAfter - tm.HeartbeatInterval - tm.Margin
	var lengths []time.Duration
	for _, d := range []time.Duration{tm.StallAfter(), cutOff, tm.SuspectAfter, tm.MaxLease, tm.DeadAfter} {
		lengths = append(lengths, d-60*time.Millisecond, d+10*time.Millisecond, d+90*time.Millisecond)
	}
	lengths = append(lengths, 3*tm.DeadAfter)
	slices.Sort(lengths)
	for _, f := range factories {
		t.Run(f.Name, func(t *testing.T) {
			sim.Seeds(t, 4, func(t *testing.T, seed int64) {
				c := mutextest.New(t, seed, mutextest.Config{Factory: f, Members: 3 + int(seed%3), Faults: []mutex.Fault{mutex.Loss}})
				s, ids := c.Sim(), c.IDs()
				c.Run(2*time.Second, true)
				for i, d := range lengths {
					d += time.Duration(seed*7%40) * time.Millisecond
					for kind := range 5 {
						h := c.Holder()
						switch kind {
						case 0:
							s.Pause(h)
						case 1:
							s.Isolate(h)
						case 2:
							o := c.Other()
							s.Pause(o)
							h = o
						case 3:
							minority := []uint32{h, ids[(int(h)+i)%len(ids)]}
							if minority[1] == h {
								minority = minority[:1]
							}
							var majority []uint32
							for _, id := range ids {
								if !slices.Contains(minority, id) {
									majority = append(majority, id)
								}
							}
							s.Partition(minority, majority)
						case 4:
							c.Fault(mutex.Crash) // the holder or another, down 0.2-1.7 s
							c.Run(500*time.Millisecond, true)
							continue
						}
						c.Run(d, true)
						if kind == 0 || kind == 2 {
							s.Resume(h)
						}
						s.Heal()
						c.Run(300*time.Millisecond+time.Duration(i*37%400)*time.Millisecond, true)
						if testing.Verbose() {
							t.Logf("%v: fault %d of %v on member %d ended", s.Elapsed(), kind, d, h)
						}
					}
				}
				c.Run(8*time.Second, false)
				if w := c.Waiting(); len(w) > 0 {
					t.Fatalf("members %v still wait after the faults\n%s", w, c.Tail())
				}
				c.Check()
				var atEnd uint64
				for _, id := range ids {
					atEnd += s.Core(id).(mutex.Algorithm).Report().Counters["members_given_up_at_lease_end"]
				}
				t.Logf("%v; %d members given up at their announced lease end", c, atEnd)
			})
		})
	}
}

// TestRecoveryTimes: with the defaults (3 s lease, 1 s heartbeats), a
// waiting member is granted DeadAfter (3.8 s) after the holder's last
// heartbeat, and a probe round later (ConfirmSlack, 10 ms, and a round
// trip: the others confirm the silence), when the holder crashes (it beats
// every 200 ms while it holds) in Lamport's queue; in Ricart-Agrawala and
// the bakery at the lease end it announced (its acknowledgements of the
// others' idle heartbeats after its grant carry it, and their
// acknowledgements of its own bounded it), never before SuspectAfter
// after its last heartbeat: 3.0-3.2 s after the crash (before the idle
// heartbeats were acknowledged, a holder that crashed within a heartbeat
// of its grant was waited for DeadAfter);
// and, in Ricart-Agrawala, SuspectAfter (3.2 s) after the last heartbeat
// of a crashed member that holds nothing, whether it held the lock before
// (the last holder, whose idle heartbeat said it was done) or never (a
// bystander); in Lamport's queue the request that went to the dead member
// is a leave, so it is waited for DeadAfter. The bounds of the package
// doc, on reliable links, 5 members.
func TestRecoveryTimes(t *testing.T) {
	const slack = 30 * time.Millisecond // a tick, the links' delays and the probe round's
	opt := mutex.Options{Lease: 3 * time.Second, Heartbeat: time.Second}
	tm := permission.DefaultLANConfig()
	tm.Variant, tm.ID, tm.Members = permission.RicartAgrawala, 1, []uint32{1, 2, 3, 4, 5}
	c, err := permission.New(tm)
	if err != nil {
		t.Fatal(err)
	}
	tm = c.Config()
	for _, f := range factories {
		for _, victim := range []string{"holder", "last holder", "bystander"} {
			t.Run(fmt.Sprintf("%s/%s", f.Name, victim), func(t *testing.T) {
				s := mutextest.NewLockSim(t, f, opt, 5, 1, sim.LinkConfig{Delay: 200 * time.Microsecond}, 3*time.Second)
				granted, acquire := s.Granted, s.Acquire
				r1 := acquire(1)
				s.Run(50 * time.Millisecond)
				if granted[1] != r1 {
					t.Fatal("member 1 not granted on an idle cluster")
				}
				victimID := uint32(1)
				if victim != "holder" {
					s.Do(1, func(cc core.Core) { cc.(mutex.Algorithm).Release(s.Clock(1).Now(), r1) })
					s.Run(1500 * time.Millisecond) // an idle heartbeat says it is done
					if victim == "bystander" {
						victimID = 5
					}
				}
				s.Crash(victimID)
				crashed := s.Elapsed()
				r2 := acquire(2)
				for granted[2] != r2 {
					if s.Elapsed()-crashed > 10*time.Second {
						t.Fatalf("member 2 not granted 10 s after member %d crashed", victimID)
					}
					s.Run(time.Millisecond)
				}
				// The victim was last heard at most a heartbeat (a busy one
				// for the holder) before the crash.
				lo, hi := tm.SuspectAfter-tm.HeartbeatInterval, tm.SuspectAfter
				switch {
				case victim == "holder" && f.Name == "lamport":
					lo, hi = tm.DeadAfter-tm.BusyHeartbeat(), tm.DeadAfter
				case victim == "holder":
					lo = tm.SuspectAfter - tm.BusyHeartbeat()
				case f.Name == "lamport":
					// Member 2's request went to the victim before it was
					// suspected, and in Lamport's queue any frame stamped
					// after a request is a leave: the victim is waited for
					// DeadAfter from its last (idle) heartbeat.
					hi = tm.DeadAfter
				}
				took := s.Elapsed() - crashed
				hi += tm.ConfirmSlack()
				t.Logf("member 2 granted %v after member %d crashed (bound %v to %v)", took, victimID, lo, hi)
				if took < lo || took > hi+slack {
					t.Errorf("granted %v after the crash, want %v to %v", took, lo, hi)
				}
			})
		}
	}
}
