package wire

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// DecodeErrorKind classifies a structural decoding failure. It is itself an
// error, so that callers can test for a class of failure without a type
// assertion:
//
//	if errors.Is(err, wire.DecodeTruncated) { ... }
//
// The values are stable: Reason turns them into counter labels.
type DecodeErrorKind uint8

const (
	// DecodeTruncated: the input is shorter than the structure needs.
	DecodeTruncated DecodeErrorKind = iota + 1
	// DecodeBadMagic: a synclab frame that does not start with "SL".
	DecodeBadMagic
	// DecodeBadVersion: a frame version this code does not speak.
	DecodeBadVersion
	// DecodeUnknownKind: a message kind this version does not know.
	DecodeUnknownKind
	// DecodeBadFlags: a flag bit that is reserved (must be zero) is set.
	DecodeBadFlags
	// DecodeBadReserved: a reserved byte or field is not zero.
	DecodeBadReserved
	// DecodeBadLength: a length field disagrees with the input (including
	// trailing bytes after the end of the structure).
	DecodeBadLength
	// DecodeOversized: the structure would exceed its maximum size.
	DecodeOversized
	// DecodeBadField: a field holds a value the format forbids.
	DecodeBadField
	// DecodeUnsupported: a well-formed feature this code does not
	// implement (NTP extension fields).
	DecodeUnsupported

	decodeKindEnd // one past the last kind; keep it last
)

var decodeKindNames = [...]string{
	DecodeTruncated:   "truncated",
	DecodeBadMagic:    "bad_magic",
	DecodeBadVersion:  "bad_version",
	DecodeUnknownKind: "unknown_kind",
	DecodeBadFlags:    "bad_flags",
	DecodeBadReserved: "bad_reserved",
	DecodeBadLength:   "bad_length",
	DecodeOversized:   "oversized",
	DecodeBadField:    "bad_field",
	DecodeUnsupported: "unsupported",
}

// String returns the kind's stable label ("truncated", "bad_magic", ...).
func (k DecodeErrorKind) String() string {
	if k > 0 && k < decodeKindEnd {
		return decodeKindNames[k]
	}
	return "decode_error(" + strconv.Itoa(int(k)) + ")"
}

// Error makes a kind usable as an errors.Is target.
func (k DecodeErrorKind) Error() string { return "wire: " + k.String() }

// DecodeError is returned by every decoder in this package for input that
// does not have the structure of the message. It says what was being
// decoded, what is wrong, and where.
//
// Decoders return it only on failure; success never allocates.
type DecodeError struct {
	Kind DecodeErrorKind
	// What was being decoded: "frame", "heartbeat", "election", ... for
	// synclab messages, "ntp", "ntp mac" for NTP (Reason relies on the
	// "ntp" prefix).
	What string
	// Field names the offending field, if one is to blame.
	Field string
	// Got and Want give the offending value and the expected one (lengths
	// in bytes for length errors), when both are meaningful; Want < 0 means
	// "not applicable".
	Got, Want int
}

func (e *DecodeError) Error() string {
	var b strings.Builder
	b.WriteString("wire: ")
	b.WriteString(e.What)
	b.WriteString(": ")
	b.WriteString(e.Kind.String())
	if e.Field != "" {
		b.WriteString(" ")
		b.WriteString(e.Field)
	}
	switch {
	case e.Want >= 0 && (e.Kind == DecodeTruncated || e.Kind == DecodeBadLength || e.Kind == DecodeOversized):
		b.WriteString(" (got " + strconv.Itoa(e.Got) + " bytes, want " + strconv.Itoa(e.Want) + ")")
	case e.Want >= 0:
		b.WriteString(" (got " + strconv.Itoa(e.Got) + ", want " + strconv.Itoa(e.Want) + ")")
	default:
		b.WriteString(" (got " + strconv.Itoa(e.Got) + ")")
	}
	return b.String()
}

// Is reports whether target is e's kind, so errors.Is(err, DecodeTruncated)
// works through any wrapping.
func (e *DecodeError) Is(target error) bool {
	k, ok := target.(DecodeErrorKind)
	return ok && k == e.Kind
}

func (e *DecodeError) isNTP() bool { return strings.HasPrefix(e.What, "ntp") }

// decodeErr builds a *DecodeError. It is a function, not a literal at each
// call site, to keep the decoders short; it only runs on failure.
func decodeErr(what string, k DecodeErrorKind, field string, got, want int) error {
	return &DecodeError{Kind: k, What: what, Field: field, Got: got, Want: want}
}

// clampInt is v as an int for an error's Got, saturated: a uint32 or
// uint64 field converted with int() reads negative on a 32-bit build.
func clampInt(v uint64) int {
	if v > math.MaxInt {
		return math.MaxInt
	}
	return int(v)
}

// EncodeError is returned by an encoder asked to encode a value the format
// cannot carry (a flag it does not define, a payload that does not fit...).
// It always means a bug in the caller, never bad input from the network.
type EncodeError struct {
	What  string // message being encoded
	Field string // offending field
	Value uint64 // its value
	Why   string // what is wrong with it
}

