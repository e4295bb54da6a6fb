package ring

import (
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

// ringKinds are the kinds a ring core counts, in counter order.
var ringKinds = [...]wire.Kind{wire.KindRingElection, wire.KindRingCoordinator, wire.KindRingAck, wire.KindRingHeartbeat}

func kindIndex(k wire.Kind) int {
	for i, rk := range ringKinds {
		if rk == k {
			return i
		}
	}
	panic("ring: no counter for kind " + k.String())
}

type counters struct {
	elections            uint64 // elections this member initiated
	decided              uint64 // elections this member decided (announced a leader)
	leaderTimeouts       uint64
	stale                uint64 // frames of an older term
	staleAttempt         uint64 // election messages of an older attempt
	staleRound           uint64 // Franklin messages of a round this member is past
	duplicates           uint64 // hops received again (resent, duplicated)
	swallowed            uint64 // election messages that went no further here
	announcementsStopped uint64 // announcements that reached a member that knew
	deadDropped          uint64 // messages of a member known dead, dropped
	textbookSwallowed    uint64 // Textbook: announcements taken for one's own
	resent               uint64 // hops sent again for want of an ack
	skips                uint64 // successors skipped as dead
	loopback             uint64 // hops that came back to this member (nobody else live)
	stranded             uint64 // others' messages with nobody live to pass them to
	outboxFull           uint64 // hops dropped: too many unacknowledged
	sent                 [len(ringKinds)]uint64
	received             [len(ringKinds)]uint64
	rejected             map[string]uint64
}

func (c *counters) reject(err error) {
	if c.rejected == nil {
		c.rejected = make(map[string]uint64)
	}
	c.rejected[rejectReason(err)]++
}

// hops is the election messages sent: elections and announcements,
// resends included (the messages the notes count, plus what loss costs).
func (c *counters) hops() uint64 {
	return c.sent[kindIndex(wire.KindRingElection)] + c.sent[kindIndex(wire.KindRingCoordinator)]
}

// Detail is the ring's own part of the status (elect.Status.Detail).
type Detail struct {
	Variant string   `json:"variant"`
	Ring    []uint32 `json:"ring"` // the logical ring, successor = next
	// Successor and Predecessor are the live neighbours this member passes
	// messages to now (skipping members that did not acknowledge).
	Successor   uint32   `json:"successor"`
	Predecessor uint32   `json:"predecessor"`
	Skipped     []uint32 `json:"skipped,omitempty"`

	Heartbeat       time.Duration `json:"heartbeat_ns"`
	LeaderTimeout   time.Duration `json:"leader_timeout_ns"`
	HopTimeout      time.Duration `json:"hop_timeout_ns"`
	HopTries        int           `json:"hop_tries"`
	ElectionTimeout time.Duration `json:"election_timeout_ns"`
	Stagger         time.Duration `json:"stagger_ns"`

	// Attempt is the election attempt within the term (a timed-out
	// election starts the next); Round is Franklin's.
	Attempt  uint32 `json:"attempt"`
	Round    uint32 `json:"round,omitempty"`
	Active   bool   `json:"active,omitempty"`
	Yielding bool   `json:"yielding,omitempty"`

	Decided        uint64 `json:"elections_decided"`
	StaleMessages  uint64 `json:"stale_messages"`
	StaleAttempts  uint64 `json:"stale_attempts,omitempty"`
	StaleRounds    uint64 `json:"stale_rounds,omitempty"`
	Duplicates     uint64 `json:"duplicates,omitempty"`
	Swallowed      uint64 `json:"swallowed"`
	Resent         uint64 `json:"hops_resent"`
	Skips          uint64 `json:"skips"`
	Loopback       uint64 `json:"loopback,omitempty"`
	Stranded       uint64 `json:"stranded,omitempty"`
	OutboxFull     uint64 `json:"outbox_full,omitempty"`
	DeadDropped    uint64 `json:"dead_dropped,omitempty"`
	Unacknowledged int    `json:"unacknowledged"`
	TermCredit     uint32 `json:"term_credit"`
	Exhausted      string `json:"exhausted,omitempty"`
}

// Status returns the Report (as any, for core.Core).
func (c *Core) Status() any { return c.Report() }

// Detail returns the ring's own part of the status.
func (c *Core) Detail() Detail {
	d := Detail{
		Variant:         c.cfg.Variant.String(),
		Ring:            c.ring,
		Successor:       c.next(+1),
		Predecessor:     c.next(-1),
		Heartbeat:       c.cfg.Heartbeat,
		LeaderTimeout:   c.cfg.LeaderTimeout,
		HopTimeout:      c.cfg.HopTimeout,
		HopTries:        c.cfg.HopTries,
		ElectionTimeout: c.cfg.ElectionTimeout,
		Stagger:         c.cfg.Stagger,
		Attempt:         c.el.attempt,
		Round:           c.el.round,
		Active:          c.el.active,
		Yielding:        c.yielding,
		Decided:         c.counts.decided,
		StaleMessages:   c.counts.stale,
		StaleAttempts:   c.counts.staleAttempt,
		StaleRounds:     c.counts.staleRound,
		Duplicates:      c.counts.duplicates,
		Swallowed:       c.counts.swallowed,
		Resent:          c.counts.resent,
		Skips:           c.counts.skips,
		Loopback:        c.counts.loopback,
		Stranded:        c.counts.stranded,
		OutboxFull:      c.counts.outboxFull,
		DeadDropped:     c.counts.deadDropped,
		Unacknowledged:  c.out.Len() + c.quick.Len(),
		TermCredit:      c.guard.Credit(c.limit, int64(c.now.Sub(c.start))),
	}
	for _, id := range c.ring {
		if c.isSkipped(id) {
			d.Skipped = append(d.Skipped, id)
		}
	}
	if c.exhausted != nil {
		d.Exhausted = c.exhausted.Error()
	}
	return d
}

// Report returns this member's view of the election (elect.Elector).
func (c *Core) Report() elect.Status {
	s := elect.Status{
		Algorithm:        c.cfg.Variant.String(),
		ID:               c.id,
		Role:             c.Role(),
		Term:             c.term,
		Round:            epoch.Round(c.term),
		Leader:           c.lead,
		LeaderSince:      c.announced.Since(),
		Phase:            c.phase(),
		ElectionsStarted: c.counts.elections,
		LeaderTimeouts:   c.counts.leaderTimeouts,
		Sent:             make(map[string]uint64, len(ringKinds)),
		Received:         make(map[string]uint64, len(ringKinds)),
		ChangesDropped:   c.announced.Dropped(),
		Detail:           c.Detail(),
	}
	if c.last != nil {
		e := *c.last
		if e.Decided.IsZero() {
			e.Sent = c.counts.hops() - c.hopsBefore
		}
		s.LastElection = &e
	}
	for i, k := range ringKinds {
		s.Sent[k.String()] = c.counts.sent[i]
		s.Received[k.String()] = c.counts.received[i]
	}
	if len(c.counts.rejected) > 0 {
		s.Rejected = make(map[string]uint64, len(c.counts.rejected))
		for k, v := range c.counts.rejected {
			s.Rejected[k] = v
		}
	}
	for _, id := range c.ring {
		s.Members = append(s.Members, elect.MemberStatus{ID: id, Priority: id, Self: id == c.id, LastHeard: c.heard[c.pos[id]]})
	}
	return s
}

// phase says where this member is, in the algorithm's words.
func (c *Core) phase() string {
	switch {
	case c.leading:
		return "leading"
	case c.lead != 0:
		return "following"
	case c.listening:
		return "listening for a leader (startup)"
	case c.suspect != 0:
		return "leader resigned: waiting for its predecessor's election"
	case !c.current() || !c.el.joined:
		return "waiting for an election"
	}
	switch c.cfg.Variant {
	case Franklin:
		if c.el.active {
			return fmt.Sprintf("round %d (active)", c.el.round)
		}
		return fmt.Sprintf("round %d (passive: relaying)", c.el.round)
	case ChangRoberts:
		if c.el.active {
			return "participant: waiting for the highest ID to come round"
		}
	case Naive:
		if c.el.active {
			return "candidate: waiting for its vote to come round"
		}
	case IDList, FredricksonLynch:
		if c.el.active {
			return "initiator: waiting for its list to come round"
		}
	}
	return "relaying: waiting for the coordinator"
}

// Metrics exports the election's state and counters (the names bully
// uses, so that one dashboard shows either).
func (c *Core) Metrics(m *core.MetricSet) {
	m.Gauge("synclab_elect_term_round", "Round of the highest term seen (term = round << 32 | owner ID).", float64(epoch.Round(c.term)))
	m.Gauge("synclab_elect_leader_id", "Member ID of the leader this node follows; 0 if none is known.", float64(c.lead))
	m.GaugeBool("synclab_elect_is_leader", "1 if this node leads, else 0.", c.leading)
	m.GaugeBool("synclab_elect_yielding", "1 if this node resigned and follows whoever leads, else 0.", c.yielding)
	m.Gauge("synclab_elect_ring_round", "Franklin's round in the current election (0 for the other variants).", float64(c.el.round))
	m.Gauge("synclab_elect_ring_unacknowledged", "Election hops waiting for the neighbour's acknowledgement.", float64(c.out.Len()+c.quick.Len()))
	m.Counter("synclab_elect_elections_started_total", "Elections this node started.", float64(c.counts.elections))
	m.Counter("synclab_elect_terms_claimed_total", "Elections this node decided (announced a leader's term).", float64(c.counts.decided))
	m.Counter("synclab_elect_leader_timeouts_total", "Leaders given up on for silence.", float64(c.counts.leaderTimeouts))
	m.Counter("synclab_elect_stale_messages_total", "Messages of an older term, ignored.", float64(c.counts.stale))
	m.Counter("synclab_elect_ring_hops_resent_total", "Election hops sent again for want of an acknowledgement.", float64(c.counts.resent))
	m.Counter("synclab_elect_ring_skips_total", "Successors skipped as dead after HopTries unacknowledged sends.", float64(c.counts.skips))
	for i, k := range ringKinds {
		kind := core.Label{Name: "kind", Value: k.String()}
		m.Counter("synclab_elect_messages_sent_total", "Election messages sent, by kind (a broadcast counts once per recipient).", float64(c.counts.sent[i]), kind)
		m.Counter("synclab_elect_messages_received_total", "Election messages accepted, by kind.", float64(c.counts.received[i]), kind)
	}
	m.Counters("synclab_elect_messages_rejected_total", "Election messages refused, by reason.", "reason", c.counts.rejected)
	m.Counters("synclab_elect_bugs_total", "Bugs of this core it survived (an encoding of its own message that failed), by kind.", "bug", c.bugs.Counts())
}
