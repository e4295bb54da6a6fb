package ring

import (
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/internal/electcount"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

// ringKinds are the kinds a ring core counts, in counter order.
var ringKinds = []wire.Kind{wire.KindRingElection, wire.KindRingCoordinator, wire.KindRingAck, wire.KindRingHeartbeat}

// counters are the ring's own counters beside the ones every election
// keeps (electcount: messages by kind, refusals, elections started,
// leader timeouts, stale frames, the last election's cost).
type counters struct {
	electcount.Counts
	decided              uint64 // elections this member decided (announced a leader)
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
}

func (c *counters) reject(err error) { c.RejectErr(rejectLabels, err) }

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

	Decided       uint64 `json:"elections_decided"`
	StaleMessages uint64 `json:"stale_messages"`
	StaleAttempts uint64 `json:"stale_attempts,omitempty"`
	StaleRounds   uint64 `json:"stale_rounds,omitempty"`
	Duplicates    uint64 `json:"duplicates,omitempty"`
	// HopsUndone counts hops numbered below a number forged in their
	// sender's name and stamped after it, which started the sender's
	// duplicate window again (delivery.Filter).
	HopsUndone     uint64 `json:"hops_undone,omitempty"`
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
		StaleMessages:   c.counts.Stale,
		StaleAttempts:   c.counts.staleAttempt,
		StaleRounds:     c.counts.staleRound,
		Duplicates:      c.counts.duplicates,
		HopsUndone:      c.seen.Undone(),
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
		Algorithm:      c.cfg.Variant.String(),
		ID:             c.id,
		Role:           c.Role(),
		Term:           c.term,
		Round:          epoch.Round(c.term),
		Leader:         c.lead,
		LeaderSince:    c.announced.Since(),
		Phase:          c.phase(),
		ChangesDropped: c.announced.Dropped(),
		Detail:         c.Detail(),
	}
	c.counts.Fill(&s, ringKinds)
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
	c.counts.Metrics(m, ringKinds, c.lead, c.leading, &c.bugs)
	m.GaugeBool("synclab_elect_yielding", "1 if this node resigned and follows whoever leads, else 0.", c.yielding)
	m.Gauge("synclab_elect_ring_round", "Franklin's round in the current election (0 for the other variants).", float64(c.el.round))
	m.Gauge("synclab_elect_ring_unacknowledged", "Election hops waiting for the neighbour's acknowledgement.", float64(c.out.Len()+c.quick.Len()))
	m.Counter("synclab_elect_terms_claimed_total", "Elections this node decided (announced a leader's term).", float64(c.counts.decided))
	m.Counter("synclab_elect_ring_hops_resent_total", "Election hops sent again for want of an acknowledgement.", float64(c.counts.resent))
	m.Counter("synclab_elect_ring_skips_total", "Successors skipped as dead after HopTries unacknowledged sends.", float64(c.counts.skips))
}
