package corefuzz

import (
	"slices"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

// sender picks a frame's sender: self, a stranger (ID 9), or a member.
func (p *Program) sender(ids []uint32, self uint32) uint32 {
	switch p.Intn(8) {
	case 0:
		return self
	case 1:
		return 9
	}
	return ids[p.Intn(len(ids))]
}

// garble sometimes replaces a payload with a few random bytes.
func (p *Program) garble(m *core.Message) {
	if p.Intn(10) == 0 {
		m.Payload = []byte{p.Byte(), p.Byte(), p.Byte()}
	}
}

// MajorityFrame is a majority-election frame to member self: any of its
// kinds (or another), from a member, self or a stranger, with a term
// around cur, the sender's weight or any, any sequence number, uptime,
// verdict and holder, and sometimes a garbage payload.
func MajorityFrame(p *Program, cur uint64, lim epoch.Limit, ids []uint32, weights map[uint32]uint32, self uint32) core.Message {
	kinds := []wire.Kind{wire.KindVoteRequest, wire.KindVote, wire.KindLeaseRenew, wire.KindLeaseGrant, wire.KindLeaseRelease, wire.KindElection}
	m := core.Message{Kind: kinds[p.Intn(len(kinds))], To: self, From: p.sender(ids, self)}
	m.Term = p.Epoch(cur, lim, ids)
	w := weights[m.From]
	if p.Intn(8) == 0 {
		w = p.U32()
	}
	switch m.Kind {
	case wire.KindVoteRequest, wire.KindLeaseRenew:
		// A standing order of members, self and strangers, in any order.
		var ranks []uint32
		for range p.Intn(6) {
			if id := p.sender(ids, self); !slices.Contains(ranks, id) {
				ranks = append(ranks, id)
			}
		}
		m.Payload, _ = wire.LeaseRequest{Seq: p.U32(), Weight: w, Uptime: p.U32(), Ranks: ranks}.AppendBinary(nil)
	case wire.KindVote, wire.KindLeaseGrant:
		holder := uint32(0)
		if p.Bool() {
			holder = p.sender(ids, self)
		}
		m.Payload, _ = wire.LeaseReply{Seq: uint32(p.Intn(6)), Weight: w, Holder: holder,
			Verdict: wire.LeaseVerdict(1 + p.Intn(5)), Uptime: p.U32()}.AppendBinary(nil)
	case wire.KindLeaseRelease:
		m.Payload, _ = wire.LeaseRelease{Weight: w, Reason: wire.ReleaseReason(1 + p.Intn(3))}.AppendBinary(nil)
	}
	p.garble(&m)
	return m
}

// OmegaFrame is an eventual-leader frame to member self: a heartbeat (or
// another kind) from a member, self or a stranger, with an incarnation
// around cur (the same, one either side, 0, the largest, any), a trusted
// leader that is a member, 0 or a stranger, any interval, and sometimes a
// garbage payload.
func OmegaFrame(p *Program, cur uint64, ids []uint32, self uint32) core.Message {
	m := core.Message{Kind: wire.KindOmegaHeartbeat, To: self, From: p.sender(ids, self)}
	if p.Intn(10) == 0 {
		m.Kind = wire.KindVoteRequest
	}
	switch p.Intn(6) {
	case 0:
		m.Term = cur
	case 1:
		m.Term = cur + 1
	case 2:
		m.Term = cur - min(cur, 1)
	default:
		m.Term = p.U64()
	}
	m.Payload, _ = wire.OmegaHeartbeat{Leader: p.sender(ids, self) * uint32(p.Intn(2)), Interval: max(1, p.U32()%(wire.MaxOmegaInterval+1))}.AppendBinary(nil)
	p.garble(&m)
	return m
}

// YoYoFrame is a Yo-Yo frame to member self: any of its kinds (or
// another), from a neighbour, a non-neighbour, self or a stranger, with a
// round around cur, right or wrong topology digests, any iteration (this
// one, the next, far away), values and leaders that are members or not,
// any flags, and sometimes a garbage payload.
func YoYoFrame(p *Program, cur uint64, lim epoch.Limit, ids []uint32, self uint32, digest uint32) core.Message {
	kinds := []wire.Kind{wire.KindYoYoHello, wire.KindYoYoDown, wire.KindYoYoUp, wire.KindYoYoLeader, wire.KindOmegaHeartbeat}
	m := core.Message{Kind: kinds[p.Intn(len(kinds))], To: self, From: p.sender(ids, self), Stream: p.Bool()}
	m.Term = p.Epoch(cur, lim, ids)
	iter := uint32(p.Intn(4))
	if p.Intn(8) == 0 {
		iter = p.U32()
	}
	switch m.Kind {
	case wire.KindYoYoHello:
		d := digest
		if p.Intn(8) == 0 {
			d = p.U32()
		}
		m.Payload, _ = wire.YoYoHello{Digest: d}.AppendBinary(nil)
	case wire.KindYoYoDown:
		m.Payload, _ = wire.YoYoDown{Iteration: iter, Value: max(1, p.sender(ids, self))}.AppendBinary(nil)
	case wire.KindYoYoUp:
		m.Payload, _ = wire.YoYoUp{Iteration: iter, Flags: p.Byte() & 3}.AppendBinary(nil)
	case wire.KindYoYoLeader:
		m.Payload, _ = wire.YoYoLeader{Leader: max(1, p.sender(ids, self)), Seq: p.U32()}.AppendBinary(nil)
	}
	p.garble(&m)
	return m
}
