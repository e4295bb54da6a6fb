package omega

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/internal/electcount"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/wire"
)

// Kinds are the kinds an Ω core steps.
var Kinds = []wire.Kind{wire.KindOmegaHeartbeat}

// MaxIncarnation is the largest incarnation: a member restarted 2^32-1
// times refuses to start rather than wrap to an incarnation that would
// make it everybody's leader again.
const MaxIncarnation = 1<<32 - 1

// Step's errors (wrapped), besides core.ErrUnknownMember,
// core.ErrUnexpectedKind and *wire.DecodeError.
var (
	ErrFromSelf = errors.New("omega: heartbeat from self")
	// ErrIncarnation: an incarnation of 0 or above MaxIncarnation.
	ErrIncarnation = errors.New("omega: incarnation outside 1..MaxIncarnation")
	// ErrBadLeader: a heartbeat naming a leader that is not a member.
	ErrBadLeader = errors.New("omega: heartbeat names a leader that is not a member")
)

var rejectLabels = electcount.Labels(
	core.ErrorLabel{Err: ErrFromSelf, Label: "from_self"},
	core.ErrorLabel{Err: ErrIncarnation, Label: "bad_incarnation"},
	core.ErrorLabel{Err: ErrBadLeader, Label: "bad_leader"},
)

const stateVersion = 'O'

// Core is the eventual leader core: an elect.Elector. Not safe for
// concurrent use.
type Core struct {
	cfg         Config
	id          uint32
	incarnation uint64

	leader    uint32
	leaderInc uint64
	// candidates are the members heard in the current window, with the
	// incarnation they said; last is the previous window's, for status.
	candidates map[uint32]uint64
	last       map[uint32]uint64
	// latest is each member's incarnation as its heartbeats say, with
	// their Lamport stamps (epoch.Life: a forged higher one is undone by
	// the member's next heartbeat stamped after it).
	latest map[uint32]*epoch.Life
	heard  map[uint32]time.Time
	// answers holds each member's allowance of answers to its asks
	// (answerAllowed): at most Asks at once, one more every Ask.
	answers map[uint32]answerBucket
	said    map[uint32]uint32 // whom each member trusts, from its heartbeats
	// greeted is the incarnation of each member last answered with a
	// heartbeat of this member's own (see Step).
	greeted map[uint32]uint64
	changes uint64 // leader changes after the first choice
	// suspected holds the leaders this member lost to silence, with the
	// incarnation it trusted: one heard again in that life was falsely
	// suspected, and the window grows (mistakes counts them); one heard
	// in a later life had crashed, and it does not.
	suspected map[uint32]uint64
	mistakes  uint64

	// probing: the trusted leader fell silent; this member listens, up
	// to one window, for its successor (see closeWindow). contest: the
	// successor was not heard either, and the members that lost the
	// leader heartbeat as at the start. lost is the leader that fell
	// silent; probes and contests count them.
	probing, contest bool
	lost             uint32
	probes, contests uint64

	// asked is how many times this follower asked its leader in the
	// current window (Config.Ask), askedAt when last; asks, answered and
	// rescued count the asks sent, the asks this member answered as the
	// leader, and the windows that heard the leader only after asking.
	asked                   int
	askedAt                 time.Time
	asks, answered, rescued uint64
	// checks counts the windows cut short by another member's claim to
	// lead while this member's leader was overdue (checkLeader); checking
	// says the current one was, checkHeard that it had heard the leader
	// before the claim (an answer then rescues nothing).
	checks     uint64
	checking   bool
	checkHeard bool

	interval      time.Duration
	windowStart   time.Time
	windowEnd     time.Time
	nextHeartbeat time.Time
	now           time.Time

	announced elect.Announcer
	counts    electcount.Counts
	msgs      []core.Message
	events    []core.Event
	bugs      core.Bugs
	durable   core.Durable
}

var (
	_ elect.Elector      = (*Core)(nil)
	_ core.Advancer      = (*Core)(nil)
	_ core.MetricsWriter = (*Core)(nil)
)

