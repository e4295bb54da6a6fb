package bully

import (
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// HintProbes is how many LEADER_PROBEs a follower sends its leader after a
// hint that the leader's port closed (Config.HintProbe), one every
// HintProbe from the hint on; the leader is given up HintProbe after the
// last, plus the follower's stagger, if none was answered. With a round
// trip lost with p = 0.19 (5% loss at every host) a live leader is given
// up on a forged hint once in 4 x 10^3 hints; a follower takes at most
// one hint about its leader per LeaderTimeout (hintRest).
const HintProbes = 5

// EventLeaderPortClosed is reported when a follower gives its leader up on
// a hint that its port closed, after HintProbes unanswered probes.
const EventLeaderPortClosed = "leader_port_closed"

// EventLeaderPortRefused is reported (at WARN, at most once per
// portRefusedWarnEvery) when a connection to the leader's TCP port was
// refused or timed out and the leader answered the probes that followed:
// a firewall that lets its UDP through and rejects or drops TCP, or a
// UDP-only port mapping.
// The port hint cannot tell such a leader's death; refused dials to it
// are ignored until its link is seen open (a stream_closed hint) or it
// claims a new term.
const EventLeaderPortRefused = "leader_port_refused"

// portRefusedWarnEvery spaces the WARNs of EventLeaderPortRefused.
const portRefusedWarnEvery = 10 * time.Minute

// hint is a follower's episode of probing its leader after a hint.
type hint struct {
	at    time.Time // when the hint came (zero: no episode running)
	seen  time.Time // the hint's own time (core.Hint.Time): older frames do not end the episode
	last  time.Time // when the episode's latest probe went out
	sent  int       // probes sent in the episode
	rest  time.Time // hints about the leader are ignored until then
	cause core.HintCause
	// recheck is set when the Tick that was to give the leader up ran
	// late: it is given up at this instant instead, if nothing ended the
	// episode meanwhile (see lateGiveUp).
	recheck time.Time
}

// Hint acts on a hint that member h.Member's port closed (core.Hinter),
// with Config.HintProbe set and only about the leader this node follows:
// it probes the leader at once, and every HintProbe after, HintProbes
// times. A frame of the leader's term cancels the episode (the leader is
// alive: its link closed for another reason, or the hint was forged); if
// none comes by HintProbe after the last probe, plus this node's stagger,
// the leader is given up as if its timeout had passed. A hint never makes
// this node do more than that: it is no evidence by itself (anyone on the
// LAN can forge a TCP reset or an ICMP error), the probes' silence is.
// Hints about anyone else, while an episode runs, or within LeaderTimeout
// of the last episode's end are counted and ignored; so are refused (or
// timed out) dials to a leader whose port refused before while it
// answered (portRefused), until its link is seen open (a stream_closed
// hint) or it claims a new term, and, without Config.Watch, every dial
// that timed out.
func (b *Core) Hint(h core.Hint) {
	switch {
	case b.cfg.HintProbe == 0:
		b.counts.hintsIgnored++
		return
	case b.role != RoleFollower || b.lead == 0 || h.Member != b.lead:
		b.counts.hintsIgnored++
		return
	case h.Cause == core.HintDialTimeout && b.cfg.Watch == 0:
		// Without a watched link a dial that timed out is no news
		// this core asks about (mutexd's central coordinator: as
		// before the transport reported them).
		b.counts.hintsIgnored++
		return
	case h.Cause == core.HintDialTimeout && !b.dialTimedOut():
		b.counts.hintsIgnored++
		return
	}
	if h.Time.After(b.now) {
		b.now = h.Time
	}
	seen := h.Time
	if seen.IsZero() {
		seen = b.now
	}
	refused := dialFailed(h.Cause)
	if !refused {
		// The link closed: it was open, so the leader's port takes
		// connections (again), a refused dial says something, and
		// timed-out dials count in a new row.
		b.refusing, b.dialTimeouts = 0, 0
	}
	if refused && b.refusing == b.lead && b.refusingTerm == b.term {
		b.counts.hintsIgnored++
		return
	}
	if !b.hint.at.IsZero() || b.now.Before(b.hint.rest) {
		b.counts.hintsIgnored++
		if b.hint.at.IsZero() && !refused {
			// The leader answered the last episode's probes less than
			// a LeaderTimeout ago: it lives, and its link, which the
			// hint says closed again, is reopened by the next watch.
			// (A refused dial is of a frame still queued, which the
			// transport redials by itself: no watch more.)
			b.watchAt = time.Time{}
		}
		return
	}
	b.counts.hints++
	b.hint = hint{at: b.now, seen: seen, cause: h.Cause}
	b.hintProbe()
}

// hintProbe sends the episode's next probe.
func (b *Core) hintProbe() {
	b.hint.sent++
	b.hint.last = b.now
	b.counts.hintProbes++
	b.send(b.lead, wire.KindLeaderProbe, wire.LeaderProbe{Priority: b.self.Priority})
}

// hintAt is when the running episode next needs a Tick: its next probe,
// or when the leader is given up; zero when none runs. Both count from
// when the latest probe really went out, not from the hint: a follower
// whose loop ran late would otherwise send the rest of its probes at once
// and give a live leader up before any answer could come back.
func (b *Core) hintAt() time.Time {
	if b.hint.at.IsZero() || b.role != RoleFollower || b.lead == 0 || !b.det.Alive(b.lead) {
		return time.Time{} // (a suspected leader: the timeout's path decides, a recheck first)
	}
	if b.hint.sent < HintProbes {
		return b.hint.last.Add(b.cfg.HintProbe)
	}
	if !b.hint.recheck.IsZero() {
		return b.hint.recheck
	}
	return b.hint.last.Add(b.cfg.HintProbe + b.stagger(b.lead))
}

// lateGiveUp decides whether a follower whose episode has run out
// listens a little longer first: when the Tick that ends it ran more
// than HintProbe/10 past its deadline, this process was not running, and
// what it waits for may be unread in its socket: the leader's answer to
// a probe, or the COORDINATOR of the member that took over while this one
// stalled (the loop's timer and the socket's reader wake together, in
// either order; in the lab at load 10-21 followers stalled 30-40 ms at the
// end of their episode stood for election 37 ms after the successor's
// COORDINATOR had reached them, 9 election frames instead of 1). So it
// gives the leader up only at a Tick as long after as it was late (time
// it did not run is not time it listened; at most HintProbe more), if
// nothing ended the episode meanwhile: the reader has run by then. Once
// per episode. A follower that runs on time gives up as before.
func (b *Core) lateGiveUp() bool {
	if !b.hint.recheck.IsZero() || b.tickLate <= b.cfg.HintProbe/10 {
		return false
	}
	b.hint.recheck = b.now.Add(min(b.tickLate, b.cfg.HintProbe))
	b.counts.hintRechecks++
	return true
}

// heardLeader ends a running episode if the leader spoke after the hint
// (a frame of its term that arrived no earlier than the hint's own time:
// the dead leader's last heartbeat, still queued when the hint was
// handled, ends nothing), and reports whether it did. The next hint about
// it is taken only after LeaderTimeout.
func (b *Core) heardLeader() bool {
	if b.hint.at.IsZero() || b.leadArrived.Before(b.hint.seen) {
		return false
	}
	b.counts.hintsCancelled++
	cause := b.hint.cause
	b.hint = hint{rest: b.now.Add(b.cfg.LeaderTimeout)}
	if dialFailed(cause) && b.cfg.Watch != 0 {
		b.portRefused(cause)
		return true
	}
	// The link the hint said closed stays closed until a frame goes
	// that way: the next watch goes at once (Config.Watch).
	b.watchAt = time.Time{}
	return true
}

// portRefused: a connection to the leader's TCP port was refused, and the
// leader answered the probes that followed. It lives, and its port
// refuses TCP while its datagrams come through: a firewall that rejects
// TCP, a container that publishes the port for UDP only. Every redial of
// the frame queued for it (the transport's backoff: every 2 s at most)
// would be refused again and start an episode, each a chance for loss or
// a stall of the leader to give it up falsely. So refused dials to it are
// ignored until its link is seen open (a stream_closed hint: it was
// connected) or it claims a new term, the watch keeps its schedule (the
// frame is still queued: a watch more adds nothing), and the
// administrator is told, at most once per portRefusedWarnEvery. With
// Watch only: the watched link is open while the port takes connections,
// so the leader's death shows as its close (stream_closed), and a refused
// dial is news only of a port that refuses. (Without Watch, mutexd's
// central coordinator, refusals are handled as before.)
//
// A dial that timed out (core.HintDialTimeout: a firewall that drops
// connection attempts rather than rejecting them) is the same case: the
// watched link never opens, and without this nothing said so (the lab:
// a follower of a leader whose member port dropped TCP had no link, no
// hint and no WARN, and the leader's SIGKILL waited for the timeout).
func (b *Core) portRefused(cause core.HintCause) {
	b.refusing, b.refusingTerm = b.lead, b.term
	b.counts.portRefused++
	if !b.refusedWarned.IsZero() && b.now.Sub(b.refusedWarned) < portRefusedWarnEvery && !b.now.Before(b.refusedWarned) {
		b.refusedMore++
		return
	}
	more := ""
	if b.refusedMore > 0 {
		more = fmt.Sprintf(" (%d times more since the last such line)", b.refusedMore)
	}
	b.refusedWarned, b.refusedMore = b.now, 0
	what, why := "refuses connections", "a firewall or a UDP-only port mapping?"
	if cause == core.HintDialTimeout {
		what = fmt.Sprintf("does not answer connection attempts (%d timed out in a row)", b.dialTimeouts)
		why = "a firewall that drops them, or heavy packet loss between the two hosts?"
	}
	b.events = append(b.events, core.Event{Name: EventLeaderPortRefused, Warn: true,
		Msg: fmt.Sprintf("leader %d answers probes but its TCP port %s%s: %s the port hint cannot work, and a dead leader is given up by its timeout alone; let TCP through to its member port",
			b.lead, what, more, why),
		Args: []any{"leader", b.lead, "term", b.term, "cause", cause.String()}})
}

// dialTimeoutsToAsk is how many dials to the leader must time out in its
// term, with no sign of its link open between them (a stream_closed
// hint), before the follower asks (an episode, and the WARN if the leader
// answers). A dial times out when its SYN and the kernel's retransmit
// at 1 s, or their answers, are lost before the transport's 1.5 s dial
// timeout: measured at 5% loss on both hosts (a lab bridge, 4,000
// dials), 1.8% of dials (17.2% with the former 1 s timeout). The watch
// dials only while its link is down (an adoption, a broken link), and
// a link seen open ends the row: at that loss about 6 in a
// million adoptions. A port that drops every SYN times out the watch's
// dials about three times while it is queued (5 s).
const dialTimeoutsToAsk = 3

// dialTimedOut counts a dial to the leader that timed out and reports
// whether it is the dialTimeoutsToAsk-th (or a later one) in the
// leader's term since its link was last seen open.
func (b *Core) dialTimedOut() bool {
	if b.timedOutLead != b.lead || b.timedOutTerm != b.term {
		b.dialTimeouts, b.timedOutLead, b.timedOutTerm = 0, b.lead, b.term
	}
	b.dialTimeouts++
	return b.dialTimeouts >= dialTimeoutsToAsk
}

// dialFailed reports whether a hint is of a connection that did not open
// (refused, or timed out), as opposed to a link that was open and closed.
func dialFailed(c core.HintCause) bool {
	return c == core.HintDialRefused || c == core.HintDialTimeout
}

// endHint forgets a running episode (a role or leader change).
func (b *Core) endHint() { b.hint.at, b.hint.sent, b.hint.recheck = time.Time{}, 0, time.Time{} }

// tickHint runs the episode's timers on a follower; true when it gave the
// leader up (the election has started).
func (b *Core) tickHint() bool {
	if b.hint.at.IsZero() {
		return false
	}
	if b.heardLeader() {
		return false
	}
	at := b.hintAt()
	if b.now.Before(at) {
		return false
	}
	if b.hint.sent < HintProbes {
		b.hintProbe()
		return false
	}
	if b.lateGiveUp() {
		return false
	}
	b.giveUpOnHint()
	b.leaderLost(wire.ReasonLeaderLost)
	return true
}

// giveUpOnHint ends the episode with the leader given up (the election
// follows), and says so.
func (b *Core) giveUpOnHint() {
	lost, cause, since := b.lead, b.hint.cause, b.now.Sub(b.hint.at)
	b.counts.hintTimeouts++
	b.endHint()
	b.emit(EventLeaderPortClosed, fmt.Sprintf("leader %d's port closed (%v) and it answered none of %d probes in %v: electing a successor", lost, cause, HintProbes, since.Round(time.Millisecond)),
		"leader", lost, "cause", cause.String(), "probes", HintProbes, "after_ms", since.Milliseconds())
}

// hintGivenUp returns the leader this follower is about to give up: its
// episode ran out with every probe unanswered and only the wait after a
// late Tick is left (lateGiveUp), the leader unheard since the hint; 0
// otherwise. An election that a lower-ranked member's claim makes it run
// meanwhile does not ask that leader (and wait an AnswerTimeout for a
// dead one): the leader is given up there and then, as the wait would
// have. In the lab at load 5-9 the successor's loop, 95 ms late, read a
// lower member's claim before its own give-up and asked the dead leader
// first: 30 ms more.
func (b *Core) hintGivenUp() uint32 {
	if b.hint.at.IsZero() || b.hint.recheck.IsZero() || b.role != RoleFollower || !b.leadArrived.Before(b.hint.seen) {
		return 0
	}
	lost := b.lead
	b.giveUpOnHint()
	return lost
}

// watch sends the leader this follower follows a LEADER_WATCH over the
// TCP link to it (Config.Watch): at once when it is a new leader or a new
// term (the leader may have restarted: its old link is closed), or after
// a hint the leader's answer cancelled (the link the hint reported is
// closed, as after a hint ignored in the rest that follows), else once
// Watch has passed since the last. It runs at the end of every Step and
// Tick, so a follower, which hears its leader every heartbeat, sends
// it without a wake-up of its own. The link it keeps open is what closes
// at once when the leader's process dies, and the transport says so (a
// hint: Hint, Config.HintProbe).
func (b *Core) watch() {
	if b.cfg.Watch == 0 || b.role != RoleFollower || b.lead == 0 {
		return
	}
	if b.watched == b.lead && b.watchTerm == b.term && !b.watchAt.IsZero() && b.now.Before(b.watchAt.Add(b.cfg.Watch)) {
		return
	}
	b.watched, b.watchTerm, b.watchAt = b.lead, b.term, b.now
	b.sendStream(b.lead, wire.KindLeaderWatch, wire.LeaderWatch{Priority: b.self.Priority})
}
