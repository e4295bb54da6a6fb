package tokenring

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"

	"github.com/synclab/synclab/pkg/wire"
)

// The durable state: for every lock, the highest generation this member
// promised or saw. A member that forgot a promise could take an old token
// after a newer one was created (two holders), and a proposer that forgot
// its own could create a generation twice. Fences need no disk: the token
// carries them, and a new generation's round puts its fences above every
// older one.
//
//	+---------+-----------+--------------------------------------+--------+
//	| Version | Count     | Count x (Name Len, Name, Promised)   | CRC-32C|
//	| 1 byte  | 2 bytes   | 1 byte + 1..64 bytes + 8 bytes each  | 4 bytes|
//	+---------+-----------+--------------------------------------+--------+
//
// Entries are sorted by name, so the same table always has the same bytes.
const stateVersion = 1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrState: the persisted state is corrupt.
var ErrState = errors.New("tokenring: corrupt state")

func encodeState(locks map[string]*lock) []byte {
	names := slices.Sorted(maps.Keys(locks))
	b := []byte{stateVersion}
	n := 0
	b = binary.BigEndian.AppendUint16(b, 0)
	for _, name := range names {
		l := locks[name]
		if l.promised == 0 {
			continue // nothing to remember
		}
		b = append(b, byte(len(name)))
		b = append(b, name...)
		b = binary.BigEndian.AppendUint64(b, l.promised)
		n++
	}
	binary.BigEndian.PutUint16(b[1:], uint16(n))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeState returns the promised generation of every lock.
func decodeState(b []byte) (map[string]uint64, error) {
	out := map[string]uint64{}
	if len(b) == 0 {
		return out, nil
	}
	if len(b) < 7 {
		return nil, fmt.Errorf("%w: %d bytes", ErrState, len(b))
	}
	if b[0] != stateVersion {
		return nil, fmt.Errorf("%w: version %d, this build reads %d", ErrState, b[0], stateVersion)
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return nil, fmt.Errorf("%w: checksum %08x, want %08x", ErrState, got, sum)
	}
	n := int(binary.BigEndian.Uint16(body[1:]))
	rest := body[3:]
	for i := range n {
		if len(rest) < 1 || len(rest) < 1+int(rest[0])+8 {
			return nil, fmt.Errorf("%w: entry %d truncated", ErrState, i)
		}
		name := string(rest[1 : 1+int(rest[0])])
		if !wire.ValidLockName(name) {
			return nil, fmt.Errorf("%w: entry %d: bad lock name %q", ErrState, i, name)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%w: lock %q twice", ErrState, name)
		}
		out[name] = binary.BigEndian.Uint64(rest[1+len(name):])
		rest = rest[1+len(name)+8:]
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrState, len(rest))
	}
	return out, nil
}
