package tokenring_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/corefuzz"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/tokenring"
	"github.com/synclab/synclab/pkg/wire"
)

// FuzzTokenRing drives one token-ring member through a program read from
// the input: tokens, acknowledgements, probes and replies of every op from
// members, itself and strangers, about known, new and many made-up locks,
// with generations around its own, a burst away or at the end of the
// space, any fence, hop, hold, nonce and want list; its clients' acquires,
// renewals and releases; ticks; restarts from what it persisted; failed
// writes. It must never panic, and:
//   - no token, acknowledgement, prepare or promise leaves with a
//     generation its disk does not hold for the lock;
//   - what it promised for a lock (or its floor) never goes back;
//   - the table stays within MaxLocks and the metrics within their bounds;
//   - every fence it grants is of its token's generation's round, and
//     grows with every grant of the lock in a life;
//   - what it persists it can restart from.
func FuzzTokenRing(f *testing.F) {
	corefuzz.Fuzz(f, tokenRingSeeds, func(t testing.TB, in []byte) { runTokenRing(t, in) })
}

// BenchmarkFuzzTokenRing is FuzzTokenRing's cost per execution (execs/s).
func BenchmarkFuzzTokenRing(b *testing.B) {
	corefuzz.Bench(b, "FuzzTokenRing", tokenRingSeeds, func(t testing.TB, in []byte) { runTokenRing(t, in) })
}

var tokenRingSeeds = [][]byte{
	{},
	{0, 2, 6, 0, 0, 0, 4, 2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0},
	[]byte("\x00\x01\x06\x00\x00\x00\x02\x00\x00\x05\x03\x02\x01\x00\x07\x00\x06\x03"),
}

// TestFuzzTokenRingReachesGrants: the programs FuzzTokenRing starts from
// drive the member to grants, so its fence checks run.
func TestFuzzTokenRingReachesGrants(t *testing.T) {
	corefuzz.MustReach(t, "FuzzTokenRing", tokenRingSeeds, []string{"token ring"}, func(t testing.TB, in []byte) (string, int) {
		return "token ring", runTokenRing(t, in)
	})
}

// tokenRingSteps bounds a program (corefuzz's doc, "What a program
// costs").
const tokenRingSteps = 100

// runTokenRing runs one program of FuzzTokenRing and returns the grants it
// reached.
func runTokenRing(t testing.TB, in []byte) (grants int) {
	return runTokenRingFrom(t, in, false)
}

// FuzzTokenRingLate is FuzzTokenRing with its frames read late (corefuzz.Driver.Late: stamped at the clock's last
// reading, read after a loop's stall or a long pause): a grant or a
// confirmation found due in such a Step waits for a reading of the clock,
// and none is reported with its lease over (the Driver's check, which
// every target runs).
func FuzzTokenRingLate(f *testing.F) {
	corefuzz.Fuzz(f, tokenRingSeeds, func(t testing.TB, in []byte) { runTokenRingFrom(t, in, true) })
}

