package wire

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func permSamples() []tokenPayload {
	return []tokenPayload{
		&PermRequest{Name: "counter", Incarnation: 1, Stamp: 8},
		&PermRequest{Name: "db:main/users@eu-1+ro_2", Incarnation: 1<<32 - 1, Stamp: MaxPermStamp, Fence: 1<<63 - 1},
		&PermReply{Name: "x", Incarnation: 2, Answers: 1, Stamp: 12, Fence: 8 << 16, Want: 0},
		&PermReply{Name: "printer", Incarnation: 7, Answers: 9, Stamp: MaxPermStamp, Fence: 1 << 62, Want: MaxPermStamp},
	}
}

func emptyPerm(p tokenPayload) tokenPayload {
	if _, ok := p.(*PermRequest); ok {
		return new(PermRequest)
	}
	return new(PermReply)
}

// TestPermRoundTrips: every payload re-encodes what it decodes; every
// truncation and any trailing byte is a *DecodeError.
func TestPermRoundTrips(t *testing.T) {
	for _, in := range permSamples() {
		b, err := in.AppendBinary(nil)
		if err != nil {
			t.Fatalf("%T: %v", in, err)
		}
		out := emptyPerm(in)
		if err := out.UnmarshalBinary(b); err != nil {
			t.Fatalf("%T: %v", in, err)
		}
		if again, _ := out.AppendBinary(nil); !bytes.Equal(again, b) {
			t.Errorf("%T: round trip % x -> % x", in, b, again)
		}
		for n := range len(b) {
			if err := emptyPerm(in).UnmarshalBinary(b[:n]); err == nil {
				t.Errorf("%T: %d of %d bytes accepted", in, n, len(b))
			} else {
				requireDecodeError(t, err)
			}
		}
		if err := emptyPerm(in).UnmarshalBinary(append(bytes.Clone(b), 'x')); err == nil {
			t.Errorf("%T: trailing byte accepted", in)
		}
	}
}

// TestPermLayout pins the byte layouts (the diagrams above the types).
func TestPermLayout(t *testing.T) {
	b, _ := PermRequest{Name: "ab", Incarnation: 0x01020304, Stamp: 0x0000111213141516, Fence: 0x2122232425262728}.AppendBinary(nil)
	want := []byte{2, 0, 0, 0, 1, 2, 3, 4,
		0, 0, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16,
		0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 'a', 'b'}
	if !bytes.Equal(b, want) {
		t.Fatalf("request encodes as\n% x\nwant\n% x", b, want)
	}
	b, _ = PermReply{Name: "ab", Incarnation: 0x01020304, Answers: 0x05060708, Stamp: 0x0000111213141516,
		Fence: 0x2122232425262728, Want: 0x0000313233343536}.AppendBinary(nil)
	want = []byte{2, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0,
		0, 0, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16,
		0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,
		0, 0, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 'a', 'b'}
	if !bytes.Equal(b, want) {
		t.Fatalf("reply encodes as\n% x\nwant\n% x", b, want)
	}
}

// TestPermRejects: names, zero incarnations and stamps, stamps past
// MaxPermStamp and reserved bytes are refused on both sides.
func TestPermRejects(t *testing.T) {
	for _, p := range []interface{ AppendBinary([]byte) ([]byte, error) }{
		PermRequest{Name: "", Incarnation: 1, Stamp: 1},
		PermRequest{Name: strings.Repeat("x", MaxLockNameLen+1), Incarnation: 1, Stamp: 1},
		PermRequest{Name: "a", Incarnation: 0, Stamp: 1},
		PermRequest{Name: "a", Incarnation: 1, Stamp: 0},
		PermRequest{Name: "a", Incarnation: 1, Stamp: MaxPermStamp + 1},
		PermReply{Name: "a b", Incarnation: 1, Answers: 1, Stamp: 1},
		PermReply{Name: "a", Incarnation: 1, Answers: 0, Stamp: 1},
		PermReply{Name: "a", Incarnation: 1, Answers: 1, Stamp: 1, Want: MaxPermStamp + 1},
	} {
		var ee *EncodeError
		if _, err := p.AppendBinary(nil); !errors.As(err, &ee) {
			t.Errorf("%+v encoded: %v", p, err)
		}
	}
	req, _ := PermRequest{Name: "ab", Incarnation: 1, Stamp: 5}.AppendBinary(nil)
	rep, _ := PermReply{Name: "ab", Incarnation: 1, Answers: 1, Stamp: 5}.AppendBinary(nil)
	set := func(b []byte, i int, v ...byte) []byte { b = bytes.Clone(b); copy(b[i:], v); return b }
	for _, c := range []struct {
		b    []byte
		into tokenPayload
		kind DecodeErrorKind
	}{
		{set(req, 1, 1), new(PermRequest), DecodeBadReserved},
		{set(req, 4, 0, 0, 0, 0), new(PermRequest), DecodeBadField},                // incarnation 0
		{set(req, 8, 0, 0, 0, 0, 0, 0, 0, 0), new(PermRequest), DecodeBadField},    // stamp 0
		{set(req, 8, 0, 0x80, 0, 0, 0, 0, 0, 0), new(PermRequest), DecodeBadField}, // stamp past MaxPermStamp
		{set(req, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), new(PermRequest), DecodeBadField},
		{set(req, 0, 0), new(PermRequest), DecodeBadField},    // empty name
		{set(req, 0, 65), new(PermRequest), DecodeBadField},   // name too long
		{set(req, 24, ' '), new(PermRequest), DecodeBadField}, // name character
		{set(rep, 3, 1), new(PermReply), DecodeBadReserved},
		{set(rep, 15, 1), new(PermReply), DecodeBadReserved},
		{set(rep, 8, 0, 0, 0, 0), new(PermReply), DecodeBadField}, // answers 0
		{set(rep, 32, 0x80), new(PermReply), DecodeBadField},      // want past MaxPermStamp
		{set(rep, 16, 0, 0, 0, 0, 0, 0, 0, 0), new(PermReply), DecodeBadField},
	} {
		if err := c.into.UnmarshalBinary(c.b); !errors.Is(err, c.kind) {
			t.Errorf("% x: %v, want %v", c.b, err, c.kind)
		}
	}
}

// FuzzPermPayloads: any bytes decode into a valid payload that re-encodes
// to the same bytes, or fail with a *DecodeError.
func FuzzPermPayloads(f *testing.F) {
	for _, p := range permSamples() {
		b, _ := p.AppendBinary(nil)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range []tokenPayload{new(PermRequest), new(PermReply)} {
			if err := p.UnmarshalBinary(b); err != nil {
				requireDecodeError(t, err)
				continue
			}
			out, err := p.AppendBinary(nil)
			if err != nil || !bytes.Equal(out, b) {
				t.Fatalf("%T: round trip % x -> % x (%v)", p, b, out, err)
			}
		}
	})
}
