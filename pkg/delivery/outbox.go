package delivery

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Key names one message of an Outbox: its destination and the ID the
// sender gave it (a counter, a round, a hop: whatever the acknowledgement
// carries back).
type Key struct {
	To uint32
	ID uint64
}

func (k Key) String() string { return fmt.Sprintf("%d/%d", k.To, k.ID) }

// Config is an Outbox's resend policy.
type Config struct {
	// Retry is how long after a send the next one (or, after the last
	// try, the give-up) is due. Required, > 0.
	Retry time.Duration
	// Tries is how many times a message is sent in all, the first send
	// included (>= 1; 1: never resent, given up Retry after the send).
	Tries int
	// MaxPending bounds the messages waiting for acknowledgement
	// (0: unbounded; the core's own protocol bounds them).
	MaxPending int
}

// Errors of the Outbox.
var (
	ErrConfig = errors.New("delivery: invalid config")
	// ErrFull: MaxPending messages already wait for acknowledgement.
	ErrFull = errors.New("delivery: too many messages waiting for acknowledgement")
)

// Outcome is how a message's delivery ended.
type Outcome uint8

// Outcomes.
const (
	Acked     Outcome = iota + 1 // the destination acknowledged it
	GaveUp                       // no acknowledgement after Tries sends
	Cancelled                    // the sender withdrew it (Cancel)
)

func (o Outcome) String() string {
	switch o {
	case Acked:
		return "acked"
	case GaveUp:
		return "gave_up"
	case Cancelled:
		return "cancelled"
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// Entry is a message waiting for its acknowledgement.
type Entry[M any] struct {
	Key
	Msg   M
	Tries int       // sends so far
	First time.Time // the first send
	Last  time.Time // the latest send
}

// Result is the end of one message's delivery.
type Result[M any] struct {
	Entry[M]
	Outcome Outcome
	At      time.Time // when it ended (the ack's arrival, the give-up)
}

// Outbox holds the messages sent and not yet acknowledged. The zero value
// is not usable: make one with NewOutbox. Not safe for concurrent use (a
// core's parts run on its driver's loop).
type Outbox[M any] struct {
	cfg     Config
	pending map[Key]*Entry[M]
}

// NewOutbox returns an empty outbox.
func NewOutbox[M any](cfg Config) (*Outbox[M], error) {
	if cfg.Retry <= 0 || cfg.Tries < 1 || cfg.MaxPending < 0 {
		return nil, fmt.Errorf("%w: Retry %v must be positive, Tries %d at least 1, MaxPending %d not negative",
			ErrConfig, cfg.Retry, cfg.Tries, cfg.MaxPending)
	}
	return &Outbox[M]{cfg: cfg, pending: map[Key]*Entry[M]{}}, nil
}

// Config returns the outbox's policy.
func (o *Outbox[M]) Config() Config { return o.cfg }

// Send records msg under k as sent at now: the caller sends it now. A
// message already waiting under k is replaced (its tries start again),
// which is what a sender wants when it has newer content for the same
// acknowledgement.
func (o *Outbox[M]) Send(now time.Time, k Key, msg M) error {
	if _, ok := o.pending[k]; !ok && o.cfg.MaxPending > 0 && len(o.pending) >= o.cfg.MaxPending {
		return ErrFull
	}
	o.pending[k] = &Entry[M]{Key: k, Msg: msg, Tries: 1, First: now, Last: now}
	return nil
}

// Ack records the acknowledgement of k, received at now. It reports false
// for an acknowledgement of nothing waiting (a duplicate, a late one, or
// one nobody asked for): the caller counts it.
func (o *Outbox[M]) Ack(now time.Time, k Key) (Result[M], bool) {
	e, ok := o.pending[k]
	if !ok {
		return Result[M]{}, false
	}
	delete(o.pending, k)
	return Result[M]{Entry: *e, Outcome: Acked, At: now}, true
}

// Cancel withdraws k; it reports false if nothing waited under k.
func (o *Outbox[M]) Cancel(now time.Time, k Key) (Result[M], bool) {
	e, ok := o.pending[k]
	if !ok {
		return Result[M]{}, false
	}
	delete(o.pending, k)
	return Result[M]{Entry: *e, Outcome: Cancelled, At: now}, true
}

// CancelIf withdraws every message for which drop says so (a new round
// makes the last round's messages moot), in key order.
func (o *Outbox[M]) CancelIf(now time.Time, drop func(Entry[M]) bool) []Result[M] {
	var out []Result[M]
	for _, k := range o.keys() {
		if e := o.pending[k]; drop(*e) {
			delete(o.pending, k)
			out = append(out, Result[M]{Entry: *e, Outcome: Cancelled, At: now})
		}
	}
	return out
}

// Pending returns the entry waiting under k.
func (o *Outbox[M]) Pending(k Key) (Entry[M], bool) {
	e, ok := o.pending[k]
	if !ok {
		return Entry[M]{}, false
	}
	return *e, true
}

// Len is how many messages wait for acknowledgement.
func (o *Outbox[M]) Len() int { return len(o.pending) }

// Deadline is when Tick next has something to do: the earliest Retry after
// a message's last send. Zero when nothing waits.
func (o *Outbox[M]) Deadline() time.Time {
	var d time.Time
	for _, e := range o.pending {
		if at := e.Last.Add(o.cfg.Retry); d.IsZero() || at.Before(d) {
			d = at
		}
	}
	return d
}

// Tick returns, as of now, the entries due to be sent again (the caller
// sends each Msg to its To; their Tries and Last already count this send)
// and the results of those given up, each in key order so that a core's
// output is deterministic.
func (o *Outbox[M]) Tick(now time.Time) (resend []Entry[M], gaveUp []Result[M]) {
	for _, k := range o.keys() {
		e := o.pending[k]
		if now.Before(e.Last.Add(o.cfg.Retry)) {
			continue
		}
		if e.Tries >= o.cfg.Tries {
			delete(o.pending, k)
			gaveUp = append(gaveUp, Result[M]{Entry: *e, Outcome: GaveUp, At: now})
			continue
		}
		e.Tries++
		e.Last = now
		resend = append(resend, *e)
	}
	return resend, gaveUp
}

func (o *Outbox[M]) keys() []Key {
	return slices.SortedFunc(maps.Keys(o.pending), func(a, b Key) int {
		if a.To != b.To {
			return cmpU(uint64(a.To), uint64(b.To))
		}
		return cmpU(a.ID, b.ID)
	})
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
