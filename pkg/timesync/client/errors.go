package client

import (
	"errors"
	"fmt"

	"github.com/synclab/synclab/pkg/core"
)

// ErrConfig is wrapped by every error New returns for a bad Config.
var ErrConfig = errors.New("client: invalid configuration")

// Errors of StepDatagram: why a packet was not used. The on-wire errors of
// package ntp (ntp.ErrBogus, ntp.ErrDuplicate, *ntp.KissError...) are
// wrapped as they are, so errors.Is and errors.As see them too.
var (
	// ErrUnknownSource: the packet comes from an address that is neither a
	// configured server nor a configured peer.
	ErrUnknownSource = errors.New("client: packet from an address that is not a configured server or peer")
	// ErrUnexpectedMode: a mode the client does not handle (a mode-3
	// request is for the server core; broadcast, control and private
	// modes are not spoken), or a mode that does not fit the source (a
	// server sending mode 1).
	ErrUnexpectedMode = errors.New("client: unexpected NTP mode")
	// ErrMalformed: the datagram is not an NTP packet (too short).
	ErrMalformed = errors.New("client: malformed NTP packet")
	// ErrStopped: the source sent a DENY or RSTR kiss-o'-death earlier and
	// is no longer polled; its packets are ignored.
	ErrStopped = errors.New("client: source stopped by kiss-o'-death")
	// ErrClockStepped: the clock was stepped while the exchange was in
	// flight, so its timestamps mix two time scales.
	ErrClockStepped = errors.New("client: clock stepped during the exchange")
)

// ErrState is wrapped by Restore for persisted state it cannot use.
// It wraps core.ErrState, so the daemon names the state file it refused.
var ErrState = fmt.Errorf("client: invalid persisted state: %w", core.ErrState)

// ErrStarted is returned by Restore after the first Tick: the frequency can
// only be restored before the discipline starts.
var ErrStarted = errors.New("client: Restore after the first Tick")
