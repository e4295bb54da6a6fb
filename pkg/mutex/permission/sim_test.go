package permission_test

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutextest"
	"github.com/synclab/synclab/pkg/mutex/permission"
	"github.com/synclab/synclab/pkg/wire"
)

var factories = []mutex.Factory{permission.RicartAgrawalaFactory, permission.LamportFactory, permission.BakeryFactory}

// TestOracle: both algorithms keep the generic oracle (pkg/mutex/internal/mutextest:
// exclusion in real time, fences above every earlier grant, every request
// granted once the faults stop) on 3 to 7 members over lossy links, with
// the faults they claim to survive (crashes and restarts of the holder and
// of others, pauses longer than the lease, a holder partitioned alone,
// bursts of loss).
func TestOracle(t *testing.T) {
	for _, f := range factories {
		t.Run(f.Name, func(t *testing.T) {
			sim.Seeds(t, 12, func(t *testing.T, seed int64) {
				c := mutextest.Run(t, seed, mutextest.Config{Factory: f})
				t.Log(c)
			})
		})
	}
}

// TestMinorityAndDeadMember: the faults the textbook algorithms cannot
// survive. A minority of two (the holder among it) is cut off from the
// majority for longer than the failure detector's timeout, then the
// network heals; a member crashes for good and the others go on without
// it. Over lossy links, with the oracle.
func TestMinorityAndDeadMember(t *testing.T) {
	for _, f := range factories {
		t.Run(f.Name, func(t *testing.T) {
			sim.Seeds(t, 8, func(t *testing.T, seed int64) {
				c := mutextest.New(t, seed, mutextest.Config{Factory: f, Members: 5 + int(seed%3), Faults: []mutex.Fault{mutex.Loss}})
				s, ids := c.Sim(), c.IDs()
				c.Run(3*time.Second, true)
				for round := range 3 {
					h := c.Holder()
					minority := []uint32{h}
					var majority []uint32
					for _, id := range ids {
						switch {
						case id == h:
						case len(minority) < 2 && (int(id)+round)%2 == 0:
							minority = append(minority, id)
						default:
							majority = append(majority, id)
						}
					}
					s.Partition(minority, majority)
					c.Run(time.Duration(2+round*3)*time.Second, true)
					s.Heal()
					c.Run(2*time.Second, true)
				}
				// Let every client finish, then crash one member for good.
				c.Run(4*time.Second, false)
				dead := ids[int(seed)%len(ids)]
				s.Crash(dead)
				c.Run(10*time.Second, true)
				c.Run(10*time.Second, false)
				if w := slices.DeleteFunc(c.Waiting(), func(id uint32) bool { return id == dead }); len(w) > 0 {
					t.Fatalf("members %v still wait with member %d dead\n%s", w, dead, c.Tail())
				}
				c.Check()
				t.Log(c)
			})
		})
	}
}

// TestMessagesPerEntry: an uncontended entry costs exactly what the notes' comparison table
// says: 2(N-1) messages for Ricart-Agrawala, 3(N-1) for Lamport's queue.
func TestMessagesPerEntry(t *testing.T) {
	for _, f := range factories {
		for _, n := range []int{3, 5, 8} {
			t.Run(fmt.Sprintf("%s/%d", f.Name, n), func(t *testing.T) {
				got := mutextest.MessagesPerEntry(t, f, mutex.Options{}, n)
				lo, hi := f.Cost.Messages(n)
				t.Logf("%s, %d members: %.2f messages per entry (notes: %s = %v)", f.Name, n, got, f.Cost.Text, lo)
				if got != lo || lo != hi {
					t.Errorf("%d members: %.2f messages per entry, the notes say %s = %v", n, got, f.Cost.Text, lo)
				}
			})
		}
	}
}

