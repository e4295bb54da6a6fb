package central_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/corefuzz"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/wire"
)

// FuzzCentral drives one member through a program read from the input:
// requests, grants, renewals, refusals, releases, beats and syncs from the
// coordinator it follows, other members, itself and strangers, in its
// term or any other, for its incarnation or any, with extreme sequence
// numbers, fences, stamps, leases and entry lists; election frames (so it
// follows a coordinator, or coordinates itself); its clients' acquires
// (shared and exclusive), renewals and releases; ticks; restarts from what
// it persisted; failed writes. It must never panic, and:
//   - no frame leaves with a term or an incarnation its disk does not hold;
//   - every fence granted to its clients is of the grant's term, and grows
//     with every grant of a lock in a life;
//   - the coordinator's queue stays within MaxLocks, and the metrics valid;
//   - what it persists it can restart from.
func FuzzCentral(f *testing.F) {
	corefuzz.Fuzz(f, centralSeeds, func(t testing.TB, in []byte) { runCentral(t, in, central.Coordinator) })
}

// FuzzTokenAsk is FuzzCentral for the token-asking variant: its requests
// and syncs carry vectors, from members and strangers, with counters of
// any incarnation and sequence (zero and extreme ones), for waiting
// entries or not; the same promises hold.
func FuzzTokenAsk(f *testing.F) {
	corefuzz.Fuzz(f, centralSeeds, func(t testing.TB, in []byte) { runCentral(t, in, central.TokenAsk) })
}

// FuzzCentralLate is FuzzCentral with its frames read late (corefuzz.Driver.Late: stamped at the clock's last
// reading, read after a loop's stall or a long pause): a grant or a
// confirmation found due in such a Step waits for a reading of the clock,
// and none is reported with its lease over (the Driver's check, which
// every target runs).
func FuzzCentralLate(f *testing.F) {
	corefuzz.Fuzz(f, centralSeeds, func(t testing.TB, in []byte) { runCentralFrom(t, in, central.Coordinator, true) })
}

// FuzzTokenAskLate is FuzzTokenAsk with FuzzCentralLate's late frames.
func FuzzTokenAskLate(f *testing.F) {
	corefuzz.Fuzz(f, centralSeeds, func(t testing.TB, in []byte) { runCentralFrom(t, in, central.TokenAsk, true) })
}

// TestFuzzTokenAskReachesGrants: FuzzTokenAsk's programs reach grants too.
func TestFuzzTokenAskReachesGrants(t *testing.T) {
	corefuzz.MustReach(t, "FuzzTokenAsk", centralSeeds, []string{"tokenask"}, func(t testing.TB, in []byte) (string, int) {
		return "tokenask", runCentral(t, in, central.TokenAsk)
	})
}

// BenchmarkFuzzCentral is FuzzCentral's cost per execution (execs/s).
func BenchmarkFuzzCentral(b *testing.B) {
	corefuzz.Bench(b, "FuzzCentral", centralSeeds, func(t testing.TB, in []byte) { runCentral(t, in, central.Coordinator) })
}

var centralSeeds = [][]byte{
	{},
	{0, 0, 5, 0, 5, 0, 5, 3, 1, 0, 6, 0, 0, 1, 6, 1, 1, 2, 0, 0, 0},
	[]byte("\x01\x00\x00\x05\x00\x05\x03\x00\x06\x07\x00\x01\x02\x08\x09\x04\x00\x00\x06\x05\x03\x02"),
}

// TestFuzzCentralReachesGrants: the programs FuzzCentral starts from drive
// the member to grants, so its fence checks run.
func TestFuzzCentralReachesGrants(t *testing.T) {
	corefuzz.MustReach(t, "FuzzCentral", centralSeeds, []string{"central"}, func(t testing.TB, in []byte) (string, int) {
		return "central", runCentral(t, in, central.Coordinator)
	})
}

