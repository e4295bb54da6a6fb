package corefuzz

import (
	"math"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

// RingFrame is a ring election frame to member self (pkg/elect/ring),
// chosen by the program: any ring kind (or another), from a member, self
// or a stranger, with a term around cur (Epoch); election messages with
// any origin and candidate, rounds from 0 to absurd, attempts near the
// member's or far beyond, ID lists that are empty, honest, repeat an ID,
// name strangers or are longer than the ring; sequence numbers old, new or
// repeated; announcements of anybody; and sometimes a garbage payload.
func RingFrame(p *Program, cur uint64, lim epoch.Limit, ids []uint32, self uint32) core.Message {
	kinds := []wire.Kind{wire.KindRingElection, wire.KindRingElection, wire.KindRingCoordinator, wire.KindRingAck, wire.KindRingHeartbeat, wire.KindElection}
	m := core.Message{Kind: kinds[p.Intn(len(kinds))], To: self}
	member := func() uint32 {
		switch p.Intn(10) {
		case 0:
			return 0
		case 1:
			return 9 // a stranger
		case 2:
			return math.MaxUint32
		}
		return ids[p.Intn(len(ids))]
	}
	m.From = p.From(self, 9, ids)
	m.Term = p.Epoch(cur, lim, ids)
	seq := uint64(p.Intn(16))
	if p.Intn(4) == 0 {
		seq = p.U64()
	}
	switch m.Kind {
	case wire.KindRingElection:
		e := wire.RingElection{Seq: seq, Attempt: uint32(p.Intn(4)), Origin: member(), Candidate: member(), Round: uint32(p.Intn(4))}
		switch p.Intn(6) {
		case 0:
			e.Attempt = p.U32()
		case 1:
			e.Round = p.U32()
		case 2:
			e.Flags = p.Byte() & 3
		}
		for range p.Intn(len(ids) + 3) {
			if id := member(); id != 0 {
				e.IDs = append(e.IDs, id)
			}
		}
		m.Payload, _ = e.AppendBinary(nil)
	case wire.KindRingCoordinator:
		m.Payload, _ = wire.RingCoordinator{Seq: seq, Attempt: uint32(p.Intn(3)), Origin: member(), Leader: member()}.AppendBinary(nil)
	case wire.KindRingAck:
		m.Payload, _ = wire.RingAck{Seq: seq}.AppendBinary(nil)
	case wire.KindRingHeartbeat:
		m.Payload, _ = wire.RingHeartbeat{Flags: p.Byte() & 1}.AppendBinary(nil)
	}
	if p.Intn(10) == 0 {
		m.Payload = []byte{p.Byte(), p.Byte(), p.Byte()}
	}
	return m
}
