package wire

import (
	"crypto/md5"
	"encoding/binary"
	"net/netip"
)

// NTPPacket is the 48-byte NTPv4 header (RFC 5905 section 7.3), without
// extension fields or MAC (see SplitNTPMAC).
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|LI | VN  |Mode |    Stratum    |     Poll      |   Precision   |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                    Root Delay (NTPShort)                      |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 Root Dispersion (NTPShort)                    |  8
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                        Reference ID                           | 12
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Reference Timestamp (NTPTime)                | 16
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                   Origin Timestamp (NTPTime)                  | 24
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                   Receive Timestamp (NTPTime)                 | 32
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                  Transmit Timestamp (NTPTime)                 | 40
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Every bit pattern is a structurally valid header: decoding never fails on
// content, only on length. Whether a reply is acceptable (mode, stratum,
// leap, origin matching the request, non-zero transmit...) is the NTP core's
// policy, not this package's.
type NTPPacket struct {
	Leap           uint8 // LeapNone..LeapNotInSync (2 bits)
	Version        uint8 // 1..7 on the wire (3 bits); 4 today
	Mode           uint8 // ModeSymmetricActive..ModeBroadcast, ... (3 bits)
	Stratum        uint8 // 0 kiss-o'-death / unspecified, 1 primary, 2..15 secondary, 16 unsynchronised
	Poll           int8  // log2 of the poll interval in seconds
	Precision      int8  // log2 of the clock precision in seconds
	RootDelay      NTPShort
	RootDispersion NTPShort
	ReferenceID    uint32
	Reference      NTPTime // when the clock was last set
	Origin         NTPTime // T1: client's transmit time, echoed by the server
	Receive        NTPTime // T2: server's receive time
	Transmit       NTPTime // T3: sender's transmit time
}

const (
	offNTPFlags     = 0
	offNTPStratum   = 1
	offNTPPoll      = 2
	offNTPPrecision = 3
	offNTPRootDelay = 4
	offNTPRootDisp  = 8
	offNTPRefID     = 12
	offNTPReference = 16
	offNTPOrigin    = 24
	offNTPReceive   = 32
	offNTPTransmit  = 40

	// The first byte: LI (2 bits) | VN (3 bits) | Mode (3 bits).
	ntpLeapShift    = 6
	ntpVersionShift = 3
	ntpVersionMask  = 7
	ntpModeMask     = 7
	ntpVersionV4    = 4

	// MAC trailer (see ntpmac.go).
	ntpKeyIDLen     = 4
	ntpCryptoNAKLen = NTPHeaderLen + ntpKeyIDLen
	ntpMinDigest    = 16 // chrony's NTP_MIN_MAC_LENGTH - 4 (MD5)
	ntpMaxV4Digest  = 20 // RFC 7822; chrony's NTP_MAX_V4_MAC_LENGTH - 4
	ntpMaxDigest    = 64 // chrony's NTP_MAX_MAC_LENGTH - 4 (SHA-512)

	ntpWhat    = "ntp"
	ntpMACWhat = "ntp mac"
)

const (
	// NTPHeaderLen is the length of the NTP header.
	NTPHeaderLen = 48
	// NTPXmtOffset is the offset of the transmit timestamp, patched just
	// before the write.
	NTPXmtOffset = offNTPTransmit
	// NTPVersion is the protocol version this package writes by default
	// (callers set Version explicitly; this is for them).
	NTPVersion = 4
)

// NTP association modes (RFC 5905 figure 10).
const (
	ModeReserved         uint8 = 0
	ModeSymmetricActive  uint8 = 1
	ModeSymmetricPassive uint8 = 2
	ModeClient           uint8 = 3
	ModeServer           uint8 = 4
	ModeBroadcast        uint8 = 5
	ModeControl          uint8 = 6 // NTP control messages (ntpq)
	ModePrivate          uint8 = 7 // reserved for private use (ntpdc)
)

// NTP leap indicator values (RFC 5905 figure 9).
const (
	LeapNone      uint8 = 0 // no warning
	LeapAddSecond uint8 = 1 // last minute of the day has 61 seconds
	LeapDelSecond uint8 = 2 // last minute of the day has 59 seconds
	LeapNotInSync uint8 = 3 // unknown (clock unsynchronised)
)

// StratumUnsynchronized is the stratum of a server that is not
// synchronised (RFC 5905: 16).
const StratumUnsynchronized = 16

