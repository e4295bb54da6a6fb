package delivery

import (
	"errors"
	"fmt"
)

// Verdict is what a Filter says of a received ID.
type Verdict uint8

// Verdicts.
const (
	// New: first time seen; act on it (and acknowledge).
	New Verdict = iota + 1
	// Duplicate: seen before; acknowledge again, do nothing else.
	Duplicate
	// TooOld: below the sender's window, so it cannot be told from a
	// replay; do not act on it.
	TooOld
	// Refused: a new sender while MaxSenders are tracked; do not act.
	Refused
)

func (v Verdict) String() string {
	switch v {
	case New:
		return "new"
	case Duplicate:
		return "duplicate"
	case TooOld:
		return "too_old"
	case Refused:
		return "refused"
	}
	return fmt.Sprintf("verdict(%d)", uint8(v))
}

// Window is how many IDs below a sender's highest a Filter remembers.
const Window = 64

// DefaultMaxSenders is MaxSenders when zero is given.
const DefaultMaxSenders = 1024

// ErrFilterConfig: a negative MaxSenders.
var ErrFilterConfig = errors.New("delivery: invalid filter config")

// Filter is the receive side's duplicate filter. Not safe for concurrent
// use.
type Filter struct {
	max     int
	senders map[uint32]*window
	undone  uint64
}

// window is a sender's highest ID and a bitmap of the Window IDs below it
// (bit i: highest-1-i seen), and the largest stamp of the messages taken
// as new in it (0: none known).
type window struct {
	top   uint64
	seen  uint64
	stamp uint64
}

// NewFilter returns a filter tracking at most maxSenders senders
// (0: DefaultMaxSenders).
func NewFilter(maxSenders int) (*Filter, error) {
	if maxSenders < 0 {
		return nil, fmt.Errorf("%w: MaxSenders %d", ErrFilterConfig, maxSenders)
	}
	if maxSenders == 0 {
		maxSenders = DefaultMaxSenders
	}
	return &Filter{max: maxSenders, senders: map[uint32]*window{}}, nil
}

// Check classifies id from sender from and, when New, remembers it.
//
// stamp is the message's Lamport time as its sender gave it when it first
// sent it, the same in every copy (0: unknown). A sender numbers and
// stamps its messages in the same order, so a message below the window
// (TooOld by its ID) whose stamp is above every stamp taken in the window
// says the window's top was never the sender's: a message forged in its
// name with a number far ahead (without a key, anyone can send one), which
// would otherwise make every real message of the sender too old for good.
// The window then starts again at id (New, counted in Undone), every ID
// below it taken for seen: the sender's first message stamped after the
// forged one is taken, and no copy of a message acted on before is acted
// on again. A late copy of a real old message carries its old stamp and
// stays TooOld.
func (f *Filter) Check(from uint32, id, stamp uint64) Verdict {
	w, ok := f.senders[from]
	if !ok {
		if len(f.senders) >= f.max {
			return Refused
		}
		f.senders[from] = &window{top: id, stamp: stamp}
		return New
	}
	switch {
	case id > w.top:
		shift := id - w.top
		if shift > Window {
			w.seen = 0
		} else {
			// The old top becomes bit shift-1.
			w.seen = w.seen<<shift | 1<<(shift-1)
		}
		w.top = id
		w.stamp = max(w.stamp, stamp)
		return New
	case id == w.top:
		return Duplicate
	}
	back := w.top - id // >= 1
	if back > Window {
		if stamp == 0 || stamp <= w.stamp {
			return TooOld
		}
		// Everything below id counts as seen: what the window knew of
		// the sender's real messages went with the forged top, and a
		// copy of one acted on before must not be acted on again. (A
		// real message refused meanwhile, never acted on, is lost: as
		// one refused for being too old.)
		*w = window{top: id, seen: ^uint64(0), stamp: stamp}
		f.undone++
		return New
	}
	bit := uint64(1) << (back - 1)
	if w.seen&bit != 0 {
		return Duplicate
	}
	w.seen |= bit
	w.stamp = max(w.stamp, stamp)
	return New
}

// Undone is how many times a sender's window started again below its top
// because a message numbered below it was stamped after every message
// taken in it (see Check): each time, a top forged in its name.
func (f *Filter) Undone() uint64 { return f.undone }

// Forget drops what the filter knows of sender from (it restarted with
// lower IDs, or left the cluster).
func (f *Filter) Forget(from uint32) { delete(f.senders, from) }

// Senders is how many senders the filter tracks.
func (f *Filter) Senders() int { return len(f.senders) }
