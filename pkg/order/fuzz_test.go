package order

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/corefuzz"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/order/rsm"
	"github.com/synclab/synclab/pkg/wire"
)

// FuzzOrder drives one core through a program read from the input, as a
// hostile member (holding the key) and a bad disk would: records with
// sequence numbers at, near and far past the window, vectors of any
// width and value, Lamport stamps and acks of anything, submissions,
// appends, recover and fetch frames with terms of any owner and any
// numbers; multicasts; ticks; restarts from what it persisted; failed
// writes. It must never panic, never hold more than its bounds, and
// always restart from its own state.
func FuzzOrder(f *testing.F) {
	corefuzz.Fuzz(f, orderSeeds, runOrder)
}

// BenchmarkFuzzOrder is FuzzOrder's cost per execution (execs/s).
func BenchmarkFuzzOrder(b *testing.B) {
	corefuzz.Bench(b, "FuzzOrder", orderSeeds, runOrder)
}

var orderSeeds = [][]byte{
	{},
	{0, 1, 0, 1, 1, 2, 3, 9, 9, 9, 4, 0, 5, 1},
	[]byte("\x00\x02\x00\x00\x03\x01\x05\x07\x00\x01\x02\x03\x04\x05\x06\x07\x08"),
}

// orderSteps bounds a program (corefuzz's doc, "What a program costs"): at
// 200 the JSON state written and read at every write and restart made a
// program cost 1.2 ms; the longest stored finding runs 89 steps.
const orderSteps = 100

