package permission_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/permission"
	"github.com/synclab/synclab/pkg/wire"
)

// cluster is a simulated cluster with one client per member, and the
// oracle.
type cluster struct {
	t       *testing.T
	s       *sim.Sim
	rng     *rand.Rand
	ids     []uint32
	locks   []string
	drift   map[uint32]float64
	clients map[uint32]*client
	cfg     permission.Config

	seen   int
	grants map[string][]*interval
	live   map[uint64]*interval

	issued, granted int
	lastWait        time.Duration
}

// interval is one grant as real time sees it: from the grant to the
// release, or to the end of the lease (as renewed) on the granting
// member's clock. A lost lock is not shortened: a client may not know yet.
type interval struct {
	node       uint32
	lock       string
	fence      uint64
	start, end time.Duration
}

// client is the program on one member: it asks for a lock, holds it a while
// (renewing a long hold), and releases it; now and then it hangs and
// neither renews nor releases, so the lease must end it.
type client struct {
	id      uint32
	req     mutex.RequestID
	lock    string
	asked   time.Duration
	holding bool
	lease   time.Duration
	until   time.Duration
	renewAt time.Duration
	hung    bool
	nextTry time.Duration
}

func newCluster(t *testing.T, v permission.Variant, seed int64, n int, link sim.LinkConfig) *cluster {
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	r := &cluster{
		t: t, rng: rng,
		s:       sim.New(sim.Config{Seed: seed, DefaultLink: link}),
		locks:   []string{"counter", "printer"},
		drift:   map[uint32]float64{},
		clients: map[uint32]*client{},
		grants:  map[string][]*interval{},
		live:    map[uint64]*interval{},
	}
	for i := 1; i <= n; i++ {
		r.ids = append(r.ids, uint32(i))
	}
	r.cfg = permission.DefaultLANConfig()
	r.cfg.Variant = v
	r.cfg.MaxLease = time.Second
	r.cfg.HeartbeatInterval = 200 * time.Millisecond
	r.cfg.RetryInterval = 100 * time.Millisecond
	for _, id := range r.ids {
		clk := clock.SimConfig{Offset: time.Duration(rng.Int64N(int64(time.Second))), DriftPPM: rng.Float64()*200 - 100}
		r.drift[id] = clk.DriftPPM
		r.s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			cfg := r.cfg
			cfg.ID, cfg.Members, cfg.Persisted, cfg.Lamport = id, env.Members, env.State, env.Lamport
			c, err := permission.New(cfg)
			if err != nil {
				t.Fatalf("node %d: %v", id, err)
			}
			return c
		}, clk)
		r.clients[id] = &client{id: id}
	}
	return r
}

func (r *cluster) core(id uint32) *permission.Core { return r.s.Core(id).(*permission.Core) }

// trueEnd is the real time at which member id's clock reads local, given
// that it read atLocal at real time at.
func (r *cluster) trueEnd(id uint32, at time.Duration, atLocal, local time.Time) time.Duration {
	return at + time.Duration(float64(local.Sub(atLocal))/(1+r.drift[id]*1e-6))
}

func arg[T any](e sim.Event, k string) T {
	v, ok := e.Arg(k)
	if !ok {
		panic(fmt.Sprintf("event %s without %s", e.Name, k))
	}
	return v.(T)
}

