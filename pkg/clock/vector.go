package clock

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Vector is a vector clock (Mattern 1989, Fidge 1991) over a cluster's
// member IDs: V[i] counts the events of member i that the holder knows of.
// Unlike a Lamport clock it captures happens-before exactly:
//
//	a -> b  iff  V(a) < V(b)     (every entry <=, at least one <)
//	a || b  iff  neither V(a) <= V(b) nor V(b) <= V(a)
//
// The rules, as in the course notes (member i):
//
//	internal event   V[i]++                             Tick(i)
//	send m           V[i]++, stamp m with a copy of V   Tick(i), Clone
//	receive m (t)    V[k] = max(V[k], t[k]) for all k,  Receive(i, t)
//	                 then V[i]++
//
// (The notes' slide on sending says V_i[j], the receiver's entry, is
// incremented; every other source, and the notes' own definition of V_i[i]
// as the count of p_i's events, make it the sender's own entry, V_i[i].)
//
// Entries are kept sorted by ID and absent entries are zero, so a vector
// costs nothing for members it has never heard of and has one canonical
// form (and encoding). The zero value is the all-zero vector.
//
// A Vector holds a slice: plain assignment shares it. Use Clone for a copy
// that later Ticks must not change (a stamp put on a message). No method
// keeps a reference to another vector's storage. A Vector is not safe for
// concurrent use.
type Vector struct {
	e []vectorEntry // sorted by id, no zero counters
}

type vectorEntry struct {
	id uint32
	n  uint64
}

// VectorOf builds a vector from a map of member ID to counter (zero
// counters are dropped). Handy in tests and examples.
func VectorOf(m map[uint32]uint64) Vector {
	var v Vector
	for id, n := range m {
		v.Set(id, n)
	}
	return v
}

// find returns the index of id's entry, or where it would be inserted.
func (v *Vector) find(id uint32) (int, bool) {
	lo, hi := 0, len(v.e)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if v.e[m].id < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(v.e) && v.e[lo].id == id
}

// Get returns member id's counter (0 if absent).
func (v Vector) Get(id uint32) uint64 {
	if i, ok := v.find(id); ok {
		return v.e[i].n
	}
	return 0
}

// Set sets member id's counter; 0 removes the entry.
func (v *Vector) Set(id uint32, n uint64) {
	i, ok := v.find(id)
	switch {
	case ok && n == 0:
		v.e = append(v.e[:i], v.e[i+1:]...)
	case ok:
		v.e[i].n = n
	case n != 0:
		v.e = append(v.e, vectorEntry{})
		copy(v.e[i+1:], v.e[i:])
		v.e[i] = vectorEntry{id: id, n: n}
	}
}

// Len returns the number of non-zero entries.
func (v Vector) Len() int { return len(v.e) }

// IDs returns the members with a non-zero entry, ascending.
func (v Vector) IDs() []uint32 {
	ids := make([]uint32, len(v.e))
	for i, e := range v.e {
		ids[i] = e.id
	}
	return ids
}

// Clone returns a copy that shares no storage with v.
func (v Vector) Clone() Vector {
	if len(v.e) == 0 {
		return Vector{}
	}
	return Vector{e: append([]vectorEntry(nil), v.e...)}
}

// Tick records an event of member self (V[self]++) and returns the new
// entry. The entry saturates at math.MaxUint64.
func (v *Vector) Tick(self uint32) uint64 {
	n := satAdd(v.Get(self), 1)
	v.Set(self, n)
	return n
}

// Merge raises every entry to at least other's (element-wise max), without
// counting an event.
func (v *Vector) Merge(other Vector) {
	if len(other.e) == 0 {
		return
	}
	out := make([]vectorEntry, 0, len(v.e)+len(other.e))
	i, j := 0, 0
	for i < len(v.e) || j < len(other.e) {
		switch {
		case j == len(other.e) || (i < len(v.e) && v.e[i].id < other.e[j].id):
			out = append(out, v.e[i])
			i++
		case i == len(v.e) || other.e[j].id < v.e[i].id:
			out = append(out, other.e[j])
			j++
		default:
			out = append(out, vectorEntry{id: v.e[i].id, n: max(v.e[i].n, other.e[j].n)})
			i++
			j++
		}
	}
	v.e = out
}

// Receive records member self's receipt of a message stamped other: Merge,
// then Tick(self). It returns self's new entry.
func (v *Vector) Receive(self uint32, other Vector) uint64 {
	v.Merge(other)
	return v.Tick(self)
}

// Ordering is how two vector stamps relate.
type Ordering int8

const (
	// Equal: the same stamp (the same event, or no event between them).
	Equal Ordering = iota
	// Before: a happened before b.
	Before
	// After: b happened before a.
	After
	// Concurrent: neither happened before the other.
	Concurrent
)

func (o Ordering) String() string {
	switch o {
	case Equal:
		return "equal"
	case Before:
		return "before"
	case After:
		return "after"
	case Concurrent:
		return "concurrent"
	}
	return "ordering(" + strconv.Itoa(int(o)) + ")"
}

