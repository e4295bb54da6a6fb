package wire

import "encoding/binary"

// Payloads of the permission-based mutual exclusion algorithms
// (pkg/mutex/permission): Ricart-Agrawala and Lamport's distributed mutex.
// A member that wants a lock asks every other member; a request is named
// by its Lamport time (Stamp) and its sender, and the (Stamp, sender)
// order is the order in which the requests are served. Every payload
// carries the sender's incarnation (a count of its starts and rejoins,
// never 0): a receiver drops what it knew of an older incarnation, and
// refuses frames of one older than the newest it has seen.
//
// Stamps are Lamport times; a fence is Stamp<<16 | the requester's index
// among the members, so the largest stamp a payload may carry is
// MaxPermStamp (fences stay below 2^63).

// MaxPermStamp is the largest request stamp a payload may carry.
const MaxPermStamp = 1<<47 - 1

// PermRequest is the payload of KindRARequest, KindLamportRequest,
// KindLamportRelease and the distributed bakery's reads (KindBakeryDoorway,
// KindBakeryChoosing, KindBakeryTicket): a request (or the request
// released, or read) for one lock.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Name Len    |                 Reserved (0)                  |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Incarnation (sender's, > 0)                  |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|         Stamp: the request's Lamport time (1..2^47-1)         |  8
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|       Fence: the highest fence the sender knows (or 0)        | 16
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Name (Name Len bytes)                        | 24
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type PermRequest struct {
	Name        string
	Incarnation uint32
	Stamp       uint64
	Fence       uint64
}

// PermRequeue is the payload of KindLamportRequeue: two messages of
// Lamport's distributed mutex in one frame, made in one turn of the
// sender's loop: the release of its request stamped Released and its next
// request for the same lock (the PermRequest), which moves it from its old
// place in the receiver's queue to a new one. The release is stamped with
// the frame's Lamport time less one, the request no later than the frame:
// the sender took the two stamps from its clock in that order, so a
// receiver takes the release, then the request, as if two frames had come
// in the order they were made. Released is below Stamp.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Name Len    |                 Reserved (0)                  |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Incarnation (sender's, > 0)                  |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|      Stamp: the new request's Lamport time (1..2^47-1)        |  8
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|       Fence: the highest fence the sender knows (or 0)        | 16
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Released: the stamp of the request released (1..Stamp-1)     | 24
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Name (Name Len bytes)                        | 32
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type PermRequeue struct {
	PermRequest
	Released uint64
}

// PermReply is the payload of KindRAReply, KindLamportAck and the
// distributed bakery's answers (KindBakeryNumber, KindBakeryChosen,
// KindBakeryTicketReply): the answer to one request, and what the sender
// knows of the lock.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Name Len    |                 Reserved (0)                  |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Incarnation (sender's, > 0)                  |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|      Answers: the incarnation of the request answered (> 0)   |  8
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                         Reserved (0)                          | 12
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|       Stamp: the stamp of the request answered (1..2^47-1)    | 16
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|       Fence: the highest fence the sender knows (or 0)        | 24
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Want: the stamp of the sender's own request (0: none; < 2^47)| 32
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Name (Name Len bytes)                        | 40
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type PermReply struct {
	Name        string
	Incarnation uint32
	Answers     uint32 // the requester's incarnation
	Stamp       uint64
	Fence       uint64
	Want        uint64
}

const (
	permRequestFixedLen = 24
	permReplyFixedLen   = 40
	permRequeueFixedLen = 32

	permRequestWhat = "permission request"
	permReplyWhat   = "permission reply"
	permRequeueWhat = "permission requeue"
)

// AppendBinary appends the encoding of r to b. It fails on a field the
// format cannot carry (a caller's bug).
func (r PermRequest) AppendBinary(b []byte) ([]byte, error) {
	if err := r.check(permRequestWhat); err != nil {
		return b, err
	}
	b = r.appendFixed(b)
	return append(b, r.Name...), nil
}

// check refuses the fields of r the format cannot carry.
func (r PermRequest) check(what string) error {
	switch {
	case !ValidLockName(r.Name):
		return nameEncodeErr(what, r.Name)
	case r.Incarnation == 0:
		return &EncodeError{What: what, Field: "incarnation", Value: 0, Why: "must be > 0"}
	case r.Stamp == 0 || r.Stamp > MaxPermStamp:
		return &EncodeError{What: what, Field: "stamp", Value: r.Stamp, Why: "want 1..MaxPermStamp"}
	}
	return nil
}

// appendFixed appends the 24 bytes before the name.
func (r PermRequest) appendFixed(b []byte) []byte {
	b = append(b, byte(len(r.Name)), 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, r.Incarnation)
	b = binary.BigEndian.AppendUint64(b, r.Stamp)
	return binary.BigEndian.AppendUint64(b, r.Fence)
}

