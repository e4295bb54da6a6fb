package main

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
)

// The lease floor against the real cores: three members on the
// simulator's LAN (every frame 200 us on its way, so every answer comes
// at once), and `mutexd lock`'s own keeper fed their grants and renewals
// as lock.go feeds it (the deadline counted from before the request was
// sent, the anchoring renewal of a grant with less than two thirds of
// its lease left). A lease checkLease accepts must be kept; the floor is
// reasoned on paper, and these tests are what says the paper matches the
// cores (review-mutex3 found two places where it did not).

// floorSim is a three-member cluster of one algorithm, whose member 2
// (1, for the ring's second grant) serves the test's clients.
type floorSim struct {
	t     *testing.T
	s     *sim.Sim
	m     uint32
	lease time.Duration
	outs  []mutex.Outcome
}

// newFloorSim starts algorithm f under o and runs it idle for a second;
// members 1 and 3 are then restarted p1 and p3 later (0: not), so that
// their heartbeats run out of phase with member 2's, and the cluster runs
// four seconds more.
func newFloorSim(t *testing.T, f mutex.Factory, o mutex.Options, m uint32, p1, p3 time.Duration) *floorSim {
	t.Helper()
	s := sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: 200 * time.Microsecond}})
	for _, id := range []uint32{1, 2, 3} {
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			a, err := f.New(env, o)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}, clock.SimConfig{})
	}
	s.Run(time.Second)
	for _, r := range []struct {
		id    uint32
		after time.Duration
	}{{1, p1}, {3, p3}} {
		if r.after > 0 {
			s.Crash(r.id)
			s.Run(r.after)
			s.Restart(r.id)
		}
	}
	s.Run(4 * time.Second)
	return &floorSim{t: t, s: s, m: m, lease: o.Lease}
}

// mono is the test's monotonic clock: the simulator's elapsed time.
func (fs *floorSim) mono() time.Time { return time.Unix(0, 0).Add(fs.s.Elapsed()) }

func (fs *floorSim) do(f func(a mutex.Algorithm, now time.Time)) {
	fs.s.Do(fs.m, func(c core.Core) { f(c.(mutex.Algorithm), fs.s.Clock(fs.m).Now()) })
}

func (fs *floorSim) status(id mutex.RequestID) mutex.RequestStatus {
	var st mutex.RequestStatus
	fs.do(func(a mutex.Algorithm, _ time.Time) { st, _ = a.Lookup(id) })
	return st
}

func (fs *floorSim) left(id mutex.RequestID) time.Duration {
	return time.Duration(fs.status(id).LeaseLeftMS) * time.Millisecond
}

// acquire asks the lock for client and returns when it was sent.
func (fs *floorSim) acquire(client string) (mutex.RequestID, time.Time) {
	sent := fs.mono()
	var id mutex.RequestID
	fs.do(func(a mutex.Algorithm, now time.Time) {
		var err error
		if id, err = a.Acquire(now, mutex.Request{Lock: "x", Client: client}); err != nil {
			fs.t.Fatal(err)
		}
	})
	return id, sent
}

// renew renews id and runs until its answer (at most a lease): when it
// was sent, the lease left then, and whether it was confirmed.
func (fs *floorSim) renew(id mutex.RequestID) (sent time.Time, left time.Duration, ok bool) {
	fs.do(func(a mutex.Algorithm, _ time.Time) { a.Outcomes() })
	sent = fs.mono()
	fs.do(func(a mutex.Algorithm, now time.Time) { _ = a.Renew(now, id, 0) })
	var lost bool
	fs.s.RunUntil(func() bool {
		fs.do(func(a mutex.Algorithm, _ time.Time) {
			for _, o := range a.Outcomes() {
				switch o := o.(type) {
				case mutex.Renewed:
					ok = ok || o.ID == id
				case mutex.Lost:
					lost = lost || o.ID == id
				}
			}
		})
		return ok || lost
	}, fs.lease)
	return sent, fs.left(id), ok
}

// keep is `mutexd lock` after the grant of id, requested at sent: the
// anchoring renewal when lock.go makes one (needsAnchor), then the keeper through keptRenewals renewals. It returns
// the renewals made and the keeper's last action (Term: the command was
// stopped).
func (fs *floorSim) keep(id mutex.RequestID, sent time.Time) (int, keeperAction) {
	deadline := sent.Add(fs.left(id))
	if needsAnchor(fs.lease, deadline.Sub(fs.mono()), defaultGrace) {
		sent, left, _ := fs.renew(id)
		deadline = sent.Add(left)
	}
	k := newKeeper(fs.mono(), deadline, fs.lease, defaultGrace, "cmd")
	act := k.Tick(fs.mono())
	renewals := 0
	for renewals < keptRenewals && !act.Term {
		if act.Renew {
			renewals++
			sent, left, ok := fs.renew(id)
			out := renewOutcome{Sent: sent, Left: left}
			if !ok {
				out = renewOutcome{Sent: sent, Err: errNotConfirmed}
			}
			act = k.Renewed(fs.mono(), out)
			continue
		}
		if act.Wake.IsZero() {
			break
		}
		fs.s.Run(act.Wake.Sub(fs.mono()))
		act = k.Tick(fs.mono())
	}
	return renewals, act
}

