package bully

import (
	"time"
)

// gapStats is what a follower sees while its leader is silent, reset
// whenever it hears the leader: the probes it sent, and the latest of its
// own Ticks past the deadline it had asked for.
type gapStats struct {
	probes    uint64
	tickLate  time.Duration
	rechecked bool // the timeout came at a late Tick: listened longer (recheck)
}

// The verdicts of a leader timeout (TimeoutCause.Verdict).
const (
	// VerdictLeaderSilent: the follower asked and heard nothing: three
	// probes (or every one due, if fewer) went unanswered, or it
	// rechecked after a late Tick: the leader is down or stalled, or
	// every frame both ways was lost.
	VerdictLeaderSilent = "leader_silent"
	// VerdictFollowerLate: this follower's own loop ran too late to ask:
	// fewer than three of the probes due went out. Its socket may have
	// held the leader's frames unread; look at its host's load.
	VerdictFollowerLate = "follower_late"
	// VerdictNoProbes: probing is off (Config.Probe 0): the timeout alone.
	VerdictNoProbes = "no_probes"
)

// TimeoutCause says why a follower gave up on its leader: what it saw in
// the leader's silence, so that an operator (and the benchmark) can tell
// a dead or stalled leader and lost frames from a follower whose own loop
// stalled. Detail.LastTimeout holds the last one; the leader_timeout
// event carries the same fields.
type TimeoutCause struct {
	Leader uint32    `json:"leader"`
	At     time.Time `json:"at"` // when the timeout passed, on this member's clock
	// Silent is how long the leader had been silent then (since its last
	// frame heard); Timeout the timeout in force: LeaderTimeout, the
	// stagger by rank and Extra, what the leader's lateness added.
	Silent  time.Duration `json:"silent_ns"`
	Timeout time.Duration `json:"timeout_ns"`
	Extra   time.Duration `json:"extra_ns"`
	// Probes is how many probes this follower sent in the silence;
	// ProbesDue how many its schedule had due by At, had every Tick run
	// on time.
	Probes    uint64 `json:"probes"`
	ProbesDue uint64 `json:"probes_due"`
	// TickLate is the latest this follower's loop ran in the silence past
	// the deadline it had asked for; Stall how much the detector's stall
	// rule postponed the suspicion (a Tick more than a quarter of the
	// timeout late: half the timeout more, listening).
	TickLate time.Duration `json:"tick_late_ns"`
	Stall    time.Duration `json:"stall_ns"`
	// Rechecked: the timeout was found at a Tick more than Probe late,
	// and the follower probed once more and listened as long as it had
	// been late (2 x Probe at least, half the timeout at most) before it
	// gave up.
	Rechecked bool   `json:"rechecked,omitempty"`
	Verdict   string `json:"verdict"`
}

// timedOut records why the leader timed out (Detail.LastTimeout) and
// reports it (EventLeaderTimeout), before the election it starts.
func (b *Core) timedOut() {
	c := TimeoutCause{Leader: b.lead, At: b.now, Timeout: b.det.Timeout(b.lead), Extra: b.extra,
		Probes: b.gap.probes, TickLate: b.gap.tickLate, Rechecked: b.gap.rechecked}
	tr := b.suspected
	quiet := b.det.QuietSince(b.lead)
	if tr.ID == b.lead && !tr.At.IsZero() {
		c.At, c.Silent = tr.At, tr.Silent
		if !tr.LastHeard.IsZero() && quiet.After(tr.LastHeard) {
			c.Stall = quiet.Sub(tr.LastHeard)
		}
	}
	switch {
	case b.cfg.Probe == 0:
		c.Verdict = VerdictNoProbes
	default:
		if first := b.probeStart(quiet); c.At.After(first) {
			c.ProbesDue = uint64((c.At.Sub(first)-1)/b.cfg.Probe) + 1
		}
		c.Verdict = VerdictFollowerLate
		if c.Rechecked || c.Probes >= min(3, c.ProbesDue) {
			c.Verdict = VerdictLeaderSilent
		}
	}
	b.lastTimeout = &c
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.emit(EventLeaderTimeout, "leader timed out: "+c.Verdict,
		"leader", c.Leader, "verdict", c.Verdict, "silent_ms", ms(c.Silent), "timeout_ms", ms(c.Timeout),
		"extra_ms", ms(c.Extra), "probes", c.Probes, "probes_due", c.ProbesDue,
		"tick_late_ms", ms(c.TickLate), "stall_ms", ms(c.Stall), "rechecked", c.Rechecked)
}
