package corefuzz

import (
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

// ElectionFrame is a bully frame to member self, chosen by the program:
// any election kind (or another), from a member, self or a stranger, with
// a term around cur (Epoch), the member's priority or any, and sometimes a
// garbage payload.
func ElectionFrame(p *Program, cur uint64, lim epoch.Limit, members []bully.Member, self uint32) core.Message {
	ids := make([]uint32, len(members))
	for i, mb := range members {
		ids[i] = mb.ID
	}
	kinds := []wire.Kind{wire.KindElection, wire.KindAnswer, wire.KindCoordinator, wire.KindLeaderHeartbeat, wire.KindClockPoll}
	m := core.Message{Kind: kinds[p.Intn(len(kinds))], To: self}
	switch p.Intn(8) {
	case 0:
		m.From = self
	case 1:
		m.From = 9 // a stranger
	default:
		m.From = ids[p.Intn(len(ids))]
	}
	m.Term = p.Epoch(cur, lim, ids)
	prio := uint32(0)
	for _, mb := range members {
		if mb.ID == m.From {
			prio = mb.Priority
		}
	}
	if p.Intn(8) == 0 {
		prio = p.U32()
	}
	switch m.Kind {
	case wire.KindElection:
		m.Payload, _ = wire.Election{Priority: prio, Reason: wire.ElectionReason(1 + p.Intn(5))}.AppendBinary(nil)
	case wire.KindAnswer:
		m.Payload, _ = wire.Answer{Priority: prio}.AppendBinary(nil)
	case wire.KindCoordinator:
		m.Payload, _ = wire.Coordinator{Priority: prio, Flags: p.Byte() & 1}.AppendBinary(nil)
	case wire.KindLeaderHeartbeat:
		m.Payload, _ = wire.LeaderHeartbeat{Priority: prio, Flags: p.Byte() & 1}.AppendBinary(nil)
	}
	if p.Intn(10) == 0 {
		m.Payload = []byte{p.Byte(), p.Byte(), p.Byte()}
	}
	return m
}
