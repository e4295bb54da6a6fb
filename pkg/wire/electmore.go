package wire

import (
	"encoding/binary"
	"slices"
)

// Payloads of the elections of block 70-89: the majority election with
// leases (pkg/elect/majority), the eventual leader Ω of the crash-recovery
// model (pkg/elect/omega) and Yo-Yo (pkg/elect/yoyo). The frame header
// carries the sender, the receiver and the term (majority: the owned term;
// Ω: the sender's incarnation; Yo-Yo: the owned round), so the payloads
// carry only the rest. Every payload has a fixed size, and every reserved
// byte or flag bit must be zero, so that a later version can give it a
// meaning that old nodes refuse rather than misread.

// LeaseRequest asks every member for a vote (KindVoteRequest, a candidate)
// or for a renewal of the lease it granted (KindLeaseRenew, the leader).
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Seq (of the request)                     |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                   Weight (of the sender's vote)               |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|              Uptime (uninterrupted, milliseconds)             |  8
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Count     |                 Reserved (0)                  | 12
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Ranks[0] ... Ranks[Count-1] (IDs)             | 16
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Seq is echoed by the reply, so that a reply counts for the request it
// answers only. Weight is checked against the receiver's member list.
// Uptime saturates at 2^32-1 ms (49 days). Ranks is the standing order a
// leader's renewal announces: the members that answered it, longest
// uptime first, in the order in which they stand when the leader is gone
// (a vote request carries none). At most MaxLeaseRanks IDs, none 0, none
// twice; the receiver ignores IDs that are not members. It decides only
// who stands first, never who may lead: a forged order costs candidacies,
// not safety (that is the votes' and the leases').
//
// Version: before the standing order (synclab <= 792a65e) a request was
// 12 bytes and a reply 16; the two layouts refuse each other's frames
// (DecodeBadLength, counted), so a cluster is upgraded all at once.
type LeaseRequest struct {
	Seq    uint32
	Weight uint32
	Uptime uint32
	Ranks  []uint32
}

// MaxLeaseRanks is the most IDs a LeaseRequest's standing order carries.
const MaxLeaseRanks = 255

// LeaseVerdict is a voter's answer to a LeaseRequest.
type LeaseVerdict uint8

const (
	// VerdictGranted: the vote (or renewal) is granted; the voter is bound
	// to the sender for a lease.
	VerdictGranted LeaseVerdict = 1
	// VerdictBound: the voter is bound by a lease to Holder until it runs
	// out on the voter's clock.
	VerdictBound LeaseVerdict = 2
	// VerdictStale: the request's term is older than the voter's.
	VerdictStale LeaseVerdict = 3
	// VerdictUptime: the candidate has run without interruption for less
	// time than the voter (the stability rule).
	VerdictUptime LeaseVerdict = 4
	// VerdictRecovering: the voter restarted and waits out a lease it may
	// have granted before.
	VerdictRecovering LeaseVerdict = 5

	verdictEnd LeaseVerdict = 6 // one past the last verdict; keep it last
)

func (v LeaseVerdict) String() string {
	switch v {
	case VerdictGranted:
		return "granted"
	case VerdictBound:
		return "bound"
	case VerdictStale:
		return "stale"
	case VerdictUptime:
		return "uptime"
	case VerdictRecovering:
		return "recovering"
	}
	return "verdict(" + itoa(int(v)) + ")"
}

// LeaseReply answers a LeaseRequest (KindVote to a candidate, KindLeaseGrant
// to the leader).
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     Seq (of the request)                      |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                   Weight (of the sender's vote)               |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|             Holder (the member the voter is bound to)         |  8
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    Verdict    |                 Reserved (0)                  | 12
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          Uptime (the voter's, uninterrupted, milliseconds)    | 16
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Uptime (saturating at 2^32-1 ms) lets the leader rank its voters for
// the standing order of its renewals (LeaseRequest.Ranks).
type LeaseReply struct {
	Seq     uint32
	Weight  uint32
	Holder  uint32 // 0: bound to nobody
	Verdict LeaseVerdict
	Uptime  uint32
}

// Granted reports whether the reply grants the request.
func (r LeaseReply) Granted() bool { return r.Verdict == VerdictGranted }

// ReleaseReason says why a leader or candidate frees its voters.
type ReleaseReason uint8

const (
	// ReleaseResigned: the leader steps down (electd resign).
	ReleaseResigned ReleaseReason = 1
	// ReleaseLost: the candidate lost its election.
	ReleaseLost ReleaseReason = 2
	// ReleaseNewerTerm: the sender learned of a newer term.
	ReleaseNewerTerm ReleaseReason = 3

	releaseEnd ReleaseReason = 4
)

func (r ReleaseReason) String() string {
	switch r {
	case ReleaseResigned:
		return "resigned"
	case ReleaseLost:
		return "lost"
	case ReleaseNewerTerm:
		return "newer_term"
	}
	return "release(" + itoa(int(r)) + ")"
}

// LeaseRelease frees the voters bound to the sender in the frame's term
// (KindLeaseRelease, broadcast): it no longer believes it leads, and never
// will in that term.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                   Weight (of the sender's vote)               |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    Reason     |                 Reserved (0)                  |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type LeaseRelease struct {
	Weight uint32
	Reason ReleaseReason
}

// OmegaHeartbeat is a member's periodic heartbeat in the eventual leader
// election (KindOmegaHeartbeat, broadcast); the frame's term is the
// sender's incarnation (>= 1).
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|               Leader (whom the sender trusts; 0 none)         |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          Interval (sender's collection window, ms)            |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Interval is 1..MaxOmegaInterval; both fields are for observability
// (status, traces): the receiver's choice of leader depends only on whom
// it heard, with which incarnation.
type OmegaHeartbeat struct {
	Leader   uint32
	Interval uint32
}

// MaxOmegaInterval is the largest collection window a heartbeat may
// announce: one hour, in milliseconds.
const MaxOmegaInterval = 3_600_000

// YoYoHello is Yo-Yo's first phase (KindYoYoID): the sender's ID (the
// frame's From) to each neighbour, which orients the edge from the smaller
// ID to the larger. Digest is the CRC-32C of the topology the sender was
// given, so that members configured with different topologies refuse each
// other instead of electing on different graphs.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     Digest (of the topology)                  |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type YoYoHello struct {
	Digest uint32
}

// YoYoDown is the YO- phase (KindYoYoDown): the smallest candidate ID the
// sender received, sent down each of its out-edges in an iteration.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                          Iteration                            |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Value (a candidate ID)                   |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type YoYoDown struct {
	Iteration uint32
	Value     uint32
}

// YoYoUp is the -YO phase (KindYoYoUp): the vote sent back up an in-edge,
// YES (flag set) or NO (the edge flips), and whether the edge is pruned.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                          Iteration                            |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Flags     |                 Reserved (0)                  |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Flags: bit 0 YoYoYes, bit 1 YoYoPrune; the others reserved, zero.
type YoYoUp struct {
	Iteration uint32
	Flags     uint8
}

// YoYoUp flags.
const (
	YoYoYes   uint8 = 1 << 0
	YoYoPrune uint8 = 1 << 1

	yoyoUpFlagsKnown = YoYoYes | YoYoPrune
)

// YoYoLeader announces the round's leader and, repeated every heartbeat,
// that it is alive (KindYoYoLeader): flooded over the topology, each
// member relaying a (round, Seq) once to its other neighbours.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                            Leader                             |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                   Seq (the leader's heartbeat)                |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type YoYoLeader struct {
	Leader uint32
	Seq    uint32
}

