package wire

import "encoding/binary"

// Payloads of the ring elections (pkg/elect/ring): the naive ring, the
// id-list ring, Chang-Roberts, Franklin and Fredrickson-Lynch. The frame
// header carries the sender, the receiver and the term; the payloads carry
// what travels around the ring.
//
// An election or coordinator message moves one hop at a time, from a member
// to its live successor (or, for Franklin, predecessor), and each hop is
// acknowledged (RingAck) with the hop's Seq, so that a dead successor is
// noticed and skipped. Seq increases per sender (its first value comes
// from the sender's clock at start, so a restarted sender does not reuse
// one): the receiver acknowledges every copy and acts on one.

// MaxRingIDs is the most member IDs a RingElection may list: far more than
// any lab ring, few enough that a list always fits a frame.
const MaxRingIDs = 1024

// RingElection flags.
const (
	// RingCounterclockwise: the message travels from successor to
	// predecessor (Franklin's leftward messages); clear, it travels
	// clockwise, from predecessor to successor.
	RingCounterclockwise uint8 = 1 << 0
	// RingRelayed: a passive Franklin member relayed the message (for
	// traces; receivers do not act on it).
	RingRelayed uint8 = 1 << 1

	ringElectionFlagsKnown = RingCounterclockwise | RingRelayed
)

