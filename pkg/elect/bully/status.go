package bully

import (
	"errors"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

// electionKinds are the kinds a bully core counts, in counter order.
var electionKinds = [...]wire.Kind{wire.KindElection, wire.KindAnswer, wire.KindCoordinator, wire.KindLeaderHeartbeat}

func kindIndex(k wire.Kind) int {
	for i, ek := range electionKinds {
		if ek == k {
			return i
		}
	}
	panic("bully: no counter for kind " + k.String())
}

type counters struct {
	elections      uint64 // elections started
	claims         uint64 // terms claimed (elected or reasserted)
	leaderTimeouts uint64 // leaders given up for silence
	stale          uint64 // messages of an older term
	contested      uint64 // stale claims of our own leader answered with our term
	sent           [len(electionKinds)]uint64
	received       [len(electionKinds)]uint64
	rejected       map[string]uint64
}

func (c *counters) reject(err error) {
	if c.rejected == nil {
		c.rejected = make(map[string]uint64)
	}
	c.rejected[rejectReason(err)]++
}

// rejectReason names a rejection for the counters: short and stable.
func rejectReason(err error) string {
	switch {
	case errors.Is(err, ErrFromSelf):
		return "from_self"
	case errors.Is(err, ErrForgedClaim):
		return "forged_claim"
	case errors.Is(err, ErrRankMismatch):
		return "rank_mismatch"
	case errors.Is(err, ErrWrongDirection):
		return "wrong_direction"
	case errors.Is(err, core.ErrUnknownMember):
		return "unknown_member"
	case errors.Is(err, core.ErrUnexpectedKind):
		return "unexpected_kind"
	}
	if r := epoch.Reason(err); r != "" {
		return "term_" + r // "term_absurd", "term_too_fast", "term_exhausted"
	}
	return "payload_" + wire.Reason(err) // "payload_truncated", ...
}

// Status is a node's view of the election, for `electd status` (it marshals
// to JSON). Times are the node's local clock.
type Status struct {
	ID     uint32 `json:"id"`
	Role   Role   `json:"role"`
	Term   uint64 `json:"term"`
	Round  uint32 `json:"term_round"` // TermRound(Term)
	Leader uint32 `json:"leader"`     // 0: none known
	// LeaderSince is when this node learned the current leader (or lost the
	// last one, when Leader is 0). Zero before the first change.
	LeaderSince time.Time      `json:"leader_since,omitzero"`
	Yielding    bool           `json:"yielding,omitempty"` // resigned: follows, does not preempt
	Members     []MemberStatus `json:"members"`

	ElectionsStarted uint64 `json:"elections_started"`
	TermsClaimed     uint64 `json:"terms_claimed"`
	LeaderTimeouts   uint64 `json:"leader_timeouts"`
	StaleMessages    uint64 `json:"stale_messages"`
	// LeaderContested counts claims of an older term from the leader this
	// node follows in a newer one, answered by telling it that term: the
	// trace of a forged claim in the leader's name.
	LeaderContested uint64 `json:"leader_contested,omitempty"`
	// TermCredit is how many rounds above the current term a frame may
	// carry now (see pkg/epoch): TermBurst after a rest.
	TermCredit uint32 `json:"term_credit"`
	// Exhausted, when set, says why this node can no longer claim a term.
	Exhausted string            `json:"exhausted,omitempty"`
	Sent      map[string]uint64 `json:"sent"`     // by kind; a broadcast counts once per recipient
	Received  map[string]uint64 `json:"received"` // by kind, accepted messages only
	Rejected  map[string]uint64 `json:"rejected,omitempty"`
}

// MemberStatus is one member as this node sees it.
type MemberStatus struct {
	ID        uint32    `json:"id"`
	Priority  uint32    `json:"priority"`
	Self      bool      `json:"self,omitempty"`
	LastHeard time.Time `json:"last_heard,omitzero"` // zero: never heard since start
}

// Status returns a Status (as any, for core.Core).
func (b *Core) Status() any { return b.View() }

// View returns this node's view of the election.
func (b *Core) View() Status {
	s := Status{
		ID:               b.cfg.ID,
		Role:             b.role,
		Term:             b.term,
		Round:            TermRound(b.term),
		Leader:           b.lead,
		LeaderSince:      b.announced.since,
		Yielding:         b.yielding,
		ElectionsStarted: b.counts.elections,
		TermsClaimed:     b.counts.claims,
		LeaderTimeouts:   b.counts.leaderTimeouts,
		StaleMessages:    b.counts.stale,
		LeaderContested:  b.counts.contested,
		TermCredit:       b.guard.Credit(b.limit, b.ticks),
		Sent:             make(map[string]uint64, len(electionKinds)),
		Received:         make(map[string]uint64, len(electionKinds)),
	}
	for i, k := range electionKinds {
		s.Sent[k.String()] = b.counts.sent[i]
		s.Received[k.String()] = b.counts.received[i]
	}
	if b.exhausted != nil {
		s.Exhausted = b.exhausted.Error()
	}
	if len(b.counts.rejected) > 0 {
		s.Rejected = make(map[string]uint64, len(b.counts.rejected))
		for k, v := range b.counts.rejected {
			s.Rejected[k] = v
		}
	}
	// Members in the configured order, as the operator wrote them.
	for _, m := range b.cfg.Members {
		s.Members = append(s.Members, MemberStatus{
			ID:        m.ID,
			Priority:  m.Priority,
			Self:      m.ID == b.cfg.ID,
			LastHeard: b.heard[b.pos[m.ID]],
		})
	}
	return s
}
