package wire

import "encoding/binary"

// Payload of the voting locks: Maekawa's voting sets (KindMaekawa,
// pkg/mutex/maekawa) and the majority quorum of coordinators
// (KindQuorumLock, maekawa.MajorityFactory). A requester asks the voters of its
// quorum for their vote on one lock; a voter votes for one exclusive
// request at a time (or for several shared ones, never beside an exclusive
// one). Every frame names the request it is about by the requester's
// Attempt, a number the requester never reuses in one run (and starts at a
// random point, so a restarted requester does not collide with its past).

// VoteOp is what a Vote frame says.
type VoteOp uint8

const (
	// VoteRequest: requester -> voter: vote for my request (Stamp is its
	// Lamport time, the priority; Mode; LeaseMS the lease it will ask;
	// Fence, exclusive requests: the fence it proposes, 0 for none).
	VoteRequest VoteOp = 1
	// VoteLocked: voter -> requester: my vote is yours (Fence: the fence
	// I offer: the proposal if it is above every fence I know, else one
	// above the highest I know; Recorded: I took that offer as the lock's
	// fence before voting, so you may hold on it without a commit if
	// every vote of your quorum offers the same; LeaseMS: how long your
	// request waited here before this vote).
	VoteLocked VoteOp = 2
	// VoteFailed: voter -> requester (Maekawa, and the majority quorum's
	// exclusive requests): my vote went to a request of higher priority;
	// yours waits in my queue.
	VoteFailed VoteOp = 3
	// VoteInquire: voter -> requester (as VoteFailed): a request of higher
	// priority than yours arrived; give my vote back if you cannot enter.
	VoteInquire VoteOp = 4
	// VoteRelinquish: requester -> voter (as VoteFailed): take your vote
	// back (my request stays in your queue).
	VoteRelinquish VoteOp = 5
	// VoteRelease: requester -> voter: my request is over (held and
	// released, withdrawn, or abandoned): free your vote and forget it
	// (Fence: the fence it held, 0 if it never held).
	VoteRelease VoteOp = 6
	// VoteCommit: requester -> voter: I hold the lock with Fence for
	// LeaseMS from when I sent this; remember the fence, and keep your
	// vote until the lease ends.
	VoteCommit VoteOp = 7
	// VoteCommitOK, VoteCommitRefused: voter -> requester: the commit is
	// recorded (on disk where the voter persists), or my vote is no longer
	// yours.
	VoteCommitOK      VoteOp = 8
	VoteCommitRefused VoteOp = 9
	// VoteRenew: requester -> voter: extend my lease to LeaseMS from when
	// I sent this (Fence: the one I hold).
	VoteRenew VoteOp = 10
	// VoteRenewOK, VoteRenewRefused: voter -> requester.
	VoteRenewOK      VoteOp = 11
	VoteRenewRefused VoteOp = 12
	// VoteDeny: voter -> requester (majority quorum: a shared request, or
	// one this voter has no room for): my vote is taken, or a writer waits
	// (or I am waiting out a restart); release what you got and retry.
	VoteDeny VoteOp = 13

	voteOpEnd VoteOp = 14
)

var voteOpNames = [...]string{
	VoteRequest: "request", VoteLocked: "locked", VoteFailed: "failed", VoteInquire: "inquire",
	VoteRelinquish: "relinquish", VoteRelease: "release", VoteCommit: "commit",
	VoteCommitOK: "commit_ok", VoteCommitRefused: "commit_refused", VoteRenew: "renew",
	VoteRenewOK: "renew_ok", VoteRenewRefused: "renew_refused", VoteDeny: "deny",
}

func (o VoteOp) String() string {
	if o > 0 && o < voteOpEnd {
		return voteOpNames[o]
	}
	return "op(" + itoa(int(o)) + ")"
}

// VoteMode is the mode of the request a Vote is about.
type VoteMode uint8

const (
	VoteExclusive VoteMode = 0
	VoteShared    VoteMode = 1
	voteModeEnd   VoteMode = 2
)

// MaxVoteFence is the largest fence a Vote may carry: fences this high are
// never reached by counting (2^62 grants), so a frame carrying more is
// refused before a core could run a lock's fences out of numbers.
const MaxVoteFence = 1<<62 - 1

