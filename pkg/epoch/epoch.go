package epoch

import (
	"errors"
	"fmt"
	"strconv"
)

// Make returns the epoch of round round owned by owner.
func Make(round, owner uint32) uint64 { return uint64(round)<<32 | uint64(owner) }

// Owner returns the member that may create e (0 for epoch 0).
func Owner(e uint64) uint32 { return uint32(e) }

// Round returns e's round.
func Round(e uint64) uint32 { return uint32(e >> 32) }

// MaxRound is the last round of the full 32-bit space.
const MaxRound = 1<<32 - 1

// Errors. They are wrapped in an *Error, which says which epoch and why.
var (
	// ErrAbsurd: an epoch whose round is beyond the protocol's Last: no
	// member ever creates one.
	ErrAbsurd = errors.New("epoch: beyond the last usable round")
	// ErrTooFast: an epoch further ahead than the protocol could have
	// gone since this member last accepted one (see Guard).
	ErrTooFast = errors.New("epoch: further ahead than the protocol can go")
	// ErrExhausted: Next found no epoch left for the member to create.
	ErrExhausted = errors.New("epoch: round space exhausted")
)

// Error is an epoch refused, with the numbers that decided it.
type Error struct {
	Err     error  // ErrAbsurd, ErrTooFast or ErrExhausted
	Epoch   uint64 // the epoch refused (for ErrExhausted, the one to go above)
	Current uint64 // the local epoch it was compared with
	Credit  uint32 // rounds the guard could admit (ErrTooFast)
	Last    uint32 // the last usable round
}

func (e *Error) Error() string {
	switch {
	case errors.Is(e.Err, ErrTooFast):
		return fmt.Sprintf("%v: epoch %#x (round %d) is %d rounds above the local %#x, at most %d now",
			e.Err, e.Epoch, Round(e.Epoch), uint64(Round(e.Epoch))-uint64(Round(e.Current)), e.Current, e.Credit)
	case errors.Is(e.Err, ErrExhausted):
		return fmt.Sprintf("%v: no round left above %#x (round %d, last usable %d)", e.Err, e.Epoch, Round(e.Epoch), e.Last)
	}
	return fmt.Sprintf("%v: epoch %#x has round %d, the last usable is %d", e.Err, e.Epoch, Round(e.Epoch), e.Last)
}

func (e *Error) Unwrap() error { return e.Err }

// Reason is a short stable label for err (for counters and metrics):
// "absurd", "too_fast", "exhausted", or "" if err is none of these.
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrAbsurd):
		return "absurd"
	case errors.Is(err, ErrTooFast):
		return "too_fast"
	case errors.Is(err, ErrExhausted):
		return "exhausted"
	}
	return ""
}

// Limit is a protocol's epoch space and pace.
type Limit struct {
	// Last is the last round the protocol uses: MaxRound minus a reserve
	// of Burst rounds for bully terms, less for a protocol whose rounds
	// have fewer bits.
	Last uint32
	// Burst is the most rounds a Guard admits at once after resting: the
	// largest gap an outage can legitimately open, with a wide margin.
	Burst uint32
	// Rate is how many rounds of credit a Guard regains per unit of the
	// times given to Admit (ticks for bully, nanoseconds for the token
	// ring): the protocol's fastest pace of new rounds.
	Rate float64
}

// Spaced returns a Limit over rounds 0..maxRound whose last Burst rounds
// are left unused.
func Spaced(maxRound, burst uint32, rate float64) Limit {
	return Limit{Last: maxRound - burst, Burst: burst, Rate: rate}
}

// Validate rejects a limit that admits nothing or has no room.
func (l Limit) Validate() error {
	switch {
	case l.Burst == 0 || l.Last == 0:
		return fmt.Errorf("epoch: limit with last round %d and burst %d admits nothing", l.Last, l.Burst)
	case !(l.Rate > 0) || l.Rate > 1e18:
		return fmt.Errorf("epoch: rate %g rounds per unit: want a positive number", l.Rate)
	}
	return nil
}

// Next returns the smallest epoch above after that owner may create, or an
// *Error wrapping ErrExhausted when it would pass l.Last.
func (l Limit) Next(after uint64, owner uint32) (uint64, error) {
	round := Round(after)
	if Owner(after) >= owner {
		if round >= l.Last {
			return 0, &Error{Err: ErrExhausted, Epoch: after, Last: l.Last}
		}
		round++
	}
	if round > l.Last {
		return 0, &Error{Err: ErrExhausted, Epoch: after, Last: l.Last}
	}
	return Make(round, owner), nil
}

// NextRound returns owner's epoch in the round after after's, or an
// *Error wrapping ErrExhausted past l.Last: for a protocol whose epochs
// must differ in round, not only in owner (the token ring's fences number
// grants within a round).
func (l Limit) NextRound(after uint64, owner uint32) (uint64, error) {
	if Round(after) >= l.Last {
		return 0, &Error{Err: ErrExhausted, Epoch: after, Last: l.Last}
	}
	return Make(Round(after)+1, owner), nil
}

// CheckRestored refuses an epoch restored from disk that no member could
// have accepted or created: one beyond l.Last.
func (l Limit) CheckRestored(e uint64) error {
	if Round(e) > l.Last {
		return &Error{Err: ErrAbsurd, Epoch: e, Last: l.Last}
	}
	return nil
}