// centralSteps bounds a program (corefuzz's doc, "What a program costs").
const centralSteps = 100

// runCentral runs one program of FuzzCentral and returns the grants it
// reached.
func runCentral(t testing.TB, in []byte, v central.Variant) (grants int) {
	return runCentralFrom(t, in, v, false)
}

// runCentralFrom runs a program whose frames are stamped late (Late) when
// late.
func runCentralFrom(t testing.TB, in []byte, v central.Variant, late bool) (grants int) {
	{
		p := corefuzz.NewProgram(in)
		members := []bully.Member{{ID: 1}, {ID: 2}, {ID: 3}}
		ids := []uint32{1, 2, 3}
		self := uint32(1 + p.Intn(3))
		lim := epoch.Spaced(epoch.MaxRound, bully.TermBurst, 1)
		cfg := central.DefaultLANConfig()
		cfg.MaxLocks, cfg.MaxQueue, cfg.Variant = 8, 32, v
		var d *corefuzz.Driver
		fences := corefuzz.Fences{}
		d = &corefuzz.Driver{
			New: func(disk []byte) (core.Core, error) {
				return central.New(core.Env{ID: self, Members: ids, Now: d.Now, Rand: rand.New(rand.NewPCG(1, 2)), State: disk}, cfg)
			},
			Sent: func(m core.Message, disk []byte) error { return checkSent(m, disk) },
			Ready: corefuzz.OnEvent(mutex.EventGranted, func(e core.Event) error {
				fence, term := corefuzz.EventArg(e, "fence").(uint64), corefuzz.EventArg(e, "term").(uint64)
				base, err := central.FenceBase(term, ids)
				if err != nil || fence <= base || fence-base >= 1<<32 {
					return fmt.Errorf("granted fence %#x in term %#x (%v)", fence, term, err)
				}
				grants++
				var mode mutex.Mode
				if err := mode.UnmarshalText([]byte(corefuzz.EventArg(e, "mode").(string))); err != nil {
					return err
				}
				return fences.GrantedMode(corefuzz.EventArg(e, "lock").(string), mode, fence)
			}),
		}
		if late {
			d.Late = p.Late
		}
		cc := func() *central.Core { return d.Core.(*central.Core) }
		d.Inspect = func() error {
			if st := cc().Report(); len(st.Locks) > cfg.MaxLocks*2 {
				return fmt.Errorf("%d locks, MaxLocks %d", len(st.Locks), cfg.MaxLocks)
			}
			return corefuzz.CheckMetrics(cc(), 0)
		}
		if err := d.Start(); err != nil {
			t.Fatal(err)
		}
		names := []string{"x", "y"}
		clients := corefuzz.Clients{Driver: d}
		peers := centralPeers{count: map[uint64]uint64{}, modes: map[uint64]wire.CentralMode{}, tokenAsk: v == central.TokenAsk}
		for steps := 0; p.More() && steps < centralSteps; steps++ {
			fail := p.Intn(8) == 0
			var err error
			lead, term, _ := cc().Election().Leader()
			switch p.Intn(10) {
			case 0, 1:
				if p.Intn(8) == 0 {
					// A hint that a member's port closed, true or
					// forged, before the tick.
					if err = d.Hint(p, ids, fail); err != nil {
						break
					}
				}
				err = d.Tick(time.Duration(1+p.Intn(1500))*time.Millisecond, fail)
			case 2:
				if err = d.Restart(); err == nil {
					clear(fences)
					clients.Forget()
				}
			case 3:
				err = d.Step(corefuzz.ElectionFrame(p, term, lim, members, self), fail)
			case 4:
				err = clients.Acquire(p, corefuzz.LockName(p, names), corefuzz.Mode(p), fail) // name, then mode
			case 5:
				err = clients.Touch(p, fail)
			case 6, 7:
				// Correct peers answer what the member sent.
				err = d.Deliver(p, self, ids, func(m core.Message, peer uint32) error {
					if a, ok := peers.answer(m, peer, self, ids); ok {
						return d.Step(a, fail)
					}
					return nil
				})
			default:
				err = d.Step(centralFrame(p, lead, term, lim, ids, self, cc().Incarnation(), names, v), fail)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Finish(); err != nil {
			t.Fatal(err)
		}
	}
	return grants
}

// centralPeers are the member's correct peers: as the coordinator it
// follows, they grant its requests (fences of the term, counted up) and
// confirm its renewals; as followers of it, they answer its beats with
// syncs, the support it needs to grant.
type centralPeers struct {
	count map[uint64]uint64           // per term, the grants made
	modes map[uint64]wire.CentralMode // per request seq, its mode
	stamp uint32
	// tokenAsk: the member runs the token-asking variant (its peers sync
	// with its kinds).
	tokenAsk bool
}

// answer is what peer answers to m, a frame member self sent (ok false:
// nothing).
func (r *centralPeers) answer(m core.Message, peer, self uint32, ids []uint32) (core.Message, bool) {
	a := core.Message{From: peer, To: self, Term: m.Term, Stream: m.Stream}
	var g wire.CentralGrant
	switch m.Kind {
	case wire.KindCentralRequest, wire.KindTokenAskRequest:
		var q wire.CentralRequest
		base, err := central.FenceBase(m.Term, ids)
		if m.Kind == wire.KindTokenAskRequest {
			var tq wire.TokenAskRequest
			err = errors.Join(err, tq.UnmarshalBinary(m.Payload))
			q = tq.CentralRequest
		} else {
			err = errors.Join(err, q.UnmarshalBinary(m.Payload))
		}
		if err != nil {
			return a, false
		}
		r.count[m.Term]++
		r.modes[q.Seq] = q.Mode
		a.Kind = wire.KindCentralGrant
		g = wire.CentralGrant{Name: q.Name, Mode: q.Mode, Incarnation: q.Incarnation, Seq: q.Seq, Fence: base + r.count[m.Term], Echo: q.Stamp, LeaseMS: q.LeaseMS}
	case wire.KindCentralRenew:
		var q wire.CentralRenew
		if q.UnmarshalBinary(m.Payload) != nil {
			return a, false
		}
		a.Kind = wire.KindCentralRenewed
		g = wire.CentralGrant{Name: q.Name, Mode: r.modes[q.Seq], Incarnation: q.Incarnation, Seq: q.Seq, Fence: q.Fence, Echo: q.Stamp, LeaseMS: q.LeaseMS}
	case wire.KindCentralBeat:
		var b wire.CentralBeat
		if b.UnmarshalBinary(m.Payload) != nil {
			return a, false
		}
		r.stamp++
		sync := wire.CentralSync{Incarnation: 1, Stamp: r.stamp, Echo: b.Beat}
		a.Kind, a.Payload = wire.KindCentralSync, corefuzz.Encode(sync)
		if r.tokenAsk {
			a.Kind, a.Payload = wire.KindTokenAskSync, corefuzz.Encode(wire.TokenAskSync{CentralSync: sync})
		}
		return a, true
	default:
		return a, false
	}
	a.Payload = corefuzz.Encode(g)
	return a, true
}

// checkSent: a frame leaves only with its term's election state and its
// incarnation on the sender's disk.
func checkSent(m core.Message, disk []byte) error {
	saved, err := central.Restore(disk)
	if err != nil {
		return err
	}
	if !central.Handles(m.Kind) {
		return nil
	}
	// The reservation bounds a claim that leaves before its catch-up
	// write (bully.Config.Reserve).
	term, reserved, _ := bully.RestoreReserved(saved.Election)
	if m.Term > max(term, reserved) {
		return fmt.Errorf("%v of term %#x left with %#x on disk (reserved %#x)", m.Kind, m.Term, term, reserved)
	}
	var inc uint32
	switch m.Kind {
	case wire.KindCentralRequest:
		var r wire.CentralRequest
		_ = r.UnmarshalBinary(m.Payload)
		inc = r.Incarnation
	case wire.KindTokenAskRequest:
		var r wire.TokenAskRequest
		_ = r.UnmarshalBinary(m.Payload)
		inc = r.Incarnation
	case wire.KindCentralSync:
		var s wire.CentralSync
		_ = s.UnmarshalBinary(m.Payload)
		inc = s.Incarnation
	case wire.KindTokenAskSync:
		var s wire.TokenAskSync
		_ = s.UnmarshalBinary(m.Payload)
		inc = s.Incarnation
	case wire.KindCentralRenew:
		var r wire.CentralRenew
		_ = r.UnmarshalBinary(m.Payload)
		inc = r.Incarnation
	}
	if inc > saved.Incarnation {
		return fmt.Errorf("%v of incarnation %d left with %d on disk", m.Kind, inc, saved.Incarnation)
	}
	return nil
}

// centralFrame is a frame of the algorithm to member self chosen by the
// program: any of its kinds, from the coordinator it follows, a member,
// itself or a stranger, in its term or another, for its incarnation or
// another, with extreme values, and sometimes a garbage payload.
func centralFrame(p *corefuzz.Program, lead uint32, term uint64, lim epoch.Limit, ids []uint32, self, inc uint32, names []string, v central.Variant) core.Message {
	kinds := []wire.Kind{wire.KindCentralRequest, wire.KindCentralGrant, wire.KindCentralRelease, wire.KindCentralRenew,
		wire.KindCentralRenewed, wire.KindCentralRefuse, wire.KindCentralBeat, wire.KindCentralSync}
	m := core.Message{Kind: kinds[p.Intn(len(kinds))], To: self, Term: term}
	switch p.Intn(8) {
	case 0:
		m.From = self
	case 1:
		m.From = 9
	case 2, 3, 4:
		m.From = lead
	default:
		m.From = ids[p.Intn(len(ids))]
	}
	if p.Intn(4) == 0 {
		m.Term = p.Epoch(term, lim, ids)
	}
	name := names[p.Intn(len(names))]
	if p.Intn(6) == 0 {
		name = fmt.Sprintf("j%d", p.Intn(100))
	}
	incarnation := inc
	switch p.Intn(6) {
	case 0:
		incarnation = p.U32()
	case 1:
		incarnation = 1
	}
	seq := uint64(1 + p.Intn(6))
	if p.Intn(6) == 0 {
		seq = p.U64() | 1
	}
	base, _ := central.FenceBase(m.Term, ids)
	fence := base + uint64(1+p.Intn(4))
	if p.Intn(5) == 0 {
		fence = p.U64() | 1
	}
	stamp := uint32(p.Intn(40))
	if p.Intn(6) == 0 {
		stamp = p.U32()
	}
	leaseMS := []uint32{0, 100, 1000, 3000, 3001, 1 << 31, 50}[p.Intn(7)]
	mode := wire.CentralMode(p.Intn(2))
	var b []byte
	switch m.Kind {
	case wire.KindCentralRequest:
		b, _ = wire.CentralRequest{Name: name, Mode: mode, Incarnation: incarnation, Seq: seq, Stamp: stamp, LeaseMS: leaseMS}.AppendBinary(nil)
	case wire.KindCentralGrant, wire.KindCentralRenewed:
		b, _ = wire.CentralGrant{Name: name, Mode: mode, Incarnation: incarnation, Seq: seq, Fence: fence, Echo: stamp, LeaseMS: leaseMS}.AppendBinary(nil)
	case wire.KindCentralRelease:
		if p.Bool() {
			fence = 0
		}
		b, _ = wire.CentralRelease{Name: name, Incarnation: incarnation, Seq: seq, Fence: fence}.AppendBinary(nil)
	case wire.KindCentralRenew:
		b, _ = wire.CentralRenew{Name: name, Incarnation: incarnation, Seq: seq, Fence: fence, Stamp: stamp, LeaseMS: leaseMS}.AppendBinary(nil)
	case wire.KindCentralRefuse:
		b, _ = wire.CentralRefuse{Name: name, Reason: wire.CentralRefuseReason(1 + p.Intn(3)), Incarnation: incarnation, Seq: seq}.AppendBinary(nil)
	case wire.KindCentralBeat:
		b, _ = wire.CentralBeat{Beat: stamp, HoldMS: p.U32() >> 1, Quiet: p.Bool()}.AppendBinary(nil)
	case wire.KindCentralSync:
		s := wire.CentralSync{Flags: p.Byte() & 3, Incarnation: incarnation, Stamp: stamp, Echo: uint32(p.Intn(20)), MaxSeq: seq + uint64(p.Intn(3))}
		if s.Flags&wire.CentralSyncPrevQuiet != 0 {
			s.Prev = p.Byte() % 8 // a member's rank, or beyond the cluster
		}
		for range p.Intn(4) {
			e := wire.CentralSyncEntry{Name: names[p.Intn(len(names))], Mode: wire.CentralMode(p.Intn(2)), LeaseMS: leaseMS, Seq: 1 + uint64(p.Intn(int(min(s.MaxSeq, 8))))}
			if p.Bool() {
				e.Held, e.Fence, e.LeftMS = true, fence, []uint32{1, 900, 3000, 1 << 30}[p.Intn(4)]
			}
			s.Entries = append(s.Entries, e)
		}
		b, _ = s.AppendBinary(nil)
	}
	m.Payload = b
	if v == central.TokenAsk {
		m = tokenAskFrame(p, m, ids)
	}
	if p.Intn(12) == 0 {
		m.Payload = []byte{p.Byte(), p.Byte(), p.Byte()}
	}
	return m
}

// tokenAskFrame turns a central request or sync into the token-asking
// variant's (mostly), with vectors chosen by the program: members' and
// strangers', counters of any incarnation and sequence.
func tokenAskFrame(p *corefuzz.Program, m core.Message, ids []uint32) core.Message {
	vec := func() []byte {
		var v clock.Vector
		for range p.Intn(4) {
			id := ids[p.Intn(len(ids))]
			if p.Intn(6) == 0 {
				id = 9
			}
			n := uint64(1+p.Intn(3))<<32 | uint64(1+p.Intn(6))
			switch p.Intn(8) {
			case 0:
				n = p.U64() | 1
			case 1:
				n = uint64(p.Intn(3)) // incarnation 0
			}
			v.Set(id, n)
		}
		b, _ := v.AppendBinary(nil)
		return b
	}
	if p.Intn(6) == 0 {
		return m // the other variant's kind: refused
	}
	switch m.Kind {
	case wire.KindCentralRequest:
		var r wire.CentralRequest
		if r.UnmarshalBinary(m.Payload) == nil {
			m.Kind, m.Payload = wire.KindTokenAskRequest, corefuzz.Encode(wire.TokenAskRequest{Vector: vec(), CentralRequest: r})
		}
	case wire.KindCentralSync:
		var s wire.CentralSync
		if s.UnmarshalBinary(m.Payload) == nil {
			ts := wire.TokenAskSync{CentralSync: s}
			for _, e := range s.Entries {
				if !e.Held && p.Bool() && (len(ts.Vectors) == 0 || ts.Vectors[len(ts.Vectors)-1].Seq < e.Seq) {
					ts.Vectors = append(ts.Vectors, wire.TokenAskVector{Seq: e.Seq, Vector: vec()})
				}
			}
			m.Kind, m.Payload = wire.KindTokenAskSync, corefuzz.Encode(ts)
		}
	}
	return m
}
