package central_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/wire"
)

// TestTokenAskMessagesPerEntry: uncontended entries away from the
// coordinator cost the notes' three messages (request, token, token back)
// at every cluster size; the notes' N-1 program messages are the
// clients', not mutexd's.
func TestTokenAskMessagesPerEntry(t *testing.T) {
	for _, n := range []int{3, 5, 9} {
		r := &scenarioRun{t: t, variant: central.TokenAsk}
		r.newCluster(n, nil)
		s := r.s
		s.Run(3 * time.Second)
		s.ResetCounts()
		for _, id := range s.IDs() {
			if !acquired(s, id, time.Second) {
				t.Fatalf("%d members: member %d not granted", n, id)
			}
			s.Do(id, func(x core.Core) {
				if err := x.(mutex.Algorithm).Release(s.Clock(id).Now(), 1); err != nil {
					t.Fatal(err)
				}
			})
			s.Run(20 * time.Millisecond)
		}
		var sent uint64
		for _, k := range []wire.Kind{wire.KindTokenAskRequest, wire.KindCentralGrant, wire.KindCentralRelease} {
			sent += s.Sent(k)
		}
		per := float64(sent) / float64(n-1)
		t.Logf("%d members: %.2f messages per entry away from the coordinator (notes: %s)", n, per, central.TokenAskFactory.Cost.Text)
		if lo, hi := central.TokenAskFactory.Cost.Messages(n); per < lo || per > hi {
			t.Errorf("%d members: %.2f messages per entry, the notes say %s", n, per, central.TokenAskFactory.Cost.Text)
		}
	}
}

// causalReq is one request of a causal run: its member, incarnation and
// number, its stamp, and when it was granted (0: not yet).
type causalReq struct {
	member  uint32
	inc     uint32
	id      mutex.RequestID
	stamp   clock.Vector
	granted time.Duration
	ended   bool
}

// causalRun is a simulated cluster whose clients pass program messages:
// a client asks for lock x after hearing from a client of another member,
// with that member's vector, over links of different speeds (one member's
// link to the coordinator slow), so that a request often reaches the
// coordinator before a request it causally follows.
type causalRun struct {
	t       *testing.T
	s       *sim.Sim
	rng     *rand.Rand
	reqs    map[string]*causalReq // member/inc/id
	open    map[uint32]*causalReq
	holdEnd map[uint32]time.Duration
	crashed map[uint32]time.Duration // member -> its last crash
	last    map[uint32]clock.Vector  // member -> its latest request's stamp
	seen    int
	// heldBack counts the samples where the coordinator had a request
	// that was not yet eligible.
	heldBack int
}

func newCausalRun(t *testing.T, seed int64, v central.Variant) *causalRun {
	s := sim.New(sim.Config{Seed: seed, DefaultLink: sim.LinkConfig{Delay: time.Millisecond, Jitter: 4 * time.Millisecond}})
	ids := []uint32{1, 2, 3, 4, 5}
	for _, id := range ids {
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			cfg := central.DefaultLANConfig()
			cfg.MaxLease, cfg.Variant = time.Second, v
			c, err := central.New(env, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, clock.SimConfig{})
	}
	r := &causalRun{t: t, s: s, rng: rand.New(rand.NewSource(seed)), reqs: map[string]*causalReq{},
		open: map[uint32]*causalReq{}, holdEnd: map[uint32]time.Duration{}, crashed: map[uint32]time.Duration{},
		last: map[uint32]clock.Vector{}}
	// Bully elects n5; n1 and n2 have slow links to it.
	s.SetLink(1, 5, sim.LinkConfig{Delay: 30 * time.Millisecond, Jitter: 20 * time.Millisecond})
	s.SetLink(2, 5, sim.LinkConfig{Delay: 15 * time.Millisecond, Jitter: 10 * time.Millisecond})
	s.Start()
	s.Run(3 * time.Second)
	return r
}

func reqKey(member, inc uint32, id mutex.RequestID) string {
	return fmt.Sprintf("%d/%d/%d", member, inc, id)
}

