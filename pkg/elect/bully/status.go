package bully

import (
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/internal/electcount"
	"github.com/synclab/synclab/pkg/wire"
)

// electionKinds are the kinds a bully core counts, in counter order.
var electionKinds = []wire.Kind{wire.KindElection, wire.KindAnswer, wire.KindCoordinator, wire.KindLeaderHeartbeat, wire.KindLeaderProbe, wire.KindLeaderWatch}

// counters are bully's own counters beside the ones every election keeps
// (electcount: messages by kind, refusals, elections started, leader
// timeouts, stale frames, the cost of the last election it started).
type counters struct {
	electcount.Counts
	claims    uint64 // terms claimed (elected or reasserted)
	contested uint64 // stale claims of our own leader answered with our term
	overslept uint64 // role timers found far past their deadline, waited again
	// probes sent to a silent leader; probes answered with a heartbeat
	probes, probesAnswered uint64
	// hints about the leader acted on, ignored; their probes; episodes
	// cancelled by the leader's answer; leaders given up after one
	hints, hintsIgnored, hintProbes, hintsCancelled, hintTimeouts uint64
	// episodes whose end came at a late Tick and waited (lateGiveUp)
	hintRechecks uint64
	// episodes on a refused dial the leader's answer cancelled (portRefused)
	portRefused uint64
}

func (c *counters) reject(err error) { c.RejectErr(rejectLabels, err) }

// rejectLabels name Step's own errors for the counters: short and stable.
var rejectLabels = core.ErrorLabels{
	{Err: ErrFromSelf, Label: "from_self"},
	{Err: ErrForgedClaim, Label: "forged_claim"},
	{Err: ErrRankMismatch, Label: "rank_mismatch"},
	{Err: ErrWrongDirection, Label: "wrong_direction"},
	{Err: core.ErrUnknownMember, Label: "unknown_member"},
	{Err: core.ErrUnexpectedKind, Label: "unexpected_kind"},
}

