package wire

import (
	"encoding/binary"
	"strconv"
)

// StatusQuery is the payload of KindStatusQuery: a member asks another
// for its row of the whole lab's table (`X status --cluster`). Node to
// node (internal/node); cores never see it. It is padded to
// StatusQueryLen so that no answer (a StatusReport, at most
// MaxStatusReportLen) is as much as twice the size of the query that
// asked for it: the pair cannot be used as an amplifier, even by a
// sender that could forge a member's address.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Version (1)  |   Flags (0)   |          Reserved (0)         |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                                                               |  4
//	+                         Query ID (64)                         +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                                                               | 12
//	~            Padding: zeros, up to StatusQueryLen (256)         ~
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The query ID is the asker's: the answer carries it back, so that an
// answer is matched to the query that asked for it.
type StatusQuery struct {
	ID uint64
}

const (
	// StatusVersion is the version of StatusQuery and StatusReport this
	// code writes and reads.
	StatusVersion = 1
	// StatusQueryLen is the exact length of a StatusQuery payload.
	StatusQueryLen = 256
	// MaxStatusString bounds each string of a StatusReport.
	MaxStatusString = 64
	// MaxStatusFacts bounds the facts of a StatusReport.
	MaxStatusFacts = 16
	// MaxStatusReportLen is the longest StatusReport payload: less than
	// twice StatusQueryLen.
	MaxStatusReportLen = statusReportFixedLen + 4*(1+MaxStatusString) + MaxStatusFacts*statusFactLen

	statusQueryFixedLen  = 12
	statusReportFixedLen = 68
	statusFactLen        = 9
	statusQueryWhat      = "status query"
	statusReportWhat     = "status report"
)

// AppendBinary appends the StatusQueryLen bytes of q to b.
func (q StatusQuery) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, StatusVersion, 0, 0, 0)
	b = binary.BigEndian.AppendUint64(b, q.ID)
	return append(b, make([]byte, StatusQueryLen-statusQueryFixedLen)...), nil
}

// UnmarshalBinary decodes a whole StatusQuery payload: exactly
// StatusQueryLen bytes, its flags, reserved bytes and padding zero.
func (q *StatusQuery) UnmarshalBinary(b []byte) error {
	if err := checkPadded(statusQueryWhat, b, StatusQueryLen, statusQueryFixedLen, StatusVersion); err != nil {
		return err
	}
	q.ID = binary.BigEndian.Uint64(b[4:])
	return nil
}

// checkPadded checks a padded query's frame: exactly length bytes, its
// version, its flags (byte 1), reserved bytes (2-3) and the padding after
// fixed zero.
func checkPadded(what string, b []byte, length, fixed int, version byte) error {
	if len(b) != length {
		if len(b) < length {
			return decodeErr(what, DecodeTruncated, "", len(b), length)
		}
		return decodeErr(what, DecodeBadLength, "", len(b), length)
	}
	if b[0] != version {
		return decodeErr(what, DecodeBadVersion, "", int(b[0]), int(version))
	}
	if b[1] != 0 {
		return decodeErr(what, DecodeBadFlags, "", int(b[1]), 0)
	}
	for i, c := range b[2:4] {
		if c != 0 {
			return decodeErr(what, DecodeBadReserved, "reserved", 2+i, -1)
		}
	}
	for i, c := range b[fixed:] {
		if c != 0 {
			return decodeErr(what, DecodeBadReserved, "padding", fixed+i, -1)
		}
	}
	return nil
}

