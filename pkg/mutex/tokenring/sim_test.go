package tokenring_test

import (
	"cmp"
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
	"github.com/synclab/synclab/pkg/mutex/tokenring"
	"github.com/synclab/synclab/pkg/wire"
)

// ring is a simulated ring with one client per member, and the oracle.
type ring struct {
	t       *testing.T
	s       *sim.Sim
	rng     *rand.Rand
	ids     []uint32
	locks   []string
	drift   map[uint32]float64
	clients map[uint32]*client
	cfg     tokenring.Config

	seen   int                    // events processed
	grants map[string][]*interval // per lock, in grant order
	live   map[uint64]*interval   // by node<<32|request

	issued, granted int
	lastWait        time.Duration // longest wait of a granted request
	waits           []wait        // every granted request of a client
}

// wait is one client's request, from its asking to its grant.
type wait struct {
	node           uint32
	asked, granted time.Duration
}

// interval is one grant as real time sees it: from the grant to the
// release, or to the end of the lease (as renewed) on the granting
// member's clock. A lost lock is not shortened: a client may not know yet.
type interval struct {
	node       uint32
	lock       string
	fence      uint64
	start, end time.Duration
	released   bool
}

// client is the program on one member that takes locks: it asks for one,
// holds it a while (renewing a long hold), and releases it; a few times it
// "hangs" and neither renews nor releases, so the lease must end it.
type client struct {
	id      uint32
	req     mutex.RequestID
	lock    string
	asked   time.Duration
	holding bool
	lease   time.Duration
	until   time.Duration // release at (virtual time)
	renewAt time.Duration
	hung    bool
	nextTry time.Duration
}

func newRing(t *testing.T, seed int64, n int) *ring {
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	r := &ring{
		t: t, rng: rng,
		s: sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{
			Delay: 200 * time.Microsecond, Jitter: 300 * time.Microsecond, Loss: 0.03, Duplicate: 0.01}}),
		locks:   []string{"counter", "printer"},
		drift:   map[uint32]float64{},
		clients: map[uint32]*client{},
		grants:  map[string][]*interval{},
		live:    map[uint64]*interval{},
	}
	for i := 1; i <= n; i++ {
		r.ids = append(r.ids, uint32(i))
	}
	r.cfg = tokenring.DefaultLANConfig()
	r.cfg.MaxLease = time.Second
	r.cfg.Members = r.ids
	for _, id := range r.ids {
		id := id
		clk := clock.SimConfig{Offset: time.Duration(rng.Int64N(int64(time.Second))), DriftPPM: rng.Float64()*200 - 100}
		r.drift[id] = clk.DriftPPM
		r.s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			disk := env.State
			cfg := r.cfg
			cfg.ID, cfg.Persisted, cfg.Rand = id, disk, r.s.NewRand()
			c, err := tokenring.New(cfg)
			if err != nil {
				t.Fatalf("node %d: %v", id, err)
			}
			return c
		}, clk)
		r.clients[id] = &client{id: id}
	}
	return r
}

func (r *ring) core(id uint32) *tokenring.Core { return r.s.Core(id).(*tokenring.Core) }

// trueEnd is the real time at which member id's clock reads local, given
// that it read at at real time at (clocks only drift here: mutexd never
// adjusts one).
func (r *ring) trueEnd(id uint32, at time.Duration, atLocal, local time.Time) time.Duration {
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
// states.
func (r *ring) collect() {
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
		case mutex.EventGranted:
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
				r.waits = append(r.waits, wait{node: e.Node, asked: c.asked, granted: e.At})
				c.lease = arg[time.Duration](e, "lease")
				c.renewAt = e.At + c.lease/3
				hold := time.Duration(r.rng.Int64N(int64(20 * time.Millisecond)))
				switch r.rng.IntN(20) {
				case 0:
					c.hung = true // neither renews nor releases
				case 1, 2:
					hold = c.lease * time.Duration(1+r.rng.IntN(3)) // needs renewals
				}
				c.until = e.At + hold
			}
		case mutex.EventRenewed:
			if iv := r.live[key()]; iv != nil {
				iv.end = r.trueEnd(e.Node, e.At, e.Local, arg[time.Time](e, "expires"))
			}
			if c := r.clients[e.Node]; uint64(c.req) == arg[uint64](e, "request") {
				c.renewAt = e.At + c.lease/3
			}
		case mutex.EventReleased:
			if iv := r.live[key()]; iv != nil {
				iv.end, iv.released = min(iv.end, e.At), true
				delete(r.live, key())
			}
		case mutex.EventLost:
			delete(r.live, key())
			if c := r.clients[e.Node]; uint64(c.req) == arg[uint64](e, "request") {
				*c = client{id: c.id, nextTry: e.At + 20*time.Millisecond}
			}
		}
	}
	r.seen = len(evs)
}