func (r *causalRun) core(id uint32) *central.Core { return r.s.Core(id).(*central.Core) }

// collect reads the grants and ends since the last call.
func (r *causalRun) collect() {
	evs := r.s.Events()
	for _, e := range evs[r.seen:] {
		if e.Name != mutex.EventGranted && e.Name != mutex.EventLost && e.Name != mutex.EventReleased {
			continue
		}
		id, _ := e.Arg("request")
		q := r.open[e.Node]
		if q == nil || uint64(q.id) != id.(uint64) {
			continue
		}
		if e.Name == mutex.EventGranted {
			q.granted = e.At
			continue
		}
		q.ended = true
		delete(r.open, e.Node)
	}
	r.seen = len(evs)
}

// step lets 2 ms pass and has every live member's client act: ask (after
// another member's vector, half the time), or release a lock held long
// enough.
func (r *causalRun) step(ask bool) {
	s := r.s
	s.Run(2 * time.Millisecond)
	r.collect()
	for _, id := range s.IDs() {
		if !s.Running(id) {
			continue
		}
		if c := r.core(id); c.Report().Detail.(central.Detail).Coordinates {
			for _, ls := range c.Report().Locks {
				if ld, ok := ls.Detail.(central.LockDetail); ok && len(ld.WaitingFor) > 0 {
					r.heldBack++
				}
			}
		}
		q := r.open[id]
		switch {
		case q == nil && ask && r.rng.Intn(8) == 0:
			// The program message's vector, as the notes' processes
			// keep it (computed here for both variants: the central
			// coordinator takes none, and is judged by the same stamps).
			var after clock.Vector
			if from := uint32(r.rng.Intn(5) + 1); from != id && s.Running(from) && r.rng.Intn(2) == 0 {
				after = r.last[from].Clone()
			}
			s.Do(id, func(x core.Core) {
				c := x.(*central.Core)
				req := mutex.Request{Lock: "x", Lease: time.Second}
				if c.Config().Variant == central.TokenAsk {
					req.After = after
				}
				rid, err := c.Acquire(s.Clock(id).Now(), req)
				if err != nil {
					r.t.Fatalf("n%d: acquire: %v", id, err)
				}
				stamp := after.Clone()
				stamp.Set(id, uint64(c.Incarnation())<<32|uint64(rid))
				if got, _ := c.RequestVector(rid); c.Config().Variant == central.TokenAsk && clock.Compare(got, stamp) != clock.Equal {
					r.t.Fatalf("n%d: request %d stamped %v, want %v", id, rid, got, stamp)
				}
				r.last[id] = stamp
				q := &causalReq{member: id, inc: c.Incarnation(), id: rid, stamp: stamp}
				r.reqs[reqKey(id, q.inc, rid)], r.open[id] = q, q
				r.holdEnd[id] = 0
			})
		case q != nil && q.granted > 0 && r.holdEnd[id] == 0:
			r.holdEnd[id] = s.Elapsed() + time.Duration(1+r.rng.Intn(6))*time.Millisecond
		case q != nil && q.granted > 0 && s.Elapsed() >= r.holdEnd[id]:
			s.Do(id, func(x core.Core) {
				if err := x.(mutex.Algorithm).Release(s.Clock(id).Now(), q.id); err != nil && !errors.Is(err, mutex.ErrExpired) {
					r.t.Fatalf("n%d: release: %v", id, err)
				}
			})
		}
	}
}

// crash stops member id and starts it again 300 ms later (its requests
// are lost with its run).
func (r *causalRun) crash(id uint32) {
	r.collect()
	r.s.Crash(id)
	r.crashed[id] = r.s.Elapsed()
	delete(r.open, id)
	for range 150 {
		r.step(true)
	}
	r.s.Restart(id)
}