// Vote is the payload of KindMaekawa and KindQuorumLock.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|      Op       |     Mode      |   Name Len    |     Flags     |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|            Attempt: the requester's number for the request    |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          Stamp: the request's Lamport time (its priority)     |  8
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    Fence (request: proposed; locked: offered; commit, renew,  | 16
//	+              release: the holder's)  <= MaxVoteFence          +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Lease, ms (request, commit, renew; locked: the wait)      | 24
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                         Reserved (0)                          | 28
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Name (Name Len bytes)                        | 32
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Flags: bit 0 is Recorded (locked only); the other bits are 0.
//
// The lease is a request's wish; a voter holds its vote for at most its
// own configured maximum, whatever a frame asks.
type Vote struct {
	Op      VoteOp
	Mode    VoteMode
	Name    string
	Attempt uint32
	Stamp   uint64
	Fence   uint64
	LeaseMS uint32
	// Recorded (VoteLocked only): the voter recorded Fence as the lock's
	// fence before it voted.
	Recorded bool
}

// voteFlagRecorded is Vote.Recorded in the Flags byte.
const voteFlagRecorded = 1 << 0

const (
	voteFixedLen = 32
	voteWhat     = "vote"
)

// AppendBinary appends the encoding of v to b. It fails only on fields
// the format cannot carry: a caller's bug.
func (v Vote) AppendBinary(b []byte) ([]byte, error) {
	switch {
	case !ValidLockName(v.Name):
		return b, nameEncodeErr(voteWhat, v.Name)
	case v.Op == 0 || v.Op >= voteOpEnd:
		return b, &EncodeError{What: voteWhat, Field: "op", Value: uint64(v.Op), Why: "undefined"}
	case v.Mode >= voteModeEnd:
		return b, &EncodeError{What: voteWhat, Field: "mode", Value: uint64(v.Mode), Why: "undefined"}
	case v.Fence > MaxVoteFence:
		return b, &EncodeError{What: voteWhat, Field: "fence", Value: v.Fence, Why: "exceeds MaxVoteFence"}
	case v.Recorded && v.Op != VoteLocked:
		return b, &EncodeError{What: voteWhat, Field: "flags", Value: voteFlagRecorded, Why: "recorded is an answer's flag: locked only"}
	}
	var flags byte
	if v.Recorded {
		flags |= voteFlagRecorded
	}
	b = append(b, byte(v.Op), byte(v.Mode), byte(len(v.Name)), flags)
	b = binary.BigEndian.AppendUint32(b, v.Attempt)
	b = binary.BigEndian.AppendUint64(b, v.Stamp)
	b = binary.BigEndian.AppendUint64(b, v.Fence)
	b = binary.BigEndian.AppendUint32(b, v.LeaseMS)
	b = binary.BigEndian.AppendUint32(b, 0)
	return append(b, v.Name...), nil
}

// UnmarshalBinary decodes a Vote.
func (v *Vote) UnmarshalBinary(b []byte) error {
	if len(b) < voteFixedLen {
		return decodeErr(voteWhat, DecodeTruncated, "", len(b), voteFixedLen)
	}
	op, mode := VoteOp(b[0]), VoteMode(b[1])
	switch {
	case op == 0 || op >= voteOpEnd:
		return decodeErr(voteWhat, DecodeBadField, "op", int(op), -1)
	case mode >= voteModeEnd:
		return decodeErr(voteWhat, DecodeBadField, "mode", int(mode), -1)
	case b[3]&^voteFlagRecorded != 0:
		return decodeErr(voteWhat, DecodeBadReserved, "flags", int(b[3]), 0)
	case b[3] != 0 && op != VoteLocked:
		return decodeErr(voteWhat, DecodeBadField, "flags", int(b[3]), 0)
	}
	if res := binary.BigEndian.Uint32(b[28:]); res != 0 {
		return decodeErr(voteWhat, DecodeBadReserved, "reserved", int(res&0x7fffffff), 0)
	}
	fence := binary.BigEndian.Uint64(b[16:])
	if fence > MaxVoteFence {
		return decodeErr(voteWhat, DecodeBadField, "fence", int(fence>>33), -1)
	}
	name, err := readName(voteWhat, b[voteFixedLen:], int(b[2]))
	if err != nil {
		return err
	}
	*v = Vote{
		Op:      op,
		Mode:    mode,
		Name:    name,
		Attempt: binary.BigEndian.Uint32(b[4:]),
		Stamp:   binary.BigEndian.Uint64(b[8:]),
		Fence:   fence,
		LeaseMS: binary.BigEndian.Uint32(b[24:]),

		Recorded: b[3]&voteFlagRecorded != 0,
	}
	return nil
}
