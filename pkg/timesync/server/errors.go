package server

import (
	"errors"
	"fmt"
)

// Errors returned by StepDatagram for packets that get no answer. Each is
// wrapped in a *DropError carrying the counter label the packet was counted
// under; test with errors.Is.
var (
	// ErrMalformed: shorter than an NTP header, a length that is not a
	// multiple of 4, or a MAC field of impossible length.
	ErrMalformed = errors.New("server: malformed NTP packet")
	// ErrVersion: a version other than 3 or 4.
	ErrVersion = errors.New("server: unsupported NTP version")
	// ErrMode: not a client request (mode 3). Control (6) and private (7)
	// packets are never answered: they are the classic amplification
	// vectors. Symmetric modes (1, 2) belong to the client core.
	ErrMode = errors.New("server: not a client request")
	// ErrRateLimited: the client is over its rate limit and has had its
	// kiss-o'-death recently: dropped.
	ErrRateLimited = errors.New("server: client over its rate limit")
	// ErrBadSource: the source address cannot be answered (port 0, an
	// unspecified, multicast or broadcast address: a reply would be
	// reflected at a third party or nowhere).
	ErrBadSource = errors.New("server: unanswerable source address")
)

// DropError says why a packet was dropped, with the stable label it was
// counted under in Status.Dropped.
type DropError struct {
	Reason string // counter label, e.g. "short", "mode_control", "rate_limited"
	Err    error  // one of the Err* sentinels, possibly wrapped with details
}

func (e *DropError) Error() string { return fmt.Sprintf("%v (%s)", e.Err, e.Reason) }
func (e *DropError) Unwrap() error { return e.Err }
