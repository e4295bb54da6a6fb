package elect

import (
	"time"
)

// Status is a member's view of the election, for `electd status` (human
// and JSON) whatever the algorithm. Times are the member's local clock.
type Status struct {
	Algorithm string `json:"algorithm"`
	ID        uint32 `json:"id"`
	Role      Role   `json:"role"`
	Term      uint64 `json:"term"`
	// Round is the term's round where terms are owned epochs (pkg/epoch:
	// round<<32 | owner), else the term itself as far as it fits.
	Round  uint32 `json:"term_round"`
	Leader uint32 `json:"leader"` // 0: none known
	// LeaderSince is when this member learned the current leader (or lost
	// the last one, when Leader is 0). Zero before the first change.
	LeaderSince time.Time `json:"leader_since,omitzero"`
	// Phase is where the algorithm is, in its own words: "idle", "waiting
	// for coordinator", Franklin's "round 3", Yo-Yo's "orientation".
	Phase   string         `json:"phase,omitempty"`
	Members []MemberStatus `json:"members"`

	ElectionsStarted uint64 `json:"elections_started"` // by this member
	LeaderTimeouts   uint64 `json:"leader_timeouts"`   // leaders given up for silence
	// LastElection is the most recent election this member took part in
	// (started, or learned of), with the messages it sent for it; nil
	// before the first.
	LastElection *ElectionStats `json:"last_election,omitempty"`
	// Sent and Received count messages by kind since start (a broadcast
	// counts once per recipient); Rejected counts refused frames by reason.
	Sent     map[string]uint64 `json:"sent"`
	Received map[string]uint64 `json:"received"`
	Rejected map[string]uint64 `json:"rejected,omitempty"`
	// ChangesDropped counts leadership changes nobody drained in time.
	ChangesDropped uint64 `json:"changes_dropped,omitempty"`
	// Detail is the algorithm's own view (bully: yielding, terms claimed,
	// term credit...). It marshals as a JSON object; decoded from JSON it
	// is a map[string]any.
	Detail any `json:"detail,omitempty"`
}

// MemberStatus is one member as this member sees it.
type MemberStatus struct {
	ID uint32 `json:"id"`
	// Priority is the member's rank or weight where the algorithm has one.
	Priority  uint32    `json:"priority"`
	Self      bool      `json:"self,omitempty"`
	LastHeard time.Time `json:"last_heard,omitzero"` // zero: never heard since start
}

// ElectionStats is one election as this member saw it.
type ElectionStats struct {
	Term    uint64    `json:"term"`             // the term it started in
	Started time.Time `json:"started"`          // local time it began (here)
	Decided time.Time `json:"decided,omitzero"` // a leader was known; zero while running
	Leader  uint32    `json:"leader,omitempty"` // who won
	Sent    uint64    `json:"messages_sent"`    // election messages this member sent for it
}
