package permission_test

import (
	"fmt"
	"net/netip"
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

// forgedSim is a simulated cluster of n members of algorithm f, whose
// grants it notes (frames are forged with sim.Forge).
type forgedSim struct {
	t      *testing.T
	s      *sim.Sim
	grants map[mutex.RequestID]bool
}

func newForgedSim(t *testing.T, f mutex.Factory, n uint32) *forgedSim {
	return newForgedSimWith(t, f, n, mutex.Options{})
}

// newForgedSimWith is newForgedSim with the drivers' options opt.
func newForgedSimWith(t *testing.T, f mutex.Factory, n uint32, opt mutex.Options) *forgedSim {
	fs := &forgedSim{t: t, s: sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: time.Millisecond}}), grants: map[mutex.RequestID]bool{}}
	for id := uint32(1); id <= n; id++ {
		fs.s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			a, err := f.New(env, opt)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}, clock.SimConfig{})
	}
	fs.s.OnReady(func(r sim.Ready) {
		for _, o := range r.Core.(mutex.Algorithm).Outcomes() {
			if g, ok := o.(mutex.Granted); ok {
				fs.grants[g.ID] = true
			}
		}
	})
	fs.s.Start()
	return fs
}

// requestKind is the kind of algorithm f's request, which a forger sends
// (the bakery's: the read of a member's num against a ticket, which is
// Ricart-Agrawala's request).
func requestKind(f mutex.Factory) wire.Kind {
	switch f.Name {
	case permission.Lamport.String():
		return wire.KindLamportRequest
	case permission.Bakery.String():
		return wire.KindBakeryTicket
	}
	return wire.KindRARequest
}

// lock acquires lock name at member id and releases it once granted; it
// reports whether that happened within d.
func (fs *forgedSim) lock(id uint32, name string, d time.Duration) bool {
	var req mutex.RequestID
	var err error
	fs.s.Do(id, func(c core.Core) {
		req, err = c.(mutex.Algorithm).Acquire(fs.s.Clock(id).Now(), mutex.Request{Lock: name})
	})
	if err != nil {
		fs.t.Fatalf("acquire %s at %d: %v", name, id, err)
	}
	if !fs.s.RunUntil(func() bool { return fs.grants[req] }, d) {
		return false
	}
	fs.s.Do(id, func(c core.Core) { err = c.(mutex.Algorithm).Release(fs.s.Clock(id).Now(), req) })
	return err == nil
}

// TestForgedIncarnationUndone is issue 29's third attack: one request "from
// 1" to member 2 with incarnation 99 (member 1 is at 1; jumps up to 1024
// are taken). On main member 2 then refused every real frame of member 1 as
// stale_incarnation, and lock x timed out at members 1 and 2, also after
// member 1 restarted, until member 2 restarted. Now member 1's next frame
// stamped after the forged one (one round trip: member 2's frames carry
// the forged stamp to it) brings its incarnation back (epoch.Life), and x
// is granted at both.
func TestForgedIncarnationUndone(t *testing.T) {
	for _, f := range factories {
		t.Run(f.Name, func(t *testing.T) {
			fs := newForgedSim(t, f, 3)
			fs.s.Run(2 * time.Second)
			if !fs.lock(2, "x", 5*time.Second) {
				t.Fatal("x not granted at member 2 before the attack")
			}
			inc := fs.s.Core(1).(*permission.Core).Incarnation()
			kind := requestKind(f)
			stamp := fs.s.Node(2).Status().Lamport + 1000
			if err := fs.s.Forge(1, 2, kind, 0, stamp, wire.PermRequest{Name: "x", Incarnation: inc + 98, Stamp: stamp}); err != nil {
				t.Fatalf("the forged request was refused: %v", err)
			}
			for _, id := range []uint32{2, 1, 2} {
				if !fs.lock(id, "x", 5*time.Second) {
					t.Fatalf("x not granted at member %d within 5 s of the forged incarnation %d", id, inc+98)
				}
			}
		})
	}
}

