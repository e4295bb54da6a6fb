package wire

import "encoding/binary"

// Payloads of the bully election (pkg/elect/bully). The frame header already
// carries the sender, the receiver and the term, so the payloads only carry
// what a receiver needs beyond those: the sender's priority, which together
// with its ID is its rank (receivers check it against their member list, so
// nodes that disagree on the ranking find out instead of electing two
// different "highest" members), and a little context. All four are fixed
// size; a reserved byte must be zero, so that a later version can give it a
// meaning that old nodes refuse rather than misread.

// ElectionReason says why a node started an election. It is carried for
// observability (traces, counters); receivers do not act on it.
type ElectionReason uint8

const (
	// ReasonStartup: the node started or recovered.
	ReasonStartup ElectionReason = 1
	// ReasonLeaderLost: the leader's heartbeats stopped.
	ReasonLeaderLost ElectionReason = 2
	// ReasonNoCoordinator: a higher-ranked member answered but no
	// COORDINATOR followed.
	ReasonNoCoordinator ElectionReason = 3
	// ReasonPreempt: the node heard a lower-ranked leader and bullies it.
	ReasonPreempt ElectionReason = 4
	// ReasonLeaderResigned: the leader stepped down gracefully.
	ReasonLeaderResigned ElectionReason = 5

	reasonEnd ElectionReason = 6 // one past the last reason; keep it last and update it
)

func (r ElectionReason) String() string {
	switch r {
	case ReasonStartup:
		return "startup"
	case ReasonLeaderLost:
		return "leader_lost"
	case ReasonNoCoordinator:
		return "no_coordinator"
	case ReasonPreempt:
		return "preempt"
	case ReasonLeaderResigned:
		return "leader_resigned"
	}
	return "reason(" + itoa(int(r)) + ")"
}

// Election asks every higher-ranked member whether it is alive
// (KindElection, sent to each of them).
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     Priority (of the sender)                  |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    Reason     |                 Reserved (0)                  |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type Election struct {
	Priority uint32
	Reason   ElectionReason // 1..5; 0 and unknown values are refused
}

// Answer tells a lower-ranked candidate that a higher-ranked member is alive
// and takes the election over (KindAnswer, the "OK" of the notes).
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     Priority (of the sender)                  |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type Answer struct {
	Priority uint32
}

// Coordinator announces that the sender leads the frame's term
// (KindCoordinator, broadcast; also sent to one stale member to tell it who
// leads now).
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     Priority (of the sender)                  |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Flags     |                 Reserved (0)                  |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Flags: bit 0 CoordinatorReassert (the sender led the previous term it knew
// and keeps leading in this one); other bits reserved, zero.
type Coordinator struct {
	Priority uint32
	Flags    uint8
}

// CoordinatorReassert marks a leader moving itself to a newer term.
const CoordinatorReassert uint8 = 1 << 0

// LeaderHeartbeat is the leader's periodic proof of life (KindLeaderHeartbeat,
// broadcast). Same layout as Coordinator.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     Priority (of the sender)                  |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Flags     |                 Reserved (0)                  |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Flags: bit 0 HeartbeatResign (the leader steps down: elect another one
// now), bit 1 HeartbeatAnswer (the answer to a LeaderProbe); other bits
// reserved, zero.
type LeaderHeartbeat struct {
	Priority uint32
	Flags    uint8
}

// HeartbeatResign marks the last heartbeat of a leader that steps down.
const HeartbeatResign uint8 = 1 << 0

// HeartbeatAnswer marks a heartbeat sent to one follower in answer to its
// LeaderProbe, off the leader's schedule: it says the leader is alive,
// nothing of when its heartbeats come (a follower that times its leader's
// lateness skips it).
const HeartbeatAnswer uint8 = 1 << 1

// LeaderProbe asks the leader of the frame's term for a heartbeat now
// (KindLeaderProbe, to the leader alone): the sender missed the one it
// expected. Same layout as Answer.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     Priority (of the sender)                  |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type LeaderProbe struct {
	Priority uint32
}

// LeaderWatch is a follower's frame to the leader of the frame's term
// over the TCP link to it (KindLeaderWatch): it keeps the link open while
// nothing else goes that way, so that the leader's death closes it. It
// asks for nothing. Same layout as LeaderProbe.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     Priority (of the sender)                  |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type LeaderWatch struct {
	Priority uint32
}

// Offsets and sizes. Election, Coordinator and LeaderHeartbeat share one
// layout: a priority word, then a byte (reason or flags) and three reserved
// bytes.
const (
	offElectPriority = 0
	offElectByte     = 4
	offElectReserved = 5

	// ElectionLen, AnswerLen, CoordinatorLen, LeaderHeartbeatLen are the
	// payloads' exact lengths.
	ElectionLen        = 8
	AnswerLen          = 4
	CoordinatorLen     = 8
	LeaderHeartbeatLen = 8
	LeaderProbeLen     = 4
	LeaderWatchLen     = 4

	coordinatorFlagsKnown = CoordinatorReassert
	heartbeatFlagsKnown   = HeartbeatResign | HeartbeatAnswer
	ringFlagsKnown        = HeartbeatResign

	electionWhat        = "election"
	answerWhat          = "answer"
	coordinatorWhat     = "coordinator"
	leaderHeartbeatWhat = "leader heartbeat"
	leaderProbeWhat     = "leader probe"
	leaderWatchWhat     = "leader watch"
)

// appendElectWord appends the common 8-byte layout.
func appendElectWord(b []byte, prio uint32, x uint8) []byte {
	b = binary.BigEndian.AppendUint32(b, prio)
	return append(b, x, 0, 0, 0)
}