// TestContendedReordered: every member's client takes and releases one
// lock back to back for 5 s over reliable links whose jitter reorders
// datagrams. Nothing is lost, so nothing may wait for a retry: no request
// is sent twice, every entry costs exactly what the notes say (2(N-1),
// 3(N-1)) plus only the acknowledgements that reordering forces in
// Lamport's queue, and no wait comes near RetryInterval. (Frames stamped in
// another order than they were made once made requests look stale and
// cost every handoff a retry: 10 handoffs/s instead of hundreds.)
func TestContendedReordered(t *testing.T) {
	for _, f := range factories {
		for _, n := range []int{3, 5} {
			t.Run(fmt.Sprintf("%s/%d", f.Name, n), func(t *testing.T) {
				s := sim.New(sim.Config{Seed: int64(n), DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 400 * time.Microsecond}})
				type client struct {
					req     mutex.RequestID
					asked   time.Duration
					holding bool
				}
				clients := map[uint32]*client{}
				var waits []time.Duration
				for id := uint32(1); id <= uint32(n); id++ {
					clients[id] = &client{}
					s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
						a, err := f.New(env, mutex.Options{Heartbeat: 100 * time.Millisecond, Lease: time.Second})
						if err != nil {
							t.Fatal(err)
						}
						return a
					}, clock.SimConfig{})
				}
				s.OnReady(func(r sim.Ready) {
					for _, o := range r.Core.(mutex.Algorithm).Outcomes() {
						if g, ok := o.(mutex.Granted); ok && clients[r.Node].req == g.ID {
							clients[r.Node].holding = true
							waits = append(waits, r.At-clients[r.Node].asked)
						}
					}
				})
				s.Start()
				s.Run(time.Second)
				s.ResetCounts()
				entries := 0
				for s.Elapsed() < 6*time.Second {
					for id, c := range clients {
						switch {
						case c.req == 0:
							s.Do(id, func(cc core.Core) {
								req, err := cc.(mutex.Algorithm).Acquire(s.Clock(id).Now(), mutex.Request{Lock: "hot"})
								if err != nil {
									t.Fatal(err)
								}
								c.req, c.asked = req, s.Elapsed()
							})
						case c.holding:
							s.Do(id, func(cc core.Core) {
								if err := cc.(mutex.Algorithm).Release(s.Clock(id).Now(), c.req); err != nil {
									t.Fatal(err)
								}
							})
							*c = client{}
							entries++
						}
					}
					s.Run(time.Millisecond)
				}
				var resent uint64
				for id := range clients {
					resent += s.Core(id).(mutex.Algorithm).Report().Counters["requests_resent"]
				}
				slices.Sort(waits)
				p99 := waits[len(waits)*99/100]
				var msgs uint64
				for _, k := range f.Kinds {
					if k.Class() != wire.ClassMessage {
						continue
					}
					msgs += s.Sent(k) * uint64(k.Messages())
				}
				lo, _ := f.Cost.Messages(n)
				perEntry := float64(msgs) / float64(entries)
				t.Logf("%d entries in 5 s, wait p99 %v, %.2f messages per entry (notes %v; %d frames were requeues), %d requests resent",
					entries, p99, perEntry, lo, s.Sent(wire.KindLamportRequeue), resent)
				if resent > 0 {
					t.Errorf("%d requests resent on links that lose nothing", resent)
				}
				if p99 >= 100*time.Millisecond {
					t.Errorf("wait p99 %v: a handoff waited for something", p99)
				}
				if perEntry < lo || perEntry > lo*1.2 {
					t.Errorf("%.2f messages per entry, the notes say %v", perEntry, lo)
				}
			})
		}
	}
}

