// Package electcount is what every election core keeps the same way:
// messages sent and received by kind, refused frames by reason, the
// elections started, leaders given up, stale frames, the last election
// with the messages sent for it (status: elect.Status via Fill), the
// metric families they all export (Metrics), and the configuration checks
// they all make (Roster, Durations over liveness.Duration, the type the
// mutex family's checks take too). Each core keeps its own counters beside
// these (bully's claims, a ring's skips and resends, ...).
package electcount

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/wire"
)

// Counts is one core's message and election counters. The zero value is
// ready to use.
type Counts struct {
	sent, received map[wire.Kind]uint64
	rejected       map[string]uint64
	Elections      uint64 // elections this member started
	LeaderTimeouts uint64 // leaders given up on
	Stale          uint64 // frames of an older term, round or incarnation

	election   *elect.ElectionStats
	sentBefore uint64
	total      uint64
}

// Sent counts n messages of kind k (a broadcast counts once per recipient).
func (c *Counts) Sent(k wire.Kind, n int) {
	if c.sent == nil {
		c.sent = map[wire.Kind]uint64{}
	}
	c.sent[k] += uint64(n)
	c.total += uint64(n)
}

// SentAside counts n messages of kind k that are no part of an
// election's cost (a ring's acknowledgements and heartbeats): in the
// counters by kind, not in ElectionStats.Sent.
func (c *Counts) SentAside(k wire.Kind, n int) {
	if c.sent == nil {
		c.sent = map[wire.Kind]uint64{}
	}
	c.sent[k] += uint64(n)
}

// Received counts one accepted message of kind k.
func (c *Counts) Received(k wire.Kind) {
	if c.received == nil {
		c.received = map[wire.Kind]uint64{}
	}
	c.received[k]++
}

// Reject counts a refused frame under label.
func (c *Counts) Reject(label string) {
	if c.rejected == nil {
		c.rejected = map[string]uint64{}
	}
	c.rejected[label]++
}

// RejectErr counts a refused frame under its label (elect.RejectReason).
func (c *Counts) RejectErr(labels core.ErrorLabels, err error) {
	c.Reject(elect.RejectReason(labels, err))
}

// ElectionStarted opens an election of term at now; startedHere counts it
// as one this member started.
func (c *Counts) ElectionStarted(term uint64, now time.Time, startedHere bool) {
	if startedHere {
		c.Elections++
	}
	c.election = &elect.ElectionStats{Term: term, Started: now}
	c.sentBefore = c.total
}

// Decided closes the open election: leader is known at now.
func (c *Counts) Decided(leader uint32, now time.Time) {
	if e := c.election; e != nil && e.Decided.IsZero() {
		e.Decided, e.Leader, e.Sent = now, leader, c.total-c.sentBefore
	}
}

// Running reports whether an election is open.
func (c *Counts) Running() bool { return c.election != nil && c.election.Decided.IsZero() }

// Fill puts the counters into s: Sent and Received for every kind of
// kinds, Rejected, LastElection, the election counts.
func (c *Counts) Fill(s *elect.Status, kinds []wire.Kind) {
	s.Sent = make(map[string]uint64, len(kinds))
	s.Received = make(map[string]uint64, len(kinds))
	for _, k := range kinds {
		s.Sent[k.String()] = c.sent[k]
		s.Received[k.String()] = c.received[k]
	}
	if len(c.rejected) > 0 {
		s.Rejected = maps.Clone(c.rejected)
	}
	s.ElectionsStarted, s.LeaderTimeouts = c.Elections, c.LeaderTimeouts
	if c.election != nil {
		e := *c.election
		if e.Decided.IsZero() {
			e.Sent = c.total - c.sentBefore
		}
		s.LastElection = &e
	}
}

// Metrics exports the families every election shares.
func (c *Counts) Metrics(m *core.MetricSet, kinds []wire.Kind, lead uint32, leading bool, bugs *core.Bugs) {
	m.Gauge("synclab_elect_leader_id", "Member ID of the leader this node follows; 0 if none is known.", float64(lead))
	m.GaugeBool("synclab_elect_is_leader", "1 if this node leads, else 0.", leading)
	m.Counter("synclab_elect_elections_started_total", "Elections this node started.", float64(c.Elections))
	m.Counter("synclab_elect_leader_timeouts_total", "Leaders given up on for silence.", float64(c.LeaderTimeouts))
	m.Counter("synclab_elect_stale_messages_total", "Messages of an older term, round or incarnation, ignored.", float64(c.Stale))
	for _, k := range kinds {
		kind := core.Label{Name: "kind", Value: k.String()}
		m.Counter("synclab_elect_messages_sent_total", "Election messages sent, by kind (a broadcast counts once per recipient).", float64(c.sent[k]), kind)
		m.Counter("synclab_elect_messages_received_total", "Election messages accepted, by kind.", float64(c.received[k]), kind)
	}
	m.Counters("synclab_elect_messages_rejected_total", "Election messages refused, by reason.", "reason", c.rejected)
	m.Counters("synclab_elect_bugs_total", "Bugs of this core it survived (an encoding of its own message that failed), by kind.", "bug", bugs.Counts())
}

// Labels is an algorithm's own reject labels followed by the ones every
// core shares (a stranger, a kind it does not step).
func Labels(own ...core.ErrorLabel) core.ErrorLabels {
	return append(core.ErrorLabels(own),
		core.ErrorLabel{Err: core.ErrUnknownMember, Label: "unknown_member"},
		core.ErrorLabel{Err: core.ErrUnexpectedKind, Label: "unexpected_kind"})
}

// Durations gives every zero duration its default and checks each with
// liveness.CheckTimeout (liveness.FillTimers, the check the mutex family
// shares); errors name the algorithm (what) and the default.
func Durations(what string, ds ...liveness.Duration) error {
	for _, d := range ds {
		if err := liveness.FillTimers(d); err != nil {
			return fmt.Errorf("%s: %w (0: default %v)", what, err, d.Default)
		}
	}
	return nil
}

// Roster checks the list an algorithm orders or weighs the members by
// (bully's ranking, a ring's order, the majority's weights): the rules
// of liveness.CheckMembers, and, when the member list is given, the same
// members. what names the algorithm and noun the list ("ranked", "in the
// ring", "weighted"), for the errors.
func Roster(what, noun string, self uint32, listed, members []uint32) error {
	if len(listed) == 0 {
		return fmt.Errorf("%s: empty member list", what)
	}
	if err := liveness.CheckMembers(self, listed); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if len(members) == 0 {
		return nil
	}
	if len(members) != len(listed) {
		return fmt.Errorf("%s: %d members %s, %d members", what, len(listed), noun, len(members))
	}
	for _, id := range members {
		if !slices.Contains(listed, id) {
			return fmt.Errorf("%s: member %d is not %s", what, id, noun)
		}
	}
	return nil
}
