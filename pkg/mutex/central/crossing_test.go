package central_test

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/wire"
)

// TestGrantReadWithBeat: a member whose loop reads a grant and then a
// beat in one pass (a late loop: both waited in its kernel) takes the
// grant, and its sync answering the beat says so. The grant waits for
// the clock's reading (its lease is judged there); the sync used to
// leave at once, listing the request as waiting, which voided the grant
// (grants_superseded) and had the coordinator make it anew with a newer
// fence a sync later: a request naming it, granted with the first grant,
// was granted first (TestOracleHarsh/tokenask, seed 37: 52 ms). Now the
// answer waits for that reading too.
func TestGrantReadWithBeat(t *testing.T) {
	for _, f := range []mutex.Factory{central.Factory, central.TokenAskFactory} {
		t.Run(f.Name, func(t *testing.T) { grantReadWithBeat(t, f) })
	}
}

// crossing is a 3-member cluster of 100 ms beats (leases of 1 s unless
// newCrossingLease says) for the crossing tests: the coordinator, a member whose request for x waits behind
// another's grant, and that other, the holder.
type crossing struct {
	t                  *testing.T
	s                  *sim.Sim
	co, waiter, holder uint32
	held, waits        mutex.RequestID
	kept               []core.Message // the coordinator's frames to the waiter, kept
}

func newCrossing(t *testing.T, f mutex.Factory) *crossing {
	return newCrossingLease(t, f, time.Second)
}

func newCrossingLease(t *testing.T, f mutex.Factory, lease time.Duration) *crossing {
	x := crossingCluster(t, f, lease)
	x.held = x.acquire(x.holder, "x", clock.Vector{})
	if !x.lookup(x.holder, x.held).Granted {
		t.Fatalf("member %d not granted x", x.holder)
	}
	x.waits = x.acquire(x.waiter, "x", clock.Vector{})
	return x
}

// crossingCluster is the crossing tests' cluster, its roles chosen,
// before any request.
func crossingCluster(t *testing.T, f mutex.Factory, lease time.Duration) *crossing {
	return crossingClusterOn(t, f, lease, 1, sim.LinkConfig{Delay: time.Millisecond})
}

// crossingClusterOn is crossingCluster on links link, seed seed.
func crossingClusterOn(t *testing.T, f mutex.Factory, lease time.Duration, seed int64, link sim.LinkConfig) *crossing {
	s := sim.New(sim.Config{Seed: seed, DefaultLink: link})
	for id := uint32(1); id <= 3; id++ {
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			a, err := f.New(env, mutex.Options{Lease: lease, Heartbeat: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			return a
		}, clock.SimConfig{})
	}
	s.Start()
	s.Run(lease + time.Second) // elected, its Hold (a lease) over
	x := &crossing{t: t, s: s, co: coordinator(s)}
	if x.co == 0 {
		t.Fatal("no coordinator")
	}
	for _, id := range s.IDs() {
		if id != x.co && x.waiter == 0 {
			x.waiter = id
		} else if id != x.co {
			x.holder = id
		}
	}
	return x
}

func (x *crossing) acquire(id uint32, lock string, after clock.Vector) (req mutex.RequestID) {
	x.s.Do(id, func(c core.Core) {
		var err error
		if req, err = c.(mutex.Algorithm).Acquire(x.s.Clock(id).Now(), mutex.Request{Lock: lock, After: after}); err != nil {
			x.t.Fatal(err)
		}
	})
	x.s.Run(10 * time.Millisecond)
	return req
}

func (x *crossing) lookup(id uint32, req mutex.RequestID) mutex.RequestStatus {
	st, _ := x.s.Core(id).(mutex.Algorithm).Lookup(req)
	return st
}

// keep cuts the coordinator's link to the waiter and keeps its beats and
// grants to it from now on (keep a beat only once want says so).
func (x *crossing) keep(beats func() bool) {
	x.s.OnSend(func(sf sim.SentFrame) {
		fr := sf.Frame
		if sf.From != x.co || fr.Receiver != x.waiter && fr.Receiver != 0 || x.s.Connected(x.co, x.waiter) {
			return
		}
		if fr.Kind != wire.KindCentralGrant && (fr.Kind != wire.KindCentralBeat || !beats()) {
			return
		}
		x.kept = append(x.kept, core.Message{From: x.co, Kind: fr.Kind, Term: fr.Term, Lamport: fr.Lamport, Payload: bytes.Clone(fr.Payload)})
	})
	x.s.Cut(x.co, x.waiter)
}

// release has the holder give x back.
func (x *crossing) release() {
	x.s.Do(x.holder, func(c core.Core) {
		if err := c.(mutex.Algorithm).Release(x.s.Clock(x.holder).Now(), x.held); err != nil {
			x.t.Fatal(err)
		}
	})
}