// Algorithm is Ω's entry in the table.
var Algorithm = elect.Algorithm{
	Name:     "omega",
	Rightful: elect.AnyAgreed,
	Summary:  "eventual leader of the crash-recovery model: heartbeats with incarnations, the lowest incarnation then ID leads; no terms, no quorum",
	// No election messages: the members that contend (the leader, and
	// at a change the members that lost it) send N-1 heartbeats every
	// heartbeat interval, and a new leader is chosen from them at the
	// end of a window.
	Cost: core.Cost{Text: "0 (the leader's N-1 heartbeats per period; at a change, every member's)",
		Messages: func(n int) (float64, float64) { return 0, 0 }},
	Kinds: Kinds,
	Guarantees: elect.Guarantees{
		TwoLeaders: "possible while members disagree (no quorum, no term); all agree on one eventually",
		Minority:   "trusts the lowest incarnation it hears",
		CutOff:     "is trusted by those who still hear it",
	},
	New: func(env core.Env, o elect.Options) (elect.Elector, error) {
		return New(env, FromOptions(env.Members, o))
	},
}

// New returns the Ω core of env.ID: its incarnation is the stored one
// plus one (1 at the first start), stored before its first heartbeat
// leaves.
func New(env core.Env, cfg Config) (*Core, error) {
	if err := cfg.validate(env.ID, env.Members); err != nil {
		return nil, err
	}
	stored, err := elect.DecodeWord("omega", stateVersion, env.State)
	if err != nil {
		return nil, err
	}
	if stored >= MaxIncarnation {
		return nil, fmt.Errorf("omega: stored incarnation %d: no incarnation left (remove the state file to start this member over at 1): %w", stored, core.ErrState)
	}
	c := &Core{cfg: cfg, id: env.ID, incarnation: stored + 1, interval: cfg.Interval, now: env.Now,
		candidates: map[uint32]uint64{}, latest: map[uint32]*epoch.Life{}, heard: map[uint32]time.Time{}, answers: map[uint32]answerBucket{}, said: map[uint32]uint32{}, greeted: map[uint32]uint64{}, suspected: map[uint32]uint64{}}
	c.durable.Change(true) // store(incarnation) before the first heartbeat
	c.windowStart, c.windowEnd = env.Now, env.Now.Add(c.interval)
	c.heartbeat()
	return c, nil
}

// Incarnation is this life's incarnation.
func (c *Core) Incarnation() uint64 { return c.incarnation }

// Interval is the current window.
func (c *Core) Interval() time.Duration { return c.interval }

// Tick sends the heartbeats and asks due and closes the window at its
// end.
func (c *Core) Tick(now time.Time) {
	if now.After(c.now) {
		c.now = now
	}
	if !c.now.Before(c.nextHeartbeat) {
		switch {
		case c.contending():
			c.heartbeat()
		case c.leader == 0:
			c.introduce()
		}
	}
	for at, ok := c.askAt(); ok && !c.now.Before(at); at, ok = c.askAt() {
		c.asked++
		c.asks++
		c.askedAt = c.now
		c.send(c.leader)
	}
	if !c.now.Before(c.closeAt()) {
		c.closeWindow()
	}
}

// Deadline is the window's end, the next ask in its last Asks x Ask, and
// the next heartbeat while this member contends or has not chosen yet
// (introduce): a quiet follower whose leader is heard wakes once a
// window.
func (c *Core) Deadline() time.Time {
	d := c.closeAt()
	if at, ok := c.askAt(); ok {
		d = core.Earliest(d, at)
	}
	if c.contending() || c.leader == 0 {
		d = core.Earliest(d, c.nextHeartbeat)
	}
	return d
}

// asking says whether this member asks its leader before it closes the
// window (Config.Ask): a follower, not already listening for a successor,
// that has not heard its leader in the window.
func (c *Core) asking() bool {
	if c.cfg.Ask == 0 || c.leader == 0 || c.leader == c.id || c.probing {
		return false
	}
	_, heard := c.candidates[c.leader]
	return !heard
}

// askAt is when this member asks its leader next, if it does: at the
// window's ask slots, the last Asks x Ask of it, Ask apart. The slots are
// fixed: a Tick a little late sends its ask late without pushing the
// next ones back (the window's end would follow), and a Tick that finds
// several slots past sends all their asks at once (Tick).
func (c *Core) askAt() (time.Time, bool) {
	if c.asked >= Asks || !c.asking() {
		return time.Time{}, false
	}
	return c.windowEnd.Add(-time.Duration(Asks-c.asked) * c.cfg.Ask), true
}