// RingElection is the payload of KindRingElection: one hop of an election
// message around the ring.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Seq (of this hop)                        |  0
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          Attempt (the election's, within the term)            |  8
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|            Origin (the member whose message it is)            | 12
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|           Candidate (the ID compared: Chang-Roberts,          | 16
//	|                  Franklin, the naive ring)                    |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                    Round (Franklin's; else 0)                 | 20
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Flags     | Reserved (0)  |           ID Count            | 24
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|      IDs: ID Count member IDs collected around the ring       | 28
//	/        (the id-list ring, Fredrickson-Lynch; else none)       /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The decoder checks structure only: at most MaxRingIDs IDs, none 0, the
// length exactly what the count says; whether the IDs are members, the
// round plausible, the origin a member is the core's policy.
type RingElection struct {
	Seq       uint64
	Attempt   uint32
	Origin    uint32
	Candidate uint32
	Round     uint32
	Flags     uint8
	IDs       []uint32
}

// RingCoordinator is the payload of KindRingCoordinator: one hop of the
// announcement of the frame's term's leader (the term's owner, named again
// in Leader so that a forged one is refused) around the ring. It stops at
// the first member that already knew that leader in that term: the origin
// when it comes back, or whoever follows a dead origin.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Seq (of this hop)                        |  0
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|       Attempt (the election that ended, within the term)      |  8
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          Origin (the member that started the announcement)    | 12
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                    Leader (the term's owner)                  | 16
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type RingCoordinator struct {
	Seq     uint64
	Attempt uint32
	Origin  uint32
	Leader  uint32
}

// RingAck is the payload of KindRingAck: the receiver of a hop got it.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                   Seq (of the hop acknowledged)               |  0
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type RingAck struct {
	Seq uint64
}

// RingHeartbeat is the payload of KindRingHeartbeat: the elected leader's
// periodic proof of life, broadcast (or sent to one member that is behind).
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Flags     |                 Reserved (0)                  |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Flags: bit 0 HeartbeatResign (the leader steps down), as bully's.
type RingHeartbeat struct {
	Flags uint8
}

const (
	offRingSeq       = 0
	offRingAttempt   = 8
	offRingOrigin    = 12
	offRingCandidate = 16
	offRingRound     = 20
	offRingFlags     = 24
	offRingReserved  = 25
	offRingCount     = 26
	offRingIDs       = 28
	offRingLeader    = 16

	// RingElectionMinLen is a RingElection without IDs; each ID adds 4.
	RingElectionMinLen = 28
	// RingElectionMaxLen is a RingElection with MaxRingIDs IDs.
	RingElectionMaxLen = RingElectionMinLen + 4*MaxRingIDs
	// RingCoordinatorLen, RingAckLen, RingHeartbeatLen are exact lengths.
	RingCoordinatorLen = 20
	RingAckLen         = 8
	RingHeartbeatLen   = 4

	ringElectionWhat    = "ring election"
	ringCoordinatorWhat = "ring coordinator"
	ringAckWhat         = "ring ack"
	ringHeartbeatWhat   = "ring heartbeat"
)

// AppendBinary appends the encoding of e to b.
func (e RingElection) AppendBinary(b []byte) ([]byte, error) {
	if e.Flags&^ringElectionFlagsKnown != 0 {
		return b, &EncodeError{What: ringElectionWhat, Field: "flags", Value: uint64(e.Flags), Why: "undefined flag bit"}
	}
	if len(e.IDs) > MaxRingIDs {
		return b, &EncodeError{What: ringElectionWhat, Field: "ids", Value: uint64(len(e.IDs)), Why: "more than MaxRingIDs"}
	}
	for _, id := range e.IDs {
		if id == 0 {
			return b, &EncodeError{What: ringElectionWhat, Field: "ids", Value: 0, Why: "member ID 0 is reserved"}
		}
	}
	b = binary.BigEndian.AppendUint64(b, e.Seq)
	b = binary.BigEndian.AppendUint32(b, e.Attempt)
	b = binary.BigEndian.AppendUint32(b, e.Origin)
	b = binary.BigEndian.AppendUint32(b, e.Candidate)
	b = binary.BigEndian.AppendUint32(b, e.Round)
	b = append(b, e.Flags, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(e.IDs)))
	for _, id := range e.IDs {
		b = binary.BigEndian.AppendUint32(b, id)
	}
	return b, nil
}

// UnmarshalBinary decodes a RingElection: the fixed part, no unknown flag,
// a zero reserved byte, at most MaxRingIDs non-zero IDs and exactly the
// bytes they take. The IDs are copied into e.IDs, reusing its array.
func (e *RingElection) UnmarshalBinary(b []byte) error {
	if len(b) < RingElectionMinLen {
		return decodeErr(ringElectionWhat, DecodeTruncated, "", len(b), RingElectionMinLen)
	}
	if f := b[offRingFlags]; f&^ringElectionFlagsKnown != 0 {
		return decodeErr(ringElectionWhat, DecodeBadFlags, "flags", int(f), -1)
	}
	if r := b[offRingReserved]; r != 0 {
		return decodeErr(ringElectionWhat, DecodeBadReserved, "reserved", int(r), 0)
	}
	n := int(binary.BigEndian.Uint16(b[offRingCount:]))
	if n > MaxRingIDs {
		return decodeErr(ringElectionWhat, DecodeOversized, "id count", n, MaxRingIDs)
	}
	if want := RingElectionMinLen + 4*n; len(b) != want {
		if len(b) < want {
			return decodeErr(ringElectionWhat, DecodeTruncated, "ids", len(b), want)
		}
		return decodeErr(ringElectionWhat, DecodeBadLength, "trailing bytes", len(b), want)
	}
	for i := range n {
		if binary.BigEndian.Uint32(b[offRingIDs+4*i:]) == 0 {
			return decodeErr(ringElectionWhat, DecodeBadField, "ids", 0, -1)
		}
	}
	e.Seq = binary.BigEndian.Uint64(b[offRingSeq:])
	e.Attempt = binary.BigEndian.Uint32(b[offRingAttempt:])
	e.Origin = binary.BigEndian.Uint32(b[offRingOrigin:])
	e.Candidate = binary.BigEndian.Uint32(b[offRingCandidate:])
	e.Round = binary.BigEndian.Uint32(b[offRingRound:])
	e.Flags = b[offRingFlags]
	e.IDs = e.IDs[:0]
	for i := range n {
		e.IDs = append(e.IDs, binary.BigEndian.Uint32(b[offRingIDs+4*i:]))
	}
	if n == 0 {
		e.IDs = nil
	}
	return nil
}

// AppendBinary appends the encoding of c to b. It cannot fail.
func (c RingCoordinator) AppendBinary(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint64(b, c.Seq)
	b = binary.BigEndian.AppendUint32(b, c.Attempt)
	b = binary.BigEndian.AppendUint32(b, c.Origin)
	return binary.BigEndian.AppendUint32(b, c.Leader), nil
}

// UnmarshalBinary decodes a RingCoordinator of exactly RingCoordinatorLen
// bytes.
func (c *RingCoordinator) UnmarshalBinary(b []byte) error {
	if err := checkLen(ringCoordinatorWhat, b, RingCoordinatorLen); err != nil {
		return err
	}
	c.Seq = binary.BigEndian.Uint64(b[offRingSeq:])
	c.Attempt = binary.BigEndian.Uint32(b[offRingAttempt:])
	c.Origin = binary.BigEndian.Uint32(b[offRingOrigin:])
	c.Leader = binary.BigEndian.Uint32(b[offRingLeader:])
	return nil
}

// AppendBinary appends the encoding of a to b. It cannot fail.
func (a RingAck) AppendBinary(b []byte) ([]byte, error) {
	return binary.BigEndian.AppendUint64(b, a.Seq), nil
}

// UnmarshalBinary decodes a RingAck of exactly RingAckLen bytes.
func (a *RingAck) UnmarshalBinary(b []byte) error {
	if err := checkLen(ringAckWhat, b, RingAckLen); err != nil {
		return err
	}
	a.Seq = binary.BigEndian.Uint64(b)
	return nil
}

// AppendBinary appends the encoding of h to b.
func (h RingHeartbeat) AppendBinary(b []byte) ([]byte, error) {
	if h.Flags&^ringFlagsKnown != 0 {
		return b, &EncodeError{What: ringHeartbeatWhat, Field: "flags", Value: uint64(h.Flags), Why: "undefined flag bit"}
	}
	return append(b, h.Flags, 0, 0, 0), nil
}

// UnmarshalBinary decodes a RingHeartbeat: exactly RingHeartbeatLen bytes,
// no unknown flag, zero reserved bytes.
func (h *RingHeartbeat) UnmarshalBinary(b []byte) error {
	if err := checkLen(ringHeartbeatWhat, b, RingHeartbeatLen); err != nil {
		return err
	}
	if f := b[0]; f&^ringFlagsKnown != 0 {
		return decodeErr(ringHeartbeatWhat, DecodeBadFlags, "flags", int(f), -1)
	}
	if b[1]|b[2]|b[3] != 0 {
		return decodeErr(ringHeartbeatWhat, DecodeBadReserved, "reserved", int(b[1])<<16|int(b[2])<<8|int(b[3]), 0)
	}
	h.Flags = b[0]
	return nil
}