// AppendBinary appends the encoding of e to b.
func (e Election) AppendBinary(b []byte) ([]byte, error) {
	if e.Reason == 0 || e.Reason >= reasonEnd {
		return b, &EncodeError{What: electionWhat, Field: "reason", Value: uint64(e.Reason), Why: "not a defined reason"}
	}
	return appendElectWord(b, e.Priority, uint8(e.Reason)), nil
}

// UnmarshalBinary decodes an Election payload: exactly ElectionLen bytes, a
// known reason, zero reserved bytes.
func (e *Election) UnmarshalBinary(b []byte) error {
	if err := checkElectWord(electionWhat, b, ElectionLen); err != nil {
		return err
	}
	r := ElectionReason(b[offElectByte])
	if r == 0 || r >= reasonEnd {
		return decodeErr(electionWhat, DecodeBadField, "reason", int(r), -1)
	}
	e.Priority = binary.BigEndian.Uint32(b[offElectPriority:])
	e.Reason = r
	return nil
}

// decodePriority decodes the payloads that are a priority word alone
// (Answer, LeaderProbe, LeaderWatch): exactly 4 bytes.
func decodePriority(what string, b []byte, prio *uint32) error {
	if err := checkLen(what, b, 4); err != nil {
		return err
	}
	*prio = binary.BigEndian.Uint32(b[offElectPriority:])
	return nil
}

// AppendBinary appends the encoding of a to b. It cannot fail; the error is
// there for encoding.BinaryAppender.
func (a Answer) AppendBinary(b []byte) ([]byte, error) {
	return binary.BigEndian.AppendUint32(b, a.Priority), nil
}

// UnmarshalBinary decodes an Answer payload: exactly AnswerLen bytes.
func (a *Answer) UnmarshalBinary(b []byte) error { return decodePriority(answerWhat, b, &a.Priority) }

// AppendBinary appends the encoding of p to b.
func (p LeaderProbe) AppendBinary(b []byte) ([]byte, error) {
	return binary.BigEndian.AppendUint32(b, p.Priority), nil
}

// UnmarshalBinary decodes a LeaderProbe payload: exactly LeaderProbeLen
// bytes.
func (p *LeaderProbe) UnmarshalBinary(b []byte) error {
	return decodePriority(leaderProbeWhat, b, &p.Priority)
}

// AppendBinary appends the encoding of w to b.
func (w LeaderWatch) AppendBinary(b []byte) ([]byte, error) {
	return binary.BigEndian.AppendUint32(b, w.Priority), nil
}

// UnmarshalBinary decodes a LeaderWatch payload: exactly LeaderWatchLen
// bytes.
func (w *LeaderWatch) UnmarshalBinary(b []byte) error {
	return decodePriority(leaderWatchWhat, b, &w.Priority)
}

// AppendBinary appends the encoding of c to b.
func (c Coordinator) AppendBinary(b []byte) ([]byte, error) {
	if c.Flags&^coordinatorFlagsKnown != 0 {
		return b, &EncodeError{What: coordinatorWhat, Field: "flags", Value: uint64(c.Flags), Why: "undefined flag bit"}
	}
	return appendElectWord(b, c.Priority, c.Flags), nil
}

// UnmarshalBinary decodes a Coordinator payload: exactly CoordinatorLen
// bytes, no unknown flag, zero reserved bytes.
func (c *Coordinator) UnmarshalBinary(b []byte) error {
	if err := checkElectWord(coordinatorWhat, b, CoordinatorLen); err != nil {
		return err
	}
	if f := b[offElectByte]; f&^coordinatorFlagsKnown != 0 {
		return decodeErr(coordinatorWhat, DecodeBadFlags, "flags", int(f), -1)
	}
	c.Priority = binary.BigEndian.Uint32(b[offElectPriority:])
	c.Flags = b[offElectByte]
	return nil
}

// AppendBinary appends the encoding of h to b.
func (h LeaderHeartbeat) AppendBinary(b []byte) ([]byte, error) {
	if h.Flags&^heartbeatFlagsKnown != 0 {
		return b, &EncodeError{What: leaderHeartbeatWhat, Field: "flags", Value: uint64(h.Flags), Why: "undefined flag bit"}
	}
	return appendElectWord(b, h.Priority, h.Flags), nil
}

// UnmarshalBinary decodes a LeaderHeartbeat payload: exactly
// LeaderHeartbeatLen bytes, no unknown flag, zero reserved bytes.
func (h *LeaderHeartbeat) UnmarshalBinary(b []byte) error {
	if err := checkElectWord(leaderHeartbeatWhat, b, LeaderHeartbeatLen); err != nil {
		return err
	}
	if f := b[offElectByte]; f&^heartbeatFlagsKnown != 0 {
		return decodeErr(leaderHeartbeatWhat, DecodeBadFlags, "flags", int(f), -1)
	}
	h.Priority = binary.BigEndian.Uint32(b[offElectPriority:])
	h.Flags = b[offElectByte]
	return nil
}

// checkElectWord checks the length and the reserved bytes of the common
// layout.
func checkElectWord(what string, b []byte, want int) error {
	if err := checkLen(what, b, want); err != nil {
		return err
	}
	if r := b[offElectReserved:want]; r[0]|r[1]|r[2] != 0 {
		return decodeErr(what, DecodeBadReserved, "reserved", int(r[0])<<16|int(r[1])<<8|int(r[2]), 0)
	}
	return nil
}

// checkLen checks that a fixed-size payload is exactly want bytes long.
func checkLen(what string, b []byte, want int) error {
	switch {
	case len(b) < want:
		return decodeErr(what, DecodeTruncated, "", len(b), want)
	case len(b) > want:
		return decodeErr(what, DecodeBadLength, "trailing bytes", len(b), want)
	}
	return nil
}