// violations lists every granted request granted before a request its
// stamp names (of another member, whose run did not end by a crash before
// that grant, and that was granted, or is still waiting).
func (r *causalRun) violations() []string {
	var out []string
	for _, q := range r.reqs {
		if q.granted == 0 {
			continue
		}
		for _, j := range q.stamp.IDs() {
			n := q.stamp.Get(j)
			if j == q.member {
				continue
			}
			p := r.reqs[reqKey(j, uint32(n>>32), mutex.RequestID(n&(1<<32-1)))]
			if p == nil {
				r.t.Fatalf("n%d's request %d names %d:%s, never made", q.member, q.id, j, central.StampText(n))
			}
			if at, ok := r.crashed[j]; ok && at < q.granted {
				continue // lost with its member's run
			}
			if p.granted == 0 && p.ended {
				continue // withdrawn or refused without a grant
			}
			if p.granted == 0 || p.granted > q.granted {
				out = append(out, fmt.Sprintf("n%d's request %d granted at %v before n%d's %s it follows (granted at %v)",
					q.member, q.id, q.granted, j, central.StampText(n), p.granted))
			}
		}
	}
	return out
}

// TestTokenAskCausalOrder: over many seeds, five members whose clients
// pass program messages (a request after another member's vector) over
// links of different speeds, with the coordinator crashed and restarted
// in the middle of the run: no request is granted before a request it
// causally follows, though such requests often reach the coordinator
// first (counted); the requests of a crashed member's run are the only
// ones a follower may overtake; and every request is granted in the end.
// The same schedules under the central coordinator (FIFO) do grant
// requests before their causal predecessors: the test can fail.
func TestTokenAskCausalOrder(t *testing.T) {
	var heldBack, fifoViolations int
	run := func(t *testing.T, seed int64, v central.Variant) *causalRun {
		r := newCausalRun(t, seed, v)
		for range 400 {
			r.step(true)
		}
		if seed%2 == 0 {
			r.crash(5)
		}
		for range 400 {
			r.step(true)
		}
		for range 2000 {
			r.step(false)
		}
		return r
	}
	sim.Seeds(t, 10, func(t *testing.T, seed int64) {
		r := run(t, seed, central.TokenAsk)
		if v := r.violations(); len(v) > 0 {
			t.Fatalf("%d requests granted out of causal order, first: %s", len(v), v[0])
		}
		for _, q := range r.open {
			if q.granted == 0 {
				t.Errorf("n%d's request %d never granted", q.member, q.id)
			}
		}
		if seed%2 == 1 {
			for _, id := range r.s.IDs() {
				if n := r.core(id).Report().Counters["tokenask_unknown_predecessors"]; n > 0 {
					t.Errorf("n%d granted %d requests without a predecessor it never heard of, in a run without a crash", id, n)
				}
			}
		}
		heldBack += r.heldBack
		fifoViolations += len(run(t, seed, central.Coordinator).violations())
		t.Logf("%d requests, held back by a causal predecessor in %d samples", len(r.reqs), r.heldBack)
	})
	t.Logf("held back in %d samples; the central coordinator (FIFO) granted %d requests before a causal predecessor on the same schedules",
		heldBack, fifoViolations)
	if heldBack == 0 || fifoViolations == 0 {
		t.Errorf("no request overtook a causal predecessor on the way (%d held back, %d FIFO violations): the test tests nothing", heldBack, fifoViolations)
	}
}

// TestTokenAskVectorText: the operator's text of a vector round-trips,
// and what is not a vector is refused with mutex.ErrBadVector, naming
// the entry.
func TestTokenAskVectorText(t *testing.T) {
	v, err := central.ParseVector(" 2:1.12, 1:3.7 ")
	if err != nil {
		t.Fatal(err)
	}
	if got := central.VectorText(v); got != "1:3.7,2:1.12" {
		t.Errorf("VectorText = %q", got)
	}
	if v, err := central.ParseVector(""); err != nil || v.Len() != 0 {
		t.Errorf("empty: %v %v", v, err)
	}
	for _, bad := range []string{"1", "1:3", "1:0.4", "0:1.1", "1:1.0", "1:1.1,1:2.2", "x:1.1", "1:1.4294967296", "{1:5}"} {
		if _, err := central.ParseVector(bad); !errors.Is(err, mutex.ErrBadVector) {
			t.Errorf("%q: %v, want ErrBadVector", bad, err)
		}
	}
}