// Detail is bully's own part of the status (elect.Status.Detail).
type Detail struct {
	// The timeouts it runs with, as configured (nanoseconds in JSON).
	Heartbeat          time.Duration `json:"heartbeat_ns"`
	LeaderTimeout      time.Duration `json:"leader_timeout_ns"`
	AnswerTimeout      time.Duration `json:"answer_timeout_ns"`
	CoordinatorTimeout time.Duration `json:"coordinator_timeout_ns"`
	Stagger            time.Duration `json:"stagger_ns"`
	Probe              time.Duration `json:"probe_ns,omitempty"` // 0: off

	Yielding     bool   `json:"yielding,omitempty"` // resigned: follows, does not preempt
	TermsClaimed uint64 `json:"terms_claimed"`
	// Reserved is the reservation on disk: the term this member may
	// claim without a write, its next claim made durable with the term
	// it follows (Config.Reserve; 0: none on disk yet); right after a
	// restart, the earlier life's reservation, which it claims only
	// above. ClaimsReserved counts the claims it covered,
	// whose COORDINATOR left before the write that follows it.
	Reserved       uint64 `json:"reserved,omitempty"`
	ClaimsReserved uint64 `json:"claims_reserved,omitempty"`
	// ClaimWaiting: this member won (or must take the cluster back) but
	// holds its claim until a write covers it: its state writes are
	// failing (the daemon's persist.failing says why and where).
	ClaimWaiting bool `json:"claim_waiting,omitempty"`
	// ElectionsUnanswered counts the ELECTIONs of members below it left
	// unanswered while its claim waited for a write that failed: they
	// elect among themselves meanwhile.
	ElectionsUnanswered uint64 `json:"elections_unanswered,omitempty"`
	// StaleMessages counts messages of an older term.
	StaleMessages uint64 `json:"stale_messages"`
	// LeaderContested counts claims of an older term from the leader this
	// node follows in a newer one, answered by telling it that term: the
	// trace of a forged claim in the leader's name.
	LeaderContested uint64 `json:"leader_contested,omitempty"`
	// Overslept counts role timers found past their deadline by more than
	// their length (this process stalled, or started slowly), and armed
	// again rather than acted on.
	Overslept uint64 `json:"overslept,omitempty"`
	// ProbesSent counts LEADER_PROBEs this follower sent to a leader
	// whose heartbeat was late (Config.Probe); ProbesAnswered the probes
	// this leader answered with a heartbeat. Under loss both grow by
	// about one per lost heartbeat; a follower whose probes grow by
	// nine or so a heartbeat without answers is losing its leader.
	ProbesSent     uint64 `json:"probes_sent,omitempty"`
	ProbesAnswered uint64 `json:"probes_answered,omitempty"`
	// HintProbe is Config.HintProbe (0: hints ignored). Hints counts the
	// hints that the leader's port closed this follower acted on
	// (HintsIgnored: about another member, during an episode, within
	// LeaderTimeout of the last, a refused dial to a leader whose port
	// refuses TCP (PortRefusedBy), or with HintProbe 0); HintProbes the
	// probes they sent; HintsCancelled the episodes the leader's answer
	// ended (a live leader: its link closed for another reason, or a
	// forged hint); HintTimeouts the leaders given up after one;
	// HintRechecks the episodes whose end came at a late Tick, after which
	// this follower listened a little longer before giving the leader up
	// (its process had stalled: frames may have waited unread).
	HintProbe      time.Duration `json:"hint_probe_ns,omitempty"`
	Hints          uint64        `json:"hints,omitempty"`
	HintsIgnored   uint64        `json:"hints_ignored,omitempty"`
	HintProbes     uint64        `json:"hint_probes,omitempty"`
	HintsCancelled uint64        `json:"hints_cancelled,omitempty"`
	HintTimeouts   uint64        `json:"hint_timeouts,omitempty"`
	HintRechecks   uint64        `json:"hint_rechecks,omitempty"`
	// LeaderPortRefused counts the episodes on a refused connection to
	// the leader's TCP port that its answer cancelled: it lives, and its
	// port refuses TCP (a firewall, a UDP-only port mapping: the port
	// hint cannot work; EventLeaderPortRefused). PortRefusedBy is the
	// leader whose refused dials this follower ignores for that (0: none).
	LeaderPortRefused uint64 `json:"leader_port_refused,omitempty"`
	PortRefusedBy     uint32 `json:"port_refused_by,omitempty"`
	// Watch is Config.Watch (0: no watch): how often this follower
	// tells its leader over their TCP link that it watches it, so that
	// the link stays open (the frames are counted by kind, leader_watch).
	Watch time.Duration `json:"watch_ns,omitempty"`
	// LeaderTimeoutNow is the timeout this follower gives its leader now,
	// as its detector runs it: LeaderTimeout and the stagger by rank,
	// plus, with probes, twice the latest of the leader's last 16
	// arrivals past the expected heartbeat (at most two heartbeats more);
	// 0 on a leader or candidate.
	LeaderTimeoutNow time.Duration `json:"leader_timeout_now_ns,omitempty"`
	// LastTimeout says why this follower last gave up on its leader (nil:
	// never): the silence, the timeout in force, the probes sent and due,
	// how late its own loop ran; Verdict sums it up (leader_silent,
	// follower_late, no_probes).
	LastTimeout *TimeoutCause `json:"last_timeout,omitempty"`
	// TermCredit is how many rounds above the current term a frame may
	// carry now (see pkg/epoch): TermBurst after a rest.
	TermCredit uint32 `json:"term_credit"`
	// Exhausted, when set, says why this node can no longer claim a term.
	Exhausted string `json:"exhausted,omitempty"`
}

// Status returns the Report (as any, for core.Core).
func (b *Core) Status() any { return b.Report() }