func (e *EncodeError) Error() string {
	return "wire: cannot encode " + e.What + ": " + e.Field + " " +
		strconv.FormatUint(e.Value, 10) + ": " + e.Why
}

// Validation sentinels: returned (possibly wrapped) by Validator.Validate for
// frames that are well formed but must not be delivered.
var (
	// ErrWrongCluster: the frame's cluster ID is not ours (another cluster
	// shares the network or the port).
	ErrWrongCluster = errors.New("wire: frame from another cluster")
	// ErrFromSelf: the frame claims to come from this node (our own
	// multicast looped back, or a forgery).
	ErrFromSelf = errors.New("wire: frame from self")
	// ErrMisdirected: the frame is addressed to another member.
	ErrMisdirected = errors.New("wire: frame addressed to another member")
	// ErrNoMAC: keys are configured and the frame carries no MAC.
	ErrNoMAC = errors.New("wire: frame without MAC")
	// ErrUnknownKey: the frame's MAC uses a key ID we do not hold.
	ErrUnknownKey = errors.New("wire: MAC with unknown key ID")
	// ErrBadMAC: the MAC does not match the frame.
	ErrBadMAC = errors.New("wire: bad MAC")
	// ErrReplay: a sequence number already accepted from this sender, still
	// inside the replay window.
	ErrReplay = errors.New("wire: replayed frame")
	// ErrStale: a sequence number older than the sender's replay window; it
	// cannot be told from a replay, so it is refused.
	ErrStale = errors.New("wire: frame older than the replay window")
)

// NTP authentication sentinels, returned by VerifyNTPMAC.
var (
	// ErrNTPUnknownKey: the packet's key ID is not in the key list.
	ErrNTPUnknownKey = errors.New("wire: NTP MAC with unknown key ID")
	// ErrNTPBadMAC: the digest does not match, or has the wrong length for
	// the key's type.
	ErrNTPBadMAC = errors.New("wire: bad NTP MAC")
)

// Key file sentinels, wrapped in a *KeyFileError by ParseKeyFile and
// ParseChronyKeys.
var (
	// ErrKeySyntax: a line is not of the documented form.
	ErrKeySyntax = errors.New("malformed key line")
	// ErrKeyID: the key ID is not a decimal number in 1..4294967295.
	ErrKeyID = errors.New("bad key ID")
	// ErrKeyDuplicate: a key ID appears twice.
	ErrKeyDuplicate = errors.New("duplicate key ID")
	// ErrKeyShort: the secret is shorter than the format allows.
	ErrKeyShort = errors.New("key too short")
	// ErrKeyEncoding: the secret is not valid hex (or empty).
	ErrKeyEncoding = errors.New("bad key encoding")
	// ErrKeyType: a chrony key type this package does not implement.
	ErrKeyType = errors.New("unsupported key type")
)

// KeyFileError locates a problem in a key file.
type KeyFileError struct {
	Format string // "synclab" or "chrony"
	Line   int    // 1-based line number
	Err    error  // one of the ErrKey* sentinels, possibly wrapped with details
}

func (e *KeyFileError) Error() string {
	return "wire: " + e.Format + " key file line " + strconv.Itoa(e.Line) + ": " + e.Err.Error()
}

func (e *KeyFileError) Unwrap() error { return e.Err }

// Reason returns a short, stable label for an error from any decoder or
// validator in this package, for drop counters and metrics: "truncated",
// "bad_magic", "bad_version", "unknown_kind", "bad_flags", "bad_reserved",
// "bad_length", "oversized", "bad_field", "unsupported" for synclab decode
// errors; the same with an "ntp_" prefix for NTP decode errors;
// "wrong_cluster", "from_self", "misdirected", "no_mac", "unknown_key",
// "bad_mac", "replay", "stale" for validation; "ntp_unknown_key",
// "ntp_bad_mac" for NTP authentication; "bad_key_file"; "encode"; and
// "other" for anything else. Reason(nil) is "".
func Reason(err error) string {
	if err == nil {
		return ""
	}
	var de *DecodeError
	if errors.As(err, &de) {
		if de.isNTP() {
			return "ntp_" + de.Kind.String()
		}
		return de.Kind.String()
	}
	var k DecodeErrorKind
	if errors.As(err, &k) {
		return k.String()
	}
	for _, s := range sentinelReasons {
		if errors.Is(err, s.err) {
			return s.label
		}
	}
	var kf *KeyFileError
	if errors.As(err, &kf) {
		return "bad_key_file"
	}
	var ee *EncodeError
	if errors.As(err, &ee) {
		return "encode"
	}
	return "other"
}

var sentinelReasons = [...]struct {
	err   error
	label string
}{
	{ErrWrongCluster, "wrong_cluster"},
	{ErrFromSelf, "from_self"},
	{ErrMisdirected, "misdirected"},
	{ErrNoMAC, "no_mac"},
	{ErrUnknownKey, "unknown_key"},
	{ErrBadMAC, "bad_mac"},
	{ErrReplay, "replay"},
	{ErrStale, "stale"},
	{ErrNTPUnknownKey, "ntp_unknown_key"},
	{ErrNTPBadMAC, "ntp_bad_mac"},
}