// runTokenRingFrom runs a program whose frames are stamped late (Late)
// when late.
func runTokenRingFrom(t testing.TB, in []byte, late bool) (grants int) {
	{
		p := corefuzz.NewProgram(in)
		ids := []uint32{1, 2, 3}
		self := uint32(1 + p.Intn(3))
		cfg := tokenring.DefaultLANConfig()
		cfg.ID, cfg.Members, cfg.MaxLocks, cfg.MaxQueue = self, ids, 16, 32
		cfg.Rand = rand.New(rand.NewPCG(1, 2))
		lim := epoch.Spaced(1<<24-1, tokenring.GenerationBurst, 1)
		fences := corefuzz.Fences{}
		var d *corefuzz.Driver
		d = &corefuzz.Driver{
			New: func(disk []byte) (core.Core, error) {
				c := cfg
				c.Persisted = disk
				return tokenring.New(c)
			},
			Sent: func(m core.Message, disk []byte) error { return checkSentGeneration(m, disk) },
			Ready: corefuzz.OnEvent(mutex.EventGranted, func(e core.Event) error {
				fence, gen := corefuzz.EventArg(e, "fence").(uint64), corefuzz.EventArg(e, "generation").(uint64)
				if fence>>40 != uint64(epoch.Round(gen)) || fence&(1<<40-1) == 0 {
					return fmt.Errorf("granted fence %#x on a token of generation %#x", fence, gen)
				}
				grants++
				return fences.Granted(corefuzz.EventArg(e, "lock").(string), fence)
			}),
		}
		if late {
			d.Late = p.Late
		}
		ring := func() *tokenring.Core { return d.Core.(*tokenring.Core) }
		d.Inspect = func() error {
			_ = ring().Report()
			return corefuzz.CheckMetrics(ring(), cfg.MaxLocks+8)
		}
		if err := d.Start(); err != nil {
			t.Fatal(err)
		}
		names := []string{"x", "y", "z"}
		promised := map[string]uint64{}
		var floor uint64
		clients := corefuzz.Clients{Driver: d}
		peers := ringPeers{passed: map[string]wire.Token{}}
		for steps := 0; p.More() && steps < tokenRingSteps; steps++ {
			fail := p.Intn(6) == 0
			var err error
			switch p.Intn(12) {
			case 0, 1:
				err = d.Tick(time.Duration(1+p.Intn(1000))*time.Millisecond, fail)
			case 2:
				if err = d.Restart(); err == nil {
					// What was never written is gone with the old life
					// (and nothing that depended on it left: Sent).
					clear(fences)
					clear(promised)
					clients.Forget()
					floor, _ = tokenring.PromisedOnDisk(d.Disk, "\x00")
				}
			case 3:
				err = clients.Acquire(p, corefuzz.LockName(p, names), mutex.Exclusive, fail)
			case 4:
				err = clients.Touch(p, fail)
			case 5, 6:
				// Correct peers answer what the member sent.
				err = d.Deliver(p, self, ids, func(m core.Message, peer uint32) error {
					if a, ok := peers.answer(p, m, peer, self, ids); ok {
						return peers.step(d, a, fail)
					}
					return nil
				})
			default:
				name := names[p.Intn(len(names))]
				switch p.Intn(6) {
				case 0:
					name = fmt.Sprintf("junk-%d", p.Intn(1000))
				case 1:
					name = "bad name!"
				}
				cur := ring().Floor()
				if g, ok := ring().Promised(name); ok {
					cur = g
				}
				err = peers.step(d, ringFrame(p, name, cur, lim, ids, self), fail)
			}
			if err != nil {
				t.Fatal(err)
			}
			// After every step, without a Report (its cost grows with
			// the state; Inspect builds one at the end): the floor and
			// every promise never go back (a lock whose entry was
			// reclaimed falls to the floor, which must cover it), and the
			// table stays within MaxLocks. The fences granted are checked
			// as they are granted (Ready).
			f := ring().Floor()
			if f < floor {
				t.Fatalf("floor went back %#x -> %#x", floor, f)
			}
			floor = f
			for name, g := range promised {
				now := floor
				if cur, ok := ring().Promised(name); ok {
					now = max(cur, floor)
				}
				if now < g {
					t.Fatalf("lock %s: promised went back %#x -> %#x", name, g, now)
				}
			}
			locks := 0
			ring().EachPromised(func(name string, g uint64) {
				locks++
				promised[name] = max(promised[name], g)
			})
			if locks > cfg.MaxLocks {
				t.Fatalf("%d locks, MaxLocks %d", locks, cfg.MaxLocks)
			}
		}
		if err := d.Finish(); err != nil {
			t.Fatal(err)
		}
	}
	return grants
}

// ringPeers are the member's correct peers: they answer its probes with
// promises and confirmations, acknowledge the tokens it passes and pass
// them back round the ring, and vouch for the last token handed to it.
type ringPeers struct {
	passed map[string]wire.Token // per lock, the last token the member was handed
}

// step hands m to the member, remembering a token it carries. A grant the
// frame completed waits for a reading of the clock (Deadline at once): the
// member is ticked a nanosecond later, as the daemon ticks it in the same
// pass when no other frame waits (node.TickDue); the program's own Ticks
// come up to a second later, past the check's freshness, and would make
// it check again before nearly every grant.
func (r ringPeers) step(d *corefuzz.Driver, m core.Message, fail bool) error {
	var tok wire.Token
	if m.Kind == wire.KindToken && tok.UnmarshalBinary(m.Payload) == nil {
		r.passed[tok.Name] = tok
	}
	if err := d.Step(m, fail); err != nil {
		return err
	}
	if dl := d.Core.(*tokenring.Core).Deadline(); !dl.After(d.Now.Add(time.Nanosecond)) {
		return d.Tick(time.Nanosecond, fail)
	}
	return nil
}

// answer is what peer answers to m, a frame member self sent (ok false:
// nothing).
func (r ringPeers) answer(p *corefuzz.Program, m core.Message, peer, self uint32, ids []uint32) (core.Message, bool) {
	a := core.Message{From: peer, To: self, Stream: m.Stream}
	switch m.Kind {
	case wire.KindRingProbe:
		var q wire.RingProbe
		if q.UnmarshalBinary(m.Payload) != nil || q.Op == wire.ProbeWant {
			return a, false
		}
		reply := wire.RingProbeReply{Op: q.Op, Name: q.Name, Status: wire.ProbeOK, Nonce: q.Nonce, Generation: q.Generation, Flags: wire.ProbeConfirmKnown}
		if q.Op == wire.ProbeVouch {
			reply.Flags = 0
			if t, ok := r.passed[q.Name]; ok && t.Generation == q.Generation {
				reply.Fence = t.Fence
			} else {
				reply.Status = wire.ProbeHave
			}
		}
		a.Kind, a.Payload = wire.KindRingProbeReply, corefuzz.Encode(reply)
	case wire.KindToken:
		var t wire.Token
		if t.UnmarshalBinary(m.Payload) != nil {
			return a, false
		}
		a.Kind, a.Payload = wire.KindTokenAck, corefuzz.Encode(wire.TokenAck{Name: t.Name, Status: wire.TokenAccepted, Generation: t.Generation, Hop: t.Hop})
		if p.Bool() {
			// Round the ring and back, from the member's predecessor.
			pred := ids[(slices.Index(ids, self)+len(ids)-1)%len(ids)]
			t.Hop += uint64(len(ids) - 1)
			t.HoldMS, t.Wants = 0, nil
			a = core.Message{From: pred, To: self, Kind: wire.KindToken, Stream: true, Payload: corefuzz.Encode(t)}
		}
	case wire.KindHeartbeat:
		a.Kind, a.Payload = wire.KindHeartbeat, m.Payload
	default:
		return a, false
	}
	return a, true
}

