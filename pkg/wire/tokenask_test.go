package wire

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func tokenAskSamples() []payload {
	sync := CentralSync{Incarnation: 5, Stamp: 9, Echo: 8, MaxSeq: 12, SupportAgeMS: 1500, Entries: []CentralSyncEntry{
		{Name: "counter", Held: true, LeaseMS: 3000, LeftMS: 1200, Seq: 10, Fence: 3<<40 | 4},
		{Name: "db", Mode: CentralShared, LeaseMS: 1000, Seq: 11},
		{Name: "counter", LeaseMS: 1000, Seq: 12},
	}}
	return []payload{
		&TokenAskRequest{Vector: vectorBlock(1, 1<<32|3, 2, 2<<32|7), CentralRequest: CentralRequest{Name: "counter", Incarnation: 2, Seq: 7, Stamp: 41, LeaseMS: 3000}},
		&TokenAskRequest{Vector: vectorBlock(), CentralRequest: CentralRequest{Name: "a", Incarnation: 1, Seq: 1}},
		&TokenAskSync{CentralSync: CentralSync{Incarnation: 1, Stamp: 3, Echo: 2}},
		&TokenAskSync{Vectors: []TokenAskVector{{Seq: 11, Vector: vectorBlock(3, 1<<32|1, 5, 5<<32|11)}, {Seq: 12, Vector: vectorBlock(5, 5<<32|12)}}, CentralSync: sync},
	}
}

// TestTokenAskRoundTrips: every payload re-encodes what it decodes; every
// truncation and any trailing byte is a *DecodeError.
func TestTokenAskRoundTrips(t *testing.T) {
	checkRoundTrips(t, tokenAskSamples())
}

// TestTokenAskLayout pins the byte layout of a request (the diagram above
// TokenAskRequest): the vector block, then the central request.
func TestTokenAskLayout(t *testing.T) {
	checkLayout(t, TokenAskRequest{Vector: vectorBlock(0x0a0b0c0d, 0x0102030405060708),
		CentralRequest: CentralRequest{Name: "z", Incarnation: 1, Seq: 2, Stamp: 3, LeaseMS: 4}},
		[]byte{0, 1, 0x0a, 0x0b, 0x0c, 0x0d, 1, 2, 3, 4, 5, 6, 7, 8,
			1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 'z'})
	checkLayout(t, TokenAskSync{Vectors: []TokenAskVector{{Seq: 1, Vector: vectorBlock()}},
		CentralSync: CentralSync{MaxSeq: 1, Entries: []CentralSyncEntry{{Name: "z", Seq: 1}}}},
		append([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0}, mustEncode(t, CentralSync{MaxSeq: 1, Entries: []CentralSyncEntry{{Name: "z", Seq: 1}}})...))
}

func mustEncode(t *testing.T, p interface{ AppendBinary([]byte) ([]byte, error) }) []byte {
	t.Helper()
	b, err := p.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTokenAskRejects: what an attacker can put in a field the format
// does not allow is refused on both sides, as a typed error, before
// anything is allocated for an absurd count.
func TestTokenAskRejects(t *testing.T) {
	held := CentralSync{MaxSeq: 2, Entries: []CentralSyncEntry{{Name: "a", Seq: 1, Held: true, Fence: 1, LeftMS: 1}, {Name: "a", Seq: 2}}}
	checkEncodeRefused(t,
		&TokenAskRequest{Vector: vectorBlock(2, 1, 1, 1), CentralRequest: CentralRequest{Name: "a", Seq: 1}},
		&TokenAskRequest{Vector: vectorBlock(1, 0), CentralRequest: CentralRequest{Name: "a", Seq: 1}},
		&TokenAskRequest{Vector: vectorBlock(), CentralRequest: CentralRequest{Name: "a"}},
		&TokenAskSync{Vectors: []TokenAskVector{{Seq: 1, Vector: vectorBlock()}}, CentralSync: held},
		&TokenAskSync{Vectors: []TokenAskVector{{Seq: 3, Vector: vectorBlock()}}, CentralSync: held},
		&TokenAskSync{Vectors: []TokenAskVector{{Seq: 2, Vector: vectorBlock()}, {Seq: 2, Vector: vectorBlock()}}, CentralSync: held},
		&TokenAskSync{Vectors: make([]TokenAskVector, MaxSyncEntries+1), CentralSync: held},
	)
	req := mustEncode(t, TokenAskRequest{Vector: vectorBlock(1, 5), CentralRequest: CentralRequest{Name: "ab", Incarnation: 1, Seq: 1}})
	sync := mustEncode(t, TokenAskSync{Vectors: []TokenAskVector{{Seq: 2, Vector: vectorBlock(1, 5)}}, CentralSync: held})
	mutate := func(b []byte, i int, v byte) []byte { b = bytes.Clone(b); b[i] = v; return b }
	absurd := bytes.Clone(sync)
	binary.BigEndian.PutUint16(absurd, 0xffff)
	hugeVector := bytes.Clone(req)
	binary.BigEndian.PutUint16(hugeVector, TokenAskMaxVector+1)
	checkRefusals(t, []refusal{
		{"vector counter 0", new(TokenAskRequest), mutate(req, 13, 0), DecodeBadField},
		{"vector past the end", new(TokenAskRequest), mutate(req, 1, 9), DecodeTruncated},
		{"vector oversized", new(TokenAskRequest), hugeVector, DecodeOversized},
		{"request mode", new(TokenAskRequest), mutate(req, 15, 2), DecodeBadField},
		{"absurd count", new(TokenAskSync), absurd, DecodeOversized},
		{"vector seq 0", new(TokenAskSync), mutate(sync, 9, 0), DecodeBadField},
		{"vector of a held entry", new(TokenAskSync), mutate(sync, 9, 1), DecodeBadField},
		{"vector of no entry", new(TokenAskSync), mutate(sync, 9, 7), DecodeBadField},
		{"more vectors than bytes", new(TokenAskSync), mutate(sync, 1, 0xff), DecodeTruncated},
	})
}

func FuzzTokenAsk(f *testing.F) {
	fuzzDecoders(f, tokenAskSamples(), nil, new(TokenAskRequest), new(TokenAskSync))
}
