package maekawa

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

// The voter's durable state is its era: the highest fence era it has
// started in or recorded (0 in a first run, so fences read 1, 2, 3 until
// some member restarts). A fence is era<<32 | a count (the layout of
// pkg/epoch's epochs: round<<32 | owner), so a voter that starts in era
// E+1 knows every lock at (E+1)<<32, above every fence it recorded before
// (doc.go, "Fences"). The era is written once per start, and again only
// when a fence of a newer era is recorded (after some member's restart):
// never per vote.
//
// With Config.PersistVotes (the P_v experiment's "persisted" arm), the
// state also names the locks on which a vote may be outstanding, written
// before each locked leaves (the old design: a write per vote): a voter
// that restarts holds off on those locks only.
//
//	version (1) | era (4) | count (2) | count x [ name len (1) | name ]
const stateVersion = 2

// eraShift places the era in a fence: the high bits, above a count of
// 2^32 fences within it.
const eraShift = 32

// maxEra is the last era a fence can carry (MaxVoteFence is 2^62-1).
const maxEra = wire.MaxVoteFence >> eraShift

// eraLimit is the eras' plausibility rule (pkg/epoch): an era read from a
// frame may lead this voter's by at most eraBurst, regained at one era a
// second (no member restarts faster, and each restart is one era); the
// last eraBurst eras are never used, so a restarted voter always has room.
var eraLimit = epoch.Spaced(maxEra, eraBurst, 1e-9)

const eraBurst = 1 << 16

// eraOf is the era of fence f; floorOf the lowest fence of era e.
func eraOf(f uint64) uint32   { return uint32(f >> eraShift) }
func floorOf(e uint32) uint64 { return uint64(e) << eraShift }

type savedState struct {
	era         uint32
	fresh       bool // no state: a first start (era 0)
	outstanding map[string]bool
}

func encodeState(era uint32, outstanding []string) []byte {
	b := []byte{stateVersion}
	b = binary.BigEndian.AppendUint32(b, era)
	b = binary.BigEndian.AppendUint16(b, uint16(len(outstanding)))
	for _, n := range slices.Sorted(slices.Values(outstanding)) {
		b = append(b, byte(len(n)))
		b = append(b, n...)
	}
	return b
}

func decodeState(b []byte, maxLocks int) (savedState, error) {
	st := savedState{outstanding: map[string]bool{}}
	if len(b) == 0 {
		st.fresh = true
		return st, nil
	}
	bad := func(what string) error { return fmt.Errorf("%w: maekawa state: %s", core.ErrState, what) }
	if b[0] != stateVersion {
		return st, bad(fmt.Sprintf("version %d, want %d", b[0], stateVersion))
	}
	if len(b) < 7 {
		return st, bad("truncated header")
	}
	st.era = binary.BigEndian.Uint32(b[1:])
	if err := eraLimit.CheckRestored(floorOf(st.era)); err != nil {
		return st, bad(fmt.Sprintf("era %d: want at most %d", st.era, eraLimit.Last))
	}
	n := int(binary.BigEndian.Uint16(b[5:]))
	if n > maxLocks {
		return st, bad(fmt.Sprintf("%d locks, more than MaxLocks %d", n, maxLocks))
	}
	b = b[7:]
	for range n {
		if len(b) < 1 || len(b) < 1+int(b[0]) {
			return st, bad("truncated lock")
		}
		k := int(b[0])
		name := string(b[1 : 1+k])
		if !wire.ValidLockName(name) {
			return st, bad(fmt.Sprintf("lock name %q", name))
		}
		if st.outstanding[name] {
			return st, bad(fmt.Sprintf("lock %q twice", name))
		}
		st.outstanding[name] = true
		b = b[1+k:]
	}
	if len(b) != 0 {
		return st, bad(fmt.Sprintf("%d trailing bytes", len(b)))
	}
	return st, nil
}

// encodeState is the voter's durable state now: its era, and with
// PersistVotes the locks with a vote outstanding.
func (c *Core) encodeState() []byte {
	var outstanding []string
	if c.cfg.PersistVotes {
		for name, l := range c.votes {
			if l.outstanding() || c.now.Before(l.holdUntil) {
				outstanding = append(outstanding, name)
			}
		}
	}
	return encodeState(c.era, outstanding)
}
