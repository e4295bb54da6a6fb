package wire

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func testStatusReport() *StatusReport {
	offset := int64(-1234)
	return &StatusReport{
		Flags:          StatusSynchronized | StatusWallClock | StatusAgreement,
		Standing:       2,
		QueryID:        0x0102030405060708,
		Incarnation:    7,
		Uptime:         3600,
		MaxError:       1_500_000,
		Origin:         NTPTime(0xeb00000080000000),
		Received:       NTPTime(0xeb00000080001000),
		Digest:         [ConfigDigestLen]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		KeyFingerprint: KeyFingerprint([]byte("0123456789abcdef")),
		Version:        "0.1.0-dev",
		Commit:         "0123456789abcdef0123456789abcdef01234567-dirty",
		Algorithm:      "bully",
		Role:           "follower",
		Facts: []StatusFact{
			{Tag: FactLeader, Value: 2},
			{Tag: FactTerm, Value: 3<<32 | 2},
			{Tag: FactOffset, Value: uint64(offset)},
			{Tag: 200, Value: 9}, // a later build's fact: kept
		},
	}
}

func TestStatusQueryRoundTrip(t *testing.T) {
	b, err := StatusQuery{ID: 0xfeedface}.AppendBinary([]byte{0xaa})
	if err != nil || len(b) != 1+StatusQueryLen || b[0] != 0xaa {
		t.Fatalf("encoded %d bytes, %v", len(b), err)
	}
	var q StatusQuery
	if err := q.UnmarshalBinary(b[1:]); err != nil || q.ID != 0xfeedface {
		t.Fatalf("decoded %+v, %v", q, err)
	}
	for _, c := range []struct {
		name string
		mut  func([]byte) []byte
		kind DecodeErrorKind
	}{
		{"short", func(b []byte) []byte { return b[:StatusQueryLen-1] }, DecodeTruncated},
		{"long", func(b []byte) []byte { return append(b, 0) }, DecodeBadLength},
		{"version", func(b []byte) []byte { b[0] = 2; return b }, DecodeBadVersion},
		{"flags", func(b []byte) []byte { b[1] = 1; return b }, DecodeBadFlags},
		{"reserved", func(b []byte) []byte { b[3] = 1; return b }, DecodeBadReserved},
		{"padding", func(b []byte) []byte { b[StatusQueryLen-1] = 1; return b }, DecodeBadReserved},
	} {
		bad := c.mut(bytes.Clone(b[1:]))
		if err := q.UnmarshalBinary(bad); !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.name, err, c.kind)
		}
	}
}

func TestStatusReportRoundTrip(t *testing.T) {
	r := testStatusReport()
	b, err := r.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got StatusReport
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if got.QueryID != r.QueryID || got.Standing != 2 || got.Commit != r.Commit || got.Origin != r.Origin || got.Digest != r.Digest ||
		len(got.Facts) != 4 || got.Facts[3].Tag != 200 || got.Facts[3].Tag.String() != "fact_200" {
		t.Fatalf("decoded %+v", got)
	}
	if v, ok := got.Fact(FactOffset); !ok || int64(v) != -1234 || !FactOffset.Signed() || FactTerm.Signed() {
		t.Fatalf("offset fact %d %v", int64(v), ok)
	}
	again, _ := got.AppendBinary(nil)
	if !bytes.Equal(again, b) {
		t.Fatal("re-encoding differs")
	}
}

// TestStatusReportNoAmplifier: the longest answer is less than twice the
// query, as payloads and as frames (the same header and trailer).
func TestStatusReportNoAmplifier(t *testing.T) {
	r := testStatusReport()
	long := strings.Repeat("é", MaxStatusString/2)
	r.Version, r.Commit, r.Algorithm, r.Role = long, long, long, long
	r.Facts = nil
	for i := range MaxStatusFacts {
		r.Facts = append(r.Facts, StatusFact{Tag: StatusFactTag(i + 1), Value: ^uint64(0)})
	}
	b, err := r.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != MaxStatusReportLen {
		t.Fatalf("the longest report is %d bytes, MaxStatusReportLen %d", len(b), MaxStatusReportLen)
	}
	overhead := HeaderLen + AuthTrailerLen
	if 2*StatusQueryLen <= MaxStatusReportLen || 2*(StatusQueryLen+overhead) <= MaxStatusReportLen+overhead {
		t.Fatalf("an answer of %d bytes to a query of %d", MaxStatusReportLen, StatusQueryLen)
	}
	var got StatusReport
	if err := got.UnmarshalBinary(append(b, 0)); !errors.Is(err, DecodeOversized) {
		t.Fatalf("one byte more: %v", err)
	}
}

func TestStatusReportRefuses(t *testing.T) {
	good, _ := testStatusReport().AppendBinary(nil)
	for _, c := range []struct {
		name string
		mut  func([]byte) []byte
		kind DecodeErrorKind
	}{
		{"empty", func([]byte) []byte { return nil }, DecodeTruncated},
		{"version", func(b []byte) []byte { b[0] = 9; return b }, DecodeBadVersion},
		{"flags", func(b []byte) []byte { b[1] |= 0x80; return b }, DecodeBadFlags},
		{"standing", func(b []byte) []byte { b[2] = 3; return b }, DecodeBadField},
		{"fact count", func(b []byte) []byte { b[3] = MaxStatusFacts + 1; return b }, DecodeOversized},
		{"facts cut", func(b []byte) []byte { return b[:len(b)-1] }, DecodeTruncated},
		{"trailing", func(b []byte) []byte { b[3]--; return b }, DecodeBadLength},
		{"string cut", func(b []byte) []byte { return b[:statusReportFixedLen+3] }, DecodeTruncated},
		{"control char", func(b []byte) []byte { b[statusReportFixedLen+1] = '\x1b'; return b }, DecodeBadField},
		{"string long", func(b []byte) []byte {
			return append(append(b[:statusReportFixedLen:statusReportFixedLen], MaxStatusString+1), bytes.Repeat([]byte("a"), 200)...)
		}, DecodeOversized},
		{"tags order", func(b []byte) []byte { b[len(b)-statusFactLen] = 1; return b }, DecodeBadField},
	} {
		var r StatusReport
		if err := r.UnmarshalBinary(c.mut(bytes.Clone(good))); !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.name, err, c.kind)
		}
	}
	for _, mut := range []func(*StatusReport){
		func(r *StatusReport) { r.Flags = 0x10 },
		func(r *StatusReport) { r.Standing = 3 },
		func(r *StatusReport) { r.Role = strings.Repeat("x", MaxStatusString+1) },
		func(r *StatusReport) { r.Version = "bad\x1b[1m" },
		func(r *StatusReport) { r.Facts = []StatusFact{{Tag: 2}, {Tag: 1}} },
		func(r *StatusReport) { r.Facts = []StatusFact{{Tag: 0}} },
		func(r *StatusReport) { r.Facts = make([]StatusFact, MaxStatusFacts+1) },
	} {
		r := testStatusReport()
		mut(r)
		var ee *EncodeError
		if _, err := r.AppendBinary(nil); !errors.As(err, &ee) {
			t.Errorf("%+v encoded: %v", r, err)
		}
	}
}
