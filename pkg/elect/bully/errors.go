package bully

import (
	"errors"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
)

// Step rejects a message, and counts the rejection, with one of these errors
// (wrapped with the details), or with core.ErrUnknownMember,
// core.ErrUnexpectedKind or a *wire.DecodeError. A rejected message has no
// effect on the core's state.
var (
	// ErrFromSelf: a frame that claims to come from this node.
	ErrFromSelf = errors.New("bully: message from self")
	// ErrForgedClaim: a COORDINATOR or leader heartbeat for a term the sender
	// does not own (see TermOwner). Honest nodes never send one.
	ErrForgedClaim = errors.New("bully: claim of a term the sender does not own")
	// ErrRankMismatch: the priority in the payload is not the one this
	// node's member list gives the sender. Nodes disagree on the ranking, so
	// bully's "highest live node wins" cannot hold; fix the member lists.
	ErrRankMismatch = errors.New("bully: sender's priority differs from the member list")
	// ErrWrongDirection: an ELECTION from a higher-ranked member or an
	// ANSWER from a lower-ranked one (member lists disagree on the ranking).
	ErrWrongDirection = errors.New("bully: election message against the rank order")
)

// ErrNotLeader is returned by Resign on a node that is not the leader: the
// error every election returns (elect.ErrNotLeader).
var ErrNotLeader = elect.ErrNotLeader

// StateError reports durable state that Restore cannot trust.
type StateError struct {
	Reason string
}

func (e *StateError) Error() string { return "bully: corrupt state: " + e.Reason }

// Unwrap makes a StateError a core.ErrState.
func (e *StateError) Unwrap() error { return core.ErrState }
