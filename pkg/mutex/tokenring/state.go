package tokenring

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// The durable state: for every lock, the highest generation this member
// promised or saw, and the table's floor, the promise of every lock not
// listed (see table.go). A member that forgot a promise could take an old
// token after a newer one was created (two holders), and a proposer that
// forgot its own could create a generation twice. Fences need no disk: the
// token carries them, and a new generation's round puts its fences above
// every older one.
//
//	+---------+-----------+--------------------------------------+--------+
//	| Version | Count     | Count x (Name Len, Name, Promised)   | CRC-32C|
//	| 1 byte  | 2 bytes   | 1 byte + 1..64 bytes + 8 bytes each  | 4 bytes|
//	+---------+-----------+--------------------------------------+--------+
//
// Version 2 puts the floor (8 bytes) after the version byte; version 1
// (no floor: 0) is still read. Entries are sorted by name, so the same
// table always has the same bytes; a lock promised no more than the floor
// is not listed.
const (
	stateVersion   = 2
	stateVersionV1 = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrState: the persisted state is corrupt, or holds a generation no
// member could have accepted.
var ErrState = fmt.Errorf("tokenring: %w", core.ErrState)

type savedState struct {
	floor    uint64
	promised map[string]uint64
}

func encodeState(floor uint64, locks map[string]*lock) []byte {
	names := slices.Sorted(maps.Keys(locks))
	b := []byte{stateVersion}
	b = binary.BigEndian.AppendUint64(b, floor)
	n := 0
	at := len(b)
	b = binary.BigEndian.AppendUint16(b, 0)
	for _, name := range names {
		l := locks[name]
		if l.promised <= floor {
			continue // nothing the floor does not say
		}
		b = append(b, byte(len(name)))
		b = append(b, name...)
		b = binary.BigEndian.AppendUint64(b, l.promised)
		n++
	}
	binary.BigEndian.PutUint16(b[at:], uint16(n))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeState returns the floor and the promised generation of every lock.
func decodeState(b []byte) (savedState, error) {
	out := savedState{promised: map[string]uint64{}}
	if len(b) == 0 {
		return out, nil
	}
	if len(b) < 7 {
		return out, fmt.Errorf("%w: %d bytes", ErrState, len(b))
	}
	if b[0] != stateVersion && b[0] != stateVersionV1 {
		return out, fmt.Errorf("%w: version %d, this build reads %d and %d", ErrState, b[0], stateVersionV1, stateVersion)
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return out, fmt.Errorf("%w: checksum %08x, want %08x", ErrState, got, sum)
	}
	rest := body[1:]
	if b[0] == stateVersion {
		if len(rest) < 8+2 {
			return out, fmt.Errorf("%w: %d bytes", ErrState, len(b))
		}
		out.floor = binary.BigEndian.Uint64(rest)
		rest = rest[8:]
	}
	n := int(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	for i := range n {
		if len(rest) < 1 || len(rest) < 1+int(rest[0])+8 {
			return out, fmt.Errorf("%w: entry %d truncated", ErrState, i)
		}
		name := string(rest[1 : 1+int(rest[0])])
		if !wire.ValidLockName(name) {
			return out, fmt.Errorf("%w: entry %d: bad lock name %q", ErrState, i, name)
		}
		if _, dup := out.promised[name]; dup {
			return out, fmt.Errorf("%w: lock %q twice", ErrState, name)
		}
		out.promised[name] = binary.BigEndian.Uint64(rest[1+len(name):])
		rest = rest[1+len(name)+8:]
	}
	if len(rest) != 0 {
		return out, fmt.Errorf("%w: %d trailing bytes", ErrState, len(rest))
	}
	return out, nil
}