// runOrder runs one program of FuzzOrder.
func runOrder(t testing.TB, in []byte) {
	p := corefuzz.NewProgram(in)
	members := []uint32{1, 2, 3}
	self := uint32(1 + p.Intn(3))
	cfg := DefaultLANConfig()
	cfg.Window, cfg.MaxSubmits, cfg.MaxUncommitted, cfg.KeepLog = 8, 8, 4, 4
	if p.Bool() {
		cfg.Total = Lamport
	}
	cfg.Machine = func() StateMachine { return rsm.New() }
	// Member 2 runs as without a key (settled acknowledgements, probes,
	// undos), the others as with one: chosen from self, which consumes no
	// byte, so the stored findings still replay the programs they found.
	cfg.Unkeyed = self == 2
	lamport := &clock.Lamport{}
	var d *corefuzz.Driver
	d = &corefuzz.Driver{
		Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		New: func(disk []byte) (core.Core, error) {
			return New(core.Env{ID: self, Members: members, Now: d.Now, Rand: rand.New(rand.NewPCG(1, 2)), Lamport: lamport, State: disk, Log: d.Log}, cfg)
		},
		Sent: func(m core.Message, disk []byte) error { return nil },
		Inspect: func() error {
			_ = d.Core.Status()
			return nil
		},
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	for step := 0; p.More() && step < orderSteps; step++ {
		fail := p.Intn(8) == 0
		var err error
		switch p.Intn(6) {
		case 0:
			err = d.Step(fuzzFrame(p, members, self, d.Core.(*Core)), fail)
		case 1:
			err = d.Tick(time.Duration(p.Intn(200))*time.Millisecond, fail)
		case 2:
			orders := []Order{FIFO, Causal, TotalOrder, 0, 9}
			_ = d.Core.(*Core).Multicast(d.Now, orders[p.Intn(len(orders))], []byte(fmt.Sprintf("deposit %d", p.Intn(100))))
			err = d.Drain(fail)
		case 3:
			err = d.Restart()
		case 4:
			if p.Bool() {
				// Another member takes over as sequencer (bully's
				// announcement in a newer term of its own), so that
				// the follower's side of the sequencer is reached.
				_ = d.Step(coordinator(p, members, self, d.Core.(*Core)), fail)
				break
			}
			err = d.Step(fuzzFrame(p, members, self, d.Core.(*Core)), fail)
		default:
			err = d.Step(fuzzFrame(p, members, self, d.Core.(*Core)), fail)
		}
		if err != nil {
			t.Fatal(err)
		}
		checkBounds(t, d.Core.(*Core))
	}
	if err := d.Finish(); err != nil {
		t.Fatal(err)
	}
}

func checkBounds(t testing.TB, c *Core) {
	t.Helper()
	w := c.cfg.Window
	for p, in := range c.st.Stream.In {
		if len(in.held) > w {
			t.Fatalf("holds %d records of %d, window %d", len(in.held), p, w)
		}
		if k := len(c.st.Stream.Kept[p]); k > w {
			t.Fatalf("keeps %d records of %d for the relay, window %d", k, p, w)
		}
	}
	if n := len(c.st.Stream.Sent); n > 3*len(c.members)*w+w {
		t.Fatalf("keeps %d sent records", n)
	}
	if n := len(c.st.Causal.Pending); n > len(c.members)*3*w {
		t.Fatalf("%d causal messages held", n)
	}
	if n := len(c.st.Lamport.Early); n > 2*len(c.members)*w {
		t.Fatalf("%d early acks", n)
	}
	if l := &c.st.Log; len(l.Entries) > 2*c.cfg.KeepLog+c.cfg.MaxUncommitted+wire.MaxOrderEntries {
		t.Fatalf("log of %d entries", len(l.Entries))
	}
	// A program of 200 steps numbers a few thousand entries, and a
	// snapshot jumps at most 2^40: a log near the end of the number
	// space was taken there by one frame.
	if l := &c.st.Log; l.last() > 1<<62 || l.Commit > l.last() {
		t.Fatalf("log numbered to %d, committed to %d", l.last(), l.Commit)
	}
	// Likewise the Lamport clock: a record's stamp moves it 2^40 at most.
	if now := c.lamport.Now(); now > 1<<62 {
		t.Fatalf("Lamport clock at %d", now)
	}
}

// coordinator is bully's announcement by another member (or this one, or
// a stranger) of itself as leader in a newer term of its own.
func coordinator(p *corefuzz.Program, members []uint32, self uint32, c *Core) core.Message {
	from := members[p.Intn(len(members))]
	_, known, _ := c.Election().Leader()
	payload, _ := wire.Coordinator{}.AppendBinary(nil) // priorities as the member list: 0
	return core.Message{From: from, Kind: wire.KindCoordinator, Term: epoch.Make(epoch.Round(known)+1+uint32(p.Intn(2)), from), Payload: payload}
}

// fuzzFrame builds one frame of any orderd kind, mostly well formed,
// with fields chosen from the edges.
func fuzzFrame(p *corefuzz.Program, members []uint32, self uint32, c *Core) core.Message {
	from := members[p.Intn(len(members))]
	if p.Intn(8) == 0 {
		from = p.U32()
	}
	_, known, _ := c.Election().Leader()
	term := known
	switch p.Intn(4) {
	case 0:
		term = epoch.Make(epoch.Round(known), from)
	case 1:
		term = p.U64()
	case 2:
		term = epoch.Make(epoch.Round(known)+1, from)
	}
	seq := func() uint64 {
		in := c.st.Stream.In[from]
		base := uint64(0)
		if in != nil {
			base = in.Next
		}
		switch p.Intn(4) {
		case 0:
			return base + 1 + uint64(p.Intn(12))
		case 1:
			return base - min(base, uint64(p.Intn(3)))
		case 2:
			return ^uint64(0) - uint64(p.Intn(2))
		}
		return p.U64()
	}
	var payload []byte
	kind := wire.Kind(90 + p.Intn(12))
	record := func() wire.OrderRecord {
		r := wire.OrderRecord{Seq: max(1, seq()), Type: wire.OrderType(1 + p.Intn(4)), Stamp: p.U64()}
		switch r.Type {
		case wire.OrderCausal:
			r.Vector = make([]uint64, 1+p.Intn(4))
			for i := range r.Vector {
				r.Vector[i] = uint64(p.Intn(4))
				if p.Intn(6) == 0 {
					r.Vector[i] = p.U64()
				}
			}
		case wire.OrderTotalAck:
			r.AckSender = members[p.Intn(len(members))]
			r.AckStamp = p.U64()
		}
		if r.Type != wire.OrderTotalAck {
			r.Message = []byte("deposit 1")
		}
		return r
	}
	switch kind {
	case wire.KindOrderRecord:
		payload, _ = record().AppendBinary(nil)
	case wire.KindOrderHolding:
		origin := members[p.Intn(len(members))]
		if p.Intn(8) == 0 {
			origin = p.U32()
		}
		upto := seq()
		payload, _ = wire.OrderHolding{Origin: max(1, origin), Flags: uint8(p.Intn(2)), Upto: upto, Stable: upto - min(upto, uint64(p.Intn(3)))}.AppendBinary(nil)
	case wire.KindOrderRelay:
		origin := members[p.Intn(len(members))]
		from, origin = origin, from // seq() reads the origin's stream
		r := record()
		from, origin = origin, from
		payload, _ = wire.OrderRelay{Origin: max(1, origin), Record: r}.AppendBinary(nil)
	case wire.KindOrderStreamAck:
		payload, _ = wire.OrderStreamAck{Upto: seq()}.AppendBinary(nil)
	case wire.KindOrderSubmit:
		payload, _ = wire.OrderSubmit{SID: max(1, seq()), Message: []byte("interest 1%")}.AppendBinary(nil)
	case wire.KindOrderAppend, wire.KindOrderFetchReply:
		e := wire.OrderEntries{Prev: seq() % (1 << 62), Commit: seq(), Start: seq()}
		for range p.Intn(5) {
			e.Entries = append(e.Entries, wire.OrderEntry{Sender: members[p.Intn(3)], SID: max(1, seq()), Message: []byte("set k v")})
		}
		payload, _ = e.AppendBinary(nil)
	case wire.KindOrderAppendAck:
		m := seq()
		payload, _ = wire.OrderAppendAck{Match: m, Commit: m / 2}.AppendBinary(nil)
	case wire.KindOrderRecover:
		payload, _ = wire.OrderRecover{Last: seq()}.AppendBinary(nil)
	case wire.KindOrderRecoverReply:
		last := seq()
		payload, _ = wire.OrderRecoverReply{LogTerm: term - min(term, uint64(p.Intn(2))), Last: last, Commit: last / 2}.AppendBinary(nil)
	case wire.KindOrderFetch:
		payload, _ = wire.OrderFetch{From: max(1, seq())}.AppendBinary(nil)
	case wire.KindOrderSnapshot:
		// A well-formed snapshot (the machine's own state, submissions
		// of members or not) numbered anywhere: near the commit point,
		// at the edges of the number space, past them.
		machine := json.RawMessage(`{}`)
		if m := c.Machine(); m != nil {
			machine = m.Snapshot()
		}
		sids := map[uint32]uint64{members[p.Intn(3)]: seq()}
		if p.Intn(8) == 0 {
			sids[p.U32()] = 1
		}
		data, _ := json.Marshal(snapshotData{Machine: machine, SIDs: sids})
		index := c.st.Log.Commit + uint64(p.Intn(12))
		switch p.Intn(4) {
		case 0:
			index = seq()
		case 1:
			index = c.st.Log.Commit + 1<<40 + uint64(p.Intn(3)) - 1
		}
		payload, _ = wire.OrderSnapshot{Index: index, Data: data}.AppendBinary(nil)
	default:
		payload = []byte{byte(p.Intn(256))}
	}
	if p.Intn(16) == 0 {
		payload = payload[:p.Intn(len(payload)+1)]
	}
	_ = self
	return core.Message{From: from, Kind: kind, Term: term, Payload: payload}
}