// TestForgedRequestsFillNoTable is issue 29's fourth attack: 5000 requests
// "from 1" naming made-up locks, to members 2 and 3. On main they filled
// both lock tables (4096 entries): new locks at members 2 and 3 timed out
// or were refused (too many locks). Now the entries member 1's frames make
// count against its share (a quarter of the table with three members), so
// members 2 and 3 keep room for their own clients and for each other; and
// member 1's next idle heartbeat, which says it asks for nothing, ends the
// requests it never made: its share is free again, and it is granted too.
func TestForgedRequestsFillNoTable(t *testing.T) {
	for _, f := range factories {
		t.Run(f.Name, func(t *testing.T) {
			fs := newForgedSim(t, f, 3)
			taken := fs.floodFrom1(f, 2*time.Second)
			share := mutex.DefaultMaxLocks / 2 / 2
			for _, id := range []uint32{2, 3} {
				st := fs.s.Core(id).(*permission.Core).Report()
				t.Logf("member %d: %d of 5000 forged requests taken, %d locks in its table, share_full %d", id, taken[id], len(st.Locks), st.Counters["share_full"])
				if len(st.Locks) > share {
					t.Errorf("member %d keeps %d locks, member 1's share is %d", id, len(st.Locks), share)
				}
			}
			for i := range 5 {
				for _, id := range []uint32{2, 3} {
					if !fs.lock(id, fmt.Sprintf("real-%d", i), 5*time.Second) {
						t.Fatalf("lock real-%d at member %d not granted within 5 s of the flood", i, id)
					}
				}
			}
			if !fs.lock(1, "new", 5*time.Second) {
				t.Fatalf("member 1's lock not granted within 5 s of the flood: member 2's counters %v", fs.s.Core(2).(*permission.Core).Report().Counters)
			}
		})
	}
}

// floodFrom1 sends members 2 and 3 5000 requests "from 1" naming made-up
// locks each, after quiet seconds, and returns how many each took.
func (fs *forgedSim) floodFrom1(f mutex.Factory, quiet time.Duration) map[uint32]int {
	fs.s.Run(quiet)
	inc := fs.s.Core(1).(*permission.Core).Incarnation()
	kind := requestKind(f)
	taken := map[uint32]int{}
	// Stamped below the receivers' clocks (which only grow): no stamp of
	// the flood is refused for being ahead.
	stamp := min(fs.s.Node(2).Status().Lamport, fs.s.Node(3).Status().Lamport)
	for i := range 5000 {
		for _, to := range []uint32{2, 3} {
			if fs.s.Forge(1, to, kind, 0, stamp, wire.PermRequest{Name: fmt.Sprintf("junk-%d", i), Incarnation: inc, Stamp: stamp}) == nil {
				taken[to]++
			}
		}
	}
	return taken
}

// TestForgedShareEndedWhileBusy: member 1 asks for a lock 10 ms after the
// flood of TestForgedRequestsFillNoTable ends, its share full at members
// 2 and 3, so no idle heartbeat of it comes between. Its busy heartbeats
// name its oldest open request (PermHeartbeat.Oldest), which ends the
// forged ones stamped before it, and spends the leaves given it before
// it: it is granted within a retry or two. Without the field (the last CI
// run of issue 29's work) it stayed refused while it asked, until its
// request timed out. (A request stamped before the answers to forged
// frames reach it cannot end them: those answers could be leaves for it.
// Its disowning of those answers does: TestForgedFloodWhileAsking.)
func TestForgedShareEndedWhileBusy(t *testing.T) {
	for _, f := range factories {
		t.Run(f.Name, func(t *testing.T) {
			fs := newForgedSim(t, f, 3)
			// Half a heartbeat interval after member 1's idle heartbeats
			// (1 s apart from its start).
			fs.floodFrom1(f, 2500*time.Millisecond)
			if full := fs.s.Core(2).(*permission.Core).Report().Counters["share_full"]; full == 0 {
				t.Fatal("member 1's share at member 2 never filled: the test did not attack")
			}
			// The answers to the flood reach member 1 (10 ms, a tenth of
			// a heartbeat interval): its request is stamped after them.
			fs.s.Run(10 * time.Millisecond)
			asked := fs.s.Now()
			granted := fs.lock(1, "new", 2*time.Second)
			t.Logf("member 1's lock granted %v after it asked; member 2's counters %v", fs.s.Now().Sub(asked), fs.s.Core(2).(*permission.Core).Report().Counters)
			if !granted {
				t.Fatalf("member 1's lock, asked with its share full, not granted within 2 s: member 2's counters %v", fs.s.Core(2).(*permission.Core).Report().Counters)
			}
			// Ended by member 1's busy heartbeat (wants_ended_idle) or, a
			// round trip after each was answered, by its disowning of the
			// answer (TestForgedFloodWhileAsking): either way member 2's
			// entries for them are idle and reclaimed.
			if c := fs.s.Core(2).(*permission.Core).Report().Counters; f.Name == "lamport" && c["wants_ended_idle"]+c["locks_reclaimed"] == 0 {
				t.Error("member 2 ended no forged request: the lock was granted some other way")
			}
		})
	}
}

