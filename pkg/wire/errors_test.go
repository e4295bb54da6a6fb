package wire

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
)

func TestReason(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{io.EOF, "other"},
		{&DecodeError{Kind: DecodeTruncated, What: "frame"}, "truncated"},
		{fmt.Errorf("ctx: %w", &DecodeError{Kind: DecodeBadMagic, What: "frame"}), "bad_magic"},
		{&DecodeError{Kind: DecodeBadLength, What: "ntp mac"}, "ntp_bad_length"},
		{&DecodeError{Kind: DecodeTruncated, What: "ntp"}, "ntp_truncated"},
		{&DecodeError{Kind: DecodeBadField, What: "election"}, "bad_field"},
		{DecodeOversized, "oversized"},
		{fmt.Errorf("%w: x", ErrWrongCluster), "wrong_cluster"},
		{ErrFromSelf, "from_self"},
		{ErrMisdirected, "misdirected"},
		{ErrNoMAC, "no_mac"},
		{ErrUnknownKey, "unknown_key"},
		{ErrBadMAC, "bad_mac"},
		{ErrReplay, "replay"},
		{fmt.Errorf("%w: seq", ErrStale), "stale"},
		{ErrNTPUnknownKey, "ntp_unknown_key"},
		{ErrNTPBadMAC, "ntp_bad_mac"},
		{&KeyFileError{Format: "synclab", Line: 1, Err: ErrKeyShort}, "bad_key_file"},
		{&EncodeError{What: "frame"}, "encode"},
	}
	for _, c := range cases {
		if got := Reason(c.err); got != c.want {
			t.Errorf("Reason(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	// Every decode kind has a distinct label without spaces.
	seen := map[string]bool{}
	for k := DecodeErrorKind(1); k < decodeKindEnd; k++ {
		s := k.String()
		if seen[s] || strings.ContainsAny(s, " ()") {
			t.Errorf("kind %d: %q", k, s)
		}
		seen[s] = true
	}
	if decodeKindEnd.String() != "decode_error(11)" {
		t.Errorf("unknown kind: %q", decodeKindEnd.String())
	}
}

func TestDecodeErrorMessage(t *testing.T) {
	err := error(&DecodeError{Kind: DecodeTruncated, What: "frame", Field: "payload", Got: 60, Want: 72})
	if got := err.Error(); got != "wire: frame: truncated payload (got 60 bytes, want 72)" {
		t.Errorf("%q", got)
	}
	err = &DecodeError{Kind: DecodeBadVersion, What: "frame", Got: 2, Want: 1}
	if got := err.Error(); got != "wire: frame: bad_version (got 2, want 1)" {
		t.Errorf("%q", got)
	}
	err = &DecodeError{Kind: DecodeUnknownKind, What: "frame", Got: 77, Want: -1}
	if got := err.Error(); got != "wire: frame: unknown_kind (got 77)" {
		t.Errorf("%q", got)
	}
	if !errors.Is(fmt.Errorf("x: %w", err), DecodeUnknownKind) || errors.Is(err, DecodeTruncated) {
		t.Error("errors.Is on kinds")
	}
}

func TestErrorStrings(t *testing.T) {
	if got := DecodeTruncated.Error(); got != "wire: truncated" {
		t.Errorf("%q", got)
	}
	e := &EncodeError{What: "frame", Field: "sender", Value: 0, Why: "member IDs start at 1"}
	if got := e.Error(); got != "wire: cannot encode frame: sender 0: member IDs start at 1" {
		t.Errorf("%q", got)
	}
	kf := &KeyFileError{Format: "chrony", Line: 3, Err: ErrKeyType}
	if got := kf.Error(); got != "wire: chrony key file line 3: unsupported key type" {
		t.Errorf("%q", got)
	}
}

// TestDecodeErrorGotSaturates: a 32-bit field at or above 2^31 that a
// decoder refuses is reported as what it is, saturated at the largest
// int, never negative: int(uint32) read negative on a 32-bit build (an
// omega heartbeat's interval 0xffffffff said -1).
func TestDecodeErrorGotSaturates(t *testing.T) {
	got := func(err error) int {
		t.Helper()
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("%v, want a *DecodeError", err)
		}
		return de.Got
	}
	var h OmegaHeartbeat
	if g := got(h.UnmarshalBinary([]byte{0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff})); uint64(g) != min(uint64(math.MaxUint32), math.MaxInt) {
		t.Errorf("omega interval 0xffffffff: Got %d", g)
	}
	for _, c := range []struct {
		v    uint64
		want int
	}{{0, 0}, {1 << 31, int(min(1<<31, uint64(math.MaxInt)))}, {math.MaxUint64, math.MaxInt}} {
		if g := clampInt(c.v); g != c.want || g < 0 {
			t.Errorf("clampInt(%d) = %d, want %d", c.v, g, c.want)
		}
	}
}
