package wire

import "encoding/binary"

// Heartbeat is the payload of KindHeartbeat: the liveness detector's
// periodic "I am alive", with what a receiver needs to judge silence.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     Interval (milliseconds)                   |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                          Alive (members)                      |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type Heartbeat struct {
	// Interval is the time between the sender's heartbeats, in ms: a
	// receiver can tell a slow sender from a dead one.
	Interval uint32
	// Alive is how many members the sender currently sees alive, itself
	// included: a cheap hint of partitions.
	Alive uint32
}

const (
	offHeartbeatInterval = 0
	offHeartbeatAlive    = 4

	// HeartbeatLen is the exact length of a Heartbeat payload.
	HeartbeatLen = 8

	heartbeatWhat = "heartbeat"
)

// AppendBinary appends the encoding of h to b. It cannot fail; the error is
// there for encoding.BinaryAppender.
func (h Heartbeat) AppendBinary(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint32(b, h.Interval)
	return binary.BigEndian.AppendUint32(b, h.Alive), nil
}

// UnmarshalBinary decodes a Heartbeat payload of exactly HeartbeatLen
// bytes; any other length is a *DecodeError.
func (h *Heartbeat) UnmarshalBinary(b []byte) error {
	if len(b) < HeartbeatLen {
		return decodeErr(heartbeatWhat, DecodeTruncated, "", len(b), HeartbeatLen)
	}
	if len(b) > HeartbeatLen {
		return decodeErr(heartbeatWhat, DecodeBadLength, "trailing bytes", len(b), HeartbeatLen)
	}
	h.Interval = binary.BigEndian.Uint32(b[offHeartbeatInterval:])
	h.Alive = binary.BigEndian.Uint32(b[offHeartbeatAlive:])
	return nil
}

// EpochRefused is the payload of KindEpochRefused: the epoch (SeqEpoch) of
// the receiver's frames that the sender refuses.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          Incarnation (24)                     |  Series (8)   |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type EpochRefused struct {
	Epoch uint32
}

const (
	// EpochRefusedLen is the exact length of an EpochRefused payload.
	EpochRefusedLen = 4

	epochRefusedWhat = "epoch_refused"
)

// AppendBinary appends the encoding of e to b. It cannot fail.
func (e EpochRefused) AppendBinary(b []byte) ([]byte, error) {
	return binary.BigEndian.AppendUint32(b, e.Epoch), nil
}

// UnmarshalBinary decodes an EpochRefused payload of exactly
// EpochRefusedLen bytes; any other length is a *DecodeError.
func (e *EpochRefused) UnmarshalBinary(b []byte) error {
	if len(b) < EpochRefusedLen {
		return decodeErr(epochRefusedWhat, DecodeTruncated, "", len(b), EpochRefusedLen)
	}
	if len(b) > EpochRefusedLen {
		return decodeErr(epochRefusedWhat, DecodeBadLength, "trailing bytes", len(b), EpochRefusedLen)
	}
	e.Epoch = binary.BigEndian.Uint32(b)
	return nil
}