// closeAt is when the window closes: at its end, or, while this member
// still asks its leader, once every ask went out and the last had Ask to
// be answered (a Tick after a stall asks then, rather than count a window
// it could not listen to).
func (c *Core) closeAt() time.Time {
	if !c.asking() {
		return c.windowEnd
	}
	if at, ok := c.askAt(); ok {
		return later(c.windowEnd, at.Add(time.Duration(Asks-c.asked)*c.cfg.Ask))
	}
	return later(c.windowEnd, c.askedAt.Add(c.cfg.Ask))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// contending says whether this member heartbeats: while it trusts
// itself, and, before its first choice or in a contest, while it has
// heard no better candidate. A member that trusts another keeps quiet:
// its heartbeats could only tell the others of a candidate they already
// rank below the one they hear (it chose the leader over itself), so Ω's
// choice is the same without them, and the cluster's idle traffic is the
// leader's N-1 frames a period, not N(N-1). Nor does a member that heard
// a better candidate contend: at the start or in a contest, only the
// members that may win heartbeat, not all N.
func (c *Core) contending() bool {
	switch {
	case c.leader == c.id && !c.probing:
		return true
	case c.leader == 0 || c.contest:
		best, _ := choose(c.candidates)
		return best == 0 || best == c.id || c.outranks(best)
	}
	return false
}

// outranks says whether this member ranks before candidate id as heard.
func (c *Core) outranks(id uint32) bool {
	inc := c.candidates[id]
	return c.incarnation < inc || (c.incarnation == inc && c.id < id)
}

func (c *Core) heartbeat() {
	c.nextHeartbeat = c.now.Add(c.cfg.Heartbeat)
	if len(c.cfg.Members) < 2 {
		return
	}
	c.send(core.Broadcast)
}

// introduce sends this member's heartbeat to each member it has not
// heard from in this life, before its first choice, once a heartbeat
// period, when it does not contend. Its first heartbeat (New) went to
// every member, but a member may not have taken it (electd's node refuses
// a restarted member's frames until it announced its configuration,
// "config_unverified"; a loss); a member that took it greets this one
// (Step), and one that did not still believes an earlier incarnation of
// this member, which ranks it first: when the leader falls silent it
// would wait for this member as the successor, then contest, two windows
// and heartbeat periods more (TestSimRestartedUnheard). Members that
// greeted, and the leader, are heard and sent nothing more: a member that
// restarts into a healthy cluster sends nothing after its first
// heartbeat. The first window bounds it: a choice ends it.
func (c *Core) introduce() {
	c.nextHeartbeat = c.now.Add(c.cfg.Heartbeat)
	for _, id := range c.cfg.Members {
		if _, heard := c.heard[id]; !heard && id != c.id {
			c.send(id)
		}
	}
}

// send sends this member's heartbeat to member to, or every member.
func (c *Core) send(to uint32) {
	p, ok := c.bugs.Encode(&c.events, "omega_heartbeat", wire.OmegaHeartbeat{Leader: c.leader, Interval: uint32(c.interval.Milliseconds())}, nil)
	if !ok {
		return
	}
	c.msgs = append(c.msgs, core.Message{To: to, Kind: wire.KindOmegaHeartbeat, Term: c.incarnation, Payload: p})
	if to == core.Broadcast {
		c.counts.Sent(wire.KindOmegaHeartbeat, len(c.cfg.Members)-1)
	} else {
		c.counts.Sent(wire.KindOmegaHeartbeat, 1)
	}
}

// closeWindow is "Upon Interval": choose, start the next window (the
// window grows at a mistake, in Step, not here at a change).
//
// A follower whose leader fell silent does not choose at once, as the
// notes' processes do, since the other followers were quiet: the window
// holds only itself. It probes instead. The member it ranks first after
// the lost leader (its successor) chooses itself at once and heartbeats;
// every other listens, quiet, and follows the successor as soon as it
// hears it. The members that lost the leader probe within one window of
// each other (they all missed the same heartbeats, give or take the
// spread of their arrivals), so in the common case of one crash the
// failover takes no longer than the notes', and only the successor
// heartbeats: no storm of N(N-1) frames at the moment a large cluster is
// without a leader. If the probe (one window and a heartbeat period) ends
// without the successor, it is down too: the members contest, as at the
// start, the ones that heard no better candidate heartbeating, and each
// chooses the best it heard at the end of one more such period.
func (c *Core) closeWindow() {
	if _, heard := c.candidates[c.leader]; heard && c.asked > 0 && c.leader != c.id && !(c.checking && c.checkHeard) {
		c.rescued++ // (not a window cut short that had heard the leader before the claim)
	}
	c.asked, c.checking, c.checkHeard = 0, false, false
	c.candidates[c.id] = c.incarnation
	// One window, for the others' windows, and a heartbeat period, for
	// the spread of the lost leader's last heartbeat's arrivals and the
	// successor's first one's.
	probe := c.interval + c.cfg.Heartbeat
	switch {
	case !c.probing && c.leader != 0 && c.leader != c.id:
		// A leader heard in a new life (it crashed and was restarted
		// within a window) ranks after every member that crashed less:
		// it is lost as a silent one is, and its successor takes over.
		// Followers are quiet, so this window heard only this member and
		// the leader: choosing at once, every follower would choose
		// itself (TestSimLeaderRestartedQuickly).
		if inc, heard := c.candidates[c.leader]; !heard || inc > c.leaderInc {
			c.probing, c.lost = true, c.leader
			if !heard {
				c.suspected[c.leader] = c.leaderInc
			}
			if !c.successorHeard() {
				c.probes++
				c.windowEnd = c.now.Add(probe) // candidates kept
				return
			}
		}
	case c.probing && !c.contest && !c.successorHeard():
		c.contest = true
		c.contests++
		if c.contending() {
			c.heartbeat()
		}
		c.windowEnd = c.now.Add(probe)
		return
	}
	c.probing, c.contest = false, false
	next, inc := choose(c.candidates)
	if next != c.leader {
		prev := c.leader
		if prev != 0 {
			c.changes++
			c.counts.LeaderTimeouts++
		}
		c.counts.ElectionStarted(epoch.Make(uint32(inc), next), c.windowStart, false)
		if prev == c.id {
			c.events = append(c.events, c.announced.Demoted(c.id, c.term(), "lower_candidate", c.now))
		}
		c.leader, c.leaderInc = next, inc
		if next == c.id {
			c.events = append(c.events, c.announced.Elected(c.id, c.term(), c.now))
		}
		c.events = append(c.events, c.announced.Leader(c.leader, c.term(), c.now, "not_heard")...)
		c.counts.Decided(c.leader, c.now)
	} else {
		c.leaderInc = inc
	}
	c.last, c.candidates = c.candidates, map[uint32]uint64{}
	c.windowStart = c.now
	c.windowEnd = c.now.Add(c.interval)
	if c.contending() && !c.now.Before(c.nextHeartbeat) {
		c.heartbeat() // a member that chose itself is heard at once
	}
}

// successorHeard says whether the probe can end: the best candidate
// heard ranks no lower than every member but the lost leader, as this
// member knows their incarnations (a member never heard is taken at
// incarnation 1, the best it could have, so that the probe waits for it).
func (c *Core) successorHeard() bool {
	best, bestInc := choose(c.candidates)
	for _, id := range c.cfg.Members {
		if id == c.lost || id == best {
			continue
		}
		inc := c.incarnationOf(id)
		switch {
		case id == c.id:
			inc = c.incarnation
		case inc == 0:
			inc = 1
		}
		if inc < bestInc || (inc == bestInc && id < best) {
			return false
		}
	}
	return true
}

// incarnationOf is member id's incarnation as last believed (0: none).
func (c *Core) incarnationOf(id uint32) uint64 {
	if l := c.latest[id]; l != nil {
		return l.Inc
	}
	return 0
}

// choose is Selecciona: the lowest incarnation, then the lowest ID.
func choose(cands map[uint32]uint64) (uint32, uint64) {
	var best uint32
	var inc uint64
	for id, e := range cands {
		if best == 0 || e < inc || (e == inc && id < best) {
			best, inc = id, e
		}
	}
	return best, inc
}

func (c *Core) term() uint64 {
	if c.leader == 0 {
		return 0
	}
	return epoch.Make(uint32(c.leaderInc), c.leader)
}

// Step feeds one heartbeat.
func (c *Core) Step(m core.Message) error {
	err := c.accept(m)
	if err != nil {
		c.counts.RejectErr(rejectLabels, err)
		return err
	}
	c.counts.Received(m.Kind)
	if m.Time.After(c.now) {
		c.now = m.Time
	}
	life := c.latest[m.From]
	if life == nil {
		life = &epoch.Life{}
		c.latest[m.From] = life
	}
	if life.See(m.Term, m.Lamport) == epoch.Stale {
		c.counts.Stale++ // a heartbeat of an earlier life
		return nil
	}
	c.candidates[m.From] = m.Term
	c.heard[m.From] = c.now
	if inc, ok := c.suspected[m.From]; ok {
		// The notes' Interval++, at a mistake: the window grows when a
		// leader lost to silence is heard again in the life it was
		// trusted in (it was alive: the window was too short for it), not
		// when it crashed (heard again, if ever, in a later life).
		delete(c.suspected, m.From)
		if m.Term == inc {
			c.interval = min(c.interval+c.cfg.Step, c.cfg.MaxInterval)
			c.mistakes++
		}
	}
	c.checkLeader(m.From)
	if c.leader == c.id && !c.probing && c.said[m.From] == c.id {
		// A member that trusts this one heartbeats only when it asks
		// (Config.Ask: its window has not heard this leader) or when it
		// lost this leader and contests: either way, one heartbeat of
		// this leader's, to it alone, is what it lacks. One answer a
		// heartbeat, and no more than a window's asks at once: no more
		// frames than were received, and a member's forged or replayed
		// heartbeats cannot make the leader send without bound.
		if c.answerAllowed(m.From) {
			c.answered++
			c.send(m.From)
		}
	}
	if c.said[m.From] == 0 && !c.contending() && c.greeted[m.From] != m.Term {
		// A member that has no leader yet (it just started) hears
		// only the members that contend; it would take a quiet
		// member it never heard for one of incarnation 1, ranked
		// before those that crashed since, and wait for it when the
		// leader falls silent. One heartbeat each of its lives tells
		// it this member's incarnation.
		c.greeted[m.From] = m.Term
		c.send(m.From)
	}
	if c.probing && c.successorHeard() {
		c.closeWindow()
	}
	return nil
}

// checkLeader cuts this follower's window short when member from claims
// the lead (its heartbeat names itself) while this follower's leader is
// overdue (overdueAfter): not heard for a heartbeat period and the asks'
// span, more once the window grew at mistakes. A member
// claims the lead when its own window lost the leader (the successor,
// after a window, its asks unanswered): the leader is likely dead, and
// this follower asks it now, Asks times, Ask apart, rather than at the
// end of its own window, up to a window later. A live leader answers
// the first ask and is kept (the window closes with it heard); a silent
// one is lost Asks x Ask after the claim, and the claimant, heard, is
// followed at once. Without it every follower lost the leader at its own
// window's end, and the cluster agreed on the successor only when the
// latest of N-1 windows had closed: at 64 members nearly two windows
// after the leader's last heartbeat, whatever the successor did
// (docs/benchmarks/2026-12-06-omega64-failover.md). A member claiming
// while the leader is heard as due costs nothing: no ask, no change.
func (c *Core) checkLeader(from uint32) {
	if c.cfg.Ask == 0 || c.leader == 0 || c.leader == c.id || c.probing || from == c.leader || c.said[from] != from {
		return
	}
	heard, ok := c.heard[c.leader]
	if ok && c.now.Sub(heard) <= c.overdueAfter() {
		return
	}
	if c.asked > 0 {
		return // asking already: the window closes within the asks' span
	}
	// The leader heard earlier in this window counts no more: it is
	// kept if it answers an ask. The window ends an ask span from now,
	// sooner than it would have, or a little later if it was about to
	// close having heard the leader long ago (it would have kept it for
	// one more window).
	_, c.checkHeard = c.candidates[c.leader]
	delete(c.candidates, c.leader)
	c.windowEnd = c.now.Add(Asks * c.cfg.Ask)
	c.asked, c.checking = 0, true
	c.checks++
}

// overdueAfter is how long a leader may go unheard before another's claim
// makes this follower check it: a heartbeat period and the asks' span,
// and as much more as the window grew at mistakes. A live leader that
// stalls longer than that was given up at every stall while some member
// (one that never hears it: a one-way cut) claimed the lead all along;
// the window's growth, the notes' guard against such mistakes, must hold
// here too (TestSimStallsWithAOneWayCut).
func (c *Core) overdueAfter() time.Duration {
	return c.cfg.Heartbeat + Asks*c.cfg.Ask + max(c.interval-c.cfg.Interval, 0)
}

func (c *Core) accept(m core.Message) error {
	if m.From == c.id {
		return ErrFromSelf
	}
	if !slices.Contains(c.cfg.Members, m.From) {
		return fmt.Errorf("%w: %d", core.ErrUnknownMember, m.From)
	}
	if m.Kind != wire.KindOmegaHeartbeat {
		return fmt.Errorf("%w: %v", core.ErrUnexpectedKind, m.Kind)
	}
	var h wire.OmegaHeartbeat
	if err := h.UnmarshalBinary(m.Payload); err != nil {
		return fmt.Errorf("omega: heartbeat from %d: %w", m.From, err)
	}
	if m.Term == 0 || m.Term > MaxIncarnation {
		return fmt.Errorf("%w: %d says %d", ErrIncarnation, m.From, m.Term)
	}
	if h.Leader != 0 && !slices.Contains(c.cfg.Members, h.Leader) {
		return fmt.Errorf("%w: %d trusts %d", ErrBadLeader, m.From, h.Leader)
	}
	c.said[m.From] = h.Leader
	return nil
}

// StepDatagram rejects foreign traffic.
func (c *Core) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }

