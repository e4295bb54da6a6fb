package permission_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/corefuzz"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/permission"
	"github.com/synclab/synclab/pkg/wire"
)

// FuzzPermission drives one member (either algorithm) through a program
// read from the input: requests, replies, acknowledgements, releases and
// heartbeats from members, itself and strangers, about known, new and
// many made-up locks, with stamps, fences, wants and incarnations around
// its own, at the ends of their ranges and past them, and any frame
// Lamport time; its clients' acquires, renewals and releases; ticks of any
// length (stalls); restarts from what it persisted; failed writes. It must
// never panic, and:
//   - no frame leaves carrying an incarnation its disk does not hold, or a
//     stamp (request, answer, want, the frame's Lamport time) at or above
//     the Lamport floor on its disk;
//   - the fences it grants grow for each lock within a life, and stay
//     below its floor;
//   - the lock table stays within MaxLocks, the metrics within bounds;
//   - what it persists it can restart from.
func FuzzPermission(f *testing.F) {
	corefuzz.Fuzz(f, permissionSeeds, func(t testing.TB, in []byte) { runPermission(t, in, 0) })
}

// FuzzBakery is FuzzPermission for the distributed bakery: the same
// programs, checks and forged frames (the bakery's reads and answers
// among them, with nums and tickets at and past the ends of their range),
// and peers that answer its three reads.
func FuzzBakery(f *testing.F) {
	corefuzz.Fuzz(f, permissionSeeds, func(t testing.TB, in []byte) { runPermission(t, in, permission.Bakery) })
}

// FuzzPermissionLate is FuzzPermission with its frames read late (corefuzz.Driver.Late: stamped at the clock's last
// reading, read after a loop's stall or a long pause): a grant or a
// confirmation found due in such a Step waits for a reading of the clock,
// and none is reported with its lease over (the Driver's check, which
// every target runs).
func FuzzPermissionLate(f *testing.F) {
	corefuzz.Fuzz(f, permissionSeeds, func(t testing.TB, in []byte) { runPermissionFrom(t, in, 0, true) })
}

// FuzzBakeryLate is FuzzBakery with FuzzPermissionLate's late frames.
func FuzzBakeryLate(f *testing.F) {
	corefuzz.Fuzz(f, permissionSeeds, func(t testing.TB, in []byte) { runPermissionFrom(t, in, permission.Bakery, true) })
}

// TestFuzzBakeryReachesGrants: the programs FuzzBakery starts from drive
// the member through its three reads to grants, so its fence checks run.
func TestFuzzBakeryReachesGrants(t *testing.T) {
	corefuzz.MustReach(t, "FuzzBakery", permissionSeeds, []string{permission.Bakery.String()}, func(t testing.TB, in []byte) (string, int) {
		v, n := runPermission(t, in, permission.Bakery)
		return v.String(), n
	})
}

// BenchmarkFuzzPermission is FuzzPermission's cost per execution
// (execs/s).
func BenchmarkFuzzPermission(b *testing.B) {
	corefuzz.Bench(b, "FuzzPermission", permissionSeeds, func(t testing.TB, in []byte) { runPermission(t, in, 0) })
}

var permissionSeeds = [][]byte{
	{},
	{0, 3, 0, 0, 5, 1, 2, 0, 0, 0, 9, 9, 5, 2, 1, 1, 0, 0, 3, 1},
	[]byte("\x01\x03\x01\x00\x05\x00\x01\x02\x03\x00\x00\x05\x03\x02\x01\x00\x07\x00\x06\x03\x04\x01"),
}

// TestFuzzPermissionReachesGrants: the programs FuzzPermission starts from
// drive the member (either algorithm) to grants, so its fence checks run.
func TestFuzzPermissionReachesGrants(t *testing.T) {
	corefuzz.MustReach(t, "FuzzPermission", permissionSeeds, []string{permission.RicartAgrawala.String(), permission.Lamport.String()}, func(t testing.TB, in []byte) (string, int) {
		v, n := runPermission(t, in, 0)
		return v.String(), n
	})
}

// permissionSteps bounds a program (corefuzz's doc, "What a program
// costs").
const permissionSteps = 120

// runPermission runs one program of FuzzPermission (variant 0: the
// program picks Ricart-Agrawala or Lamport) or FuzzBakery (variant
// Bakery) and returns the algorithm it ran and the grants it reached.
func runPermission(t testing.TB, in []byte, only permission.Variant) (variant permission.Variant, grants int) {
	return runPermissionFrom(t, in, only, false)
}

