package bully

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// The durable state is the highest term this node has seen (and therefore
// above every term it ever claimed). The driver writes it atomically before
// sending the messages that go with it (core.Ready.State), so a node that
// crashes and restarts never claims a term twice and never goes back to an
// older term.
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
const (
	stateVersion = 1

	stateVersionOff = 0
	stateTermOff    = 1
	stateCRCOff     = 9
	stateLen        = 13
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

// Restore decodes the durable state a previous run left in core.Ready.State
// and returns its term (New does it with core.Env.State). Empty state (a
// node's first start) restores term 0.
func Restore(state []byte) (uint64, error) {
	if len(state) == 0 {
		return 0, nil
	}
	if len(state) != stateLen {
		return 0, &StateError{Reason: fmt.Sprintf("length %d, want %d", len(state), stateLen)}
	}
	if v := state[stateVersionOff]; v != stateVersion {
		return 0, &StateError{Reason: fmt.Sprintf("version %d, want %d", v, stateVersion)}
	}
	want := binary.BigEndian.Uint32(state[stateCRCOff:])
	if got := crc32.Checksum(state[:stateCRCOff], castagnoli); got != want {
		return 0, &StateError{Reason: fmt.Sprintf("checksum %08x, want %08x", got, want)}
	}
	return binary.BigEndian.Uint64(state[stateTermOff:]), nil
}
