package wire

import "encoding/binary"

// Payloads of Cristian's algorithm (pkg/timesync/cristian). A client sends
// a TimeRequest frame to a timed server's NTP address; the server answers
// with a TimeReply frame whose header transmit timestamp (Xmt, patched just
// before the write) is the server's time t of the notes. Both travel on
// timed's NTP socket rather than between members: the client need not be a
// member, so a receiver checks the cluster and, with keys, the MAC, but
// keeps no replay window (Validator.Authenticate): a request changes
// nothing at the server, and a reply is only accepted if it echoes the
// transmit timestamp of a request the client has outstanding.
//
// The request is as long as the reply, so that the server never answers
// with more bytes than it received (no amplification).

// TimeRequest is the payload of KindTimeRequest: TimeRequestLen reserved
// bytes that must be zero. The request's own transmit timestamp (frame
// header) is what the reply echoes.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                   Reserved, zero (24 bytes)                   |  0
//	~                                                               ~
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type TimeRequest struct{}

// TimeReply is the payload of KindTimeReply: what the server says of its
// clock (as an NTP server would in its header), and the request it answers.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|      Leap     |    Stratum    |   Precision   | Reserved (0)  |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                   Root Delay (NTPShort)                       |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Root Dispersion (NTPShort)                    |  8
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                        Reference ID                           | 12
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Origin: the request's transmit timestamp (NTPTime), echoed  | 16
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Leap takes the NTP leap indicator's values (3: the server's clock is not
// synchronised, and the client must not use it).
type TimeReply struct {
	Leap           uint8
	Stratum        uint8
	Precision      int8
	RootDelay      NTPShort
	RootDispersion NTPShort
	ReferenceID    uint32
	Origin         NTPTime
}

const (
	// TimeRequestLen and TimeReplyLen are the exact payload lengths.
	TimeRequestLen = 24
	TimeReplyLen   = 24

	offReplyLeap      = 0
	offReplyStratum   = 1
	offReplyPrecision = 2
	offReplyReserved  = 3
	offReplyRootDelay = 4
	offReplyRootDisp  = 8
	offReplyRefID     = 12
	offReplyOrigin    = 16

	timeRequestWhat = "time request"
	timeReplyWhat   = "time reply"
)

// AppendBinary appends the encoding of r to b. It cannot fail; the error is
// there for encoding.BinaryAppender.
func (TimeRequest) AppendBinary(b []byte) ([]byte, error) {
	return append(b, make([]byte, TimeRequestLen)...), nil
}

// UnmarshalBinary decodes a TimeRequest payload: exactly TimeRequestLen
// zero bytes.
func (*TimeRequest) UnmarshalBinary(b []byte) error {
	if err := checkLen(timeRequestWhat, b, TimeRequestLen); err != nil {
		return err
	}
	for _, c := range b {
		if c != 0 {
			return decodeErr(timeRequestWhat, DecodeBadReserved, "reserved", int(c), 0)
		}
	}
	return nil
}

// AppendBinary appends the encoding of r to b. It refuses a leap indicator
// above 3, which NTP's two bits cannot carry either.
func (r TimeReply) AppendBinary(b []byte) ([]byte, error) {
	if r.Leap > 3 {
		return b, &EncodeError{What: timeReplyWhat, Field: "leap", Value: uint64(r.Leap), Why: "above 3"}
	}
	b = append(b, r.Leap, r.Stratum, byte(r.Precision), 0)
	b = binary.BigEndian.AppendUint32(b, uint32(r.RootDelay))
	b = binary.BigEndian.AppendUint32(b, uint32(r.RootDispersion))
	b = binary.BigEndian.AppendUint32(b, r.ReferenceID)
	return binary.BigEndian.AppendUint64(b, uint64(r.Origin)), nil
}

// UnmarshalBinary decodes a TimeReply payload: exactly TimeReplyLen bytes,
// a leap indicator of at most 3, a zero reserved byte.
func (r *TimeReply) UnmarshalBinary(b []byte) error {
	if err := checkLen(timeReplyWhat, b, TimeReplyLen); err != nil {
		return err
	}
	if b[offReplyLeap] > 3 {
		return decodeErr(timeReplyWhat, DecodeBadField, "leap", int(b[offReplyLeap]), 3)
	}
	if b[offReplyReserved] != 0 {
		return decodeErr(timeReplyWhat, DecodeBadReserved, "reserved", int(b[offReplyReserved]), 0)
	}
	*r = TimeReply{
		Leap:           b[offReplyLeap],
		Stratum:        b[offReplyStratum],
		Precision:      int8(b[offReplyPrecision]),
		RootDelay:      NTPShort(binary.BigEndian.Uint32(b[offReplyRootDelay:])),
		RootDispersion: NTPShort(binary.BigEndian.Uint32(b[offReplyRootDisp:])),
		ReferenceID:    binary.BigEndian.Uint32(b[offReplyRefID:]),
		Origin:         NTPTime(binary.BigEndian.Uint64(b[offReplyOrigin:])),
	}
	return nil
}

// IsFrame reports whether b starts like a synclab frame (its magic), which
// is how timed tells Cristian's frames from NTP packets on one socket: an
// NTP packet starting with 'S' would be version 2 with leap indicator 1,
// which no current implementation sends and timed does not answer.
func IsFrame(b []byte) bool {
	return len(b) >= 2 && b[offMagic] == magic0 && b[offMagic+1] == magic1
}