// Detail returns bully's own part of the status.
func (b *Core) Detail() Detail {
	d := Detail{
		Heartbeat:           b.cfg.Heartbeat,
		LeaderTimeout:       b.cfg.LeaderTimeout,
		AnswerTimeout:       b.cfg.AnswerTimeout,
		CoordinatorTimeout:  b.cfg.CoordinatorTimeout,
		Stagger:             b.cfg.Stagger,
		Probe:               b.cfg.Probe,
		Yielding:            b.yielding,
		TermsClaimed:        b.counts.claims,
		Reserved:            b.reserved,
		ClaimsReserved:      b.claimsReserved,
		ClaimWaiting:        b.claimWaits,
		ElectionsUnanswered: b.electionsUnanswered,
		StaleMessages:       b.counts.Stale,
		LeaderContested:     b.counts.contested,
		Overslept:           b.counts.overslept,
		ProbesSent:          b.counts.probes,
		ProbesAnswered:      b.counts.probesAnswered,
		HintProbe:           b.cfg.HintProbe,
		Hints:               b.counts.hints,
		HintsIgnored:        b.counts.hintsIgnored,
		HintProbes:          b.counts.hintProbes,
		HintsCancelled:      b.counts.hintsCancelled,
		HintTimeouts:        b.counts.hintTimeouts,
		HintRechecks:        b.counts.hintRechecks,
		LeaderPortRefused:   b.counts.portRefused,
		Watch:               b.cfg.Watch,
		LeaderTimeoutNow:    b.timeoutNow(),
		TermCredit:          b.guard.Credit(b.limit, b.sinceStart()),
	}
	if b.role == RoleFollower && b.refusing == b.lead && b.refusingTerm == b.term {
		d.PortRefusedBy = b.refusing
	}
	if b.lastTimeout != nil {
		c := *b.lastTimeout
		d.LastTimeout = &c
	}
	if b.exhausted != nil {
		d.Exhausted = b.exhausted.Error()
	}
	return d
}

// Report returns this node's view of the election (elect.Elector).
func (b *Core) Report() elect.Status {
	s := elect.Status{
		Algorithm:      Algorithm.Name,
		ID:             b.id,
		Role:           b.role,
		Term:           b.term,
		Round:          TermRound(b.term),
		Leader:         b.lead,
		LeaderSince:    b.announced.Since(),
		Phase:          b.phase(),
		ChangesDropped: b.announced.Dropped(),
		Detail:         b.Detail(),
	}
	b.counts.Fill(&s, electionKinds)
	// Members in the configured order, as the operator wrote them.
	for _, m := range b.cfg.Members {
		s.Members = append(s.Members, elect.MemberStatus{
			ID:        m.ID,
			Priority:  m.Priority,
			Self:      m.ID == b.id,
			LastHeard: b.heard[b.pos[m.ID]],
		})
	}
	return s
}

// phase names what the node is waiting for.
func (b *Core) phase() string {
	switch {
	case b.role == RoleLeader:
		return "leading"
	case b.role == RoleCandidate && b.claimWaits && b.claimWriteFailed:
		return "won, claim held: its state write fails (persist.failing); the members below elect among themselves meanwhile"
	case b.role == RoleCandidate && b.claimWaits:
		return "won, claim waiting for its state write"
	case b.role == RoleCandidate:
		return "waiting for answers"
	case b.lead != 0:
		return "following"
	case b.suspect != 0:
		return "leader resigned: waiting for the member below it"
	case b.exhausted != nil:
		return "terms exhausted: following only"
	}
	return "waiting for a coordinator"
}

// timeoutNow is the timeout the detector gives the leader this member
// follows; 0 when it follows none.
func (b *Core) timeoutNow() time.Duration {
	if b.role != RoleFollower || b.lead == 0 || b.lead == b.id {
		return 0
	}
	return b.det.Timeout(b.lead)
}