// drive lets every running client act at the current instant.
func (r *ring) drive(active bool) {
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
				req, err := cc.(*tokenring.Core).Acquire(r.s.Clock(id).Now(), mutex.Request{Lock: c.lock, Lease: lease, Client: "sim"})
				if err != nil {
					r.t.Fatalf("node %d: acquire: %v", id, err)
				}
				c.req, c.asked = req, now
			})
			r.issued++
		case c.holding && !c.hung && now >= c.until:
			r.s.Do(id, func(cc core.Core) {
				err := cc.(*tokenring.Core).Release(r.s.Clock(id).Now(), c.req)
				if err != nil && !errors.Is(err, mutex.ErrExpired) && !errors.Is(err, mutex.ErrUnknownRequest) {
					r.t.Fatalf("node %d: release %d: %v", id, c.req, err)
				}
			})
			*c = client{id: id, nextTry: now + time.Duration(r.rng.Int64N(int64(30*time.Millisecond)))}
		case c.holding && !c.hung && now >= c.renewAt:
			c.renewAt = now + c.lease // the next is set by the renewal's event
			r.s.Do(id, func(cc core.Core) {
				cc.(*tokenring.Core).Renew(r.s.Clock(id).Now(), c.req, 0) // failures arrive as lock_lost
			})
		case c.holding && c.hung && now >= c.until+2*c.lease:
			// The hung client gives up on its request (its lease ran out
			// long ago): it releases what it no longer holds.
			r.s.Do(id, func(cc core.Core) { cc.(*tokenring.Core).Release(r.s.Clock(id).Now(), c.req) })
			*c = client{id: id, nextTry: now}
		}
	}
}

// checkTokens: never two members holding a token of the same generation of
// a lock.
func (r *ring) checkTokens() {
	for _, name := range r.locks {
		held := map[uint64]uint32{}
		for _, id := range r.ids {
			if !r.s.Up(id) {
				continue
			}
			g, ok := r.core(id).TokenGeneration(name)
			if !ok {
				continue
			}
			if other, dup := held[g]; dup {
				r.t.Fatalf("%v: %s: members %d and %d both hold a token of generation %#x\n%s", r.s.Elapsed(), name, other, id, g, r.tail())
			}
			held[g] = id
		}
	}
}

// checkSent: every frame that announces a generation (a token, its
// acknowledgement, a prepare, a promise or a passed check) leaves only once
// the sender's disk holds that generation for the lock, whatever the disk
// does.
func (r *ring) checkSent(f sim.SentFrame) {
	var name string
	var gen uint64
	switch f.Frame.Kind {
	case wire.KindToken:
		var t wire.Token
		if t.UnmarshalBinary(f.Frame.Payload) != nil {
			return
		}
		name, gen = t.Name, t.Generation
	case wire.KindTokenAck:
		var a wire.TokenAck
		if a.UnmarshalBinary(f.Frame.Payload) != nil {
			return
		}
		name, gen = a.Name, a.Generation
	case wire.KindRingProbe:
		var p wire.RingProbe
		if p.UnmarshalBinary(f.Frame.Payload) != nil || p.Op != wire.ProbePrepare {
			return
		}
		name, gen = p.Name, p.Generation
	case wire.KindRingProbeReply:
		var p wire.RingProbeReply
		if p.UnmarshalBinary(f.Frame.Payload) != nil || p.Status == wire.ProbeHave || p.Op == wire.ProbeLocate || p.Op == wire.ProbeVouch {
			return
		}
		name, gen = p.Name, p.Generation
	default:
		return
	}
	disk, err := tokenring.PromisedOnDisk(f.Disk, name)
	if err != nil {
		r.t.Fatalf("node %d: disk: %v", f.From, err)
	}
	if gen > disk {
		r.t.Fatalf("%v: node %d sent %v for %s with generation %#x; its disk holds %#x\n%s", r.s.Elapsed(), f.From, f.Frame.Kind, name, gen, disk, r.tail())
	}
}

// checkExclusion: the grants of each lock never overlap in real time.
func (r *ring) checkExclusion() {
	for name, ivs := range r.grants {
		byStart := slices.Clone(ivs)
		slices.SortFunc(byStart, func(a, b *interval) int { return cmp.Compare(a.start, b.start) })
		for i := 1; i < len(byStart); i++ {
			a, b := byStart[i-1], byStart[i]
			if b.start < a.end {
				r.t.Fatalf("%s: two holders: node %d fence %d [%v, %v] and node %d fence %d from %v\n%s",
					name, a.node, a.fence, a.start, a.end, b.node, b.fence, b.start, r.tail())
			}
		}
	}
}

func (r *ring) tail() string {
	evs := r.s.Events()
	var b strings.Builder
	for _, e := range evs[max(0, len(evs)-60):] {
		b.WriteString(e.String() + "\n")
	}
	return b.String()
}

