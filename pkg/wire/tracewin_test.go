package wire

import (
	"bytes"
	"errors"
	"testing"
)

func TestTraceQueryRoundTrip(t *testing.T) {
	q := TraceQuery{ID: 0xfeedface, Window: 7, After: 12345, From: NTPTime(1 << 40)}
	b, err := q.AppendBinary([]byte{0xaa})
	if err != nil || len(b) != 1+TraceQueryLen || b[0] != 0xaa {
		t.Fatalf("%d bytes, %v", len(b), err)
	}
	var got TraceQuery
	if err := got.UnmarshalBinary(b[1:]); err != nil || got != q {
		t.Fatalf("%+v, %v", got, err)
	}
	for _, c := range []struct {
		name string
		bad  func([]byte) []byte
		want DecodeErrorKind
	}{
		{"short", func(b []byte) []byte { return b[:TraceQueryLen-1] }, DecodeTruncated},
		{"long", func(b []byte) []byte { return append(b, 0) }, DecodeBadLength},
		{"version", func(b []byte) []byte { b[0] = 2; return b }, DecodeBadVersion},
		{"flags", func(b []byte) []byte { b[1] = 1; return b }, DecodeBadFlags},
		{"reserved", func(b []byte) []byte { b[3] = 1; return b }, DecodeBadReserved},
		{"padding", func(b []byte) []byte { b[TraceQueryLen-1] = 1; return b }, DecodeBadReserved},
	} {
		if err := got.UnmarshalBinary(c.bad(bytes.Clone(b[1:]))); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

func TestTraceChunkRoundTripAndBounds(t *testing.T) {
	c := TraceChunk{Flags: TraceSimClock | TraceFresh, QueryID: 9, Window: 3, Offset: 100, End: 100 + MaxTraceChunkData + 5,
		Data: bytes.Repeat([]byte{'x'}, MaxTraceChunkData)}
	b, err := c.AppendBinary(nil)
	if err != nil || len(b) != MaxTraceChunkLen {
		t.Fatalf("%d bytes, %v", len(b), err)
	}
	// No answer is twice its query, frame header and MAC included: the
	// exchange amplifies nothing.
	overhead := HeaderLen + AuthTrailerLen
	if 2*TraceQueryLen <= MaxTraceChunkLen || 2*(TraceQueryLen+overhead) <= MaxTraceChunkLen+overhead {
		t.Fatalf("an answer of %d bytes to a query of %d", MaxTraceChunkLen, TraceQueryLen)
	}
	var got TraceChunk
	if err := got.UnmarshalBinary(b); err != nil || got.Offset != c.Offset || got.End != c.End || got.Flags != c.Flags || !bytes.Equal(got.Data, c.Data) {
		t.Fatalf("%+v, %v", got, err)
	}
	for _, bad := range []struct {
		name string
		c    TraceChunk
		want DecodeErrorKind
	}{
		{"oversize", TraceChunk{End: 2000, Data: make([]byte, MaxTraceChunkData+1)}, DecodeOversized},
		{"flags", TraceChunk{Flags: 1 << 7}, DecodeBadFlags},
		{"past end", TraceChunk{Offset: 10, End: 12, Data: []byte("abc")}, DecodeBadField},
		{"offset past end", TraceChunk{Offset: 13, End: 12}, DecodeBadField},
	} {
		if _, err := bad.c.AppendBinary(nil); !errors.Is(err, bad.want) {
			t.Errorf("encoding %s: %v, want %v", bad.name, err, bad.want)
		}
	}
	for _, c := range []struct {
		name string
		bad  func([]byte) []byte
		want DecodeErrorKind
	}{
		{"short", func(b []byte) []byte { return b[:20] }, DecodeTruncated},
		{"data cut", func(b []byte) []byte { return b[:len(b)-1] }, DecodeTruncated},
		{"long", func(b []byte) []byte { return append(b, 0) }, DecodeBadLength},
		{"length over the bound", func(b []byte) []byte { b[2], b[3] = 0xff, 0xff; return b }, DecodeOversized},
		{"version", func(b []byte) []byte { b[0] = 0; return b }, DecodeBadVersion},
		{"flags", func(b []byte) []byte { b[1] = 0x80; return b }, DecodeBadFlags},
		{"end before data", func(b []byte) []byte { b[31] = 0; b[30] = 0; return b }, DecodeBadField},
	} {
		if err := got.UnmarshalBinary(c.bad(bytes.Clone(b))); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
