package client

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The persisted state: the frequency correction and its worst-case error,
// so that a restarted daemon does not re-learn its oscillator's drift
// (minutes of larger errors) and knows how far to trust what it restored.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|  Version = 2  |  Frequency, ppm (IEEE 754 binary64, big end.)  |  0
//	+-+-+-+-+-+-+-+-+                                               +
//	|                                                               |  4
//	+               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|               |  Frequency error, ppm (binary64, big endian)   |  8
//	+-+-+-+-+-+-+-+-+                                               +
//	|                                                               | 12
//	+               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|               |                                                 16
//	+-+-+-+-+-+-+-+-+
//
// A version byte first, so a format can be told apart: version 1 (the
// first 9 bytes, no error) is still read, its frequency then trusted only
// until the first regression. The daemon writes the state atomically (temp
// file, fsync, rename).
const (
	stateVersion   = 2
	stateVersionV1 = 1
	offStateVer    = 0
	offStateFreq   = 1
	offStateErr    = 9
	stateLen       = 17
	stateLenV1     = 9
	maxStateFreqP  = 1e6 // |ppm| beyond a stopped clock is corruption
)

// savedFrequency is what the state holds.
type savedFrequency struct {
	ppm    float64 // the frequency correction
	errPPM float64 // its worst-case error; 0 if unknown
}

// encodeState returns the persisted form of f.
func encodeState(f savedFrequency) []byte {
	b := make([]byte, stateLen)
	b[offStateVer] = stateVersion
	binary.BigEndian.PutUint64(b[offStateFreq:], math.Float64bits(f.ppm))
	binary.BigEndian.PutUint64(b[offStateErr:], math.Float64bits(f.errPPM))
	return b
}

// decodeState parses persisted state. The range check against the servo's
// limit is New's (servo.Config.Validate): here only structure.
func decodeState(b []byte) (savedFrequency, error) {
	var f savedFrequency
	if len(b) == 0 {
		return f, fmt.Errorf("%w: empty", ErrState)
	}
	switch v := b[offStateVer]; {
	case v == stateVersionV1 && len(b) == stateLenV1:
	case v == stateVersion && len(b) == stateLen:
		f.errPPM = math.Float64frombits(binary.BigEndian.Uint64(b[offStateErr:]))
	case v == stateVersionV1 || v == stateVersion:
		return f, fmt.Errorf("%w: version %d state of %d bytes", ErrState, v, len(b))
	default:
		return f, fmt.Errorf("%w: version %d, this build reads %d and %d", ErrState, v, stateVersionV1, stateVersion)
	}
	f.ppm = math.Float64frombits(binary.BigEndian.Uint64(b[offStateFreq:]))
	if math.IsNaN(f.ppm) || math.IsInf(f.ppm, 0) || math.Abs(f.ppm) >= maxStateFreqP {
		return f, fmt.Errorf("%w: frequency %g ppm", ErrState, f.ppm)
	}
	if math.IsNaN(f.errPPM) || math.IsInf(f.errPPM, 0) || f.errPPM < 0 {
		return f, fmt.Errorf("%w: frequency error %g ppm", ErrState, f.errPPM)
	}
	return f, nil
}