// TestTokenAskAfterChecked: a client's vector naming a non-member or a
// counter that is no request is refused at the member, before anything
// is queued or sent; the central coordinator refuses any vector, and
// says so when asked for one.
func TestTokenAskAfterChecked(t *testing.T) {
	c, env := loneTokenAsk(t)
	for _, after := range []clock.Vector{clock.VectorOf(map[uint32]uint64{9: 1<<32 | 1}), clock.VectorOf(map[uint32]uint64{2: 5}), clock.VectorOf(map[uint32]uint64{2: 1 << 32})} {
		if _, err := c.Acquire(env.Now, mutex.Request{Lock: "x", After: after}); !errors.Is(err, mutex.ErrBadVector) {
			t.Errorf("after %v: %v, want ErrBadVector", after, err)
		}
	}
	if n := c.Report().Counters["requests"]; n != 0 {
		t.Errorf("%d requests queued", n)
	}
	id, err := c.Acquire(env.Now, mutex.Request{Lock: "x", After: clock.VectorOf(map[uint32]uint64{2: 1<<32 | 4, 1: 7<<32 | 9})})
	if err != nil {
		t.Fatal(err)
	}
	// The member's own entry is the request itself, whatever the client said.
	stamp, _ := c.RequestVector(id)
	if got, want := central.VectorText(stamp), fmt.Sprintf("1:%d.1,2:1.4", c.Incarnation()); got != want {
		t.Errorf("stamp %s, want %s", got, want)
	}
	c.Ready()
	c.Advance(true) // the incarnation on disk: Vector answers (TestVectorWaitsForIncarnation)
	if v, _ := c.Vector(); central.VectorText(v) != central.VectorText(stamp) {
		t.Errorf("member's vector %s, want its latest request's %s", central.VectorText(v), central.VectorText(stamp))
	}

	cc, err := central.New(env, central.DefaultLANConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cc.Acquire(env.Now, mutex.Request{Lock: "x", After: stamp}); !errors.Is(err, mutex.ErrBadVector) {
		t.Errorf("central with a vector: %v, want ErrBadVector", err)
	}
	if _, err := cc.Vector(); !errors.Is(err, mutex.ErrBadVector) {
		t.Errorf("central's vector: %v, want ErrBadVector", err)
	}
}

// loneTokenAsk is member 1 of 3 running tokenask, driven by hand (no
// simulator: its Readys are the test's to write).
func loneTokenAsk(t *testing.T) (*central.Core, core.Env) {
	t.Helper()
	env := core.Env{ID: 1, Members: []uint32{1, 2, 3}, Now: time.Unix(1000, 0)}
	cfg := central.DefaultLANConfig()
	cfg.Variant = central.TokenAsk
	c, err := central.New(env, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, env
}

// TestVectorWaitsForIncarnation: a member hands out no vector naming a
// request of an incarnation its disk does not hold yet. A crash would
// have the next run raise the same incarnation and number its requests
// from 1 again, so the stamp would name another request, which may
// itself follow the one that named it: before the fix, three requests
// waited for each other for ever (TestFailingDiskFence/tokenask/3, seed
// 26: member 2's request 1.25 named member 1's 2.1 of a run whose
// incarnation was never written, and member 1's next run, incarnation 2
// again, made a request 2.1 after member 2's 1.25).
func TestVectorWaitsForIncarnation(t *testing.T) {
	c, env := loneTokenAsk(t)
	if v, err := c.Vector(); err != nil || v.Len() != 0 {
		t.Fatalf("before any request: %v, %v; want the empty vector", central.VectorText(v), err)
	}
	if _, err := c.Acquire(env.Now, mutex.Request{Lock: "x"}); err != nil {
		t.Fatal(err)
	}
	vectorErr := func() error { _, err := c.Vector(); return err }
	if err := vectorErr(); !errors.Is(err, central.ErrVectorUnsaved) || errors.Is(err, mutex.ErrBadVector) {
		t.Fatalf("before the incarnation's write: %v, want ErrVectorUnsaved (not ErrBadVector: the member does order by vectors)", err)
	}
	if rd := c.Ready(); rd.State == nil {
		t.Fatal("the first Ready carries no state")
	}
	c.Advance(false)
	if err := vectorErr(); !errors.Is(err, central.ErrVectorUnsaved) {
		t.Fatalf("after a failed write: %v, want ErrVectorUnsaved", err)
	}
	if rd := c.Ready(); rd.State == nil {
		t.Fatal("the state is not offered again after a failed write")
	}
	c.Advance(true)
	v, err := c.Vector()
	if err != nil || central.VectorText(v) != fmt.Sprintf("1:%d.1", c.Incarnation()) {
		t.Fatalf("after the write: %s, %v; want 1:%d.1", central.VectorText(v), err, c.Incarnation())
	}
}

// TestTokenAskStatus: `mutexd status` shows the member's vector, how many
// requests were granted without a predecessor never heard of (and what
// to check when there are some), and, at the coordinator, each waiting
// request held back by its predecessor.
func TestTokenAskStatus(t *testing.T) {
	r := &scenarioRun{t: t, variant: central.TokenAsk}
	r.newCluster(3, nil)
	s := r.s
	s.Run(3 * time.Second)
	coord := coordinator(s)
	var a, b uint32
	for _, id := range s.IDs() {
		if id != coord {
			if a == 0 {
				a = id
			} else {
				b = id
			}
		}
	}
	s.SetLink(a, coord, sim.LinkConfig{Delay: 300 * time.Millisecond})
	var after clock.Vector
	s.Do(a, func(x core.Core) {
		c := x.(*central.Core)
		if _, err := c.Acquire(s.Clock(a).Now(), mutex.Request{Lock: "x"}); err != nil {
			t.Fatal(err)
		}
		after, _ = c.Vector()
	})
	s.Do(b, func(x core.Core) {
		if _, err := x.(*central.Core).Acquire(s.Clock(b).Now(), mutex.Request{Lock: "x", After: after}); err != nil {
			t.Fatal(err)
		}
	})
	s.Run(20 * time.Millisecond)
	lines, cells := statusText(t, r.core(coord))
	want := fmt.Sprintf("not yet eligible (member:request<predecessor) %d:", b)
	if !strings.Contains(cells, want) || !strings.Contains(cells, fmt.Sprintf("<%s", central.VectorText(after))) {
		t.Errorf("coordinator's lock cells %q, want %q ... <%s", cells, want, central.VectorText(after))
	}
	lines, _ = statusText(t, r.core(a))
	if !strings.Contains(lines, "Causal   : latest request's vector "+central.VectorText(after)) {
		t.Errorf("member %d's status %q, want its vector %s", a, lines, central.VectorText(after))
	}
	s.Run(time.Second)
	if lines, _ = statusText(t, r.core(coord)); !strings.Contains(lines, "0 requests granted without a predecessor") {
		t.Errorf("coordinator's status %q, want no request granted without its predecessor", lines)
	}
}

// statusText is a member's status lines and lock cells as mutexd status
// prints them (through JSON, as the CLI reads them).
func statusText(t *testing.T, c *central.Core) (lines, cells string) {
	t.Helper()
	st := c.Report()
	raw, err := json.Marshal(st.Detail)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := central.TokenAskFactory.StatusLines(st, raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range st.Locks {
		raw, _ := json.Marshal(l.Detail)
		if l.Detail == nil {
			raw = nil
		}
		cs, err := central.TokenAskFactory.LockCells(raw)
		if err != nil {
			t.Fatal(err)
		}
		cells += strings.Join(cs, " ") + "\n"
	}
	return strings.Join(ls, "\n"), cells
}