// UnmarshalBinary decodes a PermRequest.
func (r *PermRequest) UnmarshalBinary(b []byte) error {
	if len(b) < permRequestFixedLen {
		return decodeErr(permRequestWhat, DecodeTruncated, "", len(b), permRequestFixedLen)
	}
	if err := r.decodeFixed(permRequestWhat, b); err != nil {
		return err
	}
	name, err := readName(permRequestWhat, b[permRequestFixedLen:], int(b[0]))
	if err != nil {
		return err
	}
	r.Name = name
	return nil
}

// decodeFixed decodes the 24 bytes before the name (b holds them).
func (r *PermRequest) decodeFixed(what string, b []byte) error {
	if b[1] != 0 || b[2] != 0 || b[3] != 0 {
		return decodeErr(what, DecodeBadReserved, "reserved", int(b[1])<<16|int(b[2])<<8|int(b[3]), 0)
	}
	inc := binary.BigEndian.Uint32(b[4:])
	if inc == 0 {
		return decodeErr(what, DecodeBadField, "incarnation", 0, -1)
	}
	stamp := binary.BigEndian.Uint64(b[8:])
	if stamp == 0 || stamp > MaxPermStamp {
		return decodeErr(what, DecodeBadField, "stamp", clampInt(stamp), -1)
	}
	*r = PermRequest{Incarnation: inc, Stamp: stamp, Fence: binary.BigEndian.Uint64(b[16:])}
	return nil
}

// AppendBinary appends the encoding of r to b. It fails on a field the
// format cannot carry (a caller's bug), and on a release not stamped
// before the request.
func (r PermRequeue) AppendBinary(b []byte) ([]byte, error) {
	if err := r.PermRequest.check(permRequeueWhat); err != nil {
		return b, err
	}
	if r.Released == 0 || r.Released >= r.Stamp {
		return b, &EncodeError{What: permRequeueWhat, Field: "released", Value: r.Released, Why: "want 1..Stamp-1"}
	}
	b = r.appendFixed(b)
	b = binary.BigEndian.AppendUint64(b, r.Released)
	return append(b, r.Name...), nil
}

// UnmarshalBinary decodes a PermRequeue.
func (r *PermRequeue) UnmarshalBinary(b []byte) error {
	if len(b) < permRequeueFixedLen {
		return decodeErr(permRequeueWhat, DecodeTruncated, "", len(b), permRequeueFixedLen)
	}
	var req PermRequest
	if err := req.decodeFixed(permRequeueWhat, b); err != nil {
		return err
	}
	released := binary.BigEndian.Uint64(b[24:])
	if released == 0 || released >= req.Stamp {
		return decodeErr(permRequeueWhat, DecodeBadField, "released", clampInt(released), -1)
	}
	name, err := readName(permRequeueWhat, b[permRequeueFixedLen:], int(b[0]))
	if err != nil {
		return err
	}
	req.Name = name
	*r = PermRequeue{PermRequest: req, Released: released}
	return nil
}

// AppendBinary appends the encoding of r to b. It fails on a field the
// format cannot carry (a caller's bug).
func (r PermReply) AppendBinary(b []byte) ([]byte, error) {
	switch {
	case !ValidLockName(r.Name):
		return b, nameEncodeErr(permReplyWhat, r.Name)
	case r.Incarnation == 0 || r.Answers == 0:
		return b, &EncodeError{What: permReplyWhat, Field: "incarnation", Value: uint64(min(r.Incarnation, r.Answers)), Why: "must be > 0"}
	case r.Stamp == 0 || r.Stamp > MaxPermStamp:
		return b, &EncodeError{What: permReplyWhat, Field: "stamp", Value: r.Stamp, Why: "want 1..MaxPermStamp"}
	case r.Want > MaxPermStamp:
		return b, &EncodeError{What: permReplyWhat, Field: "want", Value: r.Want, Why: "exceeds MaxPermStamp"}
	}
	b = append(b, byte(len(r.Name)), 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, r.Incarnation)
	b = binary.BigEndian.AppendUint32(b, r.Answers)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint64(b, r.Stamp)
	b = binary.BigEndian.AppendUint64(b, r.Fence)
	b = binary.BigEndian.AppendUint64(b, r.Want)
	return append(b, r.Name...), nil
}