// TestForgedHugeNum: the bakery's numbers from the wire. A forger sends
// member 2, in member 1's name, every bakery frame with its num or ticket
// at the last value the codec takes (2^47-1), first in a frame stamped
// at the forger's whim (the node refuses it: too far ahead of member 1's
// clock), then in a frame stamped just above member 2's clock (the core
// refuses it: a num above its frame's Lamport time is no num an honest
// member can have); then a ticket as high as the node lets a frame be
// stamped, which is taken. Nothing is wedged or used up: member 2's clock
// moves by no more than the stamps of the frames taken, and the lock is
// granted at members 2, 1 and 3 as before (the forged request of member 1
// ends at member 1's next heartbeat, which says it asks for nothing).
func TestForgedHugeNum(t *testing.T) {
	fs := newForgedSim(t, permission.BakeryFactory, 3)
	fs.s.Run(2 * time.Second)
	if !fs.lock(2, "x", 5*time.Second) {
		t.Fatal("x not granted at member 2 before the attack")
	}
	inc := fs.s.Core(1).(*permission.Core).Incarnation()
	huge := uint64(wire.MaxPermStamp)
	before := fs.s.Node(2).Status().Lamport
	var refused []string
	for _, k := range []wire.Kind{wire.KindBakeryDoorway, wire.KindBakeryChoosing, wire.KindBakeryTicket} {
		for _, at := range []uint64{huge, fs.s.Node(2).Status().Lamport + 10} {
			err := fs.s.Forge(1, 2, k, 0, at, wire.PermRequest{Name: "x", Incarnation: inc, Stamp: huge, Fence: huge << 16})
			if err == nil {
				t.Errorf("%v stamped %d with ticket %d taken", k, at, huge)
			}
			refused = append(refused, fmt.Sprintf("%v@%d: %v", k, at, err))
		}
	}
	for _, k := range []wire.Kind{wire.KindBakeryNumber, wire.KindBakeryChosen, wire.KindBakeryTicketReply} {
		for _, at := range []uint64{huge, fs.s.Node(2).Status().Lamport + 10} {
			err := fs.s.Forge(1, 2, k, 0, at, wire.PermReply{Name: "x", Incarnation: inc, Answers: 1, Stamp: 1, Fence: huge << 16, Want: huge})
			if err == nil {
				t.Errorf("%v stamped %d with num %d taken", k, at, huge)
			}
			refused = append(refused, fmt.Sprintf("%v@%d: %v", k, at, err))
		}
	}
	t.Logf("refused: %v", refused)
	if moved := fs.s.Node(2).Status().Lamport - before; moved > 1<<10 {
		t.Errorf("member 2's Lamport clock moved by %d", moved)
	}
	if c := fs.s.Core(2).(*permission.Core).Report().Counters; c["rejected_implausible"] != 6 {
		t.Errorf("member 2's counters %v: want the six frames stamped near its clock rejected_implausible", c)
	}
	// As high as the node lets a frame be stamped (its burst, 2^26, above
	// the highest a member can have reached), a num at its frame's stamp
	// is taken: the clock moves as any frame so stamped moves it, and the
	// tickets, 47 bits, are far from used up.
	high := fs.s.Node(2).Status().Lamport + 1<<25
	if err := fs.s.Forge(1, 2, wire.KindBakeryTicket, 0, high, wire.PermRequest{Name: "x", Incarnation: inc, Stamp: high}); err != nil {
		t.Fatalf("a ticket read stamped %d at its frame's stamp refused: %v", high, err)
	}
	if now := fs.s.Node(2).Status().Lamport; now > high+1<<10 {
		t.Errorf("member 2's Lamport clock at %d after a frame stamped %d", now, high)
	}
	for _, id := range []uint32{2, 1, 3} {
		if !fs.lock(id, "x", 5*time.Second) {
			t.Fatalf("x not granted at member %d within 5 s of the forged nums", id)
		}
	}
}

