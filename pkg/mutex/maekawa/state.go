package maekawa

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// The voter's durable state: for every lock it knows, the highest fence it
// has seen committed and whether a vote of it may be outstanding; and the
// floor, the highest fence of the locks it forgot to make room. A voter
// that restarts with a vote outstanding does not vote on that lock for a
// whole stretched MaxLease: its voters' holder may still hold.
//
//	version (1) | floor (8) | count (2) | count x [ name len (1) | name | fence (8) | flags (1) ]
const (
	stateVersion     = 1
	stateOutstanding = 1 << 0
)

type savedLock struct {
	fence       uint64
	outstanding bool
}

type savedState struct {
	floor uint64
	locks map[string]savedLock
}

func encodeState(floor uint64, locks map[string]*vlock) []byte {
	b := []byte{stateVersion}
	b = binary.BigEndian.AppendUint64(b, floor)
	names := slices.Sorted(maps.Keys(locks))
	b = binary.BigEndian.AppendUint16(b, uint16(len(names)))
	for _, n := range names {
		l := locks[n]
		b = append(b, byte(len(n)))
		b = append(b, n...)
		b = binary.BigEndian.AppendUint64(b, l.fence)
		var flags byte
		if l.outstanding() {
			flags |= stateOutstanding
		}
		b = append(b, flags)
	}
	return b
}

func decodeState(b []byte, maxLocks int) (savedState, error) {
	st := savedState{locks: map[string]savedLock{}}
	if len(b) == 0 {
		return st, nil
	}
	bad := func(what string) error { return fmt.Errorf("%w: maekawa state: %s", core.ErrState, what) }
	if b[0] != stateVersion {
		return st, bad(fmt.Sprintf("version %d, want %d", b[0], stateVersion))
	}
	if len(b) < 11 {
		return st, bad("truncated header")
	}
	st.floor = binary.BigEndian.Uint64(b[1:])
	n := int(binary.BigEndian.Uint16(b[9:]))
	if n > maxLocks {
		return st, bad(fmt.Sprintf("%d locks, more than MaxLocks %d", n, maxLocks))
	}
	b = b[11:]
	for range n {
		if len(b) < 1 {
			return st, bad("truncated lock")
		}
		k := int(b[0])
		if len(b) < 1+k+9 {
			return st, bad("truncated lock")
		}
		name := string(b[1 : 1+k])
		if !wire.ValidLockName(name) {
			return st, bad(fmt.Sprintf("lock name %q", name))
		}
		if _, dup := st.locks[name]; dup {
			return st, bad(fmt.Sprintf("lock %q twice", name))
		}
		fence := binary.BigEndian.Uint64(b[1+k:])
		flags := b[1+k+8]
		if fence > wire.MaxVoteFence || flags&^stateOutstanding != 0 {
			return st, bad(fmt.Sprintf("lock %q: fence %d, flags %#x", name, fence, flags))
		}
		st.locks[name] = savedLock{fence: fence, outstanding: flags&stateOutstanding != 0}
		b = b[1+k+9:]
	}
	if len(b) != 0 {
		return st, bad(fmt.Sprintf("%d trailing bytes", len(b)))
	}
	if st.floor > wire.MaxVoteFence {
		return st, bad("floor out of range")
	}
	return st, nil
}
