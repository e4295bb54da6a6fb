package timedcore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/synclab/synclab/pkg/core"
)

// Section names a part's durable state inside timed's state file.
type Section string

// The parts that keep durable state.
const (
	// SectionCluster is the cluster part's: the Berkeley core's term and
	// frequency (the liveness detector keeps none).
	SectionCluster Section = "cluster"
	// SectionClient is the NTP client's: its frequency and its error.
	SectionClient Section = "client"
)

var sections = []Section{SectionCluster, SectionClient}

// State is timed's durable state: each part's own, under its section's
// name, in one file written atomically. A part hands its state over in its
// Ready as it would alone; the composite keeps the newest of every part and
// writes them together, so two parts may change in the same Ready.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|      'T'      |      'D'      |      'S'      |  Version = 1  |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	| Name length   |  Name (ASCII) ...             | Data length   |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	| (16 bits)     |  Data (the part's own state) ...              |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	  ... one section per part that has saved state, names ascending
//
// A file written before sections existed holds one part's state alone
// (timed persisted only one part in any mode); DecodeState reads it as
// that part's, named by the caller, and the next write converts it.
type State struct {
	parts map[Section][]byte
}

const (
	stateMagic   = "TDS"
	stateVersion = 1
	// maxSectionLen bounds one part's state: far above what any part
	// keeps (17 bytes for the client, tens for Berkeley).
	maxSectionLen = 4096
)

// DecodeState reads timed's state file, b as the daemon read it (nil on a
// first start: an empty State). legacy names the part a file without
// sections belongs to. An error wraps core.ErrState and says what is wrong
// (the daemon adds the file's name).
func DecodeState(b []byte, legacy Section) (State, error) {
	st := State{parts: map[Section][]byte{}}
	if b == nil {
		return st, nil
	}
	if len(b) < len(stateMagic)+1 || string(b[:len(stateMagic)]) != stateMagic {
		// A part's state alone, bounded as a section is: one no part
		// wrote could not be written back (a section's length has 16
		// bits, and no decoder reads a section past maxSectionLen).
		if len(b) > maxSectionLen {
			return st, fmt.Errorf("%w: timed state: %d bytes without the %q header, more than any part's state (%d bytes at most): not a file timed wrote",
				core.ErrState, len(b), stateMagic, maxSectionLen)
		}
		st.parts[legacy] = bytes.Clone(b)
		return st, nil
	}
	if v := b[len(stateMagic)]; v != stateVersion {
		return st, fmt.Errorf("%w: timed state version %d, this build reads %d", core.ErrState, v, stateVersion)
	}
	rest := b[len(stateMagic)+1:]
	for len(rest) > 0 {
		n := int(rest[0])
		if len(rest) < 1+n+2 {
			return st, fmt.Errorf("%w: timed state: section header truncated", core.ErrState)
		}
		name := Section(rest[1 : 1+n])
		size := int(binary.BigEndian.Uint16(rest[1+n:]))
		rest = rest[1+n+2:]
		switch {
		case !slices.Contains(sections, name):
			return st, fmt.Errorf("%w: timed state: unknown section %q", core.ErrState, name)
		case st.parts[name] != nil:
			return st, fmt.Errorf("%w: timed state: section %q twice", core.ErrState, name)
		case size > maxSectionLen || size > len(rest):
			return st, fmt.Errorf("%w: timed state: section %q of %d bytes, %d left", core.ErrState, name, size, len(rest))
		}
		st.parts[name] = bytes.Clone(rest[:size])
		rest = rest[size:]
	}
	return st, nil
}

// Part returns the saved state of part s, nil if it has none.
func (st State) Part(s Section) []byte { return st.parts[s] }

// encode returns the file's bytes: every section with state, names
// ascending, so one State has one encoding.
func (st State) encode() []byte {
	b := append([]byte(stateMagic), stateVersion)
	for _, name := range slices.Sorted(maps.Keys(st.parts)) {
		data := st.parts[name]
		b = append(b, byte(len(name)))
		b = append(b, name...)
		b = binary.BigEndian.AppendUint16(b, uint16(len(data)))
		b = append(b, data...)
	}
	return b
}

// set records part s's new state; it reports whether it was refused (too
// large for a section: a bug in the part).
func (st *State) set(s Section, data []byte) bool {
	if len(data) > maxSectionLen {
		return false
	}
	if st.parts == nil {
		st.parts = map[Section][]byte{}
	}
	st.parts[s] = bytes.Clone(data)
	return true
}
