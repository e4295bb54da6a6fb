package permission

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// The durable state: the incarnation (one more at every start and every
// rejoin after a stall) and the floor of the Lamport clock (a value the
// clock has not reached; at start the clock resumes from it).
//
//	+---------+-------------+------------+---------+
//	| Version | Incarnation | Floor      | CRC-32C |
//	| 1 byte  | 4 bytes     | 8 bytes    | 4 bytes |
//	+---------+-------------+------------+---------+
//
// The floor is what keeps fences increasing across restarts: every stamp
// this member sent or saw was below it, so every request it makes after a
// restart is stamped above them, and its fence is above every fence it
// could have known. It is raised in chunks (floorChunk), one write per
// 2^16 Lamport ticks, not one per message. A restart moves the clock up by
// a chunk, which the others take at once (internal/node's LamportBurst
// covers a thousand of them back to back, and LamportRate four a second
// for ever; 2^24 took four, and an eighth of a second each).
const (
	stateVersion = 1
	stateLen     = 1 + 4 + 8 + 4
	// floorChunk is how far above the clock the persisted floor is put;
	// floorSlack how close the clock may come to it before it is raised.
	floorChunk = 1 << 16
	floorSlack = 1 << 12
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrState: the persisted state is corrupt, or absurd.
var ErrState = fmt.Errorf("permission: %w", core.ErrState)

type savedState struct {
	incarnation uint32
	floor       uint64
}

func encodeState(s savedState) []byte {
	b := []byte{stateVersion}
	b = binary.BigEndian.AppendUint32(b, s.incarnation)
	b = binary.BigEndian.AppendUint64(b, s.floor)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeState(b []byte) (savedState, error) {
	if b == nil {
		return savedState{}, nil
	}
	switch {
	case len(b) != stateLen:
		return savedState{}, fmt.Errorf("%w: %d bytes, want %d", ErrState, len(b), stateLen)
	case b[0] != stateVersion:
		return savedState{}, fmt.Errorf("%w: version %d, want %d", ErrState, b[0], stateVersion)
	case crc32.Checksum(b[:stateLen-4], castagnoli) != binary.BigEndian.Uint32(b[stateLen-4:]):
		return savedState{}, fmt.Errorf("%w: checksum mismatch", ErrState)
	}
	s := savedState{incarnation: binary.BigEndian.Uint32(b[1:]), floor: binary.BigEndian.Uint64(b[5:])}
	switch {
	case s.incarnation == 0 || s.incarnation >= maxStoredIncarnation:
		return savedState{}, fmt.Errorf("%w: incarnation %d", ErrState, s.incarnation)
	case s.floor > wire.MaxPermStamp:
		return savedState{}, fmt.Errorf("%w: Lamport floor %d beyond the last stamp %d", ErrState, s.floor, uint64(wire.MaxPermStamp))
	}
	return s, nil
}
