package berkeley

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/synclab/synclab/pkg/elect/bully"
)

// The durable state: the embedded election's term (which must never go
// back, see pkg/elect/bully) and the frequency correction with its
// worst-case error (so a restarted member does not re-learn its drift).
// The driver writes it atomically before the messages that go with it.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Version = 1  |            Term (64 bits, big endian)         |  0
//	+-+-+-+-+-+-+-+-+                                               +
//	|                                                               |  4
//	+               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|               |   Frequency, ppm (IEEE 754 binary64)           |  8
//	+-+-+-+-+-+-+-+-+                                               +
//	|                                                               | 12
//	+               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|               |   Frequency error, ppm (binary64; 0: unknown)  | 16
//	+-+-+-+-+-+-+-+-+                                               +
//	|                                                               | 20
//	+               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|               |          CRC-32C of bytes 0..24               | 24
//	+-+-+-+-+-+-+-+-+                               +-+-+-+-+-+-+-+-+
//	|                                               |                 28
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The checksum matters more here than in most state files: a corrupt term
// could let this member claim a term twice.
const (
	stateVersion = 1
	offStateTerm = 1
	offStateFreq = 9
	offStateErr  = 17
	offStateCRC  = 25
	stateLen     = 29
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Saved is what a previous run persisted.
type Saved struct {
	Term         uint64  // the highest election term seen: Config.Election.PersistedTerm
	FrequencyPPM float64 // Config.Servo.Frequency
	ErrorPPM     float64 // Config.Servo.FrequencyError (0: unknown)
}

func encodeState(s Saved) []byte {
	b := make([]byte, 0, stateLen)
	b = append(b, stateVersion)
	b = binary.BigEndian.AppendUint64(b, s.Term)
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(s.FrequencyPPM))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(s.ErrorPPM))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// Restore decodes the state a previous run left in core.Ready.State; empty
// state (a first start) restores the zero Saved.
func Restore(b []byte) (Saved, error) {
	var s Saved
	switch {
	case len(b) == 0:
		return s, nil
	case len(b) != stateLen:
		return s, fmt.Errorf("%w: %d bytes, want %d", ErrState, len(b), stateLen)
	case b[0] != stateVersion:
		return s, fmt.Errorf("%w: version %d, this build reads %d", ErrState, b[0], stateVersion)
	}
	if got, want := crc32.Checksum(b[:offStateCRC], castagnoli), binary.BigEndian.Uint32(b[offStateCRC:]); got != want {
		return s, fmt.Errorf("%w: checksum %08x, want %08x", ErrState, got, want)
	}
	s = Saved{
		Term:         binary.BigEndian.Uint64(b[offStateTerm:]),
		FrequencyPPM: math.Float64frombits(binary.BigEndian.Uint64(b[offStateFreq:])),
		ErrorPPM:     math.Float64frombits(binary.BigEndian.Uint64(b[offStateErr:])),
	}
	// Range checks against the servo's limits are New's; here only what
	// no build could have written, and a term no member could have
	// accepted (an older build took any term a frame carried).
	if !finite(s.FrequencyPPM) || math.Abs(s.FrequencyPPM) >= 1e6 || !finite(s.ErrorPPM) || s.ErrorPPM < 0 {
		return Saved{}, fmt.Errorf("%w: frequency %g ppm, error %g ppm", ErrState, s.FrequencyPPM, s.ErrorPPM)
	}
	if err := bully.CheckTerm(s.Term); err != nil {
		return Saved{}, fmt.Errorf("%w: election term: %v", ErrState, err)
	}
	return s, nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
