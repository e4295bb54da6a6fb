package majority

import (
	"fmt"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/epoch"
)

// Detail is the majority election's own part of the status.
type Detail struct {
	// The durations it runs with (nanoseconds in JSON).
	Renew       time.Duration `json:"renew_ns"`
	Lease       time.Duration `json:"lease_ns"`
	Margin      time.Duration `json:"margin_ns"`
	VoteTimeout time.Duration `json:"vote_timeout_ns"`
	Stagger     time.Duration `json:"stagger_ns"`
	MaxDriftPPM int           `json:"max_drift_ppm"`

	// Weight is this member's vote; TotalWeight all of them; Needed
	// the least weight that elects (more than half).
	Weight      uint32 `json:"weight"`
	TotalWeight uint64 `json:"total_weight"`
	Needed      uint64 `json:"needed_weight"`
	// LeaseLeft is how long this leader still believes it leads.
	LeaseLeft time.Duration `json:"lease_left_ns,omitempty"`
	// BoundTo is the member this node's vote is promised to, for BoundFor.
	BoundTo  uint32        `json:"bound_to,omitempty"`
	BoundFor time.Duration `json:"bound_for_ns,omitempty"`
	// Recovering is how long a restarted node still refuses to vote.
	Recovering time.Duration `json:"recovering_ns,omitempty"`
	// Uptime is this member's uninterrupted uptime (the stability rule).
	Uptime time.Duration `json:"uptime_ns"`
	// StandingOrder is the order in which the members stand once the
	// leader is gone: what this leader announces in its renewals, or
	// what a follower last heard from its leader (empty: none known
	// within two leases; then a member staggers by the uptimes it heard).
	StandingOrder []uint32 `json:"standing_order,omitempty"`
	// LastVote says how this node's last candidacy or lease ended.
	LastVote     string `json:"last_vote"`
	TermsClaimed uint64 `json:"terms_claimed"`
	TermCredit   uint32 `json:"term_credit"`
	Exhausted    string `json:"exhausted,omitempty"`
}

// Status returns the Report (core.Core).
func (c *Core) Status() any { return c.Report() }

// Detail returns the majority election's own status.
func (c *Core) Detail() Detail {
	d := Detail{Renew: c.cfg.Renew, Lease: c.cfg.Lease, Margin: c.cfg.Margin, VoteTimeout: c.cfg.VoteTimeout,
		Stagger: c.cfg.Stagger, MaxDriftPPM: MaxDriftPPM, Weight: c.weight, TotalWeight: c.voters.Total(),
		Needed: c.voters.Needed(), Uptime: c.uptimeNow(), LastVote: c.lastVote, TermsClaimed: c.claims,
		TermCredit: c.guard.Credit(c.limit, int64(c.now.Sub(c.start)))}
	if c.Leads(c.now) {
		d.LeaseLeft = c.leaseUntil.Sub(c.now)
	}
	switch {
	case c.role == elect.RoleLeader:
		d.StandingOrder = c.standingOrder()
	case c.rankFresh():
		d.StandingOrder = slices.Clone(c.ranks)
	}
	if c.bound() {
		d.BoundTo, d.BoundFor = c.holder, c.boundUntil.Sub(c.now)
	}
	if c.recovering() {
		d.Recovering = c.recoverUntil.Sub(c.now)
	}
	if c.exhausted != nil {
		d.Exhausted = c.exhausted.Error()
	}
	return d
}

// Report returns this node's view of the election (elect.Elector).
func (c *Core) Report() elect.Status {
	s := elect.Status{
		Algorithm: Algorithm.Name, ID: c.id, Role: c.role, Term: c.term, Round: epoch.Round(c.term),
		Leader: c.lead, LeaderSince: c.announced.Since(), Phase: c.phase(),
		ChangesDropped: c.announced.Dropped(), Detail: c.Detail(),
	}
	c.counts.Fill(&s, Kinds)
	for i, m := range c.cfg.Members {
		s.Members = append(s.Members, elect.MemberStatus{ID: m.ID, Priority: m.Weight, Self: m.ID == c.id, LastHeard: c.heard[i]})
	}
	return s
}

// phase says where the election is, and when there is no leader, why.
func (c *Core) phase() string {
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	switch {
	case c.role == elect.RoleLeader && c.ledTerm != c.term:
		return fmt.Sprintf("leading term %#x: lease %s left; term %#x waits for its state write", c.ledTerm, ms(c.leaseUntil.Sub(c.now)), c.term)
	case c.role == elect.RoleLeader:
		return fmt.Sprintf("leading: lease %s left", ms(c.leaseUntil.Sub(c.now)))
	case c.role == elect.RoleCandidate && c.unsavedWin != 0:
		return "candidate: won, leads once its term's state write succeeds: " + c.tallyText()
	case c.role == elect.RoleCandidate:
		return "candidate: " + c.tallyText()
	case c.lead != 0:
		return fmt.Sprintf("following %d", c.lead)
	case c.exhausted != nil:
		return "no leader: terms exhausted"
	case c.recovering():
		return fmt.Sprintf("no leader: restarted, no vote for %s (a lease granted before the restart may still run)", ms(c.recoverUntil.Sub(c.now)))
	case c.bound() && c.holder != c.id:
		return fmt.Sprintf("no leader: vote promised to %d for %s", c.holder, ms(c.boundUntil.Sub(c.now)))
	}
	return "no leader: no majority (last election: " + c.lastVote + ")"
}

// Metrics exports the election's state and counters.
func (c *Core) Metrics(m *core.MetricSet) {
	m.Gauge("synclab_elect_term_round", "Round of the highest term seen (term = round << 32 | owner ID).", float64(epoch.Round(c.term)))
	lease := 0.0
	if c.Leads(c.now) {
		lease = c.leaseUntil.Sub(c.now).Seconds()
	}
	m.Gauge("synclab_elect_lease_seconds", "How long this leader still believes it leads (0: not leading).", lease)
	m.Counter("synclab_elect_terms_claimed_total", "Terms this node claimed as leader.", float64(c.claims))
	c.counts.Metrics(m, Kinds, c.lead, c.Leads(c.now), &c.bugs)
}