// The payloads' exact lengths.
const (
	LeaseRequestLen   = 16 // without ranks; 4 bytes more per rank
	LeaseReplyLen     = 20
	LeaseReleaseLen   = 8
	OmegaHeartbeatLen = 8
	YoYoHelloLen      = 4
	YoYoDownLen       = 8
	YoYoUpLen         = 8
	YoYoLeaderLen     = 8
)

const (
	leaseRequestWhat   = "lease request"
	leaseReplyWhat     = "lease reply"
	leaseReleaseWhat   = "lease release"
	omegaHeartbeatWhat = "omega heartbeat"
	yoyoHelloWhat      = "yoyo hello"
	yoyoDownWhat       = "yoyo down"
	yoyoUpWhat         = "yoyo up"
	yoyoLeaderWhat     = "yoyo leader"
)

var be = binary.BigEndian

// AppendBinary appends the encoding of r to b: at most MaxLeaseRanks
// ranks, none 0, none twice.
func (r LeaseRequest) AppendBinary(b []byte) ([]byte, error) {
	if len(r.Ranks) > MaxLeaseRanks {
		return b, &EncodeError{What: leaseRequestWhat, Field: "count", Value: uint64(len(r.Ranks)), Why: "more than MaxLeaseRanks"}
	}
	if i := badRank(r.Ranks); i >= 0 {
		return b, &EncodeError{What: leaseRequestWhat, Field: "rank", Value: uint64(r.Ranks[i]), Why: "0 or listed twice"}
	}
	b = be.AppendUint32(b, r.Seq)
	b = be.AppendUint32(b, r.Weight)
	b = be.AppendUint32(b, r.Uptime)
	b = append(b, byte(len(r.Ranks)), 0, 0, 0)
	for _, id := range r.Ranks {
		b = be.AppendUint32(b, id)
	}
	return b, nil
}

