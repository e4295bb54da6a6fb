package elect

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/synclab/synclab/pkg/core"
)

// A Word is the durable state of an election that keeps one number (the
// majority election's term, the eventual leader's incarnation, Yo-Yo's
// round), as its Ready.State carries it:
//
//	+-----------+---------------------+------------------------+
//	| version 1 |  value (64 bits BE)  | CRC-32C of bytes 0..8 |
//	+-----------+---------------------+------------------------+
//
// The version byte names the algorithm's format, so that a state file of
// one algorithm is refused by another instead of being misread, and the
// checksum catches a truncated or bit-rotted file.
const WordLen = 13

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodeWord returns the durable state holding v under version.
func EncodeWord(version byte, v uint64) []byte {
	b := make([]byte, 0, WordLen)
	b = append(b, version)
	b = binary.BigEndian.AppendUint64(b, v)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// DecodeWord decodes what EncodeWord wrote under version; empty state (a
// first start) is 0. Anything else is refused with an error wrapping
// core.ErrState that names what, the algorithm.
func DecodeWord(what string, version byte, state []byte) (uint64, error) {
	switch {
	case len(state) == 0:
		return 0, nil
	case len(state) != WordLen:
		return 0, fmt.Errorf("%s: corrupt state: length %d, want %d: %w", what, len(state), WordLen, core.ErrState)
	case state[0] != version:
		return 0, fmt.Errorf("%s: corrupt state: version %d, want %d (another algorithm's state file?): %w", what, state[0], version, core.ErrState)
	}
	if got, want := crc32.Checksum(state[:9], castagnoli), binary.BigEndian.Uint32(state[9:]); got != want {
		return 0, fmt.Errorf("%s: corrupt state: checksum %08x, want %08x: %w", what, got, want, core.ErrState)
	}
	return binary.BigEndian.Uint64(state[1:9]), nil
}
