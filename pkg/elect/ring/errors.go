package ring

import (
	"errors"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
)

// Step rejects a message, and counts the rejection, with one of these
// errors (wrapped with the details), or with core.ErrUnknownMember,
// core.ErrUnexpectedKind, a term refused by pkg/epoch or a
// *wire.DecodeError. A rejected message has no effect on the core.
var (
	// ErrFromSelf: a frame that claims to come from this member.
	ErrFromSelf = errors.New("ring: message from self")
	// ErrForgedClaim: a heartbeat from a member that does not own its
	// term, or an announcement of a leader that does not own its term.
	ErrForgedClaim = errors.New("ring: claim of a term the leader does not own")
	// ErrNotMember: an origin, candidate, leader or listed ID that is not
	// a member (or a list naming one twice, or longer than the ring).
	ErrNotMember = errors.New("ring: election names a non-member")
	// ErrImplausible: a Franklin round beyond what the ring can need, an
	// attempt far ahead of this member's, or a field another variant
	// uses: nobody running this algorithm sends it.
	ErrImplausible = errors.New("ring: implausible election message")
)

// ErrNotLeader is returned by Resign on a member that does not lead.
var ErrNotLeader = elect.ErrNotLeader

var rejectLabels = core.ErrorLabels{
	{Err: ErrFromSelf, Label: "from_self"},
	{Err: ErrForgedClaim, Label: "forged_claim"},
	{Err: ErrNotMember, Label: "not_member"},
	{Err: ErrImplausible, Label: "implausible"},
	{Err: core.ErrUnknownMember, Label: "unknown_member"},
	{Err: core.ErrUnexpectedKind, Label: "unexpected_kind"},
}
