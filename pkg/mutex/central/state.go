package central

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/synclab/synclab/pkg/core"
)

// The durable state: this member's incarnation (raised at every start, so
// a restarted member's requests are never taken for its previous run's),
// the last term it coordinated (it never coordinates a term twice: its
// fences would repeat), and the election's own state (for bully its term,
// which must never go back). The driver writes it atomically before the
// messages that go with it.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Version = 1  |           Incarnation (32 bits) ...           |  0
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|      ...      |       Last term coordinated (64 bits) ...     |  4
//	+-+-+-+-+-+-+-+-+                                               +
//	|                                                               |  8
//	+               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|      ...      | Election state length L (16)  |  Election ... | 12
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+               +
//	/        Election state (L bytes), then CRC-32C of all before   /
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
const (
	stateVersion     = 1
	offStateInc      = 1
	offStateLed      = 5
	offStateElectLen = 13
	offStateElect    = 15
	// maxElectionState bounds the election's section.
	maxElectionState = 1024
)

// Saved is the persisted state.
type Saved struct {
	Incarnation uint32
	LastLed     uint64
	Election    []byte
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func encodeState(s Saved) []byte {
	el := s.Election
	if len(el) > maxElectionState {
		el = nil // cannot happen (New refuses an elector whose state is larger); never write a state we cannot read
	}
	b := make([]byte, 0, offStateElect+len(el)+4)
	b = append(b, stateVersion)
	b = binary.BigEndian.AppendUint32(b, s.Incarnation)
	b = binary.BigEndian.AppendUint64(b, s.LastLed)
	b = binary.BigEndian.AppendUint16(b, uint16(len(el)))
	b = append(b, el...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeState reads what encodeState wrote (nil: the first start). A
// damaged state is refused (core.ErrState): a member that forgot its
// incarnation could have its new requests taken for old ones.
func decodeState(b []byte) (Saved, error) {
	if b == nil {
		return Saved{}, nil
	}
	if len(b) < offStateElect+4 || b[0] != stateVersion {
		return Saved{}, fmt.Errorf("%w: central state of %d bytes, version %d", core.ErrState, len(b), firstByte(b))
	}
	n := int(binary.BigEndian.Uint16(b[offStateElectLen:]))
	if n > maxElectionState || len(b) != offStateElect+n+4 {
		return Saved{}, fmt.Errorf("%w: central state: election section of %d bytes in %d", core.ErrState, n, len(b))
	}
	crcAt := offStateElect + n
	if crc32.Checksum(b[:crcAt], castagnoli) != binary.BigEndian.Uint32(b[crcAt:]) {
		return Saved{}, fmt.Errorf("%w: central state: checksum mismatch", core.ErrState)
	}
	s := Saved{Incarnation: binary.BigEndian.Uint32(b[offStateInc:]), LastLed: binary.BigEndian.Uint64(b[offStateLed:])}
	if n > 0 {
		s.Election = append([]byte(nil), b[offStateElect:crcAt]...)
	}
	if s.Incarnation == 0 {
		return Saved{}, fmt.Errorf("%w: central state: incarnation 0", core.ErrState)
	}
	return s, nil
}

func firstByte(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}

// Restore reads a persisted state as New does (nil: the first start), for
// tools and tests that look at a member's disk.
func Restore(b []byte) (Saved, error) { return decodeState(b) }