// crossGrant keeps the coordinator's beats and grants to the waiter
// (keep), waits for a beat, has the holder release x, waits for the
// waiter's grant and 5 ms more, and returns when the grant was sent: the
// waiter, reading the kept frames (deliver, deliverCutOff), answers the
// beat with x waiting before it reads the grant, which crossed that sync.
func (x *crossing) crossGrant() (sent time.Duration) {
	x.keep(func() bool { return true })
	if !x.s.RunUntil(func() bool { return x.kind(wire.KindCentralBeat) > 0 }, time.Second) {
		x.t.Fatal("no beat to the waiter")
	}
	x.release()
	if !x.s.RunUntil(func() bool { return x.kind(wire.KindCentralGrant) > 0 }, time.Second) {
		x.t.Fatal("no grant to the waiter")
	}
	sent = x.s.Elapsed()
	x.s.Run(5 * time.Millisecond)
	return sent
}

// deliver heals the link and has the waiter's loop read the kept frames
// in one pass, stamped alike (its Tick comes after).
func (x *crossing) deliver() {
	x.s.Heal()
	x.s.OnSend(nil)
	x.stepKept()
}

// deliverCutOff is deliver with the waiter's frames to the coordinator
// lost from then on, its answers to the kept frames among them.
func (x *crossing) deliverCutOff() {
	x.s.Heal()
	x.s.OnSend(nil)
	x.s.Cut(x.waiter, x.co)
	x.stepKept()
}

// stepKept has the waiter's loop read the kept frames in one pass.
func (x *crossing) stepKept() {
	x.s.Do(x.waiter, func(c core.Core) {
		for _, m := range x.kept {
			m.To, m.Time = x.waiter, x.s.Clock(x.waiter).Now()
			if err := c.Step(m); err != nil {
				x.t.Fatalf("%s: %v", m.Kind, err)
			}
		}
	})
}

func (x *crossing) kind(k wire.Kind) int {
	n := 0
	for _, m := range x.kept {
		if m.Kind == k {
			n++
		}
	}
	return n
}

func grantReadWithBeat(t *testing.T, f mutex.Factory) {
	x := newCrossing(t, f)
	x.keep(func() bool { return x.kind(wire.KindCentralGrant) > 0 }) // a beat before the grant: lost with the cut
	x.release()
	if !x.s.RunUntil(func() bool { return len(x.kept) == 2 }, time.Second) {
		t.Fatalf("kept %d frames to member %d, want its grant and a beat", len(x.kept), x.waiter)
	}
	var grant wire.CentralGrant
	if err := grant.UnmarshalBinary(x.kept[0].Payload); err != nil {
		t.Fatal(err)
	}
	x.deliver()
	x.s.Run(500 * time.Millisecond)
	st := x.lookup(x.waiter, x.waits)
	counters := x.s.Core(x.waiter).(*central.Core).Report().Counters
	if !st.Granted || st.Fence != grant.Fence {
		t.Fatalf("member %d holds x: %v, fence %d; want the grant it read, fence %d (grants_superseded=%d: its sync answering the beat voided it)",
			x.waiter, st.Granted, st.Fence, grant.Fence, counters["grants_superseded"])
	}
	if n := x.s.Core(x.co).(*central.Core).Report().Counters["grants_renewed_by_sync"]; n != 0 {
		t.Fatalf("the coordinator made %d grants anew", n)
	}
}

// TestDependentWaitsForTakenGrant: the token-asking coordinator counts
// a request served once its member has shown it took the grant, not
// when the grant leaves. Here the waiter's loop reads a beat, answers it
// (its request still waiting), then reads the grant, which it refuses
// (it echoes a stamp older than that sync: the coordinator makes it
// anew); the holder's request for y, which names the waiter's request,
// used to be granted with the first grant, a round trip and more before
// the waiter held x (TestOracleHarsh/tokenask seed 175: a beat and a
// grant sent together, the beat read first; 42 ms). Now y waits for the
// waiter's sync listing x held.
func TestDependentWaitsForTakenGrant(t *testing.T) {
	x := newCrossing(t, central.TokenAskFactory)
	after, err := x.s.Core(x.waiter).(mutex.Causal).Vector()
	if err != nil {
		t.Fatal(err)
	}
	dep := x.acquire(x.holder, "y", after) // the holder's client heard from the waiter's
	if x.lookup(x.holder, dep).Granted {
		t.Fatal("y granted before the request it names")
	}
	x.crossGrant()
	x.deliver() // the beat first, then the grant (and what followed it)
	granted := func(id uint32, req mutex.RequestID) func() bool {
		return func() bool { return x.lookup(id, req).Granted }
	}
	if !x.s.RunUntil(granted(x.waiter, x.waits), time.Second) {
		t.Fatal("the waiter never granted x")
	}
	at := x.s.Elapsed()
	if x.lookup(x.holder, dep).Granted {
		t.Fatalf("y granted to member %d before member %d held x, which its request names (voided grants: %d)",
			x.holder, x.waiter, x.s.Core(x.waiter).(*central.Core).Report().Counters["grants_superseded"])
	}
	if !x.s.RunUntil(granted(x.holder, dep), time.Second) {
		t.Fatal("y never granted")
	}
	t.Logf("x held by member %d at %v, y granted %v later", x.waiter, at, x.s.Elapsed()-at)
}
