package corefuzz

import (
	"fmt"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// VoteFrame is a frame of the voting locks (Maekawa's and the majority
// quorum's wire.Vote, of kind) as an attacker or a confused member would
// send it: any op, either mode, one of names or a made-up lock, attempts
// and stamps at their extremes or near what a member would use, fences up
// to wire.MaxVoteFence (the largest the decoder takes), leases from 0 to
// 49 days; from a member, from self, or from a stranger; now and then a
// payload cut short or trailing garbage. now stamps it as received.
func VoteFrame(p *Program, kind wire.Kind, names []string, ids []uint32, self uint32) core.Message {
	from := ids[p.Intn(len(ids))]
	switch p.Intn(8) {
	case 0:
		from = self
	case 1:
		from = 1000 + uint32(p.Intn(3)) // a stranger
	}
	name := names[p.Intn(len(names))]
	if p.Intn(5) == 0 {
		name = fmt.Sprintf("junk-%d", p.Intn(200))
	}
	v := wire.Vote{
		Op:      wire.VoteOp(1 + p.Intn(13)),
		Mode:    wire.VoteMode(p.Intn(2)),
		Name:    name,
		Attempt: uint32(p.Intn(4)),
		Stamp:   uint64(p.Intn(8)),
		Fence:   uint64(p.Intn(6)),
		LeaseMS: uint32(p.Intn(5000)),
	}
	if p.Intn(3) == 0 {
		v.Attempt = p.U32()
	}
	if p.Intn(3) == 0 {
		v.Stamp = p.U64()
	}
	if p.Intn(4) == 0 {
		v.Fence = min(p.U64(), wire.MaxVoteFence)
	}
	if p.Intn(4) == 0 {
		v.LeaseMS = p.U32()
	}
	// A locked that says it recorded its fence: the requester may hold
	// on it without a commit when the others agree.
	v.Recorded = v.Op == wire.VoteLocked && p.Intn(2) == 0
	b, err := v.AppendBinary(nil)
	if err != nil {
		panic(err) // every field is in range by construction
	}
	switch p.Intn(16) {
	case 0:
		b = b[:p.Intn(len(b))]
	case 1:
		b = append(b, byte(p.Intn(256)))
	}
	return core.Message{From: from, To: self, Kind: kind, Payload: b, Stream: true, Lamport: uint64(p.Intn(100))}
}

// Voters are the voting locks' correct peers: each answers a vote the
// core sent as its own voter would, remembering (for them all) the highest
// fence committed per lock, so that the fences they vote with grow as a
// real quorum's do.
type Voters map[string]uint64

// Answer is what voter peer answers to m, a vote of kind the core (member
// self) sent
// (ok false: nothing): locked for a request (recording the proposal if it
// is above the fence, or the fence another peer just recorded for it,
// else one above the fence, as a voter does), commit_ok for a commit,
// renew_ok for a renewal, a commit one above the fence for a locked vote
// (the core as voter); one time in four another op that echoes m's lock,
// attempt, stamp and mode, the answer a confused voter gives.
func (vs Voters) Answer(p *Program, kind wire.Kind, m core.Message, peer, self uint32) (core.Message, bool) {
	var v wire.Vote
	if m.Kind != kind || v.UnmarshalBinary(m.Payload) != nil {
		return core.Message{}, false
	}
	a := wire.Vote{Name: v.Name, Attempt: v.Attempt, Stamp: v.Stamp, Mode: v.Mode, Fence: vs[v.Name], LeaseMS: v.LeaseMS}
	switch v.Op {
	case wire.VoteRequest:
		a.Op, a.Recorded = wire.VoteLocked, v.Mode == wire.VoteExclusive
		if a.Recorded {
			a.Fence = max(v.Fence, min(vs[v.Name]+1, wire.MaxVoteFence))
			if v.Fence != 0 && v.Fence == vs[v.Name] {
				a.Fence = v.Fence // recorded by a peer before this one: they agree
			}
			vs[v.Name] = a.Fence
		}
	case wire.VoteCommit:
		vs[v.Name] = max(vs[v.Name], v.Fence)
		a.Op, a.Fence = wire.VoteCommitOK, v.Fence
	case wire.VoteRenew:
		a.Op, a.Fence = wire.VoteRenewOK, v.Fence
	case wire.VoteLocked:
		a.Op, a.Fence = wire.VoteCommit, min(max(vs[v.Name], v.Fence)+1, wire.MaxVoteFence)
		vs[v.Name] = a.Fence
	default:
		return core.Message{}, false
	}
	if p.Intn(4) == 0 {
		a.Op = wire.VoteOp(1 + p.Intn(13))
		a.Recorded = a.Op == wire.VoteLocked && p.Intn(2) == 0
	}
	b, err := a.AppendBinary(nil)
	if err != nil {
		panic(err) // every field comes from a vote that decoded
	}
	return core.Message{From: peer, To: self, Kind: kind, Payload: b, Stream: true, Lamport: m.Lamport + 1}, true
}
