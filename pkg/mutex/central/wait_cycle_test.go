package central_test

import (
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
)

// TestWaitCycleSaid: two vectors written by hand (--after) that name
// each other's next request: member a's request for x names b's next,
// and b's request for y, made then, names a's. Neither is ever granted
// (no history makes this), and the coordinator said nothing about it
// (docs/mutexd.md listed it as the one wrong vector with no WARN). Now
// it says the cycle at WARN, once, naming both requests and what to do;
// a request of the coordinator's own for z, outside it, is granted
// meanwhile.
func TestWaitCycleSaid(t *testing.T) {
	r := &scenarioRun{t: t, variant: central.TokenAsk}
	r.newCluster(3, nil)
	s := r.s
	s.Run(3 * time.Second)
	co := coordinator(s)
	var a, b uint32
	for _, id := range s.IDs() {
		if id != co {
			if a == 0 {
				a = id
			} else {
				b = id
			}
		}
	}
	// next is the stamp member id's next request will carry.
	next := func(id uint32) clock.Vector {
		var v clock.Vector
		s.Do(id, func(x core.Core) {
			c := x.(*central.Core)
			req, err := c.Acquire(s.Clock(id).Now(), mutex.Request{Lock: "warm"})
			if err != nil {
				t.Fatal(err)
			}
			s.Run(0)
			own, err := c.Vector()
			if err != nil {
				t.Fatal(err)
			}
			c.Release(s.Clock(id).Now(), req)
			v = clock.Vector{}
			v.Set(id, own.Get(id)+1)
		})
		return v
	}
	acquire := func(id uint32, lock string, after clock.Vector) (req mutex.RequestID) {
		s.Do(id, func(x core.Core) {
			var err error
			if req, err = x.(*central.Core).Acquire(s.Clock(id).Now(), mutex.Request{Lock: lock, After: after}); err != nil {
				t.Fatal(err)
			}
		})
		return req
	}
	nextA, nextB := next(a), next(b)
	s.Run(time.Second)
	ra := acquire(a, "x", nextB)
	rb := acquire(b, "y", nextA)
	s.Run(5 * time.Second)
	rz := acquire(co, "z", clock.Vector{})
	s.Run(time.Second)
	look := func(id uint32, req mutex.RequestID) bool {
		st, _ := s.Core(id).(*central.Core).Lookup(req)
		return st.Granted
	}
	if look(a, ra) || look(b, rb) {
		t.Fatalf("a request of the cycle granted: the test proves nothing")
	}
	if !look(co, rz) {
		t.Errorf("member %d's request for z, with no vector, not granted beside the cycle", co)
	}
	said := warned(t, s, co, central.EventWaitCycle)
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
