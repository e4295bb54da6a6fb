package wire

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"sync"
)

// The synclab frame: a fixed 52-byte header, the payload of the header's
// kind, when FlagVector is set a vector timestamp, and, when FlagAuth is
// set, a 20-byte authentication trailer. All integers are big-endian.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Magic 'S' |     Magic 'L' |    Version    |     Kind      |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Flags     |  Reserved (0) |        Payload Length         |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                          Cluster ID                           |  8
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                           Sender ID                           | 12
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Receiver ID (0: every member)                | 16
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                          Term / Epoch                         | 20
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          Sequence: Incarnation (24)           |  Series (8)   | 28
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                       Sequence: Counter (32)                  | 32
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                          Lamport Time                         | 36
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Transmit Timestamp (NTPTime, sender's clock; 0: unknown)    | 44
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Payload (Payload Length bytes)               | 52
//	~                                                               ~
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Vector Count (if FlagVector) |  Vector entries (12 bytes     | 52+n
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+  each: Member ID (32),        +
//	~                                  Counter (64)), IDs ascending ~
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                    Key ID (if FlagAuth)                       | 52+n+v
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  HMAC-SHA256(key, header with FlagAuth + payload + vector)    | 56+n+v
//	~                  [:16] (if FlagAuth)                          ~
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Flags: bit 0 FlagAuth, bit 1 FlagVector; the other bits are reserved and
// must be zero (a decoder refuses them, so a later version can give them a
// meaning old nodes refuse rather than ignore).
//
// The vector block is a vector timestamp (pkg/clock Vector, whose encoding
// it is): v = 2 + 12×Count bytes, at most MaxVectorEntries entries, member
// IDs strictly ascending, no zero counter (absent entries are zero). Only
// frames of a node that keeps vector clocks carry it; a frame without the
// flag is exactly the frame of before the flag existed.
//
// The sequence number is one big-endian 64-bit field in three parts (Seq,
// SeqParts): the sender's incarnation (24 bits, raised and persisted at
// every start), a series within the incarnation (8 bits, raised while
// running when a peer restarts or the counter runs out) and a counter of
// frames in the series (32 bits, from 1). It only ever grows, per sender,
// across restarts too; the top 32 bits together are the sender's epoch
// (SeqEpoch), which receivers remember to refuse replays.
const (
	offMagic    = 0
	offVersion  = 2
	offKind     = 3
	offFlags    = 4
	offReserved = 5
	offLength   = 6
	offCluster  = 8
	offSender   = 12
	offReceiver = 16
	offTerm     = 20
	offSeq      = 28
	offLamport  = 36
	// XmtOffset is the offset of the transmit timestamp in an encoded
	// frame, patched by PatchXmt just before the write.
	XmtOffset = 44

	// HeaderLen is the length of the fixed frame header.
	HeaderLen = 52
	// AuthTrailerLen is the length of the authentication trailer: key ID
	// (4 bytes) and truncated HMAC (16 bytes).
	AuthTrailerLen = 4 + MACLen
	// MACLen is the length of the truncated HMAC-SHA256 in the trailer:
	// 128 bits, as in RFC 4868's HMAC-SHA-256-128.
	MACLen = 16
	// MaxFrameLen bounds a whole frame, trailer included: it must fit in
	// one UDP datagram and in the 16-bit TCP length prefix.
	MaxFrameLen = 65535
	// MaxPayloadLen is the largest payload that still fits a sealed frame
	// in MaxFrameLen.
	MaxPayloadLen = MaxFrameLen - HeaderLen - AuthTrailerLen

	// Version is the frame version this code writes and reads.
	Version = 1

	// FlagAuth says that an authentication trailer follows the payload.
	FlagAuth uint8 = 1 << 0
	// FlagVector says that a vector timestamp follows the payload.
	FlagVector uint8 = 1 << 1

	// MaxVectorEntries bounds a frame's vector timestamp (pkg/clock's
	// MaxVectorEntries); a node also refuses entries of non-members.
	MaxVectorEntries = 1024
	vectorHeaderLen  = 2
	vectorEntryLen   = 12

	flagsKnown = FlagAuth | FlagVector
	magic0     = 'S'
	magic1     = 'L'
)

// Header is the fixed part of a synclab frame.
type Header struct {
	// Version is the frame version. Decoding accepts only Version;
	// encoding writes Version whether this is 0 or Version, and refuses
	// anything else.
	Version uint8
	Kind    Kind
	// Flags as on the wire. AppendBinary clears FlagAuth (Seal sets it);
	// UnmarshalBinary reports it.
	Flags uint8
	// Cluster is ClusterID of the cluster name.
	Cluster uint32
	// Sender is the sender's member ID, never 0.
	Sender uint32
	// Receiver is the addressee's member ID, or 0 for every member.
	Receiver uint32
	// Term is the sender's term or epoch; its meaning is the core's.
	Term uint64
	// Seq is the sender's sequence number: incarnation (24 bits), series
	// (8 bits) and counter (32 bits), see Seq. Strictly increasing per
	// sender, across restarts too, which is what lets receivers refuse
	// replays.
	Seq uint64
	// Lamport is the sender's Lamport clock when it sent the frame.
	Lamport uint64
	// Xmt is the sender's clock when the frame left, patched in by
	// PatchXmt just before the write; 0 if unknown.
	Xmt NTPTime
}

// The parts of a sequence number, high to low.
const (
	IncarnationBits = 24
	SeriesBits      = 8
	CounterBits     = 32
	// MaxIncarnation, MaxSeries and MaxCounter are the largest values of
	// each part.
	MaxIncarnation = 1<<IncarnationBits - 1
	MaxSeries      = 1<<SeriesBits - 1
	MaxCounter     = 1<<CounterBits - 1
)

// Seq assembles a sequence number from its parts. Parts wider than their
// field are cut to it.
func Seq(incarnation uint32, series uint8, counter uint32) uint64 {
	return uint64(incarnation&MaxIncarnation)<<(SeriesBits+CounterBits) | uint64(series)<<CounterBits | uint64(counter)
}

// SeqParts splits a sequence number into its parts.
func SeqParts(seq uint64) (incarnation uint32, series uint8, counter uint32) {
	return uint32(seq >> (SeriesBits + CounterBits)), uint8(seq >> CounterBits), uint32(seq)
}

// SeqEpoch is the incarnation and series of seq together (its top 32
// bits): a sender's epoch only grows, and a receiver that remembers the
// highest epoch it accepted from a sender can refuse every frame of an
// earlier one, even after the receiver restarts.
func SeqEpoch(seq uint64) uint32 { return uint32(seq >> CounterBits) }

// Frame is a whole synclab frame.
type Frame struct {
	Header
	// Payload is the kind's encoding. After UnmarshalBinary it aliases the
	// input buffer (no copy), with its capacity clipped so that appending
	// to it cannot overwrite the trailer.
	Payload []byte
	// Vector is the encoded vector timestamp (pkg/clock Vector's
	// encoding), nil when the frame carries none. AppendBinary writes it
	// and sets FlagVector when it is non-empty; UnmarshalBinary checks its
	// structure and aliases it like Payload.
	Vector []byte
	// KeyID and MAC are the authentication trailer, set by
	// UnmarshalBinary when FlagAuth is set (zero otherwise). AppendBinary
	// ignores them: Seal computes them.
	KeyID uint32
	MAC   [MACLen]byte
}

const frameWhat = "frame"

// AppendBinary appends the header and payload of f to b, with the payload
// length filled in and FlagAuth cleared; it never writes a trailer (Seal
// adds one). It refuses, with an *EncodeError, what UnmarshalBinary would
// refuse: an unknown kind, a version other than Version, reserved flags,
// sender 0, or a payload longer than MaxPayloadLen. With enough capacity
// in b it does not allocate.
func (f *Frame) AppendBinary(b []byte) ([]byte, error) {
	switch {
	case f.Version != 0 && f.Version != Version:
		return b, &EncodeError{What: frameWhat, Field: "version", Value: uint64(f.Version), Why: "unsupported"}
	case !f.Kind.Known():
		return b, &EncodeError{What: frameWhat, Field: "kind", Value: uint64(f.Kind), Why: "unknown"}
	case f.Flags&^flagsKnown != 0:
		return b, &EncodeError{What: frameWhat, Field: "flags", Value: uint64(f.Flags), Why: "reserved bits set"}
	case f.Sender == 0:
		return b, &EncodeError{What: frameWhat, Field: "sender", Value: 0, Why: "member IDs start at 1"}
	case len(f.Payload) > MaxPayloadLen:
		return b, &EncodeError{What: frameWhat, Field: "payload length", Value: uint64(len(f.Payload)), Why: "exceeds MaxPayloadLen"}
	case len(f.Vector) > 0 && checkVector(f.Vector) != nil:
		return b, &EncodeError{What: frameWhat, Field: "vector", Value: uint64(len(f.Vector)), Why: checkVector(f.Vector).Error()}
	case HeaderLen+len(f.Payload)+len(f.Vector)+AuthTrailerLen > MaxFrameLen:
		return b, &EncodeError{What: frameWhat, Field: "vector length", Value: uint64(len(f.Vector)), Why: "frame exceeds MaxFrameLen"}
	}
	flags := f.Flags &^ (FlagAuth | FlagVector)
	if len(f.Vector) > 0 {
		flags |= FlagVector
	}
	b = append(b, magic0, magic1, Version, byte(f.Kind), flags, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(f.Payload)))
	b = binary.BigEndian.AppendUint32(b, f.Cluster)
	b = binary.BigEndian.AppendUint32(b, f.Sender)
	b = binary.BigEndian.AppendUint32(b, f.Receiver)
	b = binary.BigEndian.AppendUint64(b, f.Term)
	b = binary.BigEndian.AppendUint64(b, f.Seq)
	b = binary.BigEndian.AppendUint64(b, f.Lamport)
	b = binary.BigEndian.AppendUint64(b, uint64(f.Xmt))
	b = append(b, f.Payload...)
	return append(b, f.Vector...), nil
}

// checkVector checks the structure of an encoded vector block that is
// exactly b: its count, length, ascending IDs and non-zero counters.
func checkVector(b []byte) error { return checkVectorOf(frameWhat, b, MaxVectorEntries) }

// checkVectorOf is checkVector for a vector in what, of at most most
// entries.
func checkVectorOf(what string, b []byte, most int) error {
	if len(b) < vectorHeaderLen {
		return decodeErr(what, DecodeTruncated, "vector", len(b), vectorHeaderLen)
	}
	n := int(binary.BigEndian.Uint16(b))
	if n > most {
		return decodeErr(what, DecodeOversized, "vector count", n, most)
	}
	if want := vectorHeaderLen + vectorEntryLen*n; len(b) != want {
		return decodeErr(what, DecodeBadLength, "vector", len(b), want)
	}
	var prev uint32
	for k := range n {
		e := b[vectorHeaderLen+vectorEntryLen*k:]
		id := binary.BigEndian.Uint32(e)
		if k > 0 && id <= prev {
			return decodeErr(what, DecodeBadField, "vector member IDs not ascending", clampInt(uint64(id)), -1)
		}
		if binary.BigEndian.Uint64(e[4:]) == 0 {
			return decodeErr(what, DecodeBadField, "vector counter 0", clampInt(uint64(id)), -1)
		}
		prev = id
	}
	return nil
}

// UnmarshalBinary decodes a whole frame: b must hold exactly one frame,
// trailer included, and nothing else. It checks structure only (magic,
// version, a known kind, flags, reserved byte, sender != 0, exact lengths)
// and returns a *DecodeError otherwise; whether the frame should be
// delivered is Validator's business. It does not allocate: Payload aliases
// b, so b must not be reused while f is in use.
func (f *Frame) UnmarshalBinary(b []byte) error {
	if len(b) < HeaderLen {
		return decodeErr(frameWhat, DecodeTruncated, "header", len(b), HeaderLen)
	}
	if len(b) > MaxFrameLen {
		return decodeErr(frameWhat, DecodeOversized, "", len(b), MaxFrameLen)
	}
	if b[offMagic] != magic0 || b[offMagic+1] != magic1 {
		return decodeErr(frameWhat, DecodeBadMagic, "", int(binary.BigEndian.Uint16(b[offMagic:])), -1)
	}
	if b[offVersion] != Version {
		return decodeErr(frameWhat, DecodeBadVersion, "", int(b[offVersion]), Version)
	}
	kind := Kind(b[offKind])
	if !kind.Known() {
		return decodeErr(frameWhat, DecodeUnknownKind, "", int(kind), -1)
	}
	flags := b[offFlags]
	if flags&^flagsKnown != 0 {
		return decodeErr(frameWhat, DecodeBadFlags, "", int(flags), -1)
	}
	if b[offReserved] != 0 {
		return decodeErr(frameWhat, DecodeBadReserved, "byte 5", int(b[offReserved]), 0)
	}
	sender := binary.BigEndian.Uint32(b[offSender:])
	if sender == 0 {
		return decodeErr(frameWhat, DecodeBadField, "sender", 0, -1)
	}
	n := int(binary.BigEndian.Uint16(b[offLength:]))
	end := HeaderLen + n // of the payload
	signed := end        // of the payload and the vector: what the MAC covers
	if flags&FlagVector != 0 {
		if len(b) < end+vectorHeaderLen {
			return decodeErr(frameWhat, DecodeTruncated, "vector", len(b), end+vectorHeaderLen)
		}
		count := int(binary.BigEndian.Uint16(b[end:]))
		if count > MaxVectorEntries {
			return decodeErr(frameWhat, DecodeOversized, "vector count", count, MaxVectorEntries)
		}
		signed += vectorHeaderLen + vectorEntryLen*count
	}
	want := signed
	if flags&FlagAuth != 0 {
		want += AuthTrailerLen
	}
	if want > MaxFrameLen {
		return decodeErr(frameWhat, DecodeOversized, "payload length", want, MaxFrameLen)
	}
	if len(b) < want {
		return decodeErr(frameWhat, DecodeTruncated, "payload", len(b), want)
	}
	if len(b) > want {
		return decodeErr(frameWhat, DecodeBadLength, "trailing bytes", len(b), want)
	}
	var vector []byte
	if flags&FlagVector != 0 {
		vector = b[end:signed:signed]
		if err := checkVector(vector); err != nil {
			return err
		}
	}
	f.Version = Version
	f.Kind = kind
	f.Flags = flags
	f.Cluster = binary.BigEndian.Uint32(b[offCluster:])
	f.Sender = sender
	f.Receiver = binary.BigEndian.Uint32(b[offReceiver:])
	f.Term = binary.BigEndian.Uint64(b[offTerm:])
	f.Seq = binary.BigEndian.Uint64(b[offSeq:])
	f.Lamport = binary.BigEndian.Uint64(b[offLamport:])
	f.Xmt = NTPTime(binary.BigEndian.Uint64(b[XmtOffset:]))
	f.Payload = b[HeaderLen:end:end]
	f.Vector = vector
	if flags&FlagAuth != 0 {
		f.KeyID = binary.BigEndian.Uint32(b[signed:])
		copy(f.MAC[:], b[signed+4:])
	} else {
		f.KeyID = 0
		f.MAC = [MACLen]byte{}
	}
	return nil
}

// ClusterID is the cluster ID of a cluster name: the first 4 bytes of its
// SHA-256, big-endian. It keeps clusters that share a network from
// accepting each other's frames; it is not a secret (keys are).
func ClusterID(name string) uint32 {
	sum := sha256.Sum256([]byte(name))
	return binary.BigEndian.Uint32(sum[:4])
}

// ServiceClusterID is the cluster ID of the cluster name as spoken by one
// service (a daemon: "timed", "mutexd", "electd", "orderd"): the first 4
// bytes of SHA-256(service, 0, name); ClusterID(name) when service is "".
//
// The daemons of a host share one key file and, by default, one cluster
// name, and their member IDs are the same host's: without the service in
// the ID, an authentic frame recorded from one daemon (electd's heartbeat
// "from 3") passes another's MAC, cluster and member checks when sent to
// it from member 3's address, and its sequence number, of another series
// altogether, moves the receiver's window for member 3 ahead of that
// member's real frames, which are then refused as stale. The MAC covers
// the cluster ID, so a frame of one service cannot be made one of another.
func ServiceClusterID(service, name string) uint32 {
	if service == "" {
		return ClusterID(name)
	}
	h := sha256.New()
	h.Write([]byte(service))
	h.Write([]byte{0})
	h.Write([]byte(name))
	var sum [sha256.Size]byte
	return binary.BigEndian.Uint32(h.Sum(sum[:0])[:4])
}

// PatchXmt writes t into the transmit timestamp of an encoded frame. Call
// it as late as possible before the write, and before Seal: the MAC covers
// the timestamp. It panics if frame is shorter than a header.
func PatchXmt(frame []byte, t NTPTime) {
	binary.BigEndian.PutUint64(frame[XmtOffset:HeaderLen], uint64(t))
}

// Key is a shared secret for frame authentication.
type Key struct {
	ID     uint32 // on the wire in the trailer; 1..2^32-1
	Secret []byte // at least MinKeyLen bytes when read by ParseKeyFile
}

// Seal authenticates an encoded, unsealed frame (as AppendBinary produced
// it, after PatchXmt): it sets FlagAuth in the header bytes and appends the
// trailer, key ID and HMAC-SHA256(k.Secret, header+payload)[:16], computed
// with FlagAuth already set so that the flag cannot be stripped. Like
// append, it reuses frame's capacity when there is room (AuthTrailerLen
// bytes spare avoid an allocation for the result) and returns the extended
// slice.
//
// It panics if frame is shorter than a header or already sealed: both are
// bugs in the caller, and sealing twice would produce a frame that every
// receiver drops.
func Seal(frame []byte, k Key) []byte {
	return seal(frame, k, hmac.New(sha256.New, k.Secret))
}

// Sealer is Seal with one key whose HMAC state is kept from frame to
// frame: hmac.New costs a handful of allocations and two SHA-256 blocks of
// key setup, every frame, on a daemon's send path. It is safe for
// concurrent use (frames are sealed on transport goroutines too).
type Sealer struct {
	key  Key
	macs sync.Pool // hash.Hash keyed with key.Secret
}

// NewSealer returns a Sealer for k.
func NewSealer(k Key) *Sealer {
	s := &Sealer{key: k}
	s.macs.New = func() any { return hmac.New(sha256.New, k.Secret) }
	return s
}

// Seal is Seal(frame, key).
func (s *Sealer) Seal(frame []byte) []byte {
	m := s.macs.Get().(hash.Hash)
	m.Reset()
	frame = seal(frame, s.key, m)
	s.macs.Put(m)
	return frame
}

// seal is Seal with m, an HMAC-SHA256 keyed with k.Secret and reset.
func seal(frame []byte, k Key, m hash.Hash) []byte {
	if len(frame) < HeaderLen {
		panic("wire: Seal of a frame shorter than a header")
	}
	if frame[offFlags]&FlagAuth != 0 {
		panic("wire: Seal of a frame that is already sealed")
	}
	frame[offFlags] |= FlagAuth
	var sum [sha256.Size]byte
	m.Write(frame)
	frame = binary.BigEndian.AppendUint32(frame, k.ID)
	return append(frame, m.Sum(sum[:0])[:MACLen]...)
}