// UnmarshalBinary decodes a PermReply.
func (r *PermReply) UnmarshalBinary(b []byte) error {
	if len(b) < permReplyFixedLen {
		return decodeErr(permReplyWhat, DecodeTruncated, "", len(b), permReplyFixedLen)
	}
	if b[1] != 0 || b[2] != 0 || b[3] != 0 {
		return decodeErr(permReplyWhat, DecodeBadReserved, "reserved", int(b[1])<<16|int(b[2])<<8|int(b[3]), 0)
	}
	if res := binary.BigEndian.Uint32(b[12:]); res != 0 {
		return decodeErr(permReplyWhat, DecodeBadReserved, "reserved", clampInt(uint64(res)), 0)
	}
	inc, answers := binary.BigEndian.Uint32(b[4:]), binary.BigEndian.Uint32(b[8:])
	switch {
	case inc == 0:
		return decodeErr(permReplyWhat, DecodeBadField, "incarnation", 0, -1)
	case answers == 0:
		return decodeErr(permReplyWhat, DecodeBadField, "answers", 0, -1)
	}
	stamp, want := binary.BigEndian.Uint64(b[16:]), binary.BigEndian.Uint64(b[32:])
	switch {
	case stamp == 0 || stamp > MaxPermStamp:
		return decodeErr(permReplyWhat, DecodeBadField, "stamp", clampInt(stamp), -1)
	case want > MaxPermStamp:
		return decodeErr(permReplyWhat, DecodeBadField, "want", clampInt(want), -1)
	}
	name, err := readName(permReplyWhat, b[permReplyFixedLen:], int(b[0]))
	if err != nil {
		return err
	}
	*r = PermReply{Name: name, Incarnation: inc, Answers: answers, Stamp: stamp,
		Fence: binary.BigEndian.Uint64(b[24:]), Want: want}
	return nil
}

// PermHeartbeat is the payload of KindPermHeartbeat, the heartbeat of the
// permission-based algorithms: its interval and whether the sender may
// still hold or ask for a lock. Busy false says that every request the
// sender made before the frame's Lamport time has ended (and no lease of
// an earlier life may still run), so the permissions others gave it are
// spent: a member that falls silent then holds nothing, and is not waited
// for beyond the failure detector's first suspicion.
//
// Oldest, on a busy heartbeat, says the same of the requests stamped
// before it: the sender's open requests (waiting or held) are all stamped
// Oldest or later, and no lease of an ended one may still run. So what
// others keep for an ended request of the sender (one whose release was
// lost, or one it never made, forged) ends while the sender keeps busy,
// not only at its next idle heartbeat. 0: the sender says nothing of its
// requests (it is idle, a lease may still run, or it predates the field),
// and the payload is 5 bytes long. An Oldest with Busy false is encoded
// as busy: Oldest speaks only for a busy sender.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                        Interval (ms)                          |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	| Busy (0, 1, 2)|                                                  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|        Oldest (Lamport time; only if Busy is 2)               |  5
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The extended form (Ext; Busy byte 3, PermHeartbeatExtLen bytes) adds
// the sender's lease announcement and its acknowledgement of another
// member's (pkg/mutex/permission, "Lease ends"): EndMS, the milliseconds
// from the frame's sending within which every lease the sender granted or
// renewed ends; Bounded, that the sender renews no lease past an end a
// majority acknowledged (without it EndMS binds nothing); Pending, that a
// request of the sender's was waiting when it sent the frame (a lease may
// begin that EndMS does not cover); AckWanted, that the sender waits for
// the receivers' acknowledgement; Ack (0: none), the Lamport time of the
// receiver's announcement the sender took. Older members refuse the
// extended form (Busy byte 3) and take the frame as a sign of life only:
// the sender sends them busy heartbeats in it, and its idle heartbeat,
// which spends the others' leaves, in the 5-byte form once it has heard
// a busy 5-byte heartbeat of theirs, but for one in eight
// (pkg/mutex/permission: until then an idle older member refuses its
// extended idle heartbeats too, and takes the 5-byte copies of its idle
// tail and of one idle heartbeat in eight it is sent besides).
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                        Interval (ms)                          |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|       3       |     Flags     |  Oldest (0: none) ...            4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  ... Oldest   |  EndMS ...                    |  12
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|       ... EndMS               |  Ack (0: none) ...            |  16
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                          ... Ack                              |  20
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Flags: PermBeatBusy, PermBeatBounded, PermBeatPending, PermBeatAckWanted;
// Oldest only with PermBeatBusy.
type PermHeartbeat struct {
	Interval uint32
	Busy     bool
	Oldest   uint64

	// The extended form's (encoded only with Ext).
	Ext                         bool
	Bounded, Pending, AckWanted bool
	EndMS                       int32
	Ack                         uint64
}