// Guard decides, for one epoch sequence (a member's term, one lock's
// generation), whether an epoch read from the wire is plausible. The zero
// Guard is rested: it holds a full Burst of credit.
type Guard struct {
	used float64 // rounds spent and not yet regained
	at   int64   // when used was last brought up to date
	set  bool
}

// Admit decides on e, read from the wire, where the local epoch is cur, at
// now (ticks or nanoseconds, as l.Rate counts them; a now that goes back
// regains nothing). An epoch at or below cur needs nothing; above it, its
// round must be at most l.Last, and the rounds it jumps are paid from the
// credit, or it is refused with an *Error (and nothing is spent).
func (g *Guard) Admit(l Limit, now int64, cur, e uint64) error {
	if e <= cur {
		return nil
	}
	if Round(e) > l.Last {
		return &Error{Err: ErrAbsurd, Epoch: e, Current: cur, Last: l.Last}
	}
	g.rest(l, now)
	jump := float64(Round(e)) - float64(Round(cur))
	if jump <= 0 {
		return nil // the same round, a higher owner: no new round
	}
	credit := float64(l.Burst) - g.used
	if jump > credit {
		return &Error{Err: ErrTooFast, Epoch: e, Current: cur, Credit: uint32(max(credit, 0)), Last: l.Last}
	}
	g.used += jump
	return nil
}

// Credit returns how many rounds g would admit at now.
func (g *Guard) Credit(l Limit, now int64) uint32 {
	g.rest(l, now)
	return uint32(max(float64(l.Burst)-g.used, 0))
}

func (g *Guard) rest(l Limit, now int64) {
	if g.set && now > g.at {
		g.used = max(0, g.used-float64(now-g.at)*l.Rate)
	}
	if !g.set || now > g.at {
		g.at, g.set = now, true
	}
}

// Format prints an epoch for people: "3 by 2" is round 3, created by
// member 2 (a member's first epoch may be round 0: "0 by 2"). Epoch 0,
// nobody's, prints "0". Scripts keep the raw number (JSON, X_TERM_RAW in
// hooks): it compares as the epochs do.
func Format(e uint64) string {
	if e == 0 {
		return "0"
	}
	return strconv.FormatUint(uint64(Round(e)), 10) + " by " + strconv.FormatUint(uint64(Owner(e)), 10)
}

// Term is an epoch as a value to log: it prints as Format does (slog's
// text handler, %v), and marshals to JSON as the raw number.
type Term uint64

// String implements fmt.Stringer.
func (t Term) String() string { return Format(uint64(t)) }

// Life is what one member knows of another's incarnation: a number only
// that member raises (once per restart or rejoin), read from its frames,
// with the Lamport stamp of the newest frame of it. The zero Life has
// seen nothing.
//
// Anyone can put any incarnation in a frame when a cluster runs without a
// key, and only the member itself ever moves to a new one: a forged
// incarnation above the member's own, believed for good, would make every
// later real frame look like one of an earlier life, and nothing the
// member does would ever bring it back. So an incarnation is judged with
// the frame's Lamport stamp, which a member's lives only ever raise (its
// clock resumes above every stamp of its last life; internal/node): a
// frame of a lower incarnation stamped after every frame of the one
// believed says that one was never the member's, and it is believed
// instead (Back). A late frame of a real earlier life is stamped below
// its successor's frames and stays Stale. Lamport stamps themselves are
// bounded by what a member can have reached (internal/node), and every
// member's clock passes a forged stamp within a round trip of hearing it:
// a forged incarnation is undone by the member's first frame after that.
type Life struct {
	Inc   uint64 // the incarnation believed (0: none seen)
	Stamp uint64 // the largest Lamport stamp of a frame of Inc
}

// Verdict is what Life.See makes of a frame.
type Verdict uint8

const (
	// Same: a frame of the incarnation believed.
	Same Verdict = iota
	// Newer: a higher incarnation: the member restarted or rejoined, what
	// its earlier life said is void.
	Newer
	// Back: a lower incarnation stamped after every frame of the one
	// believed, which was not the member's (a forged frame): what that
	// one said is void, and this one is believed again.
	Back
	// Stale: a lower incarnation stamped before: a late frame of an
	// earlier life, to refuse.
	Stale
)

func (v Verdict) String() string {
	switch v {
	case Same:
		return "same"
	case Newer:
		return "newer"
	case Back:
		return "back"
	case Stale:
		return "stale"
	}
	return fmt.Sprintf("verdict(%d)", uint8(v))
}

// Judge says what a frame of incarnation inc stamped at (its Lamport
// time) would be, without recording it.
func (l Life) Judge(inc, at uint64) Verdict {
	switch {
	case inc == l.Inc:
		return Same
	case inc > l.Inc:
		return Newer
	case at > l.Stamp:
		return Back
	}
	return Stale
}

// See judges a frame of incarnation inc stamped at and records it unless
// it is Stale.
func (l *Life) See(inc, at uint64) Verdict {
	v := l.Judge(inc, at)
	switch v {
	case Same:
		l.Stamp = max(l.Stamp, at)
	case Newer, Back:
		l.Inc, l.Stamp = inc, at
	}
	return v
}
