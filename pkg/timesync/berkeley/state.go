package berkeley

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/synclab/synclab/pkg/elect/bully"
)

// The durable state: the master election's own state (for bully its term,
// which must never go back) and the frequency correction with its
// worst-case error (so a restarted member does not re-learn its drift).
// The driver writes it atomically before the messages that go with it.
//
// Version 2 holds the election's state as an opaque section, whatever the
// algorithm:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Version = 2  |   Frequency, ppm (IEEE 754 binary64)          |  0
//	+-+-+-+-+-+-+-+-+                                               +
//	|                                                               |  4
//	+               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|               |   Frequency error, ppm (binary64; 0: unknown)  |  8
//	+-+-+-+-+-+-+-+-+                                               +
//	|                                                               | 12
//	+               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|               |  Election state length L      |               | 16
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+               +
//	|        Election state (L bytes, the elector's Ready.State)    |
//	+                               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                               |  CRC-32C of every byte before |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
//	|                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Version 1 (29 bytes: version, the bully term, frequency, error, CRC)
// is what builds before the election became pluggable wrote; it is read as
// a bully term, in bully's encoding.
//
// The checksum matters more here than in most state files: a corrupt term
// could let this member claim a term twice.
const (
	stateVersion1 = 1
	stateVersion  = 2

	offV1Term  = 1
	offV1Freq  = 9
	offV1Err   = 17
	offV1CRC   = 25
	stateV1Len = 29

	offStateFreq     = 1
	offStateErr      = 9
	offStateElectLen = 17
	offStateElect    = 19
	// maxElectionState bounds the election's section: no election keeps
	// more than a few terms and counters.
	maxElectionState = 1024
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Saved is what a previous run persisted.
type Saved struct {
	// Election is the election's persisted state (its Ready.State), handed
	// back to it as core.Env.State; nil at a first start.
	Election     []byte
	FrequencyPPM float64 // Config.Servo.Frequency
	ErrorPPM     float64 // Config.Servo.FrequencyError (0: unknown)
}

func encodeState(s Saved) []byte {
	if len(s.Election) > maxElectionState {
		// Our own election's state: a bug, not input.
		panic(fmt.Sprintf("berkeley: election state of %d bytes", len(s.Election)))
	}
	b := make([]byte, 0, offStateElect+len(s.Election)+4)
	b = append(b, stateVersion)
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(s.FrequencyPPM))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(s.ErrorPPM))
	b = binary.BigEndian.AppendUint16(b, uint16(len(s.Election)))
	b = append(b, s.Election...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// Restore decodes the state a previous run left in core.Ready.State; empty
// state (a first start) restores the zero Saved. The election's section is
// checked by the election itself when it is built from it.
func Restore(b []byte) (Saved, error) {
	var s Saved
	if len(b) == 0 {
		return s, nil
	}
	if b[0] == stateVersion1 {
		return restoreV1(b)
	}
	switch {
	case b[0] != stateVersion:
		return s, fmt.Errorf("%w: version %d, this build reads %d and %d", ErrState, b[0], stateVersion1, stateVersion)
	case len(b) < offStateElect+4:
		return s, fmt.Errorf("%w: %d bytes, want at least %d", ErrState, len(b), offStateElect+4)
	}
	n := int(binary.BigEndian.Uint16(b[offStateElectLen:]))
	if n > maxElectionState || len(b) != offStateElect+n+4 {
		return s, fmt.Errorf("%w: %d bytes with an election state of %d", ErrState, len(b), n)
	}
	crcAt := offStateElect + n
	if got, want := crc32.Checksum(b[:crcAt], castagnoli), binary.BigEndian.Uint32(b[crcAt:]); got != want {
		return s, fmt.Errorf("%w: checksum %08x, want %08x", ErrState, got, want)
	}
	s = Saved{
		FrequencyPPM: math.Float64frombits(binary.BigEndian.Uint64(b[offStateFreq:])),
		ErrorPPM:     math.Float64frombits(binary.BigEndian.Uint64(b[offStateErr:])),
	}
	if n > 0 {
		s.Election = append([]byte(nil), b[offStateElect:crcAt]...)
	}
	return s, checkFrequency(s)
}

// restoreV1 reads the first format: its term is bully's.
func restoreV1(b []byte) (Saved, error) {
	if len(b) != stateV1Len {
		return Saved{}, fmt.Errorf("%w: %d bytes, want %d", ErrState, len(b), stateV1Len)
	}
	if got, want := crc32.Checksum(b[:offV1CRC], castagnoli), binary.BigEndian.Uint32(b[offV1CRC:]); got != want {
		return Saved{}, fmt.Errorf("%w: checksum %08x, want %08x", ErrState, got, want)
	}
	s := Saved{
		FrequencyPPM: math.Float64frombits(binary.BigEndian.Uint64(b[offV1Freq:])),
		ErrorPPM:     math.Float64frombits(binary.BigEndian.Uint64(b[offV1Err:])),
	}
	// An older build took any term a frame carried: refuse one no member
	// could have accepted, as bully would.
	term := binary.BigEndian.Uint64(b[offV1Term:])
	if err := bully.CheckTerm(term); err != nil {
		return Saved{}, fmt.Errorf("%w: election term: %v", ErrState, err)
	}
	if term != 0 {
		s.Election = bully.EncodeState(term)
	}
	return s, checkFrequency(s)
}

// checkFrequency refuses what no build could have written; range checks
// against the servo's limits are New's.
func checkFrequency(s Saved) error {
	if !finite(s.FrequencyPPM) || math.Abs(s.FrequencyPPM) >= 1e6 || !finite(s.ErrorPPM) || s.ErrorPPM < 0 {
		return fmt.Errorf("%w: frequency %g ppm, error %g ppm", ErrState, s.FrequencyPPM, s.ErrorPPM)
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
