package corefuzz

import (
	"fmt"
	"time"

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
// fence recorded per lock, so that the fences they vote with grow as a
// real quorum's do, and the readers' fence: the fence the core's readers
// committed, while one of them may still hold on it.
type Voters struct {
	fence   map[string]uint64
	readers map[string]readers
	// proposed is, per lock, the request (member's attempt) whose
	// proposal the last recorded fence is: the other peers it asks record
	// the same, but a later request that proposes it again is offered one
	// above, as every voter that recorded it does.
	proposed map[string]uint32
}

// readers is the fence a reader of the core committed at the emulated
// voters, and until when their committed vote lasts (its lease, unless
// renewed or released).
type readers struct {
	fence uint64
	until time.Time
}

// readersFence is the fence of the readers holding lock at now (0: none),
// as a real voter's readersFence.
func (vs *Voters) readersFence(lock string, now time.Time) uint64 {
	r := vs.readers[lock]
	if r.fence == 0 || !now.Before(r.until) {
		return 0
	}
	return r.fence
}

// record is a fence recorded for lock by the voters; a writer's (shared
// false) ends the readers' group: no reader may join them after it.
func (vs *Voters) record(lock string, fence uint64, shared bool) {
	if vs.fence == nil {
		vs.fence, vs.readers, vs.proposed = map[string]uint64{}, map[string]readers{}, map[string]uint32{}
	}
	if fence > vs.fence[lock] {
		vs.fence[lock] = fence
		delete(vs.proposed, lock) // no request's proposal any more (a request's sets it again)
	}
	if !shared {
		delete(vs.readers, lock)
	}
}

// Answer is what voter peer answers at now to m, a vote of kind the core
// (member self) sent (ok false: nothing), as a voter does: locked for a
// request (an exclusive one recording its proposal if it is above the
// fence, or the same request's proposal another peer just recorded, else
// one above the fence; a shared one offered the readers' fence while they
// hold, else one above the fence), commit_ok for a commit (a reader's of
// another fence than the readers' holding is refused), renew_ok for a
// renewal, for a locked vote (the core as voter) a commit of what a
// quorum it is in would agree on (the readers' fence it offers a reader
// that joins the emulated readers, else one above everything known); one
// time in four another op that echoes m's lock, attempt, stamp and mode,
// the answer a confused voter gives. A release of a reader's lock ends the
// readers' hold.
func (vs *Voters) Answer(p *Program, kind wire.Kind, m core.Message, peer, self uint32, now time.Time) (core.Message, bool) {
	var v wire.Vote
	if m.Kind != kind || v.UnmarshalBinary(m.Payload) != nil {
		return core.Message{}, false
	}
	shared := v.Mode == wire.VoteShared
	known := vs.fence[v.Name]
	a := wire.Vote{Name: v.Name, Attempt: v.Attempt, Stamp: v.Stamp, Mode: v.Mode, Fence: known, LeaseMS: v.LeaseMS}
	switch v.Op {
	case wire.VoteRequest:
		a.Op, a.Recorded = wire.VoteLocked, !shared
		switch {
		case shared:
			// Not recorded: a reader always commits. Readers holding here
			// share their fence; the first of a group is offered one above
			// everything before it, a writer's fence included.
			a.Fence = vs.readersFence(v.Name, now)
			if a.Fence == 0 {
				a.Fence = min(known+1, wire.MaxVoteFence)
			}
		case v.Fence != 0 && v.Fence == known && vs.proposed[v.Name] == v.Attempt:
			a.Fence = v.Fence // this request's proposal, recorded by a peer before this one: they agree
		default:
			a.Fence = max(v.Fence, min(known+1, wire.MaxVoteFence))
		}
		if a.Recorded {
			vs.record(v.Name, a.Fence, false)
			vs.proposed[v.Name] = v.Attempt
		}
	case wire.VoteCommit:
		if r := vs.readersFence(v.Name, now); shared && r != 0 && v.Fence != r {
			// Readers hold here on another fence: the reader is refused
			// and told theirs, as a voter does.
			a.Op, a.Fence = wire.VoteCommitRefused, r
			break
		}
		vs.record(v.Name, v.Fence, shared)
		if shared {
			lease := time.Duration(v.LeaseMS) * time.Millisecond
			if r := vs.readers[v.Name]; r.fence == v.Fence {
				lease = max(lease, r.until.Sub(now))
			}
			vs.readers[v.Name] = readers{fence: v.Fence, until: now.Add(lease)}
		}
		a.Op, a.Fence = wire.VoteCommitOK, v.Fence
	case wire.VoteRenew:
		if r := vs.readers[v.Name]; shared && r.fence == v.Fence {
			r.until = maxTime(r.until, now.Add(time.Duration(v.LeaseMS)*time.Millisecond))
			vs.readers[v.Name] = r
		}
		a.Op, a.Fence = wire.VoteRenewOK, v.Fence
	case wire.VoteRelease:
		if shared && v.Fence != 0 && vs.readers[v.Name].fence == v.Fence {
			delete(vs.readers, v.Name)
		}
		return core.Message{}, false
	case wire.VoteLocked:
		a.Op = wire.VoteCommit
		if r := vs.readersFence(v.Name, now); shared && r != 0 && r == v.Fence {
			a.Fence = r // the core's voter offers the readers' fence: a reader joins them
		} else {
			a.Fence = min(max(known, v.Fence)+1, wire.MaxVoteFence)
		}
		vs.record(v.Name, a.Fence, shared)
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

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
