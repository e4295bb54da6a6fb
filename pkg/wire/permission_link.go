package wire

import "encoding/binary"

// What the permission-based algorithms (pkg/mutex/permission) do about a
// broken link between two members that both still hear the others: they
// pass their frames to each other through a third member (PermRelay), and
// a member that has not heard another for its timeout asks the others
// whether they have (PermProbe, PermProbeReply) before it stops waiting
// for it: it gives the member up only when a majority has been silent
// from it over the same stretch of time (the package doc argues why that
// is safe and the silence of one end alone is not).

// PermRelay carries one frame of the permission algorithms from Origin to
// Target through the member in between (KindPermRelay): Origin sends it to
// the relay, which passes the same payload on to Target. Kind, Lamport and
// Payload are the frame's kind, Lamport time and payload as Origin made
// it; Target steps it as a frame from Origin. The Lamport time is never
// above the carrying frame's own (the relay merged it before passing it
// on). A relay never carries a relay. Flags: PermRelayUnheard says that
// Origin has heard nothing from Target directly for a while (so Target
// should pass its own frames for Origin through relays too: a link that
// fails one way only is then bridged both ways).
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Origin (32, not 0)                       |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|               Target (32, not 0, not Origin)                  |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Kind (known) |     Flags     |     Length of the payload     |  8
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|       Lamport: the carried frame's Lamport time (not 0)       | 12
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Payload (Length bytes)                       | 20
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type PermRelay struct {
	Origin, Target uint32
	Kind           Kind
	Flags          uint8
	Lamport        uint64
	Payload        []byte
}

// PermRelayUnheard is PermRelay's only flag: Origin hears Target only
// through relays.
const PermRelayUnheard uint8 = 1

// PermProbe asks how long it is since the receiver last heard Member, by
// any path (KindPermProbe). The frame's Lamport time names the probe: the
// answer echoes it.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Member (32, not 0)                       |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type PermProbe struct {
	Member uint32
}

// PermProbeReply answers a PermProbe (KindPermProbeReply): the sender had
// heard nothing from Member, directly or through a relay, for SilentMS
// milliseconds when it answered (counted down, never up; 2^32-1: at least
// that long). Probe is the Lamport time of the probe answered.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Member (32, not 0)                       |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|               Silent: ms since Member was heard               |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|           Probe: the probe's Lamport time (not 0)             |  8
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The extended form (PermProbeReplyExtLen bytes, sent only to a member
// that sends extended heartbeats: older members refuse it) adds what the
// sender knows of Member's leases: Covered says that Member's newest lease
// announcement the sender took bounds every lease Member may hold
// (pkg/mutex/permission, "Lease ends"), and EndMS how many milliseconds
// after the answer they end at the latest (signed: negative, they ended
// that long before; 0 without Covered).
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  ... (16 bytes as above)      | Flags (1)     |  EndMS ...       16
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|      ... EndMS|                                                  20
//	+-+-+-+-+-+-+-+-+
type PermProbeReply struct {
	Member   uint32
	SilentMS uint32
	Probe    uint64

	// The extended form's (encoded only with Ext).
	Ext     bool
	Covered bool
	EndMS   int32
}

// PermProbeCovered is the extended PermProbeReply's only flag.
const PermProbeCovered uint8 = 1

const (
	// PermRelayFixedLen is a PermRelay's length before the payload;
	// MaxPermRelayPayload the longest payload one carries.
	PermRelayFixedLen   = 20
	MaxPermRelayPayload = MaxPayloadLen - PermRelayFixedLen
	// PermProbeLen and PermProbeReplyLen are their payloads' exact
	// lengths.
	PermProbeLen         = 4
	PermProbeReplyLen    = 16
	PermProbeReplyExtLen = PermProbeReplyLen + 5

	permRelayWhat      = "permission relay"
	permProbeWhat      = "permission probe"
	permProbeReplyWhat = "permission probe reply"
)

// AppendBinary appends the encoding of r to b. It fails on a field the
// format cannot carry (a caller's bug).
func (r PermRelay) AppendBinary(b []byte) ([]byte, error) {
	switch {
	case r.Origin == 0 || r.Target == 0:
		return b, &EncodeError{What: permRelayWhat, Field: "origin/target", Value: 0, Why: "member IDs start at 1"}
	case r.Origin == r.Target:
		return b, &EncodeError{What: permRelayWhat, Field: "target", Value: uint64(r.Target), Why: "is the origin"}
	case !r.Kind.Known() || r.Kind == KindPermRelay:
		return b, &EncodeError{What: permRelayWhat, Field: "kind", Value: uint64(r.Kind), Why: "unknown, or a relay"}
	case r.Flags&^PermRelayUnheard != 0:
		return b, &EncodeError{What: permRelayWhat, Field: "flags", Value: uint64(r.Flags), Why: "undefined flag"}
	case r.Lamport == 0:
		return b, &EncodeError{What: permRelayWhat, Field: "lamport", Value: 0, Why: "must be > 0"}
	case len(r.Payload) > MaxPermRelayPayload:
		return b, &EncodeError{What: permRelayWhat, Field: "payload length", Value: uint64(len(r.Payload)), Why: "exceeds MaxPermRelayPayload"}
	}
	b = binary.BigEndian.AppendUint32(b, r.Origin)
	b = binary.BigEndian.AppendUint32(b, r.Target)
	b = append(b, byte(r.Kind), r.Flags)
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.Payload)))
	b = binary.BigEndian.AppendUint64(b, r.Lamport)
	return append(b, r.Payload...), nil
}