// checkSentGeneration: a frame that announces a generation leaves only
// with that generation on the sender's disk.
func checkSentGeneration(m core.Message, disk []byte) error {
	var name string
	var gen uint64
	switch m.Kind {
	case wire.KindToken:
		var t wire.Token
		if t.UnmarshalBinary(m.Payload) != nil {
			return fmt.Errorf("undecodable token sent")
		}
		name, gen = t.Name, t.Generation
	case wire.KindTokenAck:
		var a wire.TokenAck
		if a.UnmarshalBinary(m.Payload) != nil {
			return fmt.Errorf("undecodable ack sent")
		}
		name, gen = a.Name, a.Generation
	case wire.KindRingProbe:
		var r wire.RingProbe
		if r.UnmarshalBinary(m.Payload) != nil {
			return fmt.Errorf("undecodable probe sent")
		}
		if r.Op != wire.ProbePrepare {
			return nil
		}
		name, gen = r.Name, r.Generation
	case wire.KindRingProbeReply:
		var r wire.RingProbeReply
		if r.UnmarshalBinary(m.Payload) != nil {
			return fmt.Errorf("undecodable reply sent")
		}
		if r.Status == wire.ProbeHave || r.Op == wire.ProbeLocate || r.Op == wire.ProbeVouch {
			return nil
		}
		name, gen = r.Name, r.Generation
	default:
		return nil
	}
	saved, err := tokenring.PromisedOnDisk(disk, name)
	if err != nil {
		return err
	}
	if gen > saved {
		return fmt.Errorf("%v for %s with generation %#x left with %#x on disk", m.Kind, name, gen, saved)
	}
	return nil
}

// ringFrame is a token-ring frame about lock name chosen by the program;
// cur is what the member promised for it.
func ringFrame(p *corefuzz.Program, name string, cur uint64, lim epoch.Limit, ids []uint32, self uint32) core.Message {
	m := core.Message{To: self, From: p.From(self, 77, ids)}
	gen := p.Epoch(cur, lim, ids)
	raw := func(v interface{ AppendBinary([]byte) ([]byte, error) }) []byte {
		b, err := v.AppendBinary(nil)
		if err != nil {
			return []byte{p.Byte(), 1, 2}
		}
		return b
	}
	switch p.Intn(5) {
	case 0:
		m.Kind = wire.KindToken
		fence := uint64(epoch.Round(gen))<<40 | uint64(p.Intn(8))
		if p.Intn(4) == 0 {
			fence = p.U64()
		}
		var wants []uint32
		for range p.Intn(6) {
			wants = append(wants, max(1, p.U32()))
		}
		if p.Intn(10) == 0 {
			for i := range 1024 {
				wants = append(wants, uint32(100+i))
			}
			wants = wants[:1024]
		}
		m.Payload = raw(wire.Token{Name: name, HoldMS: p.U32(), Generation: gen, Hop: p.U64(), Fence: fence, Wants: wants})
	case 1:
		m.Kind = wire.KindTokenAck
		m.Payload = raw(wire.TokenAck{Name: name, Status: wire.TokenAckStatus(1 + p.Intn(2)), Generation: gen, Hop: uint64(p.Intn(4))})
	case 2:
		m.Kind = wire.KindRingProbe
		m.Payload = raw(wire.RingProbe{Op: wire.ProbeOp(1 + p.Intn(5)), Name: name, Nonce: uint32(p.Intn(16)), Generation: gen})
	case 3:
		m.Kind = wire.KindRingProbeReply
		m.Payload = raw(wire.RingProbeReply{Op: wire.ProbeOp(2 + p.Intn(4)), Name: name, Status: wire.ProbeStatus(1 + p.Intn(3)),
			Flags: p.Byte() & 1, Nonce: uint32(p.Intn(16)), Generation: gen, Fence: p.U64(), LeaseLeftMS: p.U32()})
	default:
		m.Kind = wire.KindHeartbeat
		m.Payload = raw(wire.Heartbeat{Interval: p.U32(), Alive: p.U32()})
	}
	return m
}
