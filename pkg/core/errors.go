package core

import "errors"

// ErrUnexpectedDatagram is returned by StepDatagram of a core that speaks no
// foreign protocol.
var ErrUnexpectedDatagram = errors.New("core: this core takes no datagrams")

// ErrUnknownMember is returned by Step for a frame from an ID outside the
// member list.
var ErrUnknownMember = errors.New("core: sender is not a member")

// ErrUnexpectedKind is returned by Step for a kind the core does not handle.
var ErrUnexpectedKind = errors.New("core: unexpected message kind")

// ErrState is wrapped by a core's error for persisted state it refuses
// (corrupt, or holding a value no member could have accepted): the driver
// names the state file, so the operator knows what to inspect.
var ErrState = errors.New("persisted state refused")