// collect processes new events: the oracle's intervals and the clients'
// states. Fences must grow strictly in grant order, per lock.
func (r *cluster) collect() {
	evs := r.s.Events()
	for _, e := range evs[r.seen:] {
		if strings.HasPrefix(e.Name, "sim.") {
			if e.Name == "sim.crash" || e.Name == "sim.restart" {
				c := r.clients[e.Node]
				*c = client{id: c.id, nextTry: r.s.Elapsed() + 50*time.Millisecond}
			}
			continue
		}
		key := func() uint64 { return uint64(e.Node)<<32 | arg[uint64](e, "request") }
		switch e.Name {
		case permission.EventGranted:
			name, fence := arg[string](e, "lock"), arg[uint64](e, "fence")
			iv := &interval{node: e.Node, lock: name, fence: fence, start: e.At,
				end: r.trueEnd(e.Node, e.At, e.Local, arg[time.Time](e, "expires"))}
			if prev := r.grants[name]; len(prev) > 0 && prev[len(prev)-1].fence >= fence {
				r.t.Fatalf("%v: %s granted fence %d at node %d after fence %d\n%s", e.At, name, fence, e.Node, prev[len(prev)-1].fence, r.tail())
			}
			r.grants[name] = append(r.grants[name], iv)
			r.live[key()] = iv
			r.granted++
			c := r.clients[e.Node]
			if uint64(c.req) == arg[uint64](e, "request") {
				c.holding = true
				r.lastWait = max(r.lastWait, e.At-c.asked)
				c.lease = arg[time.Duration](e, "lease")
				c.renewAt = e.At + c.lease/3
				hold := time.Duration(r.rng.Int64N(int64(20 * time.Millisecond)))
				switch r.rng.IntN(20) {
				case 0:
					c.hung = true
				case 1, 2:
					hold = c.lease * time.Duration(1+r.rng.IntN(3))
				}
				c.until = e.At + hold
			}
		case permission.EventRenewed:
			if iv := r.live[key()]; iv != nil {
				iv.end = r.trueEnd(e.Node, e.At, e.Local, arg[time.Time](e, "expires"))
			}
			if c := r.clients[e.Node]; uint64(c.req) == arg[uint64](e, "request") {
				c.renewAt = e.At + c.lease/3
			}
		case permission.EventReleased:
			if iv := r.live[key()]; iv != nil {
				iv.end = min(iv.end, e.At)
				delete(r.live, key())
			}
		case permission.EventLost:
			delete(r.live, key())
			if c := r.clients[e.Node]; uint64(c.req) == arg[uint64](e, "request") {
				*c = client{id: c.id, nextTry: e.At + 20*time.Millisecond}
			}
		}
	}
	r.seen = len(evs)
}

// drive lets every running client act at the current instant.
func (r *cluster) drive(active bool) {
	now := r.s.Elapsed()
	for _, id := range r.ids {
		c := r.clients[id]
		if !r.s.Running(id) {
			continue
		}
		switch {
		case c.req == 0 && active && now >= c.nextTry:
			c.lock = r.locks[r.rng.IntN(len(r.locks))]
			lease := time.Duration(300+r.rng.IntN(700)) * time.Millisecond
			r.s.Do(id, func(cc core.Core) {
				req, err := cc.(*permission.Core).Acquire(r.s.Clock(id).Now(), mutex.Request{Lock: c.lock, Lease: lease, Client: "sim"})
				if err != nil {
					r.t.Fatalf("node %d: acquire: %v", id, err)
				}
				c.req, c.asked = req, now
			})
			r.issued++
		case c.holding && !c.hung && now >= c.until:
			r.s.Do(id, func(cc core.Core) {
				err := cc.(*permission.Core).Release(r.s.Clock(id).Now(), c.req)
				if err != nil && !errors.Is(err, mutex.ErrExpired) && !errors.Is(err, mutex.ErrUnknownRequest) {
					r.t.Fatalf("node %d: release %d: %v", id, c.req, err)
				}
			})
			*c = client{id: id, nextTry: now + time.Duration(r.rng.Int64N(int64(30*time.Millisecond)))}
		case c.holding && !c.hung && now >= c.renewAt:
			c.renewAt = now + c.lease
			r.s.Do(id, func(cc core.Core) { cc.(*permission.Core).Renew(r.s.Clock(id).Now(), c.req, 0) })
		case c.holding && c.hung && now >= c.until+2*c.lease:
			r.s.Do(id, func(cc core.Core) { cc.(*permission.Core).Release(r.s.Clock(id).Now(), c.req) })
			*c = client{id: id, nextTry: now}
		}
	}
}

// checkExclusion: the grants of each lock never overlap in real time.
func (r *cluster) checkExclusion() {
	for name, ivs := range r.grants {
		byStart := slices.Clone(ivs)
		slices.SortFunc(byStart, func(a, b *interval) int { return int(a.start - b.start) })
		for i := 1; i < len(byStart); i++ {
			a, b := byStart[i-1], byStart[i]
			if b.start < a.end {
				r.t.Fatalf("%s: two holders: node %d fence %d [%v, %v] and node %d fence %d from %v\n%s",
					name, a.node, a.fence, a.start, a.end, b.node, b.fence, b.start, r.window(a.start-2*time.Second, b.start+10*time.Millisecond))
			}
		}
	}
}

// window is the event log from from to to.
func (r *cluster) window(from, to time.Duration) string {
	var b strings.Builder
	for _, e := range r.s.Events() {
		if e.At >= from && e.At <= to {
			b.WriteString(e.String() + "\n")
		}
	}
	return b.String()
}

func (r *cluster) tail() string {
	evs := r.s.Events()
	var b strings.Builder
	for _, e := range evs[max(0, len(evs)-60):] {
		b.WriteString(e.String() + "\n")
	}
	return b.String()
}