var errNotConfirmed = simError("renewal not confirmed within a lease")

type simError string

func (e simError) Error() string { return string(e) }

// keptInSim says whether mutexd lock keeps a lock of algorithm alg at
// --lease lease, --heartbeat hb, phases p1 and p3 (newFloorSim), the
// one client of member 2; "" if so, else what happened. checkLease must
// accept the lease.
func keptInSim(t *testing.T, alg string, lease, hb, p1, p3 time.Duration) string {
	f, err := algorithms.Lookup(alg)
	if err != nil {
		t.Fatal(err)
	}
	o := opts(f, lease, hb, nil)
	if _, err := checkLease(f, o); err != nil {
		t.Fatalf("--algorithm %s --lease %v --heartbeat %v refused: %v", alg, lease, hb, err)
	}
	fs := newFloorSim(t, f, o, 2, p1, p3)
	id, sent := fs.acquire("t")
	if !fs.s.RunUntil(func() bool { return fs.status(id).Granted }, 5*time.Second) {
		return "never granted"
	}
	if renewals, act := fs.keep(id, sent); act.Term {
		return fmt.Sprintf("SIGTERM after %d renewals: %s", renewals, act.Warn)
	}
	return ""
}

// floorOf is the shortest lease checkLease accepts for alg at hb.
func floorOf(t *testing.T, alg string, hb time.Duration) time.Duration {
	f, err := algorithms.Lookup(alg)
	if err != nil {
		t.Fatal(err)
	}
	return leaseFloor(func(l time.Duration) mutex.Renewal {
		if f.Renewal == nil {
			return mutex.Renewal{}
		}
		return f.Renewal(opts(f, l, hb, nil))
	}, 0)
}

// TestFloorKeptInSim: every algorithm, at --heartbeat 200ms and 1s,
// keeps its floor, 10 ms above, and every lease 50 ms apart up to 1.5 s,
// with answers at once. Found by review-mutex3 before the permission family's
// renewals waited for a majority heard since their asking: Lamport at
// 1 s heartbeats lost every lease up to 1.5 s, and at 200 ms up to
// 520 ms; Ricart-Agrawala and the bakery at 1 s heartbeats lost 160 to
// 380 ms (their first renewals, before a majority had acknowledged the
// member, were cut by the age of the majority last heard).
func TestFloorKeptInSim(t *testing.T) {
	for _, f := range algorithms {
		for _, hb := range []time.Duration{200 * time.Millisecond, time.Second} {
			floor := floorOf(t, f.Name, hb)
			var lost []time.Duration
			var first string
			leases := []time.Duration{floor, floor + 10*time.Millisecond}
			for l := floor.Truncate(50*time.Millisecond) + 50*time.Millisecond; l <= 1500*time.Millisecond; l += 50 * time.Millisecond {
				leases = append(leases, l)
			}
			for _, l := range leases {
				if why := keptInSim(t, f.Name, l, hb, 0, 0); why != "" {
					lost = append(lost, l)
					if first == "" {
						first = why
					}
				}
			}
			if len(lost) > 0 {
				t.Errorf("%s --heartbeat %v (refused below %v): leases lost with answers at once: %v (the first: %s)", f.Name, hb, floor, lost, first)
			}
		}
	}
}

// TestFloorKeptAtEveryHeartbeatPhase: the permission family at 1 s
// heartbeats, with the other members' heartbeats at 20 phases against
// the holder's: the floor, 500 ms and 1.5 s are kept in every one.
// (Before: Lamport's 1.5 s, accepted without a warning, was lost in 12
// of the 20, its renewals cut by up to a heartbeat.)
func TestFloorKeptAtEveryHeartbeatPhase(t *testing.T) {
	for _, alg := range []string{"lamport", "ricartagrawala", "bakery"} {
		for _, l := range []time.Duration{floorOf(t, alg, time.Second), 500 * time.Millisecond, 1500 * time.Millisecond} {
			lost := 0
			var first string
			for i := 0; i < 20; i++ {
				p1 := time.Duration(1+i*37%100) * 10 * time.Millisecond
				p3 := time.Duration(1+i*53%100) * 10 * time.Millisecond
				if why := keptInSim(t, alg, l, time.Second, p1, p3); why != "" {
					lost++
					if first == "" {
						first = why
					}
				}
			}
			if lost > 0 {
				t.Errorf("%s --lease %v --heartbeat 1s: lost in %d of 20 heartbeat phases with answers at once (the first: %s)", alg, l, lost, first)
			}
		}
	}
}