// UnmarshalBinary decodes a LeaseRequest: LeaseRequestLen bytes and 4 per
// rank exactly, zero reserved bytes, no rank 0 or listed twice.
func (r *LeaseRequest) UnmarshalBinary(b []byte) error {
	if len(b) < LeaseRequestLen {
		return checkLen(leaseRequestWhat, b, LeaseRequestLen)
	}
	n := int(b[12])
	if err := checkLen(leaseRequestWhat, b, LeaseRequestLen+4*n); err != nil {
		return err
	}
	if err := checkReserved(leaseRequestWhat, b[13:16]); err != nil {
		return err
	}
	var ranks []uint32
	if n > 0 {
		ranks = make([]uint32, n)
		for i := range ranks {
			ranks[i] = be.Uint32(b[LeaseRequestLen+4*i:])
		}
		if i := badRank(ranks); i >= 0 {
			return decodeErr(leaseRequestWhat, DecodeBadField, "rank", clampInt(uint64(ranks[i])), -1)
		}
	}
	*r = LeaseRequest{Seq: be.Uint32(b), Weight: be.Uint32(b[4:]), Uptime: be.Uint32(b[8:]), Ranks: ranks}
	return nil
}

// badRank is the index of the first rank that is 0 or repeats one before
// it, or -1 (quadratic: at most MaxLeaseRanks).
func badRank(ranks []uint32) int {
	for i, id := range ranks {
		if id == 0 || slices.Contains(ranks[:i], id) {
			return i
		}
	}
	return -1
}

// AppendBinary appends the encoding of r to b.
func (r LeaseReply) AppendBinary(b []byte) ([]byte, error) {
	if r.Verdict == 0 || r.Verdict >= verdictEnd {
		return b, &EncodeError{What: leaseReplyWhat, Field: "verdict", Value: uint64(r.Verdict), Why: "not a defined verdict"}
	}
	b = be.AppendUint32(b, r.Seq)
	b = be.AppendUint32(b, r.Weight)
	b = be.AppendUint32(b, r.Holder)
	b = append(b, byte(r.Verdict), 0, 0, 0)
	return be.AppendUint32(b, r.Uptime), nil
}

// UnmarshalBinary decodes a LeaseReply: exactly LeaseReplyLen bytes, a
// defined verdict, zero reserved bytes.
func (r *LeaseReply) UnmarshalBinary(b []byte) error {
	if err := checkLen(leaseReplyWhat, b, LeaseReplyLen); err != nil {
		return err
	}
	if err := checkReserved(leaseReplyWhat, b[13:16]); err != nil {
		return err
	}
	v := LeaseVerdict(b[12])
	if v == 0 || v >= verdictEnd {
		return decodeErr(leaseReplyWhat, DecodeBadField, "verdict", int(v), -1)
	}
	*r = LeaseReply{Seq: be.Uint32(b), Weight: be.Uint32(b[4:]), Holder: be.Uint32(b[8:]), Verdict: v, Uptime: be.Uint32(b[16:])}
	return nil
}

// AppendBinary appends the encoding of r to b.
func (r LeaseRelease) AppendBinary(b []byte) ([]byte, error) {
	if r.Reason == 0 || r.Reason >= releaseEnd {
		return b, &EncodeError{What: leaseReleaseWhat, Field: "reason", Value: uint64(r.Reason), Why: "not a defined reason"}
	}
	b = be.AppendUint32(b, r.Weight)
	return append(b, byte(r.Reason), 0, 0, 0), nil
}

// UnmarshalBinary decodes a LeaseRelease: exactly LeaseReleaseLen bytes, a
// defined reason, zero reserved bytes.
func (r *LeaseRelease) UnmarshalBinary(b []byte) error {
	if err := checkLen(leaseReleaseWhat, b, LeaseReleaseLen); err != nil {
		return err
	}
	if err := checkReserved(leaseReleaseWhat, b[5:8]); err != nil {
		return err
	}
	why := ReleaseReason(b[4])
	if why == 0 || why >= releaseEnd {
		return decodeErr(leaseReleaseWhat, DecodeBadField, "reason", int(why), -1)
	}
	*r = LeaseRelease{Weight: be.Uint32(b), Reason: why}
	return nil
}

// AppendBinary appends the encoding of h to b.
func (h OmegaHeartbeat) AppendBinary(b []byte) ([]byte, error) {
	if h.Interval == 0 || h.Interval > MaxOmegaInterval {
		return b, &EncodeError{What: omegaHeartbeatWhat, Field: "interval", Value: uint64(h.Interval), Why: "outside 1..MaxOmegaInterval ms"}
	}
	b = be.AppendUint32(b, h.Leader)
	return be.AppendUint32(b, h.Interval), nil
}