// TestBackToBackRequeue: a client that takes the lock again as soon as it
// released it, nobody else asking, still costs every message of the notes
// per entry (3(N-1) for Lamport's queue, 2(N-1) for Ricart-Agrawala, 6(N-1)
// for the bakery), but in Lamport's queue the release and the next request
// travel in one frame (a requeue): 2(N-1) frames per entry, and the last
// release alone, ReleaseHold after it was made. Grants are one round trip
// after the request, as an entry without a held release (the bakery's
// three: its three reads).
func TestBackToBackRequeue(t *testing.T) {
	const n, entries = 5, 20
	for _, f := range factories {
		t.Run(f.Name, func(t *testing.T) {
			s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: time.Millisecond}})
			for id := uint32(1); id <= n; id++ {
				s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
					a, err := f.New(env, mutex.Options{})
					if err != nil {
						t.Fatal(err)
					}
					return a
				}, clock.SimConfig{})
			}
			var req mutex.RequestID
			var asked, worst time.Duration
			holding := false
			s.OnReady(func(r sim.Ready) {
				for _, o := range r.Core.(mutex.Algorithm).Outcomes() {
					if g, ok := o.(mutex.Granted); ok && g.ID == req {
						holding = true
						worst = max(worst, r.At-asked)
					}
				}
			})
			s.Start()
			s.Run(2 * time.Second)
			s.ResetCounts()
			acquire := func(a mutex.Algorithm) {
				var err error
				if req, err = a.Acquire(s.Clock(1).Now(), mutex.Request{Lock: "x"}); err != nil {
					t.Fatal(err)
				}
				asked = s.Elapsed()
			}
			s.Do(1, func(c core.Core) { acquire(c.(mutex.Algorithm)) })
			for k := range entries {
				if !s.RunUntil(func() bool { return holding }, time.Second) {
					t.Fatalf("entry %d not granted within 1 s", k)
				}
				holding = false
				s.Do(1, func(c core.Core) {
					a := c.(mutex.Algorithm)
					if err := a.Release(s.Clock(1).Now(), req); err != nil {
						t.Fatal(err)
					}
					if k+1 < entries {
						acquire(a) // the client asks again at once
					}
				})
			}
			s.Run(50 * time.Millisecond) // the last release, held ReleaseHold
			var msgs, frames uint64
			for _, k := range f.Kinds {
				if k.Class() != wire.ClassMessage {
					continue
				}
				msgs += s.Sent(k) * uint64(k.Messages())
				frames += s.Sent(k)
			}
			lo, _ := f.Cost.Messages(n)
			t.Logf("%d entries: %.2f messages per entry (notes %v) in %.2f frames, %d requeues; slowest grant %v after its request",
				entries, float64(msgs)/entries, lo, float64(frames)/entries, s.Sent(wire.KindLamportRequeue), worst)
			if float64(msgs) != lo*entries {
				t.Errorf("%d messages for %d entries, the notes say %v each", msgs, entries, lo)
			}
			wantFrames, rounds := uint64(2*(n-1)*entries), time.Duration(1)
			if f.Name == permission.Bakery.String() {
				// Three reads, each a frame to every other member and its
				// answer, one after the other.
				wantFrames, rounds = uint64(6*(n-1)*entries), 3
			}
			if f.Name == permission.Lamport.String() {
				wantFrames += n - 1 // the last release, alone
				if got := s.Sent(wire.KindLamportRequeue); got != (n-1)*(entries-1) {
					t.Errorf("%d requeues, want %d: every release but the last travels with the next request", got, (n-1)*(entries-1))
				}
			}
			if frames != wantFrames {
				t.Errorf("%d frames for %d entries, want %d", frames, entries, wantFrames)
			}
			if worst > rounds*2*time.Millisecond+time.Millisecond/2 {
				t.Errorf("a grant came %v after its request: more than %d round trips (2 ms each)", worst, rounds)
			}
		})
	}
}

// TestSlowestChannel is the notes' second argument against the bakery,
// measured: an entry's latency is set by the slowest channel, once per
// read. Five members, every link 1 ms but member 5's, 10 ms each way;
// member 1 takes a lock nobody else wants. Ricart-Agrawala and Lamport
// wait one round trip on the slowest link (20 ms), the bakery three (its
// doorway, its reads of every choosing, its reads of every num against the
// ticket: 60 ms), and each costs exactly its messages.
func TestSlowestChannel(t *testing.T) {
	const n = 5
	for _, f := range factories {
		t.Run(f.Name, func(t *testing.T) {
			fs := newForgedSim(t, f, n)
			for m := uint32(1); m < n; m++ {
				fs.s.SetLinkBoth(m, n, sim.LinkConfig{Delay: 10 * time.Millisecond})
			}
			fs.s.Run(2 * time.Second)
			fs.s.ResetCounts()
			asked := fs.s.Now()
			if !fs.lock(1, "x", time.Second) {
				t.Fatal("not granted within 1 s")
			}
			took := fs.s.Now().Sub(asked)
			var msgs uint64
			for _, k := range f.Kinds {
				if k.Class() == wire.ClassMessage {
					msgs += fs.s.Sent(k) * uint64(k.Messages())
				}
			}
			rounds := time.Duration(1)
			if f.Name == permission.Bakery.String() {
				rounds = 3
			}
			lo, _ := f.Cost.Messages(n)
			t.Logf("%s: granted %v after the request, %d messages (notes %v) sent meanwhile", f.Name, took, msgs, lo)
			// The last answer's Step leaves the grant to the Tick it asks
			// for at once (the simulator's next instant, 1 ns on).
			if want := rounds*20*time.Millisecond + time.Nanosecond; took != want {
				t.Errorf("granted %v after the request, want %v: %d round trips on the slowest link and the Tick after the last answer", took, want, rounds)
			}
			// The entry's messages until the grant: all of them, but
			// Lamport's releases, which leave after the client's release.
			want := lo
			if f.Name == permission.Lamport.String() {
				want -= n - 1
			}
			if float64(msgs) != want {
				t.Errorf("%d messages until the grant, want %v", msgs, want)
			}
		})
	}
}
