package wire

import (
	"bytes"
	"strings"
	"testing"
)

func permSamples() []payload {
	return []payload{
		&PermRequest{Name: "counter", Incarnation: 1, Stamp: 8},
		&PermRequest{Name: "db:main/users@eu-1+ro_2", Incarnation: 1<<32 - 1, Stamp: MaxPermStamp, Fence: 1<<63 - 1},
		&PermReply{Name: "x", Incarnation: 2, Answers: 1, Stamp: 12, Fence: 8 << 16, Want: 0},
		&PermReply{Name: "printer", Incarnation: 7, Answers: 9, Stamp: MaxPermStamp, Fence: 1 << 62, Want: MaxPermStamp},
		&PermRequeue{PermRequest: PermRequest{Name: "counter", Incarnation: 1, Stamp: 12, Fence: 5 << 16}, Released: 5},
		&PermRequeue{PermRequest: PermRequest{Name: "db:main/users@eu-1+ro_2", Incarnation: 1<<32 - 1, Stamp: MaxPermStamp, Fence: 1<<63 - 1},
			Released: MaxPermStamp - 1},
	}
}

// TestPermRoundTrips: every payload re-encodes what it decodes; every
// truncation and any trailing byte is a *DecodeError.
func TestPermRoundTrips(t *testing.T) {
	checkRoundTrips(t, permSamples())
}

// TestPermLayout pins the byte layouts (the diagrams above the types).
func TestPermLayout(t *testing.T) {
	checkLayout(t, PermRequest{Name: "ab", Incarnation: 0x01020304, Stamp: 0x0000111213141516, Fence: 0x2122232425262728},
		[]byte{2, 0, 0, 0, 1, 2, 3, 4,
			0, 0, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16,
			0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 'a', 'b'})
	checkLayout(t, PermReply{Name: "ab", Incarnation: 0x01020304, Answers: 0x05060708, Stamp: 0x0000111213141516,
		Fence: 0x2122232425262728, Want: 0x0000313233343536},
		[]byte{2, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0,
			0, 0, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16,
			0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,
			0, 0, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 'a', 'b'})
	checkLayout(t, PermRequeue{PermRequest: PermRequest{Name: "ab", Incarnation: 0x01020304, Stamp: 0x0000111213141516,
		Fence: 0x2122232425262728}, Released: 0x0000010203040506},
		[]byte{2, 0, 0, 0, 1, 2, 3, 4,
			0, 0, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16,
			0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,
			0, 0, 1, 2, 3, 4, 5, 6, 'a', 'b'})
}

// TestPermRejects: names, zero incarnations and stamps, stamps past
// MaxPermStamp and reserved bytes are refused on both sides.
func TestPermRejects(t *testing.T) {
	checkEncodeRefused(t,
		PermRequest{Name: "", Incarnation: 1, Stamp: 1},
		PermRequest{Name: strings.Repeat("x", MaxLockNameLen+1), Incarnation: 1, Stamp: 1},
		PermRequest{Name: "a", Incarnation: 0, Stamp: 1},
		PermRequest{Name: "a", Incarnation: 1, Stamp: 0},
		PermRequest{Name: "a", Incarnation: 1, Stamp: MaxPermStamp + 1},
		PermReply{Name: "a b", Incarnation: 1, Answers: 1, Stamp: 1},
		PermReply{Name: "a", Incarnation: 1, Answers: 0, Stamp: 1},
		PermReply{Name: "a", Incarnation: 1, Answers: 1, Stamp: 1, Want: MaxPermStamp + 1},
		PermRequeue{PermRequest: PermRequest{Name: "a", Incarnation: 1, Stamp: 5}, Released: 0},
		PermRequeue{PermRequest: PermRequest{Name: "a", Incarnation: 1, Stamp: 5}, Released: 5},
		PermRequeue{PermRequest: PermRequest{Name: "a", Incarnation: 0, Stamp: 5}, Released: 4},
		PermRequeue{PermRequest: PermRequest{Name: "", Incarnation: 1, Stamp: 5}, Released: 4},
	)
	rq, _ := PermRequeue{PermRequest: PermRequest{Name: "ab", Incarnation: 1, Stamp: 5}, Released: 3}.AppendBinary(nil)
	req, _ := PermRequest{Name: "ab", Incarnation: 1, Stamp: 5}.AppendBinary(nil)
	rep, _ := PermReply{Name: "ab", Incarnation: 1, Answers: 1, Stamp: 5}.AppendBinary(nil)
	set := func(b []byte, i int, v ...byte) []byte { b = bytes.Clone(b); copy(b[i:], v); return b }
	checkRefusals(t, []refusal{
		{"reserved", new(PermRequest), set(req, 1, 1), DecodeBadReserved},
		{"incarnation 0", new(PermRequest), set(req, 4, 0, 0, 0, 0), DecodeBadField},
		{"stamp 0", new(PermRequest), set(req, 8, 0, 0, 0, 0, 0, 0, 0, 0), DecodeBadField},
		{"stamp past MaxPermStamp", new(PermRequest), set(req, 8, 0, 0x80, 0, 0, 0, 0, 0, 0), DecodeBadField},
		{"stamp all ones", new(PermRequest), set(req, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), DecodeBadField},
		{"empty name", new(PermRequest), set(req, 0, 0), DecodeBadField},
		{"name too long", new(PermRequest), set(req, 0, 65), DecodeBadField},
		{"name character", new(PermRequest), set(req, 24, ' '), DecodeBadField},
		{"reply reserved byte", new(PermReply), set(rep, 3, 1), DecodeBadReserved},
		{"reply reserved word", new(PermReply), set(rep, 15, 1), DecodeBadReserved},
		{"answers 0", new(PermReply), set(rep, 8, 0, 0, 0, 0), DecodeBadField},
		{"want past MaxPermStamp", new(PermReply), set(rep, 32, 0x80), DecodeBadField},
		{"reply stamp 0", new(PermReply), set(rep, 16, 0, 0, 0, 0, 0, 0, 0, 0), DecodeBadField},
		{"requeue reserved", new(PermRequeue), set(rq, 2, 1), DecodeBadReserved},
		{"requeue stamp 0", new(PermRequeue), set(rq, 8, 0, 0, 0, 0, 0, 0, 0, 0), DecodeBadField},
		{"requeue released 0", new(PermRequeue), set(rq, 24, 0, 0, 0, 0, 0, 0, 0, 0), DecodeBadField},
		{"requeue released at the stamp", new(PermRequeue), set(rq, 31, 5), DecodeBadField},
		{"requeue released after the stamp", new(PermRequeue), set(rq, 24, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), DecodeBadField},
		{"requeue name character", new(PermRequeue), set(rq, 32, ' '), DecodeBadField},
	})
}

// FuzzPermPayloads: any bytes decode into a valid payload that re-encodes
// to the same bytes, or fail with a *DecodeError.
func FuzzPermPayloads(f *testing.F) {
	fuzzDecoders(f, permSamples(), [][]byte{{}}, new(PermRequest), new(PermReply), new(PermRequeue))
}
