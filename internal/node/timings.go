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

// timingsTells bounds how often, per pair of incarnations, the node sends
// its timings to a member that never sent its own: an older build, which
// drops each as unknown_kind.
const timingsTells = 2

// tellTimings queues this node's timings to member m, after an
// announcement to it: always to a member that sent its own (it knows the
// kind), at most timingsTells times per pair of incarnations to another.
func (n *Node) tellTimings(m *memberAgreement) {
	a := n.agree
	if a.cfg.Heartbeat <= 0 || a.cfg.LeaderTimeout <= 0 {
		return
	}
	if m.timings == nil {
		if m.timingsToldInc != m.cfgInc || m.timingsToldOwn != n.inc {
			m.timingsToldInc, m.timingsToldOwn, m.timingsTold = m.cfgInc, n.inc, 0
		}
		if m.timingsTold >= timingsTells {
			return
		}
		m.timingsTold++
	}
	t := wire.ConfigTimings{Heartbeat: uint64(a.cfg.Heartbeat), LeaderTimeout: uint64(a.cfg.LeaderTimeout)}
	b, err := t.AppendBinary(nil)
	if err != nil {
		n.stats.drop("unsent_config") // longer than any failure detector's timeout: refused by the daemons
		return
	}
	n.own = append(n.own, core.Message{To: m.id, Kind: wire.KindConfigTimings, Payload: b})
}

// timingsReceived takes a member's authenticated timings, its sequence
// number accepted: kept for status, compared with this node's, and a
// mismatch said at WARN (notice "timing_mismatch", which the driver
// rate-limits per member) when it is new or changed. They count for
// nothing else: not as hearing the member (its announcement came with
// them), not in the standing.
func (n *Node) timingsReceived(f *wire.Frame, t *wire.ConfigTimings) {
	a := n.agree
	m, inc := a.announcer(f)
	if m == nil {
		return
	}
	m.timings, m.timingsInc = t, inc
	issues := a.timingIssues(m.id, t)
	changed := strings.Join(issues, "\n") != strings.Join(m.timingIssues, "\n")
	m.timingIssues = issues
	if len(issues) > 0 && changed {
		a.notice(Notice{Key: "timing_mismatch", Member: m.id, Warn: true,
			Msg: fmt.Sprintf("timing mismatch with member %d: %s", m.id, strings.Join(issues, "; "))})
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
