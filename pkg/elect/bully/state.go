package bully

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// The durable state is the highest term this node has seen (and therefore,
// in the first format, above every term it ever claimed). The driver writes
// it atomically before sending the messages that go with it
// (core.Ready.State), so a node that crashes and restarts never claims a
// term twice and never goes back to an older term. The second format adds
// the reservation (below); the larger of the two bounds every term the
// node may have sent.
//
//	 0               1               2               3
//	 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7
//	+---------------+-----------------------------------------------+
//	|  Version (1)  |                                               |
//	+---------------+                                               +
//	|                          Term (64 bits)                       |
//	+               +-----------------------------------------------+
//	|               |            CRC-32C of bytes 0..8              |
//	+---------------+               +-------------------------------+
//	|                               |
//	+-------------------------------+
//
// The checksum catches a truncated or bit-rotted file: restoring garbage as
// a term could move a node backwards and let it claim a term twice.
//
// The second format (Config.Reserve) adds the reservation: the term this
// node will claim next, made durable with the term it follows, so that
// its claim needs no write when it comes (the claim's own write follows
// its COORDINATOR). It is a term this node owns, above Term, and may have
// been claimed and sent without the file saying so (a crash between the
// COORDINATOR and that write): a restarted node takes the term it follows
// from Term and claims only above the reservation. Reserved 0 is none;
// with none the node writes the first format, which builds before the
// second read as before.
//
//	+-----------+----------------+--------------------+-----------------------+
//	| version 2 | Term (64 bits) | Reserved (64 bits) | CRC-32C of bytes 0..16 |
//	+-----------+----------------+--------------------+-----------------------+
const (
	stateVersion         = 1
	stateVersionReserved = 2

	stateVersionOff = 0
	stateTermOff    = 1
	stateCRCOff     = 9
	stateLen        = 13

	stateReservedOff    = 9
	stateCRCOffReserved = 17
	stateLenReserved    = 21
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendState appends the encoding of term to b.
func appendState(b []byte, term uint64) []byte {
	start := len(b)
	b = append(b, stateVersion)
	b = binary.BigEndian.AppendUint64(b, term)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

// EncodeState is the durable state of a node whose highest term is term,
// as its Ready.State carries it: for a composite core that stored the term
// in a format of its own before (Berkeley's first state format).
func EncodeState(term uint64) []byte { return appendState(nil, term) }

// appendReserved appends the encoding of term and the reservation
// reserved: the second format, or the first without a reservation.
func appendReserved(b []byte, term, reserved uint64) []byte {
	if reserved == 0 {
		return appendState(b, term)
	}
	start := len(b)
	b = append(b, stateVersionReserved)
	b = binary.BigEndian.AppendUint64(b, term)
	b = binary.BigEndian.AppendUint64(b, reserved)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

// EncodeReserved is the second format's state of a node whose highest
// term is term and whose reservation is reserved (0: the first format): a
// state directory bully wrote, as another core that reads it (ring) finds
// it.
func EncodeReserved(term, reserved uint64) []byte { return appendReserved(nil, term, reserved) }

// Restore decodes the durable state a previous run left in core.Ready.State
// and returns its term, the highest the node followed (New does it with
// core.Env.State). Empty state (a node's first start) restores term 0. A
// core that claims terms must honour the reservation too: RestoreReserved.
func Restore(state []byte) (uint64, error) {
	term, _, err := RestoreReserved(state)
	return term, err
}

// RestoreReserved decodes the state in either format: the term and the
// reservation (0 in the first format), a term the node may have claimed:
// it claims only above it. A reservation at or below the term is corrupt
// (the node writes it above).
func RestoreReserved(state []byte) (term, reserved uint64, err error) {
	if len(state) == 0 {
		return 0, 0, nil
	}
	size, crcOff := stateLen, stateCRCOff
	switch v := state[stateVersionOff]; v {
	case stateVersion:
	case stateVersionReserved:
		size, crcOff = stateLenReserved, stateCRCOffReserved
	default:
		return 0, 0, &StateError{Reason: fmt.Sprintf("version %d, want %d or %d (a newer build's state file?)", v, stateVersion, stateVersionReserved)}
	}
	if len(state) != size {
		return 0, 0, &StateError{Reason: fmt.Sprintf("length %d, want %d for version %d", len(state), size, state[stateVersionOff])}
	}
	want := binary.BigEndian.Uint32(state[crcOff:])
	if got := crc32.Checksum(state[:crcOff], castagnoli); got != want {
		return 0, 0, &StateError{Reason: fmt.Sprintf("checksum %08x, want %08x", got, want)}
	}
	term = binary.BigEndian.Uint64(state[stateTermOff:])
	if size == stateLenReserved {
		reserved = binary.BigEndian.Uint64(state[stateReservedOff:])
		if reserved <= term || TermOwner(reserved) == 0 {
			return 0, 0, &StateError{Reason: fmt.Sprintf("reservation %d not above term %d", reserved, term)}
		}
	}
	return term, reserved, nil
}
