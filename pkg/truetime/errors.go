package truetime

import (
	"errors"
	"fmt"
	"time"
)

// The kinds of Error, for errors.Is.
var (
	// ErrUnsynchronised: timed publishes no bound: it is starting, not
	// synchronised, only measuring, or the lab's local reference.
	ErrUnsynchronised = errors.New("timed has no bound on the time (not synchronised)")
	// ErrStale: the daemon stopped publishing: the last publication,
	// synchronised or not, is older than the page's stale limit, the
	// daemon stopped in the middle of a write, or it made its page 10 s
	// ago and never published in it.
	ErrStale = errors.New("timed stopped publishing its bound")
	// ErrClockStepped: CLOCK_REALTIME reads earlier than at the last
	// publication: someone stepped the clock back.
	ErrClockStepped = errors.New("the clock went back since timed's last publication")
	// ErrVersion: the file is not a page this package knows (wrong magic,
	// or a layout version it does not read).
	ErrVersion = errors.New("not a truetime page this reader knows")
	// ErrInvalid: the page's numbers are impossible (earliest after
	// latest, a negative stale limit...): not written by timed.
	ErrInvalid = errors.New("the truetime page holds an impossible bound")
	// ErrClosed: the Reader was closed.
	ErrClosed = errors.New("truetime reader closed")
)

// Error is every error Now and WaitUntilPast return about the page: Kind
// is one of the Err* values above (errors.Is(err, ErrStale) works on it),
// Path the file, Detail what was seen, Age the time since the last
// publication when known.
type Error struct {
	Kind   error
	Path   string
	Detail string
	Age    time.Duration
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("truetime %s: %v", e.Path, e.Kind)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap returns Kind.
func (e *Error) Unwrap() error { return e.Kind }