// checkAllGranted fails the test if a client's request is still waiting
// (after a quiet run: no new requests, no faults).
func (r *ring) checkAllGranted() {
	r.t.Helper()
	r.collect()
	for _, id := range r.ids {
		if c := r.clients[id]; c.req != 0 && !c.holding {
			r.t.Fatalf("node %d: request %d for %s, asked at %v, never granted\n%+v\n%s", id, c.req, c.lock, c.asked, r.core(id).Report(), r.tail())
		}
	}
}

// run advances d in 1 ms steps, driving the clients and checking tokens.
func (r *ring) run(d time.Duration, active bool) {
	end := r.s.Elapsed() + d
	for r.s.Elapsed() < end {
		r.s.Run(time.Millisecond)
		r.collect()
		r.drive(active)
		r.checkTokens()
	}
}

// TestSimTokenRing: 3 to 7 members, two locks, a client on every member
// asking for locks and holding them for up to 20 ms (or several leases,
// renewing; or hanging), over links that lose 3% of datagrams, duplicate
// 1% and reorder. Meanwhile: the token holder crashes and restarts, a
// non-holder crashes and restarts, a token in flight is dropped, a member
// is paused for longer than the maximum lease. The oracle: the grants of a
// lock never overlap in real time (a grant lasts until its release, or its
// lease's end on its member's clock, as renewed); fences grow strictly in
// grant order; never two members with a token of one generation; once the
// faults stop, every request is granted.
func TestSimTokenRing(t *testing.T) {
	sim.Seeds(t, 30, func(t *testing.T, seed int64) {
		n := 3 + int(seed%5)
		r := newRing(t, seed, n)
		// Half the seeds run as a keyed cluster runs (no vouching), half
		// as one without a key: both must keep the oracle.
		r.cfg.TrustSenders = seed%2 == 1
		if seed%3 == 0 {
			// Disks that fail a fifth of their writes at two members: no
			// promise may leave before it is written (checkSent).
			r.s.SetDiskFaults(r.ids[0], 0.2)
			r.s.SetDiskFaults(r.ids[n-1], 0.2)
		}
		r.s.OnSend(r.checkSent)
		r.run(3*time.Second, true)
		if r.granted == 0 {
			t.Fatalf("nothing granted in 3 s\n%s", r.tail())
		}
		for round := range 6 {
			switch (int(seed) + round) % 4 {
			case 0: // crash the member holding a token, restart it later
				victim := r.tokenHolder()
				r.s.Crash(victim)
				r.run(time.Duration(200+r.rng.IntN(1500))*time.Millisecond, true)
				r.s.Restart(victim)
			case 1: // crash a member that holds no token
				victim := r.nonHolder()
				r.s.Crash(victim)
				r.run(time.Duration(200+r.rng.IntN(1500))*time.Millisecond, true)
				r.s.Restart(victim)
			case 2: // drop the token in flight: cut the holder's link to its successor
				a := r.tokenHolder()
				b := r.ids[(slices.Index(r.ids, a)+1)%n]
				r.s.Cut(a, b)
				r.run(time.Duration(50+r.rng.IntN(300))*time.Millisecond, true)
				r.s.Heal()
			case 3: // pause a member for longer than the longest lease
				victim := r.tokenHolder()
				r.s.Pause(victim)
				r.run(r.cfg.MaxLease+time.Duration(r.rng.IntN(2000))*time.Millisecond, true)
				r.s.Resume(victim)
			}
			r.run(2*time.Second, true)
		}
		// Quiet: no new requests, no faults; everything asked is granted.
		r.run(8*time.Second, false)
		r.checkAllGranted()
		r.checkExclusion()
		t.Logf("%d members: %d requests, %d grants, longest wait %v, tokens sent %d, probes %d",
			n, r.issued, r.granted, r.lastWait, r.s.Sent(wire.KindToken), r.s.Sent(wire.KindRingProbe))
	})
}

// tokenHolder returns a running member holding a token (or in the middle of
// passing one), else any running member.
func (r *ring) tokenHolder() uint32 {
	for _, id := range r.ids {
		if !r.s.Running(id) {
			continue
		}
		for _, name := range r.locks {
			if _, ok := r.core(id).TokenGeneration(name); ok {
				return id
			}
		}
	}
	return r.nonHolder()
}

func (r *ring) nonHolder() uint32 {
	var out []uint32
	for _, id := range r.ids {
		if !r.s.Running(id) {
			continue
		}
		has := false
		for _, name := range r.locks {
			_, ok := r.core(id).TokenGeneration(name)
			has = has || ok
		}
		if !has {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return r.ids[0]
	}
	return out[r.rng.IntN(len(out))]
}
