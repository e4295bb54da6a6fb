package wire

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"slices"
	"unicode"
	"unicode/utf8"
)

// ConfigAnnounce is the payload of KindConfig: what the sender's
// configuration says must be identical on every member, part by part,
// so that a receiver can say exactly what differs ("member 3's member
// list lacks member 2"), and a non-secret fingerprint of the key it signs
// with, readable without the key, so that a frame that fails
// authentication can be told apart: a member with another key, or a
// forgery. Node to node (internal/node); cores never see it.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Version (1)  |     Flags     |         Member Count          |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                                                               |  4
//	+     Digest: SHA-256 of the parts below (ConfigDigest)[:16]    +
//	~                                                               ~
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|      Key Fingerprint (KeyFingerprint of the signing key;      | 20
//	+                    all zero: no key, --insecure)              +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|           Key ID (the signing key's number; 0: no key)        | 28
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Service Len  |  Service (Len bytes) ...                      | 32
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Cluster Len  |  Cluster name ...  | Algorithm Len | Algorithm ~
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Param Count  |  Params: Name Len, Name, Value Len, Value;    ~
//	+-+-+-+-+-+-+-+-+  names strictly ascending                     ~
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Members (Member Count of them, IDs strictly ascending):      ~
//	~  Member ID (32), Family (8: 4 or 6), Address (4 or 16 bytes), ~
//	~  Port (16)                                                    ~
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Flags: bit 0 ConfigAnswer (the sender asks the receiver for its own
// announcement at once: it has just started, or heard a frame of an
// incarnation of the receiver it has no announcement of), bit 1
// ConfigSteppedBack (the sender's configuration is in the minority of the
// members it hears: it neither leads, grants, votes nor sequences). The
// other bits are reserved and must be zero.
//
// Strings (service, cluster name, algorithm, parameter names and values)
// are 0-255 bytes of UTF-8 without control characters: they end up in
// log lines and status, and a sender must not be able to write there
// what it likes. The digest covers exactly the parts that must agree
// (ConfigDigest): everything but the flags and the key; a decoder refuses
// a payload whose digest is not its parts' (a sender's bug, or a forgery).
//
// The key is not in the digest: members may sign with different keys of
// one key file while a key is rotated (the first key signs, every key
// listed is accepted). Whether two members can authenticate each other is
// decided by the MACs; the fingerprint says why they cannot.
type ConfigAnnounce struct {
	Flags uint8
	// Digest is ConfigDigest of the parts below (AppendBinary writes it,
	// whatever this holds; UnmarshalBinary checks it).
	Digest         [ConfigDigestLen]byte
	KeyFingerprint [KeyFingerprintLen]byte
	KeyID          uint32
	Service        string // the daemon: "electd"
	Cluster        string // --cluster
	Algorithm      string // the algorithm or mode: "bully", "tokenring", "sequencer", "berkeley"
	Params         []ConfigParam
	Members        []ConfigMember
}

// ConfigParam is one parameter that must be the same on every member.
type ConfigParam struct {
	Name, Value string
}

// ConfigMember is one entry of the sender's member list.
type ConfigMember struct {
	ID   uint32
	Addr netip.AddrPort
}

// Flags of a ConfigAnnounce.
const (
	ConfigAnswer      uint8 = 1 << 0
	ConfigSteppedBack uint8 = 1 << 1
	configFlagsKnown        = ConfigAnswer | ConfigSteppedBack
)

const (
	// ConfigVersion is the payload version this code writes and reads.
	ConfigVersion = 1
	// ConfigDigestLen is the length of the digest carried (SHA-256
	// truncated): 128 bits.
	ConfigDigestLen = 16
	// KeyFingerprintLen is the length of a key's fingerprint.
	KeyFingerprintLen = 8
	// MaxConfigMembers bounds the member list an announcement carries.
	MaxConfigMembers = 1024
	// MaxConfigParams bounds the parameters.
	MaxConfigParams = 32

	configFixedLen = 32
	configWhat     = "config"
)

// KeyFingerprint is the non-secret identifier of a key's secret: the
// first 8 bytes of SHA-256("synclab key fingerprint\x00" || secret). It
// tells two keys apart (and is the same for one key wherever it is
// installed, whatever its number in the key file) and reveals nothing
// that helps find the secret, which is at least 128 bits.
func KeyFingerprint(secret []byte) [KeyFingerprintLen]byte {
	h := sha256.New()
	h.Write([]byte("synclab key fingerprint\x00"))
	h.Write(secret)
	var sum [sha256.Size]byte
	var fp [KeyFingerprintLen]byte
	copy(fp[:], h.Sum(sum[:0]))
	return fp
}

// FingerprintText shows a key fingerprint as hex, "none" when it is zero
// (no key).
func FingerprintText(fp [KeyFingerprintLen]byte) string {
	if fp == ([KeyFingerprintLen]byte{}) {
		return "none"
	}
	return hex.EncodeToString(fp[:])
}

// ConfigDigest is the digest of the parts of c that must agree: service,
// cluster, algorithm, parameters and member list, in their encoding.
// Two members agree when their digests are equal.
func ConfigDigest(c *ConfigAnnounce) [ConfigDigestLen]byte {
	b := make([]byte, 0, 64+len(c.Members)*23)
	b = c.appendParts(b)
	sum := sha256.Sum256(b)
	var d [ConfigDigestLen]byte
	copy(d[:], sum[:])
	return d
}

// appendParts appends everything after the fixed part.
func (c *ConfigAnnounce) appendParts(b []byte) []byte {
	b = appendStr(b, c.Service)
	b = appendStr(b, c.Cluster)
	b = appendStr(b, c.Algorithm)
	b = append(b, byte(len(c.Params)))
	for _, p := range c.Params {
		b = appendStr(b, p.Name)
		b = appendStr(b, p.Value)
	}
	for _, m := range c.Members {
		b = binary.BigEndian.AppendUint32(b, m.ID)
		a := m.Addr.Addr()
		if a.Is4() {
			b = append(b, 4)
			a4 := a.As4()
			b = append(b, a4[:]...)
		} else {
			b = append(b, 6)
			a16 := a.As16()
			b = append(b, a16[:]...)
		}
		b = binary.BigEndian.AppendUint16(b, m.Addr.Port())
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	return append(append(b, byte(len(s))), s...)
}

// Canonical sorts the parameters by name and the members by ID, as the
// encoding wants them.
func (c *ConfigAnnounce) Canonical() {
	slices.SortFunc(c.Params, func(a, b ConfigParam) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(c.Members, func(a, b ConfigMember) int { return cmp.Compare(a.ID, b.ID) })
}

// AppendBinary appends the encoding of c, with its digest computed, to b.
// It refuses (an *EncodeError) what UnmarshalBinary would refuse: reserved
// flags, a string too long or with control characters, too many members
// or parameters, parameters not strictly ascending by name, member IDs
// not strictly ascending or 0, an address that is not IPv4 or IPv6 or a
// port 0 (call Canonical first to sort).
func (c *ConfigAnnounce) AppendBinary(b []byte) ([]byte, error) {
	if err := c.check(); err != nil {
		return b, err
	}
	d := ConfigDigest(c)
	b = append(b, ConfigVersion, c.Flags)
	b = binary.BigEndian.AppendUint16(b, uint16(len(c.Members)))
	b = append(b, d[:]...)
	b = append(b, c.KeyFingerprint[:]...)
	b = binary.BigEndian.AppendUint32(b, c.KeyID)
	return c.appendParts(b), nil
}

func (c *ConfigAnnounce) check() error {
	bad := func(field string, v int, why string) error {
		return &EncodeError{What: configWhat, Field: field, Value: uint64(v), Why: why}
	}
	if c.Flags&^configFlagsKnown != 0 {
		return bad("flags", int(c.Flags), "reserved bits set")
	}
	for _, s := range []struct{ name, v string }{{"service", c.Service}, {"cluster", c.Cluster}, {"algorithm", c.Algorithm}} {
		if !configString(s.v) {
			return bad(s.name, len(s.v), "longer than 255 bytes, not UTF-8, or with control characters")
		}
	}
	if len(c.Params) > MaxConfigParams {
		return bad("params", len(c.Params), "more than MaxConfigParams")
	}
	for i, p := range c.Params {
		if !configString(p.Name) || !configString(p.Value) || p.Name == "" {
			return bad("param", i, "empty name, or a string longer than 255 bytes, not UTF-8, or with control characters")
		}
		if i > 0 && c.Params[i-1].Name >= p.Name {
			return bad("param", i, "names not strictly ascending")
		}
	}
	if len(c.Members) > MaxConfigMembers {
		return bad("members", len(c.Members), "more than MaxConfigMembers")
	}
	for i, m := range c.Members {
		a := m.Addr.Addr()
		switch {
		case m.ID == 0 || (i > 0 && c.Members[i-1].ID >= m.ID):
			return bad("member", int(m.ID), "IDs 0 or not strictly ascending")
		case !a.IsValid() || a.Zone() != "" || m.Addr.Port() == 0:
			return bad("member address", int(m.ID), "not an IPv4 or IPv6 address and port")
		}
	}
	return nil
}

// configString says whether s may be a string of an announcement.
func configString(s string) bool {
	if len(s) > 255 || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// UnmarshalBinary decodes a whole ConfigAnnounce payload: b must hold
// exactly one, and its digest must be its parts'. Strings and slices are
// copies (an announcement is kept beyond the frame's buffer).
func (c *ConfigAnnounce) UnmarshalBinary(b []byte) error {
	if len(b) < configFixedLen {
		return decodeErr(configWhat, DecodeTruncated, "", len(b), configFixedLen)
	}
	if b[0] != ConfigVersion {
		return decodeErr(configWhat, DecodeBadVersion, "", int(b[0]), ConfigVersion)
	}
	flags := b[1]
	if flags&^configFlagsKnown != 0 {
		return decodeErr(configWhat, DecodeBadFlags, "", int(flags), -1)
	}
	n := int(binary.BigEndian.Uint16(b[2:]))
	if n > MaxConfigMembers {
		return decodeErr(configWhat, DecodeOversized, "member count", n, MaxConfigMembers)
	}
	var out ConfigAnnounce
	out.Flags = flags
	copy(out.Digest[:], b[4:20])
	copy(out.KeyFingerprint[:], b[20:28])
	out.KeyID = binary.BigEndian.Uint32(b[28:])
	r := b[configFixedLen:]
	var err error
	str := func(field string) string {
		if err != nil {
			return ""
		}
		if len(r) < 1 || len(r) < 1+int(r[0]) {
			err = decodeErr(configWhat, DecodeTruncated, field, len(r), 1+int(firstOr(r)))
			return ""
		}
		s := string(r[1 : 1+int(r[0])])
		r = r[1+int(r[0]):]
		if !configString(s) {
			err = decodeErr(configWhat, DecodeBadField, field+" not UTF-8 without control characters", len(s), -1)
		}
		return s
	}
	out.Service = str("service")
	out.Cluster = str("cluster")
	out.Algorithm = str("algorithm")
	if err != nil {
		return err
	}
	if len(r) < 1 {
		return decodeErr(configWhat, DecodeTruncated, "param count", 0, 1)
	}
	np := int(r[0])
	r = r[1:]
	if np > MaxConfigParams {
		return decodeErr(configWhat, DecodeOversized, "param count", np, MaxConfigParams)
	}
	if np > 0 {
		out.Params = make([]ConfigParam, 0, np)
	}
	for i := range np {
		p := ConfigParam{Name: str("param name"), Value: str("param value")}
		if err != nil {
			return err
		}
		if p.Name == "" || (i > 0 && out.Params[i-1].Name >= p.Name) {
			return decodeErr(configWhat, DecodeBadField, "param names empty or not strictly ascending", i, -1)
		}
		out.Params = append(out.Params, p)
	}
	if n > 0 {
		out.Members = make([]ConfigMember, 0, n)
	}
	for i := range n {
		if len(r) < 5 {
			return decodeErr(configWhat, DecodeTruncated, "member", len(r), 5)
		}
		id := binary.BigEndian.Uint32(r)
		if id == 0 || (i > 0 && out.Members[i-1].ID >= id) {
			return decodeErr(configWhat, DecodeBadField, "member IDs 0 or not strictly ascending", clampInt(uint64(id)), -1)
		}
		var a netip.Addr
		switch r[4] {
		case 4:
			if len(r) < 5+4+2 {
				return decodeErr(configWhat, DecodeTruncated, "member address", len(r), 11)
			}
			a = netip.AddrFrom4([4]byte(r[5:9]))
			r = r[9:]
		case 6:
			if len(r) < 5+16+2 {
				return decodeErr(configWhat, DecodeTruncated, "member address", len(r), 23)
			}
			a = netip.AddrFrom16([16]byte(r[5:21]))
			r = r[21:]
		default:
			return decodeErr(configWhat, DecodeBadField, "member address family", int(r[4]), -1)
		}
		port := binary.BigEndian.Uint16(r)
		r = r[2:]
		if port == 0 {
			return decodeErr(configWhat, DecodeBadField, "member port 0", clampInt(uint64(id)), -1)
		}
		out.Members = append(out.Members, ConfigMember{ID: id, Addr: netip.AddrPortFrom(a, port)})
	}
	if len(r) > 0 {
		return decodeErr(configWhat, DecodeBadLength, "trailing bytes", len(r), 0)
	}
	if d := ConfigDigest(&out); !bytes.Equal(d[:], out.Digest[:]) {
		return decodeErr(configWhat, DecodeBadField, "digest does not match the parts", 0, -1)
	}
	*c = out
	return nil
}

func firstOr(b []byte) byte {
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// Param returns the value of the parameter called name, and whether c
// has it.
func (c *ConfigAnnounce) Param(name string) (string, bool) {
	for _, p := range c.Params {
		if p.Name == name {
			return p.Value, true
		}
	}
	return "", false
}

// ConfigRefresh is the payload of KindConfigRefresh: a member whose full
// announcement (ConfigAnnounce) the receiver already holds says, in a few
// bytes, that it is still there with that configuration. It is what a
// quiet cluster sends at rest in place of the full announcement, spaced
// out with the size of the cluster so that a member's own chatter stays
// about one frame a second whatever the number of members
// (internal/node, "Configuration agreement"). A receiver believes nothing
// of it but that the sender is up: a digest other than the one it holds
// makes it ask the sender for its full announcement, never count the
// sender as differing.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Version (1)  |   Flags (0)   |     Spacing (seconds, > 0)    |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                                                               |  4
//	+       Digest (ConfigDigest of the sender's configuration)     +
//	~                                                               ~
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Key Fingerprint (as in ConfigAnnounce; zero: no key)      | 20
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Spacing is the longest the sender means to stay silent towards the
// receiver while they agree: the receiver counts it as agreeing for three
// of them (bounded by MaxRefreshSpacing). Flags are reserved (zero).
type ConfigRefresh struct {
	Spacing        uint16 // seconds
	Digest         [ConfigDigestLen]byte
	KeyFingerprint [KeyFingerprintLen]byte
}

const (
	// ConfigRefreshLen is the exact length of a ConfigRefresh payload.
	ConfigRefreshLen = 28
	// MaxRefreshSpacing is the longest Spacing a receiver believes, in
	// seconds: a longer one is taken as this.
	MaxRefreshSpacing = 600

	configRefreshWhat = "config refresh"
)

// AppendBinary appends the ConfigRefreshLen bytes of r to b. A Spacing of
// 0 is refused (an *EncodeError), as UnmarshalBinary refuses it.
func (r ConfigRefresh) AppendBinary(b []byte) ([]byte, error) {
	if r.Spacing == 0 {
		return b, &EncodeError{What: configRefreshWhat, Field: "spacing", Value: 0, Why: "zero"}
	}
	b = append(b, ConfigVersion, 0)
	b = binary.BigEndian.AppendUint16(b, r.Spacing)
	b = append(b, r.Digest[:]...)
	return append(b, r.KeyFingerprint[:]...), nil
}

// UnmarshalBinary decodes a whole ConfigRefresh payload: exactly
// ConfigRefreshLen bytes, its version, flags zero, a Spacing above zero.
func (r *ConfigRefresh) UnmarshalBinary(b []byte) error {
	if err := checkConfigFixed(configRefreshWhat, b, ConfigRefreshLen); err != nil {
		return err
	}
	spacing := binary.BigEndian.Uint16(b[2:])
	if spacing == 0 {
		return decodeErr(configRefreshWhat, DecodeBadField, "spacing 0", 0, -1)
	}
	r.Spacing = spacing
	copy(r.Digest[:], b[4:20])
	copy(r.KeyFingerprint[:], b[20:28])
	return nil
}

// ConfigTimings is the payload of KindConfigTimings: the sender's own
// failure-detector timing, which need not be the same on every member
// (a per-host timing is not part of ConfigAnnounce: a difference there
// must not split a cluster) but must fit the others': a member that
// beats every second among members that give a silent leader up after
// 400 ms is given up between two of its heartbeats, and elected again,
// over and over. The receiver compares them with its own and says so
// (internal/node); nothing else depends on them. Node to node; cores
// never see it.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Version (1)  |   Flags (0)   |         Reserved (0)          |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                                                               |  4
//	+        Heartbeat (nanoseconds, 1..MaxTimingNanos)             +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                                                               | 12
//	+        Leader Timeout (nanoseconds, 1..MaxTimingNanos)        +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Heartbeat is how often the sender, leading, says it is alive; Leader
// Timeout how long the sender, following, waits for its leader's word
// before it gives it up.
type ConfigTimings struct {
	Heartbeat     uint64 // nanoseconds
	LeaderTimeout uint64 // nanoseconds
}

const (
	// ConfigTimingsLen is the exact length of a ConfigTimings payload.
	ConfigTimingsLen = 20
	// MaxTimingNanos bounds both timings: 2^32-1 milliseconds (about
	// 49.7 days), the longest timeout a failure detector takes
	// (pkg/liveness MaxTimeout).
	MaxTimingNanos = (1<<32 - 1) * 1_000_000

	configTimingsWhat = "config timings"
)

// AppendBinary appends the ConfigTimingsLen bytes of t to b. A timing
// outside 1..MaxTimingNanos is refused (an *EncodeError), as
// UnmarshalBinary refuses it.
func (t ConfigTimings) AppendBinary(b []byte) ([]byte, error) {
	for _, f := range []struct {
		name string
		v    uint64
	}{{"heartbeat", t.Heartbeat}, {"leader timeout", t.LeaderTimeout}} {
		if f.v == 0 || f.v > MaxTimingNanos {
			return b, &EncodeError{What: configTimingsWhat, Field: f.name, Value: f.v, Why: "outside 1..MaxTimingNanos"}
		}
	}
	b = append(b, ConfigVersion, 0, 0, 0)
	b = binary.BigEndian.AppendUint64(b, t.Heartbeat)
	return binary.BigEndian.AppendUint64(b, t.LeaderTimeout), nil
}

// UnmarshalBinary decodes a whole ConfigTimings payload: exactly
// ConfigTimingsLen bytes, its version, flags and reserved zero, both
// timings within 1..MaxTimingNanos.
func (t *ConfigTimings) UnmarshalBinary(b []byte) error {
	if err := checkConfigFixed(configTimingsWhat, b, ConfigTimingsLen); err != nil {
		return err
	}
	if b[2] != 0 || b[3] != 0 {
		return decodeErr(configTimingsWhat, DecodeBadReserved, "", int(b[2])<<8|int(b[3]), 0)
	}
	hb, lt := binary.BigEndian.Uint64(b[4:]), binary.BigEndian.Uint64(b[12:])
	if hb == 0 || hb > MaxTimingNanos {
		return decodeErr(configTimingsWhat, DecodeBadField, "heartbeat", int(min(hb, 1<<62)), -1)
	}
	if lt == 0 || lt > MaxTimingNanos {
		return decodeErr(configTimingsWhat, DecodeBadField, "leader timeout", int(min(lt, 1<<62)), -1)
	}
	t.Heartbeat, t.LeaderTimeout = hb, lt
	return nil
}

// checkConfigFixed checks the frame of a fixed-length payload of the
// configuration family (what names it): exactly n bytes, ConfigVersion
// first, flags (the second byte) zero.
func checkConfigFixed(what string, b []byte, n int) error {
	switch {
	case len(b) < n:
		return decodeErr(what, DecodeTruncated, "", len(b), n)
	case len(b) > n:
		return decodeErr(what, DecodeBadLength, "", len(b), n)
	case b[0] != ConfigVersion:
		return decodeErr(what, DecodeBadVersion, "", int(b[0]), ConfigVersion)
	case b[1] != 0:
		return decodeErr(what, DecodeBadFlags, "", int(b[1]), 0)
	}
	return nil
}
