package elect

import (
	"time"

	"github.com/synclab/synclab/pkg/core"
)

// Event names every algorithm reports (see the package doc for their
// arguments).
const (
	EventElectionStarted = "election_started"
	EventElected         = "elected"
	EventDemoted         = "demoted"
	EventLeaderElected   = "leader_elected"
	EventLeaderChanged   = "leader_changed"
	EventLeaderLost      = "leader_lost"
)

// LeadershipEvent reports whether name is one of the shared event names
// (what `electd watch` shows).
func LeadershipEvent(name string) bool {
	switch name {
	case EventElectionStarted, EventElected, EventDemoted, EventLeaderElected, EventLeaderChanged, EventLeaderLost:
		return true
	}
	return false
}

// Change is one leadership change, as the core saw it.
type Change struct {
	// Event is one of the Event* names.
	Event string
	// Leader is the leader the change is about: the new one, this member
	// for elected and demoted, the lost one for leader_lost; 0 for
	// election_started.
	Leader uint32
	// Term is the term the change happened in.
	Term uint64
	// Previous is the leader before (leader_changed only).
	Previous uint32
	// Reason says why (election_started, demoted, leader_lost), in the
	// algorithm's words ("leader_lost", "resigned", "startup", ...).
	Reason string
	// At is the local time of the change.
	At time.Time
}

// CoreEvent renders the change as the event the core reports: the one
// format hooks, logs and `electd watch` see for every algorithm.
func (c Change) CoreEvent() core.Event {
	switch c.Event {
	case EventElectionStarted:
		return core.Event{Name: c.Event, Msg: "starting an election", Args: []any{"term", c.Term, "reason", c.Reason}}
	case EventElected:
		return core.Event{Name: c.Event, Msg: "elected leader", Args: []any{"leader", c.Leader, "term", c.Term}}
	case EventDemoted:
		return core.Event{Name: c.Event, Msg: "stepped down as leader", Args: []any{"leader", c.Leader, "term", c.Term, "reason", c.Reason}}
	case EventLeaderElected:
		return core.Event{Name: c.Event, Msg: "leader known", Args: []any{"leader", c.Leader, "term", c.Term}}
	case EventLeaderChanged:
		return core.Event{Name: c.Event, Msg: "leader changed", Args: []any{"leader", c.Leader, "term", c.Term, "previous", c.Previous}}
	case EventLeaderLost:
		return core.Event{Name: c.Event, Msg: "lost the leader", Args: []any{"leader", c.Leader, "term", c.Term, "reason", c.Reason}}
	}
	return core.Event{Name: c.Event, Args: []any{"leader", c.Leader, "term", c.Term}}
}

// MaxPendingChanges bounds the changes a core keeps undrained.
const MaxPendingChanges = 1024

// Announcer is what an algorithm embeds to report leadership the shared
// way: it records typed Changes (drained with Changes) and returns the
// matching core.Event for the algorithm to put in its Ready, in the order
// of its other events. Leader works out leader_elected, leader_changed and
// leader_lost from the leader the algorithm knows after each transition, so
// that every algorithm reports them by the same rules:
//
//   - leader_lost when a known leader is no longer known;
//   - leader_elected when a leader becomes known, or the known one moves to
//     another term;
//   - leader_changed, after leader_elected, when it is another member than
//     the last leader known (not when the same leader is found again after
//     a false suspicion).
type Announcer struct {
	lead, last uint32 // the leader as last announced (0: none); the last non-zero one
	term       uint64
	since      time.Time
	changes    []Change
	dropped    uint64
}

// Leader announces that after a transition this member knows lead (0:
// none) in term, at now; reason says why a leader was lost. It returns the
// events to report, none if nothing changed.
func (a *Announcer) Leader(lead uint32, term uint64, now time.Time, reason string) []core.Event {
	var out []core.Event
	switch {
	case lead == 0 && a.lead != 0:
		out = append(out, a.record(Change{Event: EventLeaderLost, Leader: a.lead, Term: a.term, Reason: reason, At: now}))
		a.lead, a.since = 0, now
	case lead != 0 && (lead != a.lead || term != a.term):
		out = append(out, a.record(Change{Event: EventLeaderElected, Leader: lead, Term: term, At: now}))
		if a.last != 0 && a.last != lead {
			out = append(out, a.record(Change{Event: EventLeaderChanged, Leader: lead, Term: term, Previous: a.last, At: now}))
		}
		if lead != a.lead {
			a.since = now
		}
		a.lead, a.last = lead, lead
	}
	a.term = term
	return out
}

// ElectionStarted records that this member started an election.
func (a *Announcer) ElectionStarted(term uint64, reason string, now time.Time) core.Event {
	return a.record(Change{Event: EventElectionStarted, Term: term, Reason: reason, At: now})
}

// Elected records that this member, self, became leader of term.
func (a *Announcer) Elected(self uint32, term uint64, now time.Time) core.Event {
	return a.record(Change{Event: EventElected, Leader: self, Term: term, At: now})
}

// Demoted records that this member, self, stopped leading.
func (a *Announcer) Demoted(self uint32, term uint64, reason string, now time.Time) core.Event {
	return a.record(Change{Event: EventDemoted, Leader: self, Term: term, Reason: reason, At: now})
}

func (a *Announcer) record(c Change) core.Event {
	if len(a.changes) == MaxPendingChanges {
		copy(a.changes, a.changes[1:])
		a.changes = a.changes[:len(a.changes)-1]
		a.dropped++
	}
	a.changes = append(a.changes, c)
	return c.CoreEvent()
}

// Since is when the current leader became known (or the last one was
// lost); zero before the first change.
func (a *Announcer) Since() time.Time { return a.since }

// Changes drains the recorded changes, oldest first.
func (a *Announcer) Changes() []Change {
	c := a.changes
	a.changes = nil
	return c
}

// Dropped counts changes dropped because nobody drained them.
func (a *Announcer) Dropped() uint64 { return a.dropped }