// StatusReport is the payload of KindStatusReport: a member's answer to a
// StatusQuery, its row of the whole lab's table. The node fills what it
// knows (its standing, incarnation, configuration fingerprint and key,
// the query's times); the daemon the rest (its build, uptime, clock, and
// the facts its binary names). Node to node; cores never see it.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Version (1)  |     Flags     |   Standing    |  Fact Count   |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                   Query ID (64, the query's)                  |  4
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                       Incarnation (32)                        | 12
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                     Uptime (32, seconds)                      | 16
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|       Max Error (64, ns: the clock's error bound; 0 none)     | 20
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|      Origin (64, NTP time: the query's transmit time, echoed) | 28
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Received (64, NTP time: the query's arrival, this clock)    | 36
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Digest (128): the ConfigDigest this member announces      | 44
//	~                                                               ~
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    Key Fingerprint (64, KeyFingerprint of its signing key)    | 60
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	| Version Len   | Version (the build) ... | Commit Len | Commit ~ 68
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	| Algorithm Len | Algorithm ...           | Role Len   | Role   ~
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	| Facts (Fact Count of them, tags strictly ascending):          ~
//	~   Tag (8), Value (64)                                         ~
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Flags: bit 0 StatusSynchronized (the member's clock says it is
// synchronised), bit 1 StatusWallClock (its clock, the one Origin,
// Received and the frame's transmit time are read on, is a wall clock,
// the system's or a simulated one: the asker can then measure the
// offset between the two clocks; else it is the oscillator, whose origin
// is arbitrary), bit 2 StatusAgreement (it runs configuration agreement:
// Digest and Key Fingerprint are what it announces). The other bits are
// reserved and must be zero.
//
// Standing is the member's configuration-agreement standing, 0 agreed, 1
// starting, 2 stepped back (internal/node's Standing); other values are
// refused.
//
// Strings are 0..MaxStatusString bytes of UTF-8 without control
// characters (they end up in a terminal). Facts are the daemon's own
// numbers, each named by its tag (StatusFactTag); a tag this code does
// not know is kept (it round-trips) and shown by number.
type StatusReport struct {
	Flags    uint8
	Standing uint8
	QueryID  uint64
	// Incarnation is the member's incarnation (restarts raise it).
	Incarnation uint32
	// Uptime is how long the member's daemon has run, in seconds.
	Uptime uint32
	// MaxError is its clock's error bound, in nanoseconds (0: none known).
	MaxError uint64
	// Origin echoes the query frame's transmit time; Received is the
	// query's arrival on the member's clock. With the answer frame's
	// transmit time and its arrival they are the four timestamps of an
	// NTP exchange.
	Origin, Received NTPTime
	Digest           [ConfigDigestLen]byte
	KeyFingerprint   [KeyFingerprintLen]byte
	Version, Commit  string
	Algorithm, Role  string
	Facts            []StatusFact
}

// Flags of a StatusReport.
const (
	StatusSynchronized uint8 = 1 << 0
	StatusWallClock    uint8 = 1 << 1
	StatusAgreement    uint8 = 1 << 2
	statusFlagsKnown         = StatusSynchronized | StatusWallClock | StatusAgreement
	// MaxStatusStanding is the largest Standing.
	MaxStatusStanding = 2
)

// StatusFact is one of a daemon's numbers in a StatusReport.
type StatusFact struct {
	Tag   StatusFactTag
	Value uint64
}

// StatusFactTag names a fact of a StatusReport. Tags are on the wire:
// ONLY APPEND, as for Kind.
type StatusFactTag uint8

const (
	// FactLeader: the leader this member knows (electd), its Berkeley
	// master (timed), a member ID; 0 none.
	FactLeader StatusFactTag = 1
	// FactTerm: the leader's term, raw (electd; timed's Berkeley term).
	FactTerm StatusFactTag = 2
	// FactTermRound: the term's round, as an operator reads it (electd).
	FactTermRound StatusFactTag = 3
	// FactHeld: locks held by this member's clients (mutexd).
	FactHeld StatusFactTag = 4
	// FactQueued: lock requests waiting at this member (mutexd).
	FactQueued StatusFactTag = 5
	// FactSequencer: the sequencer this member knows (orderd); 0 none.
	FactSequencer StatusFactTag = 6
	// FactDelivered: the last index of the total order delivered here
	// (orderd).
	FactDelivered StatusFactTag = 7
	// FactOffset: the clock's offset from its source, in nanoseconds, as
	// a two's complement int64 (timed).
	FactOffset StatusFactTag = 8
	// FactErrorBound: timed's error bound of the clock against its
	// source, in nanoseconds.
	FactErrorBound StatusFactTag = 9
	// FactCommitted: the last index of the total order committed (orderd).
	FactCommitted StatusFactTag = 10
)

// factNames are the tags' stable names (JSON keys, trace fields).
var factNames = [...]string{
	FactLeader:     "leader",
	FactTerm:       "term",
	FactTermRound:  "term_round",
	FactHeld:       "held",
	FactQueued:     "queued",
	FactSequencer:  "sequencer",
	FactDelivered:  "delivered",
	FactOffset:     "offset_ns",
	FactErrorBound: "error_bound_ns",
	FactCommitted:  "committed",
}

// String returns the tag's stable name, or "fact_N" for a tag this code
// does not know.
func (t StatusFactTag) String() string {
	if int(t) < len(factNames) && factNames[t] != "" {
		return factNames[t]
	}
	return "fact_" + strconv.Itoa(int(t))
}

// Signed says whether the tag's value is a two's complement int64.
func (t StatusFactTag) Signed() bool { return t == FactOffset }

// Fact returns the value of the fact tagged t, and whether r has it.
func (r *StatusReport) Fact(t StatusFactTag) (uint64, bool) {
	for _, f := range r.Facts {
		if f.Tag == t {
			return f.Value, true
		}
	}
	return 0, false
}

// AppendBinary appends the encoding of r to b. It refuses (an
// *EncodeError) what UnmarshalBinary would refuse: reserved flags, a
// standing beyond MaxStatusStanding, a string too long or with control
// characters, more than MaxStatusFacts facts or tags 0 or not strictly
// ascending.
func (r *StatusReport) AppendBinary(b []byte) ([]byte, error) {
	if err := r.check(); err != nil {
		return b, err
	}
	b = append(b, StatusVersion, r.Flags, r.Standing, byte(len(r.Facts)))
	b = binary.BigEndian.AppendUint64(b, r.QueryID)
	b = binary.BigEndian.AppendUint32(b, r.Incarnation)
	b = binary.BigEndian.AppendUint32(b, r.Uptime)
	b = binary.BigEndian.AppendUint64(b, r.MaxError)
	b = binary.BigEndian.AppendUint64(b, uint64(r.Origin))
	b = binary.BigEndian.AppendUint64(b, uint64(r.Received))
	b = append(b, r.Digest[:]...)
	b = append(b, r.KeyFingerprint[:]...)
	for _, s := range [...]string{r.Version, r.Commit, r.Algorithm, r.Role} {
		b = appendStr(b, s)
	}
	for _, f := range r.Facts {
		b = append(b, byte(f.Tag))
		b = binary.BigEndian.AppendUint64(b, f.Value)
	}
	return b, nil
}

func (r *StatusReport) check() error {
	bad := func(field string, v int, why string) error {
		return &EncodeError{What: statusReportWhat, Field: field, Value: uint64(v), Why: why}
	}
	switch {
	case r.Flags&^statusFlagsKnown != 0:
		return bad("flags", int(r.Flags), "reserved bits set")
	case r.Standing > MaxStatusStanding:
		return bad("standing", int(r.Standing), "beyond MaxStatusStanding")
	case len(r.Facts) > MaxStatusFacts:
		return bad("facts", len(r.Facts), "more than MaxStatusFacts")
	}
	for _, s := range []struct{ name, v string }{{"version", r.Version}, {"commit", r.Commit}, {"algorithm", r.Algorithm}, {"role", r.Role}} {
		if len(s.v) > MaxStatusString || !configString(s.v) {
			return bad(s.name, len(s.v), "longer than MaxStatusString, not UTF-8, or with control characters")
		}
	}
	for i, f := range r.Facts {
		if f.Tag == 0 || i > 0 && r.Facts[i-1].Tag >= f.Tag {
			return bad("fact", int(f.Tag), "tag 0 or tags not strictly ascending")
		}
	}
	return nil
}

// UnmarshalBinary decodes a whole StatusReport payload: b must hold
// exactly one. Strings and facts are copies.
func (r *StatusReport) UnmarshalBinary(b []byte) error {
	if len(b) < statusReportFixedLen {
		return decodeErr(statusReportWhat, DecodeTruncated, "", len(b), statusReportFixedLen)
	}
	if len(b) > MaxStatusReportLen {
		return decodeErr(statusReportWhat, DecodeOversized, "", len(b), MaxStatusReportLen)
	}
	if b[0] != StatusVersion {
		return decodeErr(statusReportWhat, DecodeBadVersion, "", int(b[0]), StatusVersion)
	}
	if b[1]&^statusFlagsKnown != 0 {
		return decodeErr(statusReportWhat, DecodeBadFlags, "", int(b[1]), -1)
	}
	if b[2] > MaxStatusStanding {
		return decodeErr(statusReportWhat, DecodeBadField, "standing", int(b[2]), -1)
	}
	nf := int(b[3])
	if nf > MaxStatusFacts {
		return decodeErr(statusReportWhat, DecodeOversized, "fact count", nf, MaxStatusFacts)
	}
	out := StatusReport{
		Flags:       b[1],
		Standing:    b[2],
		QueryID:     binary.BigEndian.Uint64(b[4:]),
		Incarnation: binary.BigEndian.Uint32(b[12:]),
		Uptime:      binary.BigEndian.Uint32(b[16:]),
		MaxError:    binary.BigEndian.Uint64(b[20:]),
		Origin:      NTPTime(binary.BigEndian.Uint64(b[28:])),
		Received:    NTPTime(binary.BigEndian.Uint64(b[36:])),
	}
	copy(out.Digest[:], b[44:60])
	copy(out.KeyFingerprint[:], b[60:68])
	rest := b[statusReportFixedLen:]
	var strs [4]string
	for i, field := range [...]string{"version", "commit", "algorithm", "role"} {
		if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
			return decodeErr(statusReportWhat, DecodeTruncated, field, len(rest), 1+int(firstOr(rest)))
		}
		n := int(rest[0])
		if n > MaxStatusString {
			return decodeErr(statusReportWhat, DecodeOversized, field, n, MaxStatusString)
		}
		s := string(rest[1 : 1+n])
		if !configString(s) {
			return decodeErr(statusReportWhat, DecodeBadField, field+" not UTF-8 without control characters", n, -1)
		}
		strs[i], rest = s, rest[1+n:]
	}
	out.Version, out.Commit, out.Algorithm, out.Role = strs[0], strs[1], strs[2], strs[3]
	if len(rest) != nf*statusFactLen {
		if len(rest) < nf*statusFactLen {
			return decodeErr(statusReportWhat, DecodeTruncated, "facts", len(rest), nf*statusFactLen)
		}
		return decodeErr(statusReportWhat, DecodeBadLength, "trailing bytes", len(rest), nf*statusFactLen)
	}
	if nf > 0 {
		out.Facts = make([]StatusFact, nf)
	}
	for i := range nf {
		f := StatusFact{Tag: StatusFactTag(rest[0]), Value: binary.BigEndian.Uint64(rest[1:])}
		if f.Tag == 0 || i > 0 && out.Facts[i-1].Tag >= f.Tag {
			return decodeErr(statusReportWhat, DecodeBadField, "fact tags 0 or not strictly ascending", int(f.Tag), -1)
		}
		out.Facts[i] = f
		rest = rest[statusFactLen:]
	}
	*r = out
	return nil
}
