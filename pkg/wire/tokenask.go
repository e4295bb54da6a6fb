package wire

import (
	"bytes"
	"encoding/binary"
)

// Payloads of the token-asking central token (pkg/mutex/central, variant
// TokenAsk; mutexd --algorithm tokenask): the central coordinator's
// frames, with the vector timestamps the notes' centralised token
// algorithm adds. A member stamps each request with its vector clock
// (TokenAskRequest: a CentralRequest and the vector), and re-announces
// the vector of every request still waiting in each sync
// (TokenAskSync: a CentralSync and those vectors), so that a new
// coordinator orders the requests it rebuilds its queue from as the old
// one did. Grants, releases, renewals, refusals and beats are the central
// coordinator's own kinds.
//
// A vector is encoded as pkg/clock.Vector encodes it (the frame's vector
// block): a count, then (member ID, counter) pairs in ascending ID order,
// no zero counter. In a token-asking vector, member j's counter is
// Incarnation<<32 | Seq of the latest request of j the stamp depends on
// (or, for the requester's own entry, the request itself). Decoders check
// structure (counts, lengths, order, that a vector's seq names a waiting
// entry of the sync); the core checks that the IDs are members.

// TokenAskMaxVector bounds the entries of a token-asking vector: one per
// member, and a central cluster has at most 256 (central.MaxMembers).
const TokenAskMaxVector = 256

// TokenAskRequest is the payload of KindTokenAskRequest.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|       Vector Count n          |  Vector entries (12 bytes     |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+  each: member ID, counter)    +
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|       CentralRequest (24 bytes and the name), to the end      | 2+12n
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type TokenAskRequest struct {
	// Vector is the request's vector timestamp, encoded (pkg/clock
	// Vector's encoding), at most TokenAskMaxVector entries; nil encodes
	// as the empty vector.
	Vector []byte
	CentralRequest
}

// TokenAskVector is the vector of one waiting request of a TokenAskSync.
type TokenAskVector struct {
	Seq    uint64
	Vector []byte
}

// TokenAskSync is the payload of KindTokenAskSync.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|       Count m                 |  m times: Seq (64 bits), then |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+  that request's vector        +
//	/                                  (2 + 12 x its count bytes)   /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|       CentralSync (28 bytes and its entries), to the end      |
//	/                                                               /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Seqs are strictly ascending, and each names a waiting entry of the
// sync (a held request needs no vector: it has been served).
type TokenAskSync struct {
	Vectors []TokenAskVector
	CentralSync
}

const (
	tokenAskRequestWhat = "tokenask request"
	tokenAskSyncWhat    = "tokenask sync"
)

// vectorLen is the length of the vector block at the start of b, checked.
func vectorLen(what string, b []byte) (int, error) {
	if len(b) < vectorHeaderLen {
		return 0, decodeErr(what, DecodeTruncated, "vector", len(b), vectorHeaderLen)
	}
	n := int(binary.BigEndian.Uint16(b))
	if n > TokenAskMaxVector {
		return 0, decodeErr(what, DecodeOversized, "vector count", n, TokenAskMaxVector)
	}
	l := vectorHeaderLen + vectorEntryLen*n
	if len(b) < l {
		return 0, decodeErr(what, DecodeTruncated, "vector", len(b), l)
	}
	return l, checkVectorOf(what, b[:l], TokenAskMaxVector)
}

// encodeVector appends vector v (nil: the empty vector).
func encodeVector(what string, b, v []byte) ([]byte, error) {
	if len(v) == 0 {
		return append(b, 0, 0), nil
	}
	if err := checkVectorOf(what, v, TokenAskMaxVector); err != nil {
		return b, &EncodeError{What: what, Field: "vector", Value: uint64(len(v)), Why: err.Error()}
	}
	return append(b, v...), nil
}

// AppendBinary appends the encoding of r to b. It fails on a field the
// decoder would refuse: a caller's bug.
func (r TokenAskRequest) AppendBinary(b []byte) ([]byte, error) {
	out, err := encodeVector(tokenAskRequestWhat, b, r.Vector)
	if err != nil {
		return b, err
	}
	if out, err = r.CentralRequest.AppendBinary(out); err != nil {
		return b, err
	}
	return out, nil
}