// TestForgedFloodWhileAsking: the flood of TestForgedRequestsFillNoTable
// goes on while member 1 asks: every millisecond 2 more requests "from
// 1" naming made-up locks, stamped at the receivers' clocks, so after
// member 1's own request. Its busy heartbeats end only the forged ones
// stamped before its request, so before the fix its share at members 2
// and 3 stayed full (share_full) for as long as the flood lasted, and its
// request timed out. Now member 1 disowns each answer to a request it
// never made (a Lamport release, a Ricart-Agrawala reply or the bakery's
// ticket reply that asks for nothing), which ends that request where it
// was answered a round trip after it was taken: the share is free again
// and member 1's request is granted while the flood goes on (at its first
// resend, 0.5 s). The bakery's flood is of ticket reads, its requests.
func TestForgedFloodWhileAsking(t *testing.T) {
	for _, f := range []mutex.Factory{permission.RicartAgrawalaFactory, permission.LamportFactory, permission.BakeryFactory} {
		t.Run(f.Name, func(t *testing.T) {
			fs := newForgedSim(t, f, 3)
			fs.floodFrom1(f, 2500*time.Millisecond)
			inc := fs.s.Core(1).(*permission.Core).Incarnation()
			kind := requestKind(f)
			n := 0
			flood := func() {
				stamp := min(fs.s.Node(2).Status().Lamport, fs.s.Node(3).Status().Lamport)
				for range 2 {
					n++
					for _, to := range []uint32{2, 3} {
						fs.s.Forge(1, to, kind, 0, stamp, wire.PermRequest{Name: fmt.Sprintf("flood-%d", n), Incarnation: inc, Stamp: stamp})
					}
				}
			}
			var req mutex.RequestID
			var err error
			fs.s.Do(1, func(c core.Core) {
				req, err = c.(mutex.Algorithm).Acquire(fs.s.Clock(1).Now(), mutex.Request{Lock: "new"})
			})
			if err != nil {
				t.Fatal(err)
			}
			asked := fs.s.Now()
			for !fs.grants[req] && fs.s.Now().Sub(asked) < 3*time.Second {
				flood()
				fs.s.Run(time.Millisecond)
			}
			c2 := fs.s.Core(2).(*permission.Core).Report().Counters
			t.Logf("after %v, %d forged requests more: granted %v; member 2's counters %v", fs.s.Now().Sub(asked), n, fs.grants[req], c2)
			if c2["share_full"] == 0 {
				t.Fatal("member 1's share at member 2 never filled: the test did not attack")
			}
			if !fs.grants[req] {
				t.Fatalf("member 1's lock not granted within 3 s while the flood went on")
			}
		})
	}
}

// TestDisownOnlyWithoutKey: one request "from 1" naming a lock member 1
// never asked for, to member 2, which answers member 1. Without a key
// member 1 disowns the answer and member 2's entry for it is idle again;
// with one (mutex.Options.Authenticated: no frame is forged, an answer
// about a lock with no request open is a late copy) it is counted as
// before and nothing is sent back.
func TestDisownOnlyWithoutKey(t *testing.T) {
	for _, f := range factories {
		for _, keyed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/keyed=%v", f.Name, keyed), func(t *testing.T) {
				fs := newForgedSimWith(t, f, 3, mutex.Options{Authenticated: keyed})
				fs.s.Run(2500 * time.Millisecond)
				inc := fs.s.Core(1).(*permission.Core).Incarnation()
				stamp := fs.s.Node(2).Status().Lamport
				if err := fs.s.Forge(1, 2, requestKind(f), 0, stamp, wire.PermRequest{Name: "never", Incarnation: inc, Stamp: stamp}); err != nil {
					t.Fatal(err)
				}
				fs.s.Run(20 * time.Millisecond)
				c1 := fs.s.Core(1).(*permission.Core).Report().Counters
				if got, want := c1["answers_disowned"], map[bool]uint64{false: 1, true: 0}[keyed]; got != want || c1["stray_answers"] != 1 {
					t.Fatalf("member 1's counters %v: want answers_disowned %d, stray_answers 1", c1, want)
				}
			})
		}
	}
}