// AppendBinary appends the 48-byte encoding of p to b. It refuses fields
// that do not fit their bits (Leap > 3, Version > 7, Mode > 7) with an
// *EncodeError. With 48 bytes of spare capacity in b it does not allocate.
func (p *NTPPacket) AppendBinary(b []byte) ([]byte, error) {
	switch {
	case p.Leap > LeapNotInSync:
		return b, &EncodeError{What: ntpWhat, Field: "leap", Value: uint64(p.Leap), Why: "more than 2 bits"}
	case p.Version > ntpVersionMask:
		return b, &EncodeError{What: ntpWhat, Field: "version", Value: uint64(p.Version), Why: "more than 3 bits"}
	case p.Mode > ntpModeMask:
		return b, &EncodeError{What: ntpWhat, Field: "mode", Value: uint64(p.Mode), Why: "more than 3 bits"}
	}
	b = append(b,
		p.Leap<<ntpLeapShift|p.Version<<ntpVersionShift|p.Mode,
		p.Stratum, byte(p.Poll), byte(p.Precision))
	b = binary.BigEndian.AppendUint32(b, uint32(p.RootDelay))
	b = binary.BigEndian.AppendUint32(b, uint32(p.RootDispersion))
	b = binary.BigEndian.AppendUint32(b, p.ReferenceID)
	b = binary.BigEndian.AppendUint64(b, uint64(p.Reference))
	b = binary.BigEndian.AppendUint64(b, uint64(p.Origin))
	b = binary.BigEndian.AppendUint64(b, uint64(p.Receive))
	return binary.BigEndian.AppendUint64(b, uint64(p.Transmit)), nil
}

// UnmarshalBinary decodes the first NTPHeaderLen bytes of b and ignores the
// rest (extension fields, MAC: see SplitNTPMAC). It fails only when b is too
// short, with a *DecodeError. It does not allocate.
func (p *NTPPacket) UnmarshalBinary(b []byte) error {
	if len(b) < NTPHeaderLen {
		return decodeErr(ntpWhat, DecodeTruncated, "", len(b), NTPHeaderLen)
	}
	flags := b[offNTPFlags]
	p.Leap = flags >> ntpLeapShift
	p.Version = flags >> ntpVersionShift & ntpVersionMask
	p.Mode = flags & ntpModeMask
	p.Stratum = b[offNTPStratum]
	p.Poll = int8(b[offNTPPoll])
	p.Precision = int8(b[offNTPPrecision])
	p.RootDelay = NTPShort(binary.BigEndian.Uint32(b[offNTPRootDelay:]))
	p.RootDispersion = NTPShort(binary.BigEndian.Uint32(b[offNTPRootDisp:]))
	p.ReferenceID = binary.BigEndian.Uint32(b[offNTPRefID:])
	p.Reference = NTPTime(binary.BigEndian.Uint64(b[offNTPReference:]))
	p.Origin = NTPTime(binary.BigEndian.Uint64(b[offNTPOrigin:]))
	p.Receive = NTPTime(binary.BigEndian.Uint64(b[offNTPReceive:]))
	p.Transmit = NTPTime(binary.BigEndian.Uint64(b[offNTPTransmit:]))
	return nil
}

// KissCode returns the kiss-o'-death code of a stratum-0 packet (RFC 5905
// section 7.4: "DENY", "RATE", "RSTR", ...): the reference ID read as up to
// four ASCII characters. It returns "" for any other stratum, and for a
// reference ID that is not printable ASCII (so a counter label built from
// it stays sane).
func (p *NTPPacket) KissCode() string {
	if p.Stratum != 0 {
		return ""
	}
	return RefIDText(p.ReferenceID)
}

// RefIDText reads a reference ID as text: up to four printable ASCII
// characters, NUL-padded on the right ("GPS", "LOCL", "RATE"). It returns
// "" if the ID is not of that form.
func RefIDText(id uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], id)
	n := 4
	for n > 0 && b[n-1] == 0 {
		n--
	}
	if n == 0 {
		return ""
	}
	for _, c := range b[:n] {
		if c < 0x20 || c > 0x7e {
			return ""
		}
	}
	return string(b[:n])
}

// RefIDFromText makes a reference ID from up to four ASCII characters,
// NUL-padded on the right, as stratum-1 servers and kiss codes use. Longer
// strings are truncated to four bytes.
func RefIDFromText(s string) uint32 {
	var b [4]byte
	copy(b[:], s)
	return binary.BigEndian.Uint32(b[:])
}

// RefIDFromAddr makes the reference ID a server of stratum 2 or more puts
// in its replies for its upstream server at addr (RFC 5905 section 7.3):
// the IPv4 address itself, or for IPv6 the first four bytes of the MD5 of
// the address. An IPv4-mapped IPv6 address counts as IPv4. This is also
// what loop detection compares against.
func RefIDFromAddr(addr netip.Addr) uint32 {
	addr = addr.Unmap()
	if addr.Is4() {
		a := addr.As4()
		return binary.BigEndian.Uint32(a[:])
	}
	a := addr.As16()
	sum := md5.Sum(a[:])
	return binary.BigEndian.Uint32(sum[:4])
}