// Compare returns how a relates to b: Before if a < b (a happened before
// b), After if b < a, Equal, or Concurrent.
func Compare(a, b Vector) Ordering {
	less, greater := false, false // some entry of a is < / > b's
	i, j := 0, 0
	for i < len(a.e) || j < len(b.e) {
		switch {
		case j == len(b.e) || (i < len(a.e) && a.e[i].id < b.e[j].id):
			greater = true // a has an entry b lacks (b's is 0)
			i++
		case i == len(a.e) || b.e[j].id < a.e[i].id:
			less = true
			j++
		default:
			if a.e[i].n < b.e[j].n {
				less = true
			} else if a.e[i].n > b.e[j].n {
				greater = true
			}
			i++
			j++
		}
		if less && greater {
			return Concurrent
		}
	}
	switch {
	case less:
		return Before
	case greater:
		return After
	}
	return Equal
}

// String formats v as {id:n id:n ...}, ascending IDs.
func (v Vector) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, e := range v.e {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%d", e.id, e.n)
	}
	b.WriteByte('}')
	return b.String()
}

// Vector wire encoding, all integers big-endian. Entries are in strictly
// ascending ID order and no counter is zero, so every vector has exactly
// one encoding and decode-then-encode round-trips.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          Count (N)            |     entry 0 ...               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
//
//	entry (12 bytes), at 2 + 12*k:
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                           Member ID                           |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                                                               |
//	+                        Counter (uint64)                       +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
const (
	vecCountOff    = 0
	vecHeaderLen   = 2
	vecEntryIDOff  = 0
	vecEntryCtrOff = 4
	vecEntryLen    = 12

	// MaxVectorEntries bounds a decoded vector: more members than any
	// synclab cluster has, few enough that a hostile count cannot make a
	// decoder allocate much.
	MaxVectorEntries = 1024
)

// Errors a vector decode wraps in a *VectorDecodeError.
var (
	ErrVectorLength   = errors.New("length does not match the entry count")
	ErrVectorTooLong  = errors.New("more entries than MaxVectorEntries")
	ErrVectorUnsorted = errors.New("member IDs not strictly ascending")
	ErrVectorZero     = errors.New("zero counter (absent entries are omitted)")
)

// VectorDecodeError says why and where an encoded vector is malformed.
type VectorDecodeError struct {
	Offset int   // byte offset of the offending field
	Err    error // one of the ErrVector* sentinels
}

func (e *VectorDecodeError) Error() string {
	return fmt.Sprintf("clock: decoding vector at byte %d: %v", e.Offset, e.Err)
}

func (e *VectorDecodeError) Unwrap() error { return e.Err }

// EncodedLen returns the size of v's encoding in bytes.
func (v Vector) EncodedLen() int { return vecHeaderLen + vecEntryLen*len(v.e) }

// AppendBinary appends v's encoding to b (encoding.BinaryAppender). It fails
// only for a vector of more than MaxVectorEntries entries.
func (v Vector) AppendBinary(b []byte) ([]byte, error) {
	if len(v.e) > MaxVectorEntries {
		return b, fmt.Errorf("clock: encoding a vector of %d entries: %w", len(v.e), ErrVectorTooLong)
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(v.e)))
	for _, e := range v.e {
		b = binary.BigEndian.AppendUint32(b, e.id)
		b = binary.BigEndian.AppendUint64(b, e.n)
	}
	return b, nil
}

// MarshalBinary returns v's encoding (encoding.BinaryMarshaler).
func (v Vector) MarshalBinary() ([]byte, error) {
	return v.AppendBinary(make([]byte, 0, v.EncodedLen()))
}

// UnmarshalBinary decodes exactly one vector occupying all of b, reusing
// v's storage (no allocation when it is large enough). On error v is
// left empty.
func (v *Vector) UnmarshalBinary(b []byte) error {
	v.e = v.e[:0]
	if len(b) < vecHeaderLen {
		return &VectorDecodeError{Offset: len(b), Err: ErrVectorLength}
	}
	n := int(binary.BigEndian.Uint16(b[vecCountOff:]))
	if n > MaxVectorEntries {
		return &VectorDecodeError{Offset: vecCountOff, Err: ErrVectorTooLong}
	}
	if len(b) != vecHeaderLen+vecEntryLen*n {
		return &VectorDecodeError{Offset: vecCountOff, Err: ErrVectorLength}
	}
	if cap(v.e) < n {
		v.e = make([]vectorEntry, 0, n)
	}
	var prev uint32
	for k := range n {
		off := vecHeaderLen + vecEntryLen*k
		id := binary.BigEndian.Uint32(b[off+vecEntryIDOff:])
		ctr := binary.BigEndian.Uint64(b[off+vecEntryCtrOff:])
		if k > 0 && id <= prev {
			v.e = v.e[:0]
			return &VectorDecodeError{Offset: off + vecEntryIDOff, Err: ErrVectorUnsorted}
		}
		if ctr == 0 {
			v.e = v.e[:0]
			return &VectorDecodeError{Offset: off + vecEntryCtrOff, Err: ErrVectorZero}
		}
		v.e = append(v.e, vectorEntry{id: id, n: ctr})
		prev = id
	}
	return nil
}