// TestDisownGrantsNothing: a disowning answers no incarnation that runs
// (1<<32-1: a stored incarnation from 1<<32-2 on is refused), so it is
// never taken as a permission. Ricart-Agrawala, with the oracle: a
// request for x forged in member 1's name reaches member 2, whose reply
// member 1 disowns; member 2's own request for x is stamped exactly as
// that disowning (its clock moved one step, a frame it took, before its
// client asked) and lost on its way to member 1 (link 2->1 cut: member 2
// never resends to a member that answered). The disowning once answered
// member 2's incarnation, so member 2 took it as member 1's permission,
// which member 1 never lent: member 1 then gave member 2 up on its
// silence, not after the lease member 2 could hold, and was granted x
// 0.5 s after member 2's isolation while member 2 still held it (8 s
// lease): two holders. Now member 2 waits for member 1's real reply,
// which never comes before it is isolated, and only member 1 is granted.
// The bakery's ticket reply is disowned the same way (a ticket reply
// forged in member 2's name): its disowning answers no incarnation
// either. (Two holders cannot follow there: a ticket reply counts for
// the ticket, which member 1 took in with member 2's choosing read
// before it could answer it, so every stamp member 1 sends after is
// above it.)
func TestDisownGrantsNothing(t *testing.T) {
	for _, f := range []mutex.Factory{permission.RicartAgrawalaFactory, permission.BakeryFactory} {
		t.Run(f.Name, func(t *testing.T) {
			c := mutextest.New(t, 1, mutextest.Config{Factory: f, Members: 3, Faults: []mutex.Fault{},
				Options: mutex.Options{Lease: 8 * time.Second}})
			s := c.Sim()
			c.Run(2*time.Second, false)
			s.SetLink(2, 1, sim.LinkConfig{Delay: time.Millisecond})
			s.SetLink(1, 2, sim.LinkConfig{Delay: 5 * time.Millisecond})
			c1, c2 := s.Core(1).(*permission.Core), s.Core(2).(*permission.Core)
			reply := wire.KindRAReply
			if f.Name == permission.Bakery.String() {
				reply = wire.KindBakeryTicketReply
			}
			var disowning uint64
			s.OnSend(func(sf sim.SentFrame) {
				if sf.From == 1 && sf.Frame.Receiver == 2 && sf.Frame.Kind == reply && disowning == 0 {
					var r wire.PermReply
					if err := r.UnmarshalBinary(sf.Frame.Payload); err != nil {
						t.Fatalf("member 1's reply: %v", err)
					}
					disowning = sf.Frame.Lamport
					if r.Answers != 1<<32-1 {
						t.Errorf("member 1's disowning, stamped %d, answers incarnation %d (member 2's: %d), not 1<<32-1, which no member runs",
							disowning, r.Answers, c2.Incarnation())
					}
				}
			})
			if reply == wire.KindBakeryTicketReply {
				if err := s.Forge(2, 1, reply, 0, 1<<20, wire.PermReply{Name: "x", Incarnation: c2.Incarnation(),
					Answers: c1.Incarnation(), Stamp: 1}); err != nil {
					t.Fatalf("the forged reply was refused: %v", err)
				}
				if !s.RunUntil(func() bool { return disowning != 0 }, time.Second) {
					t.Fatal("member 1 did not disown the forged ticket reply")
				}
				return
			}
			stamp := uint64(1 << 20)
			if err := s.Forge(1, 2, requestKind(f), 0, stamp, wire.PermRequest{Name: "x", Incarnation: c1.Incarnation(), Stamp: stamp}); err != nil {
				t.Fatalf("the forged request was refused: %v", err)
			}
			if !s.RunUntil(func() bool { return disowning != 0 }, time.Second) {
				t.Fatal("member 1 did not disown member 2's reply to the forged request")
			}
			// Member 2's request, asked now, is stamped as the disowning on
			// its way (5 ms) to it, and never reaches member 1.
			c2.MoveLamport(disowning - 1)
			s.Cut(2, 1)
			c.Hold(2, "x", 8*time.Second)
			c.Run(500*time.Millisecond, false)
			t.Logf("member 2 holds x: %v", c.Holding(2))
			s.Isolate(2)
			c.Run(100*time.Millisecond, false)
			c.Hold(1, "x", time.Second)
			asked := s.Elapsed()
			for !c.Holding(1) && s.Elapsed()-asked < 10*time.Second {
				c.Run(10*time.Millisecond, false)
			}
			if !c.Holding(1) {
				t.Fatalf("member 1 not granted x within 10 s of member 2's isolation\n%s", c.Tail())
			}
			t.Logf("member 1 granted x %v after it asked", s.Elapsed()-asked)
			c.Check() // two holders: member 2's lease runs 8 s
		})
	}
}
