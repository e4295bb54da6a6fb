package wire

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// The checks every payload family's tests share (token, central,
// permission, vote, order, berkeley): a family lists its samples, its
// hostile inputs and the types to fuzz; the checks live here once.

// payload is a wire payload: it encodes itself and decodes into itself.
type payload interface {
	encoding.BinaryAppender
	encoding.BinaryUnmarshaler
}

// zeroLike returns a new zero payload of p's type (p is a pointer).
func zeroLike(p payload) payload {
	return reflect.New(reflect.TypeOf(p).Elem()).Interface().(payload)
}

// checkRoundTrips: every sample encodes; a zero payload of its type decodes
// the bytes and re-encodes them byte for byte; every truncation and a
// trailing byte are refused with a *DecodeError. It returns the bytes of
// each sample, for a family's own checks on them.
func checkRoundTrips[P payload](t *testing.T, samples []P) [][]byte {
	t.Helper()
	encoded := make([][]byte, 0, len(samples))
	for i, in := range samples {
		b, err := in.AppendBinary(nil)
		if err != nil {
			t.Fatalf("sample %d %T: %v", i, in, err)
		}
		encoded = append(encoded, b)
		out := zeroLike(in)
		if err := out.UnmarshalBinary(b); err != nil {
			t.Fatalf("sample %d %T: %v", i, in, err)
		}
		if again, err := out.AppendBinary(nil); err != nil || !bytes.Equal(again, b) {
			t.Errorf("sample %d %T: round trip % x -> % x (%v)", i, in, b, again, err)
		}
		for n := range len(b) {
			if err := zeroLike(in).UnmarshalBinary(b[:n]); err == nil {
				t.Errorf("sample %d %T: %d of %d bytes accepted", i, in, n, len(b))
			} else {
				requireDecodeError(t, err)
			}
		}
		if err := zeroLike(in).UnmarshalBinary(append(bytes.Clone(b), 'x')); err == nil {
			t.Errorf("sample %d %T: trailing byte accepted", i, in)
		} else {
			requireDecodeError(t, err)
		}
	}
	return encoded
}

// checkLayout pins v's bytes (the diagram above its type): it must encode
// to want exactly.
func checkLayout(t *testing.T, v encoding.BinaryAppender, want []byte) {
	t.Helper()
	b, err := v.AppendBinary(nil)
	if err != nil {
		t.Fatalf("%T: %v", v, err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("%T encodes as\n% x\nwant\n% x", v, b, want)
	}
}

// refusal is hostile input a decoder must refuse with a *DecodeError of
// kind.
type refusal struct {
	name string // what is wrong (empty: the bytes name the case)
	into payload
	b    []byte
	kind DecodeErrorKind
}

// checkRefusals: each refusal's bytes are refused by its payload with its
// kind of *DecodeError.
func checkRefusals(t *testing.T, cases []refusal) {
	t.Helper()
	for _, c := range cases {
		name := c.name
		if name == "" {
			name = fmt.Sprintf("%T % x", c.into, c.b)
		}
		err := c.into.UnmarshalBinary(c.b)
		if !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", name, err, c.kind)
			continue
		}
		requireDecodeError(t, err)
	}
}

// checkEncodeRefused: each value is refused by its encoder with an
// *EncodeError (the encoders refuse what the decoders would).
func checkEncodeRefused(t *testing.T, values ...encoding.BinaryAppender) {
	t.Helper()
	for _, v := range values {
		var ee *EncodeError
		if _, err := v.AppendBinary(nil); !errors.As(err, &ee) {
			t.Errorf("%+v encoded: %v", v, err)
		}
	}
}

// fuzzDecoders seeds f with the samples' encodings and the extra seeds,
// then checks that any bytes either decode into each of the types (zero
// payloads, given as pointers) and re-encode byte for byte, or are refused
// with a *DecodeError.
func fuzzDecoders[P payload](f *testing.F, samples []P, extra [][]byte, types ...payload) {
	for i, s := range samples {
		b, err := s.AppendBinary(nil)
		if err != nil {
			f.Fatalf("sample %d %T: %v", i, s, err)
		}
		f.Add(b)
	}
	for _, b := range extra {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, typ := range types {
			p := zeroLike(typ)
			if err := p.UnmarshalBinary(b); err != nil {
				requireDecodeError(t, err)
				continue
			}
			out, err := p.AppendBinary(nil)
			if err != nil {
				t.Fatalf("%T: decoded but does not encode: %v", p, err)
			}
			if !bytes.Equal(out, b) {
				t.Fatalf("%T: round trip % x -> % x", p, b, out)
			}
		}
	})
}
