package client

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The persisted state: the frequency correction, so that a restarted daemon
// does not re-learn its oscillator's drift (minutes of larger errors).
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|    Version    |  Frequency, ppm (IEEE 754 binary64, big end.)  |  0
//	+-+-+-+-+-+-+-+-+                                               +
//	|                                                               |  4
//	+               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|               |                                                  8
//	+-+-+-+-+-+-+-+-+
//
// A version byte first, so a later format can be told apart; the daemon
// writes it atomically (temp file, fsync, rename).
const (
	stateVersion  = 1
	offStateVer   = 0
	offStateFreq  = 1
	stateLen      = 9
	maxStateFreqP = 1e6 // |ppm| beyond a stopped clock is corruption
)

// encodeState returns the persisted form of freq (ppm).
func encodeState(freq float64) []byte {
	b := make([]byte, stateLen)
	b[offStateVer] = stateVersion
	binary.BigEndian.PutUint64(b[offStateFreq:], math.Float64bits(freq))
	return b
}

// decodeState parses persisted state. The range check against the servo's
// limit is New's (servo.Config.Validate): here only structure.
func decodeState(b []byte) (float64, error) {
	switch {
	case len(b) != stateLen:
		return 0, fmt.Errorf("%w: %d bytes, want %d", ErrState, len(b), stateLen)
	case b[offStateVer] != stateVersion:
		return 0, fmt.Errorf("%w: version %d, this build reads %d", ErrState, b[offStateVer], stateVersion)
	}
	f := math.Float64frombits(binary.BigEndian.Uint64(b[offStateFreq:]))
	if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) >= maxStateFreqP {
		return 0, fmt.Errorf("%w: frequency %g ppm", ErrState, f)
	}
	return f, nil
}