// Resign is refused: Ω's leader is chosen by a rule, not by a vote.
func (c *Core) Resign(time.Time) error { return elect.ErrCannotResign }

// Leader is the member this one trusts, and its owned epoch.
func (c *Core) Leader() (uint32, uint64, bool) { return c.leader, c.term(), c.leader != 0 }

// Role is leader when this member trusts itself.
func (c *Core) Role() elect.Role {
	if c.leader == c.id {
		return elect.RoleLeader
	}
	return elect.RoleFollower
}

// Changes drains the leadership changes.
func (c *Core) Changes() []elect.Change { return c.announced.Changes() }

// Ready drains what the core wants done: the incarnation until it is
// stored (no heartbeat leaves before), the heartbeats, the events.
func (c *Core) Ready() core.Ready {
	rd := core.Ready{Messages: c.msgs, Events: c.events}
	c.durable.Ready(&rd, func() []byte { return elect.EncodeWord(stateVersion, c.incarnation) })
	c.msgs, c.events = nil, nil
	return rd
}

// Advance is the driver's report on the last Ready.
func (c *Core) Advance(saved bool) { c.durable.Advance(saved) }

// Detail is Ω's own part of the status.
type Detail struct {
	Heartbeat   time.Duration `json:"heartbeat_ns"`
	Interval    time.Duration `json:"interval_ns"` // the current window
	Step        time.Duration `json:"step_ns"`
	MaxInterval time.Duration `json:"max_interval_ns"`
	Incarnation uint64        `json:"incarnation"`
	// LeaderIncarnation is the incarnation the leader was chosen with.
	LeaderIncarnation uint64 `json:"leader_incarnation,omitempty"`
	// LeaderChanges counts the leader changes after the first choice.
	LeaderChanges uint64 `json:"leader_changes"`
	// Mistakes counts the leaders this member lost to silence and then
	// heard again in the same life (falsely suspected: a stall, a loss
	// the asks did not cover); each grew the window by Step. A leader
	// that crashed is heard again, if at all, in a later life, and does
	// not grow it.
	Mistakes uint64 `json:"mistakes"`
	// Probing: the leader fell silent and this member listens for its
	// successor; Contest: the successor was not heard either, and the
	// members that lost the leader heartbeat as at the start. Probes and
	// Contests count them: a window that lost the leader after hearing
	// its successor claim the lead follows the successor at once, and is
	// no probe.
	Probing  bool   `json:"probing,omitempty"`
	Contest  bool   `json:"contest,omitempty"`
	Probes   uint64 `json:"probes"`
	Contests uint64 `json:"contests"`
	// Ask is Config.Ask (0: no asks); Asks counts the asks this member
	// sent its leader, Answered the asks it answered as the leader,
	// Rescued the windows that heard the leader only after asking it
	// (each a leader change the window alone might have made).
	Ask      time.Duration `json:"ask_ns"`
	Asks     uint64        `json:"asks"`
	Answered uint64        `json:"answered"`
	Rescued  uint64        `json:"rescued"`
	// Checks counts the windows cut short because another member claimed
	// the lead while this member's leader was overdue: this member asked
	// its leader at once, and lost it only if no answer came (a claim
	// while the leader is heard on time is ignored).
	Checks uint64 `json:"checks"`
	// Candidates are the members heard in the last closed window, with
	// their incarnations (this member included).
	Candidates map[uint32]uint64 `json:"candidates"`
	// Trusted is whom each member said it trusts in its last heartbeat.
	Trusted map[uint32]uint32 `json:"trusted"`
}

