package central_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
)

// cycleRun is a tokenask cluster of n members for the wait-cycle tests:
// its coordinator co and the others.
type cycleRun struct {
	t      *testing.T
	s      *sim.Sim
	co     uint32
	others []uint32
}

func newCycleRun(t *testing.T, n int) *cycleRun {
	r := &scenarioRun{t: t, variant: central.TokenAsk}
	r.newCluster(n, nil)
	r.s.Run(3 * time.Second)
	c := &cycleRun{t: t, s: r.s, co: coordinator(r.s)}
	for _, id := range r.s.IDs() {
		if id != c.co {
			c.others = append(c.others, id)
		}
	}
	return c
}

// next is the stamp member id's next request will carry (after a request
// of its own, made and released, so that it has one).
func (c *cycleRun) next(id uint32) uint64 {
	var n uint64
	c.s.Do(id, func(x core.Core) {
		m := x.(*central.Core)
		req, err := m.Acquire(c.s.Clock(id).Now(), mutex.Request{Lock: "warm"})
		if err != nil {
			c.t.Fatal(err)
		}
		own, err := m.Vector()
		if err != nil {
			c.t.Fatal(err)
		}
		m.Release(c.s.Clock(id).Now(), req)
		n = own.Get(id) + 1
	})
	return n
}

// acquire asks for lock at member id, after the stamps of kv (member,
// stamp pairs).
func (c *cycleRun) acquire(id uint32, lock string, kv ...uint64) (req mutex.RequestID) {
	var after clock.Vector
	for i := 0; i+1 < len(kv); i += 2 {
		after.Set(uint32(kv[i]), kv[i+1])
	}
	c.s.Do(id, func(x core.Core) {
		var err error
		if req, err = x.(*central.Core).Acquire(c.s.Clock(id).Now(), mutex.Request{Lock: lock, After: after}); err != nil {
			c.t.Fatal(err)
		}
	})
	return req
}

func (c *cycleRun) granted(id uint32, req mutex.RequestID) bool {
	st, _ := c.s.Core(id).(*central.Core).Lookup(req)
	return st.Granted
}

// TestWaitCycleSaid: two vectors written by hand (--after) that name
// each other's next request: member a's request for x names b's next,
// and b's request for y, made then, names a's. Neither is ever granted
// (no history makes this), and the coordinator said nothing about it
// (docs/mutexd.md listed it as the one wrong vector with no WARN). Now
// it says the cycle at WARN, once, naming both requests and what to do;
// a request of the coordinator's own for z, outside it, is granted
// meanwhile.
func TestWaitCycleSaid(t *testing.T) {
	c := newCycleRun(t, 3)
	a, b := c.others[0], c.others[1]
	nextA, nextB := c.next(a), c.next(b)
	c.s.Run(time.Second)
	ra := c.acquire(a, "x", uint64(b), nextB)
	rb := c.acquire(b, "y", uint64(a), nextA)
	c.s.Run(5 * time.Second)
	rz := c.acquire(c.co, "z")
	c.s.Run(time.Second)
	if c.granted(a, ra) || c.granted(b, rb) {
		t.Fatalf("a request of the cycle granted: the test proves nothing")
	}
	if !c.granted(c.co, rz) {
		t.Errorf("member %d's request for z, with no vector, not granted beside the cycle", c.co)
	}
	said := warned(t, c.s, c.co, central.EventWaitCycle)
	if len(said) != 1 {
		t.Fatalf("the cycle said %d times at the coordinator, want once: %q", len(said), said)
	}
	for _, want := range []string{"lock x", "lock y", "--after", "withdraw one"} {
		if !strings.Contains(said[0], want) {
			t.Errorf("%s does not say %q: %s", central.EventWaitCycle, want, said[0])
		}
	}
	t.Log(said[0])
}

// TestWaitCycleSharedRequestSaid (review-mine): two cycles through the
// same requests, a -> b -> d -> a and a -> c -> d -> a (a's vector names
// b's and c's next requests, b's and c's name d's, d's names a's). A
// depth-first search that said each cycle it closed marked d done after
// the first, and c, as stuck as the others, was named in no WARN (an
// administrator withdrawing b left a, c and d stuck). The four are one
// group, said once, whole.
func TestWaitCycleSharedRequestSaid(t *testing.T) {
	c := newCycleRun(t, 5)
	a, b, cc, d := c.others[0], c.others[1], c.others[2], c.others[3]
	nA, nB, nC, nD := c.next(a), c.next(b), c.next(cc), c.next(d)
	c.s.Run(time.Second)
	reqs := map[uint32]mutex.RequestID{
		a:  c.acquire(a, "la", uint64(b), nB, uint64(cc), nC),
		b:  c.acquire(b, "lb", uint64(d), nD),
		cc: c.acquire(cc, "lc", uint64(d), nD),
		d:  c.acquire(d, "ld", uint64(a), nA),
	}
	c.s.Run(5 * time.Second)
	for id, req := range reqs {
		if c.granted(id, req) {
			t.Fatalf("member %d's request granted: the test proves nothing", id)
		}
	}
	said := warned(t, c.s, c.co, central.EventWaitCycle)
	if len(said) != 1 {
		t.Fatalf("said %d times, want once: %q", len(said), said)
	}
	for id := range reqs {
		if !strings.Contains(said[0], fmt.Sprintf("member %d's", id)) {
			t.Errorf("member %d's request, stuck with the others, not named: %s", id, said[0])
		}
	}
}