// runPermissionFrom runs a program whose frames are stamped late (Late)
// when late.
func runPermissionFrom(t testing.TB, in []byte, only permission.Variant, late bool) (variant permission.Variant, grants int) {
	{
		p := corefuzz.NewProgram(in)
		ids := []uint32{1, 2, 3}
		self := uint32(1 + p.Intn(3))
		variant = permission.RicartAgrawala
		if p.Bool() {
			variant = permission.Lamport
		}
		if only != 0 {
			variant = only
		}
		var lamport *clock.Lamport
		cfg := permission.DefaultLANConfig()
		cfg.Variant, cfg.ID, cfg.Members, cfg.MaxLocks, cfg.MaxQueue = variant, self, ids, 16, 32
		fences := corefuzz.Fences{}
		var d *corefuzz.Driver
		d = &corefuzz.Driver{
			Scheduled: true, // no stale deadline after a Tick
			New: func(disk []byte) (core.Core, error) {
				c := cfg
				c.Persisted = disk
				lamport = new(clock.Lamport)
				c.Lamport = lamport
				return permission.New(c)
			},
			Sent: func(m core.Message, disk []byte) error { return checkSent(self, m, disk) },
			Ready: corefuzz.OnEvent(mutex.EventGranted, func(e core.Event) error {
				grants++
				return fences.Granted(corefuzz.EventArg(e, "lock").(string), corefuzz.EventArg(e, "fence").(uint64))
			}),
		}
		if late {
			d.Late = p.Late
		}
		member := func() *permission.Core { return d.Core.(*permission.Core) }
		d.Inspect = func() error {
			if rd := member().Report(); len(rd.Locks) > cfg.MaxLocks {
				return fmt.Errorf("%d locks, MaxLocks %d", len(rd.Locks), cfg.MaxLocks)
			}
			return corefuzz.CheckMetrics(member(), cfg.MaxLocks+16)
		}
		if err := d.Start(); err != nil {
			t.Fatal(err)
		}
		names := []string{"x", "y", "z"}
		clients := corefuzz.Clients{Driver: d}
		peers := permPeers{known: map[string]uint64{}, clock: map[uint32]uint64{}}
		for steps := 0; p.More() && steps < permissionSteps; steps++ {
			fail := p.Intn(6) == 0
			var err error
			switch p.Intn(10) {
			case 0, 1:
				dt := time.Duration(1+p.Intn(1000)) * time.Millisecond
				if p.Intn(8) == 0 {
					dt = time.Duration(1+p.Intn(20)) * time.Second // a stall
				}
				err = d.Tick(dt, fail)
			case 2:
				if err = d.Restart(); err == nil {
					clear(fences)
					clients.Forget()
				}
			case 3:
				err = clients.Acquire(p, corefuzz.LockName(p, names), mutex.Exclusive, fail)
			case 4:
				err = clients.Touch(p, fail)
			case 5, 6:
				// Correct peers answer what the member sent.
				err = d.Deliver(p, self, ids, func(m core.Message, peer uint32) error {
					if a, ok := peers.answer(m, peer, self); ok {
						lamport.Receive(a.Lamport)
						return d.Step(a, fail)
					}
					return nil
				})
			default:
				// As the node does: a frame more than 2^40 ahead of the
				// clock is refused, any other merged before the core sees it.
				m := permFrame(p, names, lamport.Now(), member().Incarnation(), ids, self, variant == permission.Bakery)
				if m.Lamport <= lamport.Now() || m.Lamport-lamport.Now() <= 1<<40 {
					lamport.Receive(m.Lamport)
					err = d.Step(m, fail)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Finish(); err != nil {
			t.Fatal(err)
		}
	}
	return variant, grants
}

// permPeers are the member's correct peers, which never want a lock
// themselves: they answer its requests (a reply that echoes the request's
// stamp and incarnation, or an acknowledgement stamped after it), with
// the highest fence the member told them of, and its extended heartbeats
// that ask for an acknowledgement, each on its own Lamport clock.
type permPeers struct {
	known map[string]uint64 // per lock, the highest fence heard of
	clock map[uint32]uint64 // per peer, its Lamport clock
}

// answer is what peer answers to m, a frame member self sent (ok false:
// nothing).
func (r permPeers) answer(m core.Message, peer, self uint32) (core.Message, bool) {
	if m.Kind == wire.KindPermRelay {
		// The relay passes it on; its target answers directly.
		var rl wire.PermRelay
		if rl.UnmarshalBinary(m.Payload) != nil || rl.Origin != self {
			return core.Message{}, false
		}
		peer, m = rl.Target, core.Message{To: rl.Target, Kind: rl.Kind, Payload: rl.Payload, Lamport: rl.Lamport}
	}
	var q wire.PermRequest
	switch m.Kind {
	case wire.KindPermHeartbeat:
		// A peer of this build acknowledges an extended heartbeat that
		// asks for it (so that the member's acknowledgement cap, and
		// what a member that acknowledged in its run is spared, run).
		var h wire.PermHeartbeat
		if h.UnmarshalBinary(m.Payload) != nil || !h.Ext || !h.AckWanted {
			return core.Message{}, false
		}
		r.clock[peer] = max(r.clock[peer], m.Lamport) + 1
		b, err := wire.PermHeartbeat{Interval: 1000, Ext: true, Ack: m.Lamport}.AppendBinary(nil)
		if err != nil {
			return core.Message{}, false
		}
		return core.Message{From: peer, To: self, Kind: wire.KindPermHeartbeat, Payload: b, Lamport: r.clock[peer]}, true
	case wire.KindPermProbe:
		// A peer that has not heard the member asked about for 10 s.
		var pr wire.PermProbe
		if pr.UnmarshalBinary(m.Payload) != nil {
			return core.Message{}, false
		}
		r.clock[peer] = max(r.clock[peer], m.Lamport) + 1
		b, err := wire.PermProbeReply{Member: pr.Member, SilentMS: 10000, Probe: m.Lamport}.AppendBinary(nil)
		if err != nil {
			return core.Message{}, false
		}
		return core.Message{From: peer, To: self, Kind: wire.KindPermProbeReply, Payload: b, Lamport: r.clock[peer]}, true
	case wire.KindRARequest, wire.KindLamportRequest, wire.KindLamportRelease,
		wire.KindBakeryDoorway, wire.KindBakeryChoosing, wire.KindBakeryTicket:
		if q.UnmarshalBinary(m.Payload) != nil {
			return core.Message{}, false
		}
	case wire.KindLamportRequeue:
		var rq wire.PermRequeue
		if rq.UnmarshalBinary(m.Payload) != nil {
			return core.Message{}, false
		}
		q = rq.PermRequest
	default:
		return core.Message{}, false
	}
	r.known[q.Name] = max(r.known[q.Name], q.Fence)
	r.clock[peer] = max(r.clock[peer], m.Lamport) + 1
	if m.Kind == wire.KindLamportRelease {
		return core.Message{}, false
	}
	kind := wire.KindRAReply
	switch m.Kind {
	case wire.KindLamportRequest, wire.KindLamportRequeue:
		kind = wire.KindLamportAck
	case wire.KindBakeryDoorway:
		kind = wire.KindBakeryNumber // num 0: the peers never ask
	case wire.KindBakeryChoosing:
		kind = wire.KindBakeryChosen
	case wire.KindBakeryTicket:
		kind = wire.KindBakeryTicketReply
	}
	b, err := wire.PermReply{Name: q.Name, Incarnation: 1, Answers: q.Incarnation, Stamp: q.Stamp, Fence: r.known[q.Name]}.AppendBinary(nil)
	if err != nil {
		return core.Message{}, false
	}
	return core.Message{From: peer, To: self, Kind: kind, Payload: b, Lamport: r.clock[peer]}, true
}

// permFrame builds a frame as a member, a stranger or an attacker could:
// every field drawn near the member's own values, at the ends of its
// range, or past them (encoded by hand, so that invalid values reach the
// decoder).
//
// bakery: the bakery's kinds are among those drawn (the other
// algorithms' are in any case: a core refuses a frame of another).
func permFrame(p *corefuzz.Program, names []string, now uint64, inc uint32, ids []uint32, self uint32, bakery bool) core.Message {
	from := ids[p.Intn(len(ids))]
	switch p.Intn(8) {
	case 0:
		from = self
	case 1:
		from = 99
	}
	stamp := func() uint64 {
		switch p.Intn(7) {
		case 0:
			return 0
		case 1:
			return wire.MaxPermStamp
		case 2:
			return wire.MaxPermStamp + 1
		case 3:
			return p.U64()
		case 4:
			return now - min(now, uint64(p.Intn(5)))
		}
		return now + uint64(p.Intn(50))
	}
	incarnation := func() uint32 {
		switch p.Intn(5) {
		case 0:
			return 0
		case 1:
			return p.U32()
		case 2:
			return inc
		}
		return uint32(1 + p.Intn(3))
	}
	name := names[p.Intn(len(names))]
	switch p.Intn(6) {
	case 0:
		name = fmt.Sprintf("junk-%d", p.Intn(1000))
	case 1:
		name = "bad name!"
	}
	kinds := []wire.Kind{wire.KindRARequest, wire.KindRAReply, wire.KindLamportRequest, wire.KindLamportAck,
		wire.KindLamportRelease, wire.KindLamportRequeue, wire.KindHeartbeat, wire.KindPermHeartbeat, wire.KindToken,
		wire.KindPermRelay, wire.KindPermProbe, wire.KindPermProbeReply}
	if bakery {
		kinds = append(kinds, wire.KindBakeryDoorway, wire.KindBakeryNumber, wire.KindBakeryChoosing, wire.KindBakeryChosen,
			wire.KindBakeryTicket, wire.KindBakeryTicketReply)
	}
	k := kinds[p.Intn(len(kinds))]
	var b []byte
	switch k {
	case wire.KindRARequest, wire.KindLamportRequest, wire.KindLamportRelease, wire.KindLamportRequeue,
		wire.KindBakeryDoorway, wire.KindBakeryChoosing, wire.KindBakeryTicket:
		b = append(b, byte(len(name)), 0, 0, 0)
		b = binary.BigEndian.AppendUint32(b, incarnation())
		b = binary.BigEndian.AppendUint64(b, stamp())
		b = binary.BigEndian.AppendUint64(b, stamp()<<16|uint64(p.Intn(4)))
		if k == wire.KindLamportRequeue {
			b = binary.BigEndian.AppendUint64(b, stamp()) // the release: any order against the request
		}
		b = append(b, name...)
	case wire.KindRAReply, wire.KindLamportAck, wire.KindBakeryNumber, wire.KindBakeryChosen, wire.KindBakeryTicketReply:
		b = append(b, byte(len(name)), 0, 0, 0)
		b = binary.BigEndian.AppendUint32(b, incarnation())
		b = binary.BigEndian.AppendUint32(b, incarnation())
		b = binary.BigEndian.AppendUint32(b, 0)
		b = binary.BigEndian.AppendUint64(b, stamp())
		b = binary.BigEndian.AppendUint64(b, stamp()<<16|uint64(p.Intn(4)))
		want := stamp()
		if p.Bool() {
			want = 0
		}
		b = binary.BigEndian.AppendUint64(b, want)
		b = append(b, name...)
	case wire.KindHeartbeat:
		b, _ = wire.Heartbeat{Interval: 1000, Alive: 3}.AppendBinary(nil)
	case wire.KindPermHeartbeat:
		h := wire.PermHeartbeat{Interval: 1000, Busy: p.Bool()}
		if p.Bool() {
			// An announcement of lease ends (lease.go), acknowledging any
			// stamp, maybe one of this member's.
			h.Ext, h.Bounded, h.Pending, h.AckWanted = true, p.Bool(), p.Bool(), p.Bool()
			h.EndMS = int32(p.U32())
			if p.Bool() {
				h.Ack = stamp()
			}
		}
		b, _ = h.AppendBinary(nil)
		if p.Intn(8) == 0 {
			b[4] = byte(p.Intn(256)) // a Busy byte no member sends
		}
	case wire.KindPermRelay:
		// Another member's frame for this one (or for a third, to pass
		// on), made the same way, about anyone.
		inner := permFrame(p, names, now, inc, ids, self, bakery)
		b = binary.BigEndian.AppendUint32(b, ids[p.Intn(len(ids))])
		b = binary.BigEndian.AppendUint32(b, ids[p.Intn(len(ids))])
		b = append(b, byte(inner.Kind), byte(p.Intn(3)))
		b = binary.BigEndian.AppendUint16(b, uint16(len(inner.Payload)))
		b = binary.BigEndian.AppendUint64(b, inner.Lamport)
		b = append(b, inner.Payload...)
	case wire.KindPermProbe:
		b = binary.BigEndian.AppendUint32(b, ids[p.Intn(len(ids))])
	case wire.KindPermProbeReply:
		b = binary.BigEndian.AppendUint32(b, ids[p.Intn(len(ids))])
		b = binary.BigEndian.AppendUint32(b, p.U32())
		b = binary.BigEndian.AppendUint64(b, stamp())
		if p.Bool() {
			b = binary.BigEndian.AppendUint32(append(b, byte(p.Intn(3))), p.U32()) // the extended form
		}
	default:
		b = make([]byte, p.Intn(40))
	}
	if p.Intn(10) == 0 && len(b) > 0 {
		b = b[:p.Intn(len(b))]
	}
	return core.Message{From: from, To: self, Kind: k, Payload: b, Lamport: stamp()}
}

// checkSent: a frame leaves only with its incarnation on the disk and every
// stamp it carries below the disk's Lamport floor (a frame of member self's
// own that goes through a relay, too).
func checkSent(self uint32, m core.Message, disk []byte) error {
	inc, floor, err := permission.OnDisk(disk)
	if err != nil || disk == nil {
		return fmt.Errorf("frame %v sent with no state on disk (%v)", m.Kind, err)
	}
	var fInc uint32
	var stamps []uint64
	switch m.Kind {
	case wire.KindRARequest, wire.KindLamportRequest, wire.KindLamportRelease,
		wire.KindBakeryDoorway, wire.KindBakeryChoosing, wire.KindBakeryTicket:
		var r wire.PermRequest
		if r.UnmarshalBinary(m.Payload) != nil {
			return fmt.Errorf("undecodable %v sent", m.Kind)
		}
		fInc, stamps = r.Incarnation, []uint64{r.Stamp, r.Fence >> 16}
	case wire.KindLamportRequeue:
		var r wire.PermRequeue
		if r.UnmarshalBinary(m.Payload) != nil {
			return fmt.Errorf("undecodable %v sent", m.Kind)
		}
		if r.Released+1 >= m.Lamport || r.Stamp > m.Lamport {
			return fmt.Errorf("%v stamped %d carries a release of %d and a request of %d: the release is not between them", m.Kind, m.Lamport, r.Released, r.Stamp)
		}
		fInc, stamps = r.Incarnation, []uint64{r.Stamp, r.Released, r.Fence >> 16}
	case wire.KindRAReply, wire.KindLamportAck, wire.KindBakeryNumber, wire.KindBakeryChosen, wire.KindBakeryTicketReply:
		var r wire.PermReply
		if r.UnmarshalBinary(m.Payload) != nil {
			return fmt.Errorf("undecodable %v sent", m.Kind)
		}
		fInc, stamps = r.Incarnation, []uint64{r.Stamp, r.Want, r.Fence >> 16}
	case wire.KindPermHeartbeat:
		var h wire.PermHeartbeat
		if h.UnmarshalBinary(m.Payload) != nil {
			return fmt.Errorf("undecodable %v sent", m.Kind)
		}
		if h.Ack >= m.Lamport && h.Ack != 0 {
			return fmt.Errorf("%v stamped %d acknowledges %d: not after it", m.Kind, m.Lamport, h.Ack)
		}
	case wire.KindPermProbe:
		var q wire.PermProbe
		if q.UnmarshalBinary(m.Payload) != nil {
			return fmt.Errorf("undecodable %v sent", m.Kind)
		}
	case wire.KindPermProbeReply:
		var r wire.PermProbeReply
		if r.UnmarshalBinary(m.Payload) != nil {
			return fmt.Errorf("undecodable %v sent", m.Kind)
		}
		if r.Probe >= m.Lamport {
			return fmt.Errorf("%v stamped %d answers probe %d: not after it", m.Kind, m.Lamport, r.Probe)
		}
	case wire.KindPermRelay:
		var r wire.PermRelay
		if r.UnmarshalBinary(m.Payload) != nil {
			return fmt.Errorf("undecodable %v sent", m.Kind)
		}
		if r.Lamport > m.Lamport {
			return fmt.Errorf("%v stamped %d carries a frame stamped %d", m.Kind, m.Lamport, r.Lamport)
		}
		if r.Origin == self {
			// One of the member's own frames, through a relay: it is
			// checked as it was made.
			if err := checkSent(self, core.Message{Kind: r.Kind, Payload: r.Payload, Lamport: r.Lamport}, disk); err != nil {
				return fmt.Errorf("relayed: %w", err)
			}
		}
	default:
		return fmt.Errorf("unexpected kind %v sent", m.Kind)
	}
	if fInc > inc {
		return fmt.Errorf("%v of incarnation %d sent with %d on disk", m.Kind, fInc, inc)
	}
	for _, s := range append(stamps, m.Lamport) {
		// An exhausted clock (pushed to the last stamp by frames) asks for
		// nothing any more; its answers may carry stamps past the floor.
		if s >= floor && floor < wire.MaxPermStamp {
			return fmt.Errorf("%v carries stamp %d at or above the floor %d on disk", m.Kind, s, floor)
		}
	}
	return nil
}