// Status returns the Report.
func (c *Core) Status() any { return c.Report() }

// answerBucket is one member's allowance of answers: tokens left, as of
// at.
type answerBucket struct {
	tokens int
	at     time.Time
}

// answerAllowed takes one of member id's answers if it has one left: a
// member may be answered Asks times at once (a follower whose Tick ran
// late sends a window's asks together, each a chance against loss), and
// once more every Ask (at least liveness.MinTimeout) after that, as many
// as an honest follower asks.
func (c *Core) answerAllowed(id uint32) bool {
	every := max(c.cfg.Ask, liveness.MinTimeout)
	b, ok := c.answers[id]
	if !ok || c.now.Before(b.at) {
		b = answerBucket{tokens: Asks, at: c.now}
	}
	if n := int(c.now.Sub(b.at) / every); n > 0 {
		b.tokens = min(Asks, b.tokens+n)
		b.at = b.at.Add(time.Duration(n) * every)
	}
	if b.tokens == 0 {
		c.answers[id] = b
		return false
	}
	b.tokens--
	c.answers[id] = b
	return true
}

// Report returns this member's view (elect.Elector).
func (c *Core) Report() elect.Status {
	s := elect.Status{Algorithm: Algorithm.Name, ID: c.id, Role: c.Role(), Term: c.term(), Round: epoch.Round(c.term()),
		Leader: c.leader, LeaderSince: c.announced.Since(), ChangesDropped: c.announced.Dropped(),
		Detail: Detail{Heartbeat: c.cfg.Heartbeat, Interval: c.interval, Step: c.cfg.Step, MaxInterval: c.cfg.MaxInterval,
			Incarnation: c.incarnation, LeaderIncarnation: c.leaderInc, LeaderChanges: c.changes, Mistakes: c.mistakes, Probing: c.probing, Contest: c.contest, Probes: c.probes, Contests: c.contests,
			Ask: c.cfg.Ask, Asks: c.asks, Answered: c.answered, Rescued: c.rescued, Checks: c.checks,
			Candidates: maps.Clone(c.last), Trusted: maps.Clone(c.said)}}
	s.Phase = fmt.Sprintf("window %v, incarnation %d", c.interval, c.incarnation)
	switch {
	case c.leader == 0:
		s.Phase = "no leader yet: collecting heartbeats for the first window"
	case c.contest:
		s.Phase = fmt.Sprintf("leader %d and its successor fell silent: contesting as at the start, for %v", c.lost, c.interval+c.cfg.Heartbeat)
	case c.probing:
		s.Phase = fmt.Sprintf("leader %d fell silent: listening for its successor, for %v at most", c.lost, c.interval+c.cfg.Heartbeat)
	case c.asked > 0 && c.asking():
		s.Phase = fmt.Sprintf("leader %d not heard in this window: asked it %d of %d times", c.leader, c.asked, Asks)
	}
	c.counts.Fill(&s, Kinds)
	for _, id := range c.cfg.Members {
		s.Members = append(s.Members, elect.MemberStatus{ID: id, Priority: uint32(min(c.incarnationOf(id), MaxIncarnation)), Self: id == c.id, LastHeard: c.heard[id]})
	}
	return s
}

// Metrics exports Ω's state and counters.
func (c *Core) Metrics(m *core.MetricSet) {
	m.Gauge("synclab_elect_incarnation", "This member's incarnation (restarts + 1).", float64(c.incarnation))
	m.Gauge("synclab_elect_interval_seconds", "The current candidate window.", c.interval.Seconds())
	c.counts.Metrics(m, Kinds, c.leader, c.leader == c.id, &c.bugs)
}