// TestRingSecondGrantKeptAboveTheFloor: on the token ring, when a client
// of the member that holds the token releases, the member's next client
// is granted on the same check, up to the confirm window old, its lease
// shorter by that age; mutexd lock's anchoring renewal is made on that
// check too and does not move the end. Every lease checkLease accepts
// must be kept by the second client at every such age; one it refuses
// must say why. (review-mutex3: --lease 500ms, only warned of, and
// 600ms, accepted, were lost, the command stopped before its first
// renewal; 700 ms was kept.)
func TestRingSecondGrantKeptAboveTheFloor(t *testing.T) {
	f, err := algorithms.Lookup("tokenring")
	if err != nil {
		t.Fatal(err)
	}
	for _, lease := range []time.Duration{500 * time.Millisecond, 600 * time.Millisecond, 650 * time.Millisecond, 700 * time.Millisecond, time.Second} {
		o := opts(f, lease, time.Second, nil)
		if _, err := checkLease(f, o); err != nil {
			if want := "a grant to the next client of the member that holds the token"; !strings.Contains(err.Error(), want) {
				t.Errorf("--lease %v refused without saying why (%q): %v", lease, want, err)
			}
			continue
		}
		window := min(o.Params["confirm-window"], lease/2)
		// Every 10 ms up to the window, and a millisecond inside it.
		ages := []time.Duration{window - time.Millisecond}
		for age := time.Duration(0); age < window-time.Millisecond; age += 10 * time.Millisecond {
			ages = append(ages, age)
		}
		for _, age := range ages {
			if why := ringSecondGrant(t, f, o, age); why != "" {
				t.Errorf("--lease %v (accepted): the second client, granted %v after the first on its check: %s", lease, age, why)
				break
			}
		}
	}
}

// ringSecondGrant runs member 1's first client through a grant, waits
// age, queues a second client and releases the first; "" if mutexd lock
// keeps the second client's lock.
func ringSecondGrant(t *testing.T, f mutex.Factory, o mutex.Options, age time.Duration) string {
	fs := newFloorSim(t, f, o, 1, 0, 0)
	a, _ := fs.acquire("a")
	if !fs.s.RunUntil(func() bool { return fs.status(a).Granted }, 3*time.Second) {
		return "the first client never granted"
	}
	fs.s.Run(age)
	b, sent := fs.acquire("b")
	fs.do(func(al mutex.Algorithm, now time.Time) { _ = al.Release(now, a) })
	if !fs.s.RunUntil(func() bool { return fs.status(b).Granted }, fs.lease) {
		return "the second client never granted"
	}
	if renewals, act := fs.keep(b, sent); act.Term {
		return fmt.Sprintf("SIGTERM after %d renewals, answers at once: %s", renewals, act.Warn)
	}
	return ""
}

// TestQueuedGrantKeptAboveTheFloor: a request that waited in the queue
// (member 1 holds, member 2's client waits, then member 1 releases) is
// granted with its deadline counted from before it was sent, so the
// keeper starts with less than the lease. Below two thirds of it mutexd
// lock always renewed at once (the anchor); just above, with a lease
// under 450 ms, the keeper's SIGTERM fell due before its first renewal:
// at --lease 400ms (accepted) a wait of about 70 ms lost the lock with
// answers at once, in every algorithm. Every algorithm at its floor and
// at 400 ms, waits 10 ms to a lease, 20 ms apart.
func TestQueuedGrantKeptAboveTheFloor(t *testing.T) {
	for _, f := range algorithms {
		for _, lease := range []time.Duration{floorOf(t, f.Name, time.Second), 400 * time.Millisecond} {
			o := opts(f, lease, time.Second, nil)
			if _, err := checkLease(f, o); err != nil {
				continue // the ring's floor is above 400 ms
			}
			var lost []time.Duration
			var first string
			for wait := 10 * time.Millisecond; wait <= lease; wait += 20 * time.Millisecond {
				holder := newFloorSim(t, f, o, 1, 0, 0)
				waiter := *holder
				waiter.m = 2
				a, _ := holder.acquire("a")
				if !holder.s.RunUntil(func() bool { return holder.status(a).Granted }, 3*time.Second) {
					t.Fatalf("%s: the first client never granted", f.Name)
				}
				b, sent := waiter.acquire("b")
				holder.s.Run(wait)
				holder.do(func(al mutex.Algorithm, now time.Time) { _ = al.Release(now, a) })
				if !waiter.s.RunUntil(func() bool { return waiter.status(b).Granted }, 3*time.Second) {
					t.Fatalf("%s --lease %v: the queued client never granted (waited %v)", f.Name, lease, wait)
				}
				if renewals, act := waiter.keep(b, sent); act.Term {
					lost = append(lost, wait)
					if first == "" {
						first = fmt.Sprintf("SIGTERM after %d renewals: %s", renewals, act.Warn)
					}
				}
			}
			if len(lost) > 0 {
				t.Errorf("%s --lease %v (accepted): a client that waited in the queue lost the lock with answers at once, after waits of %v (the first: %s)", f.Name, lease, lost, first)
			}
		}
	}
}