// Flags of an extended PermHeartbeat.
const (
	PermBeatBusy      uint8 = 1
	PermBeatBounded   uint8 = 2
	PermBeatPending   uint8 = 4
	PermBeatAckWanted uint8 = 8
	permBeatFlags           = PermBeatBusy | PermBeatBounded | PermBeatPending | PermBeatAckWanted
)

const (
	// PermHeartbeatLen is the length of a PermHeartbeat payload without
	// Oldest; PermHeartbeatOldestLen with it.
	PermHeartbeatLen       = 5
	PermHeartbeatOldestLen = PermHeartbeatLen + 8
	// PermHeartbeatExtLen is the extended form's length.
	PermHeartbeatExtLen = 26

	permHeartbeatWhat = "perm_heartbeat"
)

// AppendBinary appends the encoding of h to b. It cannot fail. The Busy
// byte is 0 (idle), 1 (busy) or 2 (busy, and Oldest follows), so that a
// truncated payload never reads as a shorter valid one.
func (h PermHeartbeat) AppendBinary(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint32(b, h.Interval)
	if h.Ext {
		var f uint8
		for _, x := range []struct {
			on   bool
			flag uint8
		}{{h.Busy || h.Oldest != 0, PermBeatBusy}, {h.Bounded, PermBeatBounded}, {h.Pending, PermBeatPending}, {h.AckWanted, PermBeatAckWanted}} {
			if x.on {
				f |= x.flag
			}
		}
		b = binary.BigEndian.AppendUint64(append(b, 3, f), h.Oldest)
		b = binary.BigEndian.AppendUint32(b, uint32(h.EndMS))
		return binary.BigEndian.AppendUint64(b, h.Ack), nil
	}
	switch {
	case h.Oldest != 0:
		return binary.BigEndian.AppendUint64(append(b, 2), h.Oldest), nil
	case h.Busy:
		return append(b, 1), nil
	}
	return append(b, 0), nil
}

// UnmarshalBinary decodes a PermHeartbeat payload: PermHeartbeatLen bytes
// whose Busy byte is 0 or 1, or PermHeartbeatOldestLen whose Busy byte is
// 2 and whose Oldest is not 0; anything else is a *DecodeError. (A
// receiver bounds Oldest by the frame's own Lamport time.)
func (h *PermHeartbeat) UnmarshalBinary(b []byte) error {
	if len(b) < PermHeartbeatLen {
		return decodeErr(permHeartbeatWhat, DecodeTruncated, "", len(b), PermHeartbeatLen)
	}
	want := PermHeartbeatLen
	switch b[4] {
	case 0, 1:
	case 2:
		want = PermHeartbeatOldestLen
	case 3:
		return h.unmarshalExt(b)
	default:
		return decodeErr(permHeartbeatWhat, DecodeBadField, "busy is neither 0, 1, 2 nor 3", len(b), PermHeartbeatLen)
	}
	if len(b) < want {
		return decodeErr(permHeartbeatWhat, DecodeTruncated, "", len(b), want)
	}
	if len(b) > want {
		return decodeErr(permHeartbeatWhat, DecodeBadLength, "trailing bytes", len(b), want)
	}
	h.Interval = binary.BigEndian.Uint32(b)
	h.Busy = b[4] != 0
	h.Oldest = 0
	if want == PermHeartbeatOldestLen {
		h.Oldest = binary.BigEndian.Uint64(b[PermHeartbeatLen:])
		if h.Oldest == 0 {
			return decodeErr(permHeartbeatWhat, DecodeBadField, "oldest is 0", len(b), want)
		}
	}
	return nil
}

// unmarshalExt decodes the extended form: exactly PermHeartbeatExtLen
// bytes, no undefined flag, Oldest only on a busy heartbeat.
func (h *PermHeartbeat) unmarshalExt(b []byte) error {
	if err := checkLen(permHeartbeatWhat, b, PermHeartbeatExtLen); err != nil {
		return err
	}
	f := b[5]
	v := PermHeartbeat{Interval: binary.BigEndian.Uint32(b), Ext: true, Busy: f&PermBeatBusy != 0, Bounded: f&PermBeatBounded != 0,
		Pending: f&PermBeatPending != 0, AckWanted: f&PermBeatAckWanted != 0,
		Oldest: binary.BigEndian.Uint64(b[6:]), EndMS: int32(binary.BigEndian.Uint32(b[14:])), Ack: binary.BigEndian.Uint64(b[18:])}
	switch {
	case f&^permBeatFlags != 0:
		return decodeErr(permHeartbeatWhat, DecodeBadField, "undefined flag", int(f), -1)
	case v.Oldest != 0 && !v.Busy:
		return decodeErr(permHeartbeatWhat, DecodeBadField, "oldest on an idle heartbeat", len(b), PermHeartbeatExtLen)
	}
	*h = v
	return nil
}
