package node

import (
	"fmt"
	"strings"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// Timing agreement: each member's heartbeat and leader timeout are its
// own (Agreement.Heartbeat, LeaderTimeout: not in the announcement, whose
// parts must be equal, or a member beating at 150 ms among members at
// 200 ms would be refused), but they must fit each other's: a leader
// whose heartbeats come further apart than a follower waits for one is
// given up by that follower between two of them, and the follower elects
// again, over and over (measured with electd's bully: 47 leader changes
// in 20 s, member 2 elected every 400 ms for 3 ms, every line at INFO).
// The node tells every member its own with its announcements
// (KindConfigTimings) and warns of a member whose timing does not fit.

// timingsTells is how many times, per pair of incarnations, the node
// sends its timings with its first announcements or refreshes to a member,
// besides answering the member's own once when they are news (the first
// of its incarnation: tellTimings). After that it goes on telling it, one
// more every timingsRetryGap (from timingsRetryFirst, doubling, to
// timingsRetryCap), for as long as both run: a member of this build that
// lost every early tell both ways (a loss burst or a short partition at
// the start, or one member's socket not yet up) knows no more than this
// node that the other knows the kind, and with a bound alone neither
// would tell again until one restarted, leaving a real mismatch unsaid
// for good. An older build drops each tell as unknown_kind (a counter,
// a debug line: docs/mismatch.md), so the cost of a mixed lab is about
// 3600 s / timingsRetryCap frames an hour per pair, and the pair of this
// build learns within timingsRetryCap (and the wait for the next
// announcement or refresh, which each tell rides on) after the loss ends.
//
// timingsKept is how long a member's timings are kept without another
// (an hour): a member of this build tells its own at least every
// timingsRetryCap, and a tell waits for the next announcement or refresh
// (a refresh spacing at most, wire.MaxRefreshSpacing), so two tells come
// at most a retry gap and a refresh spacing apart; kept for twice that, a
// spacing and a half more, a mismatch stays named through a lost tell;
// and timings that expire make the node ask the member (timingsDoubt),
// whose answer carries them (a clock stepped forward past timingsKept
// dropped them from status until the member's next retry). A member of
// the builds from d67b1bfe up to 98b224ae answers each tell with its own;
// of the builds from 57242fa4 before the retries, tells its own with
// every announcement or refresh once it holds the member's. A review
// measured the first value, 20 minutes, at 600 s spacings and 10% loss
// of timings: the mismatch missing from status 30 minutes in 12 hours,
// warned 8 times. Timings forged in the name of a member that never
// sends its own (an older build) are so forgotten, not kept for the
// member's whole run; and a mismatch warned of before they were
// forgotten is not warned again when the same timings come back
// (memberAgreement.warnedIssues).
const (
	timingsTells      = 2
	timingsRetryFirst = 15 * time.Second
	timingsRetryCap   = 5 * time.Minute
	timingsKept       = 2*(timingsRetryCap+2*wire.MaxRefreshSpacing*time.Second) + wire.MaxRefreshSpacing*time.Second
)

// timingsRetryGap is the wait after retry k (0, 1, ...) to a member that
// never sent its timings: timingsRetryFirst doubling to timingsRetryCap.
func timingsRetryGap(k int) time.Duration {
	return min(timingsRetryFirst<<min(max(k, 0), 16), timingsRetryCap)
}

// tellTimings queues this node's timings to member m, after an
// announcement or a refresh to it: once after the member's own timings
// came as news (the first of its incarnation, or changed: it knows the
// kind, and may have lost this node's); besides, timingsTells times per
// pair of incarnations, then once every timingsRetryGap (a new
// incarnation of either side starts again at once: a member restarted is
// told again). A pair of this build at rest so tells once every
// timingsRetryCap, not with every refresh. Without a key, a forger's
// frame buys at most two tells (its own, news, and the member's real
// ones that the node's doubt asks for: timingsDoubt), on announcements or
// refreshes the node sends anyway.
func (n *Node) tellTimings(m *memberAgreement) {
	a := n.agree
	if a.cfg.Heartbeat <= 0 || a.cfg.LeaderTimeout <= 0 {
		return
	}
	if !m.timingsOwed {
		if m.timingsToldInc != m.cfgInc || m.timingsToldOwn != n.inc {
			m.timingsToldInc, m.timingsToldOwn, m.timingsTold = m.cfgInc, n.inc, 0
		}
		// A retry time further off than the longest gap: the clock
		// stepped back past it; tell now rather than wait out the step
		// (agreeTick re-bases the rounds the tells ride on, not this).
		if m.timingsTold >= timingsTells && n.now.Before(m.timingsRetryAt) && m.timingsRetryAt.Sub(n.now) <= timingsRetryCap {
			return
		}
		m.timingsTold++
		if m.timingsTold >= timingsTells {
			m.timingsRetryAt = n.now.Add(timingsRetryGap(m.timingsTold - timingsTells))
		}
	}
	t := wire.ConfigTimings{Heartbeat: uint64(a.cfg.Heartbeat), LeaderTimeout: uint64(a.cfg.LeaderTimeout)}
	b, err := t.AppendBinary(nil)
	if err != nil {
		n.stats.drop("unsent_config") // longer than any failure detector's timeout: refused by the daemons
		return
	}
	m.timingsOwed = false
	n.own = append(n.own, core.Message{To: m.id, Kind: wire.KindConfigTimings, Payload: b})
}

// forgetTimings drops the member's timings, as of a member that never sent
// any: not shown, not judged, not answered.
func (m *memberAgreement) forgetTimings() {
	m.timings, m.timingIssues, m.timingsOwed, m.warnedIssues = nil, nil, false, ""
}

// expireTimings forgets timings unheard for timingsKept, as forgetTimings,
// but remembers the mismatch warned of: the same timings heard again are
// that mismatch still, not news.
func (m *memberAgreement) expireTimings() {
	warned := m.warnedIssues
	m.forgetTimings()
	m.warnedIssues = warned
}

// timingsReceived takes a member's authenticated timings, its sequence
// number accepted: kept for status, compared with this node's, and a
// mismatch said at WARN (notice "timing_mismatch", which the driver
// rate-limits per member) when it is new or changed, its end at INFO
// ("timing_fits") when a member warned of fits again. They count for
// nothing else: not as hearing the member (its announcement came with
// them), not in the standing.
func (n *Node) timingsReceived(f *wire.Frame, t *wire.ConfigTimings) {
	a := n.agree
	m, inc := a.announcer(f)
	if m == nil || m.cfg == nil || inc != m.cfgInc {
		// Counted, so that status shows them, under what was missing:
		// no announcement of the member held at all (a member of an
		// older build, which announces nothing: forged; or timings
		// that overtook the member's first announcement), or one of
		// another incarnation (a forger, or timings that overtook the
		// member's new announcement).
		switch {
		case m == nil:
		case m.cfg == nil:
			n.stats.drop("timings_unannounced")
		default:
			n.stats.drop("timings_other_incarnation")
		}
		// Only of the incarnation the member announced: a member
		// sends them after its announcement. Without a key, one
		// forged in the name of an older build (which announces
		// nothing, so nothing forgot them) used to stay for its whole
		// run: a status line all along, and this node telling it
		// with every announcement (450 an hour).
		return
	}
	// Answered only when they are news: the first of the member's
	// incarnation, or others than those held (a forger's, without a key).
	// An answer to every tell made each refresh carry timings both ways
	// for good (each answer answered in turn: at 64 members 63 more
	// frames a second for the cluster, 121 configuration frames against
	// 55, and 8.8% of a core for the cluster's idle against 12.0%), while
	// the retries below (at most timingsRetryCap apart) already keep a
	// pair's timings within timingsKept and make a lost one good.
	news := m.timings == nil || m.timingsInc != inc || *m.timings != *t
	if m.timings != nil && m.timingsInc == inc && *m.timings != *t {
		// review-timings: a member's timings never change within its
		// run: one of the two was forged. Ask it (agreeTick, an
		// askInterval after the last ask; its answer carries its own).
		m.timingsDoubt = true
	}
	m.timings, m.timingsInc, m.timingsAt = t, inc, n.now
	m.timingsOwed = m.timingsOwed || news
	issues := a.timingIssues(m.id, t)
	changed := strings.Join(issues, "\n") != strings.Join(m.timingIssues, "\n")
	m.timingIssues = issues
	if len(issues) == 0 {
		defer func() { m.warnedIssues = "" }()
	}
	switch {
	case len(issues) > 0 && changed && strings.Join(issues, "\n") == m.warnedIssues:
		// Expired and heard again unchanged: named in status again,
		// not warned of again.
	case len(issues) > 0 && changed:
		m.timingWarned, m.warnedIssues = true, strings.Join(issues, "\n")
		a.notice(Notice{Key: "timing_mismatch", Member: m.id, Warn: true,
			Msg: fmt.Sprintf("timing mismatch with member %d: %s", m.id, strings.Join(issues, "; "))})
	case len(issues) == 0 && m.timingWarned:
		// Fixed (the member restarted with other flags): the
		// administrator who read the warning is told it is over.
		m.timingWarned = false
		a.notice(Notice{Key: "timing_fits", Member: m.id,
			Msg: fmt.Sprintf("member %d's timing fits this member's now: it beats every %v (its %s) and gives a silent leader up after %v (its %s), "+
				"this member every %v and after %v; the timing mismatch warned of before is over",
				m.id, time.Duration(t.Heartbeat), a.cfg.HeartbeatFlag, time.Duration(t.LeaderTimeout), a.cfg.TimeoutFlag,
				a.cfg.Heartbeat, a.cfg.LeaderTimeout)})
	}
}

// timingIssues says how member id's timings t do not fit this node's:
// its heartbeat not below this node's leader timeout (this node gives it
// up between two of its heartbeats while it leads), its leader timeout
// not above this node's heartbeat (it gives this node up so).
func (a *agreement) timingIssues(id uint32, t *wire.ConfigTimings) []string {
	if a.cfg.Heartbeat <= 0 || a.cfg.LeaderTimeout <= 0 {
		return nil
	}
	hb, lt := time.Duration(t.Heartbeat), time.Duration(t.LeaderTimeout)
	fix := fmt.Sprintf("give every member the same %s and %s, or every %s above every member's %s",
		a.cfg.HeartbeatFlag, a.cfg.TimeoutFlag, a.cfg.TimeoutFlag, a.cfg.HeartbeatFlag)
	var d []string
	if hb >= a.cfg.LeaderTimeout {
		d = append(d, fmt.Sprintf("member %d beats every %v (its %s), this member gives a silent leader up after %v (its %s): "+
			"while member %d leads, this member gives it up between two of its heartbeats and elects again, over and over "+
			"(or, where it probes a silent leader, asks it for a heartbeat after each silence); %s",
			id, hb, a.cfg.HeartbeatFlag, a.cfg.LeaderTimeout, a.cfg.TimeoutFlag, id, fix))
	}
	if lt <= a.cfg.Heartbeat {
		d = append(d, fmt.Sprintf("member %d gives a silent leader up after %v (its %s), this member beats every %v (its %s): "+
			"while this member leads, member %d gives it up between two of its heartbeats and elects again, over and over "+
			"(or, where it probes a silent leader, asks it for a heartbeat after each silence); %s",
			id, lt, a.cfg.TimeoutFlag, a.cfg.Heartbeat, a.cfg.HeartbeatFlag, id, fix))
	}
	return d
}
