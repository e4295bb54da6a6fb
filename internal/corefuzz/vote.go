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