// UnmarshalBinary decodes a TokenAskRequest.
func (r *TokenAskRequest) UnmarshalBinary(b []byte) error {
	l, err := vectorLen(tokenAskRequestWhat, b)
	if err != nil {
		return err
	}
	var c CentralRequest
	if err := c.UnmarshalBinary(b[l:]); err != nil {
		return err
	}
	*r = TokenAskRequest{Vector: bytes.Clone(b[:l]), CentralRequest: c}
	return nil
}

// waitingSeqs is the seqs of s's waiting entries.
func waitingSeqs(s CentralSync) map[uint64]bool {
	w := make(map[uint64]bool, len(s.Entries))
	for _, e := range s.Entries {
		if !e.Held {
			w[e.Seq] = true
		}
	}
	return w
}

// AppendBinary appends the encoding of s to b. It fails on a field the
// decoder would refuse: a caller's bug.
func (s TokenAskSync) AppendBinary(b []byte) ([]byte, error) {
	if len(s.Vectors) > MaxSyncEntries {
		return b, &EncodeError{What: tokenAskSyncWhat, Field: "vector count", Value: uint64(len(s.Vectors)), Why: "exceeds MaxSyncEntries"}
	}
	waiting := waitingSeqs(s.CentralSync)
	out := binary.BigEndian.AppendUint16(b, uint16(len(s.Vectors)))
	var prev uint64
	for i, v := range s.Vectors {
		if (i > 0 && v.Seq <= prev) || !waiting[v.Seq] {
			return b, &EncodeError{What: tokenAskSyncWhat, Field: "vector seq", Value: v.Seq, Why: "not ascending, or not a waiting entry of the sync"}
		}
		prev = v.Seq
		out = binary.BigEndian.AppendUint64(out, v.Seq)
		var err error
		if out, err = encodeVector(tokenAskSyncWhat, out, v.Vector); err != nil {
			return b, err
		}
	}
	out, err := s.CentralSync.AppendBinary(out)
	if err != nil {
		return b, err
	}
	return out, nil
}

// UnmarshalBinary decodes a TokenAskSync.
func (s *TokenAskSync) UnmarshalBinary(b []byte) error {
	if len(b) < 2 {
		return decodeErr(tokenAskSyncWhat, DecodeTruncated, "", len(b), 2)
	}
	m := int(binary.BigEndian.Uint16(b))
	if m > MaxSyncEntries {
		return decodeErr(tokenAskSyncWhat, DecodeOversized, "vector count", m, MaxSyncEntries)
	}
	// Each takes at least its seq and an empty vector: a count the input
	// cannot hold is refused before anything is allocated.
	if least := 2 + m*(8+vectorHeaderLen); len(b) < least {
		return decodeErr(tokenAskSyncWhat, DecodeTruncated, "vectors", len(b), least)
	}
	var vs []TokenAskVector
	if m > 0 {
		vs = make([]TokenAskVector, 0, m)
	}
	rest := b[2:]
	for range m {
		if len(rest) < 8 {
			return decodeErr(tokenAskSyncWhat, DecodeTruncated, "vector seq", len(rest), 8)
		}
		seq := binary.BigEndian.Uint64(rest)
		if seq == 0 || (len(vs) > 0 && seq <= vs[len(vs)-1].Seq) {
			return decodeErr(tokenAskSyncWhat, DecodeBadField, "vector seq not ascending", len(vs), -1)
		}
		l, err := vectorLen(tokenAskSyncWhat, rest[8:])
		if err != nil {
			return err
		}
		vs = append(vs, TokenAskVector{Seq: seq, Vector: bytes.Clone(rest[8 : 8+l])})
		rest = rest[8+l:]
	}
	var c CentralSync
	if err := c.UnmarshalBinary(rest); err != nil {
		return err
	}
	waiting := waitingSeqs(c)
	for i, v := range vs {
		if !waiting[v.Seq] {
			return decodeErr(tokenAskSyncWhat, DecodeBadField, "vector of no waiting entry", i, -1)
		}
	}
	*s = TokenAskSync{Vectors: vs, CentralSync: c}
	return nil
}