// UnmarshalBinary decodes a PermRelay; Payload aliases b.
func (r *PermRelay) UnmarshalBinary(b []byte) error {
	if len(b) < PermRelayFixedLen {
		return decodeErr(permRelayWhat, DecodeTruncated, "", len(b), PermRelayFixedLen)
	}
	v := PermRelay{Origin: binary.BigEndian.Uint32(b), Target: binary.BigEndian.Uint32(b[4:]), Kind: Kind(b[8]), Flags: b[9],
		Lamport: binary.BigEndian.Uint64(b[12:])}
	n := int(binary.BigEndian.Uint16(b[10:]))
	switch {
	case v.Origin == 0:
		return decodeErr(permRelayWhat, DecodeBadField, "origin", 0, -1)
	case v.Target == 0 || v.Target == v.Origin:
		return decodeErr(permRelayWhat, DecodeBadField, "target", clampInt(uint64(v.Target)), -1)
	case !v.Kind.Known() || v.Kind == KindPermRelay:
		return decodeErr(permRelayWhat, DecodeBadField, "kind", int(v.Kind), -1)
	case v.Flags&^PermRelayUnheard != 0:
		return decodeErr(permRelayWhat, DecodeBadField, "flags", int(v.Flags), -1)
	case v.Lamport == 0:
		return decodeErr(permRelayWhat, DecodeBadField, "lamport", 0, -1)
	case n > MaxPermRelayPayload:
		return decodeErr(permRelayWhat, DecodeOversized, "payload length", n, MaxPermRelayPayload)
	case len(b) < PermRelayFixedLen+n:
		return decodeErr(permRelayWhat, DecodeTruncated, "payload", len(b)-PermRelayFixedLen, n)
	case len(b) > PermRelayFixedLen+n:
		return decodeErr(permRelayWhat, DecodeBadLength, "trailing bytes", len(b), PermRelayFixedLen+n)
	}
	v.Payload = b[PermRelayFixedLen:]
	*r = v
	return nil
}

// AppendBinary appends the encoding of p to b. It fails on member 0.
func (p PermProbe) AppendBinary(b []byte) ([]byte, error) {
	if p.Member == 0 {
		return b, &EncodeError{What: permProbeWhat, Field: "member", Value: 0, Why: "member IDs start at 1"}
	}
	return binary.BigEndian.AppendUint32(b, p.Member), nil
}

// UnmarshalBinary decodes a PermProbe.
func (p *PermProbe) UnmarshalBinary(b []byte) error {
	if err := checkLen(permProbeWhat, b, PermProbeLen); err != nil {
		return err
	}
	m := binary.BigEndian.Uint32(b)
	if m == 0 {
		return decodeErr(permProbeWhat, DecodeBadField, "member", 0, -1)
	}
	p.Member = m
	return nil
}

// AppendBinary appends the encoding of r to b. It fails on member 0 or
// probe 0.
func (r PermProbeReply) AppendBinary(b []byte) ([]byte, error) {
	switch {
	case r.Member == 0:
		return b, &EncodeError{What: permProbeReplyWhat, Field: "member", Value: 0, Why: "member IDs start at 1"}
	case r.Probe == 0:
		return b, &EncodeError{What: permProbeReplyWhat, Field: "probe", Value: 0, Why: "must be > 0"}
	case r.EndMS != 0 && !r.Covered:
		return b, &EncodeError{What: permProbeReplyWhat, Field: "end", Value: uint64(r.EndMS), Why: "without covered"}
	}
	b = binary.BigEndian.AppendUint32(b, r.Member)
	b = binary.BigEndian.AppendUint32(b, r.SilentMS)
	b = binary.BigEndian.AppendUint64(b, r.Probe)
	if !r.Ext && !r.Covered {
		return b, nil
	}
	var f uint8
	if r.Covered {
		f = PermProbeCovered
	}
	return binary.BigEndian.AppendUint32(append(b, f), uint32(r.EndMS)), nil
}

// UnmarshalBinary decodes a PermProbeReply.
func (r *PermProbeReply) UnmarshalBinary(b []byte) error {
	want := PermProbeReplyLen
	if len(b) > PermProbeReplyLen {
		want = PermProbeReplyExtLen
	}
	if err := checkLen(permProbeReplyWhat, b, want); err != nil {
		return err
	}
	v := PermProbeReply{Member: binary.BigEndian.Uint32(b), SilentMS: binary.BigEndian.Uint32(b[4:]), Probe: binary.BigEndian.Uint64(b[8:])}
	if want == PermProbeReplyExtLen {
		v.Ext, v.Covered, v.EndMS = true, b[16]&PermProbeCovered != 0, int32(binary.BigEndian.Uint32(b[17:]))
		switch {
		case b[16]&^PermProbeCovered != 0:
			return decodeErr(permProbeReplyWhat, DecodeBadField, "undefined flag", int(b[16]), -1)
		case v.EndMS != 0 && !v.Covered:
			return decodeErr(permProbeReplyWhat, DecodeBadField, "end without covered", int(v.EndMS), -1)
		}
	}
	switch {
	case v.Member == 0:
		return decodeErr(permProbeReplyWhat, DecodeBadField, "member", 0, -1)
	case v.Probe == 0:
		return decodeErr(permProbeReplyWhat, DecodeBadField, "probe", 0, -1)
	}
	*r = v
	return nil
}