// UnmarshalBinary decodes an OmegaHeartbeat: exactly OmegaHeartbeatLen
// bytes, an interval of 1..MaxOmegaInterval ms.
func (h *OmegaHeartbeat) UnmarshalBinary(b []byte) error {
	if err := checkLen(omegaHeartbeatWhat, b, OmegaHeartbeatLen); err != nil {
		return err
	}
	iv := be.Uint32(b[4:])
	if iv == 0 || iv > MaxOmegaInterval {
		return decodeErr(omegaHeartbeatWhat, DecodeBadField, "interval", clampInt(uint64(iv)), MaxOmegaInterval)
	}
	*h = OmegaHeartbeat{Leader: be.Uint32(b), Interval: iv}
	return nil
}

// AppendBinary appends the encoding of h to b. It cannot fail.
func (h YoYoHello) AppendBinary(b []byte) ([]byte, error) { return be.AppendUint32(b, h.Digest), nil }

// UnmarshalBinary decodes a YoYoHello: exactly YoYoHelloLen bytes.
func (h *YoYoHello) UnmarshalBinary(b []byte) error {
	if err := checkLen(yoyoHelloWhat, b, YoYoHelloLen); err != nil {
		return err
	}
	h.Digest = be.Uint32(b)
	return nil
}

// AppendBinary appends the encoding of d to b.
func (d YoYoDown) AppendBinary(b []byte) ([]byte, error) {
	if d.Value == 0 {
		return b, &EncodeError{What: yoyoDownWhat, Field: "value", Value: 0, Why: "no member has ID 0"}
	}
	b = be.AppendUint32(b, d.Iteration)
	return be.AppendUint32(b, d.Value), nil
}

// UnmarshalBinary decodes a YoYoDown: exactly YoYoDownLen bytes, a value
// above 0 (the receiver checks that it is a member).
func (d *YoYoDown) UnmarshalBinary(b []byte) error {
	if err := checkLen(yoyoDownWhat, b, YoYoDownLen); err != nil {
		return err
	}
	v := be.Uint32(b[4:])
	if v == 0 {
		return decodeErr(yoyoDownWhat, DecodeBadField, "value", 0, -1)
	}
	*d = YoYoDown{Iteration: be.Uint32(b), Value: v}
	return nil
}

// AppendBinary appends the encoding of u to b.
func (u YoYoUp) AppendBinary(b []byte) ([]byte, error) {
	if u.Flags&^yoyoUpFlagsKnown != 0 {
		return b, &EncodeError{What: yoyoUpWhat, Field: "flags", Value: uint64(u.Flags), Why: "undefined flag bit"}
	}
	b = be.AppendUint32(b, u.Iteration)
	return append(b, u.Flags, 0, 0, 0), nil
}

// UnmarshalBinary decodes a YoYoUp: exactly YoYoUpLen bytes, no unknown
// flag, zero reserved bytes.
func (u *YoYoUp) UnmarshalBinary(b []byte) error {
	if err := checkLen(yoyoUpWhat, b, YoYoUpLen); err != nil {
		return err
	}
	if f := b[4]; f&^yoyoUpFlagsKnown != 0 {
		return decodeErr(yoyoUpWhat, DecodeBadFlags, "flags", int(f), -1)
	}
	if err := checkReserved(yoyoUpWhat, b[5:8]); err != nil {
		return err
	}
	*u = YoYoUp{Iteration: be.Uint32(b), Flags: b[4]}
	return nil
}

// AppendBinary appends the encoding of l to b.
func (l YoYoLeader) AppendBinary(b []byte) ([]byte, error) {
	if l.Leader == 0 {
		return b, &EncodeError{What: yoyoLeaderWhat, Field: "leader", Value: 0, Why: "no member has ID 0"}
	}
	b = be.AppendUint32(b, l.Leader)
	return be.AppendUint32(b, l.Seq), nil
}

// UnmarshalBinary decodes a YoYoLeader: exactly YoYoLeaderLen bytes, a
// leader above 0 (the receiver checks that it is a member).
func (l *YoYoLeader) UnmarshalBinary(b []byte) error {
	if err := checkLen(yoyoLeaderWhat, b, YoYoLeaderLen); err != nil {
		return err
	}
	ld := be.Uint32(b)
	if ld == 0 {
		return decodeErr(yoyoLeaderWhat, DecodeBadField, "leader", 0, -1)
	}
	*l = YoYoLeader{Leader: ld, Seq: be.Uint32(b[4:])}
	return nil
}

// checkReserved checks that reserved bytes are zero.
func checkReserved(what string, r []byte) error {
	v := 0
	for _, c := range r {
		v = v<<8 | int(c)
	}
	if v != 0 {
		return decodeErr(what, DecodeBadReserved, "reserved", v, 0)
	}
	return nil
}