func (r *cluster) run(d time.Duration, active bool) {
	end := r.s.Elapsed() + d
	for r.s.Elapsed() < end {
		r.s.Run(time.Millisecond)
		r.collect()
		r.drive(active)
	}
}

// holder returns a running member holding a lock, else any running one.
func (r *cluster) holder() uint32 {
	for _, id := range r.ids {
		if c := r.clients[id]; r.s.Running(id) && c.holding {
			return id
		}
	}
	return r.nonHolder()
}

func (r *cluster) nonHolder() uint32 {
	var out []uint32
	for _, id := range r.ids {
		if c := r.clients[id]; r.s.Running(id) && !c.holding {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return r.ids[0]
	}
	return out[r.rng.IntN(len(out))]
}

// TestSim runs both algorithms on 3 to 7 members, two locks, a client on
// every member asking for locks and holding them for up to 20 ms (or
// several leases, renewing; or hanging), over links that lose 3% of
// datagrams, duplicate 1% and reorder. Meanwhile: the holder crashes and
// restarts, a non-holder crashes and restarts (or stays down: the others
// must go on without it), the holder is paused for longer than its lease,
// a minority (the holder among it) is partitioned from the majority. The
// oracle: the grants of a lock never overlap in real time; fences grow
// strictly in grant order; once the faults stop, every request is granted.
func TestSim(t *testing.T) {
	for _, v := range []permission.Variant{permission.RicartAgrawala, permission.Lamport} {
		t.Run(v.String(), func(t *testing.T) {
			sim.Seeds(t, 16, func(t *testing.T, seed int64) { simRun(t, v, seed) })
		})
	}
}

func simRun(t *testing.T, v permission.Variant, seed int64) {
	n := 3 + int(seed%5)
	r := newCluster(t, v, seed, n, sim.LinkConfig{Delay: 200 * time.Microsecond, Jitter: 300 * time.Microsecond, Loss: 0.03, Duplicate: 0.01})
	if seed%3 == 0 {
		r.s.SetDiskFaults(r.ids[0], 0.2)
	}
	r.run(2*time.Second, true)
	if r.granted == 0 {
		t.Fatalf("nothing granted in 2 s\n%s", r.tail())
	}
	var down []uint32
	for round := range 5 {
		switch (int(seed) + round) % 5 {
		case 0:
			victim := r.holder()
			r.s.Crash(victim)
			r.run(time.Duration(200+r.rng.IntN(1500))*time.Millisecond, true)
			r.s.Restart(victim)
		case 1:
			victim := r.nonHolder()
			r.s.Crash(victim)
			if len(down) == 0 && n >= 5 {
				down = append(down, victim) // stays down: the others go on without it
				break
			}
			r.run(time.Duration(200+r.rng.IntN(1500))*time.Millisecond, true)
			r.s.Restart(victim)
		case 2:
			victim := r.holder()
			r.s.Pause(victim)
			r.run(r.cfg.MaxLease+time.Duration(r.rng.IntN(3000))*time.Millisecond, true)
			r.s.Resume(victim)
		case 3:
			h := r.holder()
			minority := []uint32{h}
			var majority []uint32
			for _, id := range r.ids {
				if id != h {
					if len(minority) < (n-1)/2 && r.rng.IntN(2) == 0 {
						minority = append(minority, id)
					} else {
						majority = append(majority, id)
					}
				}
			}
			r.s.Partition(minority, majority)
			r.run(time.Duration(500+r.rng.IntN(4000))*time.Millisecond, true)
			r.s.Heal()
		case 4:
			r.run(time.Second, true)
		}
		r.run(time.Second, true)
	}
	// Quiet: no new requests, no faults; everything asked is granted.
	r.run(10*time.Second, false)
	r.collect()
	for _, id := range r.ids {
		if c := r.clients[id]; r.s.Running(id) && c.req != 0 && !c.holding {
			t.Fatalf("node %d: request %d for %s, asked at %v, never granted\n%+v\n%s", id, c.req, c.lock, c.asked, r.core(id).Report(), r.tail())
		}
	}
	r.checkExclusion()
	t.Logf("%d members: %d requests, %d grants, longest wait %v, requests %d, answers %d", n, r.issued, r.granted, r.lastWait,
		r.s.Sent(wire.KindRARequest)+r.s.Sent(wire.KindLamportRequest), r.s.Sent(wire.KindRAReply)+r.s.Sent(wire.KindLamportAck))
}
