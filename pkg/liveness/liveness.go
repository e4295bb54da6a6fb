package liveness

import (
	"fmt"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// State is what a detector believes about a member.
type State uint8

const (
	// Unknown: not heard yet, and its timeout has not passed since start.
	Unknown State = iota
	// Alive: heard within its timeout.
	Alive
	// Suspect: silent for its timeout (crashed, partitioned, paused,
	// or its heartbeats lost). A heartbeat makes it Alive again.
	Suspect
)

func (s State) String() string {
	switch s {
	case Unknown:
		return "unknown"
	case Alive:
		return "alive"
	case Suspect:
		return "suspect"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// MarshalText makes State read as its name in JSON status.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a State's name, so that a CLI can decode the status
// JSON the daemon serves.
func (s *State) UnmarshalText(b []byte) error {
	for _, v := range []State{Unknown, Alive, Suspect} {
		if string(b) == v.String() {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("liveness: unknown state %q", b)
}

// Event names. Args always start with "member", the member's ID.
const (
	EventMemberUp   = "member_up"
	EventMemberDown = "member_down"
)

// Core is the heartbeat failure detector: every member broadcasts a
// heartbeat every Config.Heartbeat; a member not heard for
// Config.SuspectAfter is suspected, and alive again as soon as it is heard.
// With Config.Probe, a member that missed a heartbeat is asked for one
// until it answers or is suspected. The verdicts are a Detector's; Core
// adds the heartbeats, the probes and the events.
// It is not safe for concurrent use: the driver serialises Step, Tick,
// Ready and Status.
type Core struct {
	cfg Config
	id  uint32
	det *Detector
	// theirs is what each member said in its last heartbeat.
	theirs map[uint32]wire.Heartbeat
	peers  []uint32 // the other members, ascending

	// probed is when each member was last probed, answered when a probe
	// of each was last answered (Config.Probe).
	probed, answered map[uint32]time.Time
	probes, answers  uint64 // probes sent, probes answered

	now        time.Time // local time at the last Tick or arrival
	nextBeat   time.Time // when the next heartbeat is due
	sent       uint64    // heartbeats sent
	intervalMS uint32

	rd   core.Ready
	bugs core.Bugs // our own encodings that failed (metric synclab_liveness_bugs_total)
}

var (
	_ core.Core      = (*Core)(nil)
	_ core.Scheduler = (*Core)(nil)
)

// New validates cfg (filling its defaults) and returns a detector for
// env.ID among env.Members that knows nothing yet: every other member is
// Unknown until heard, or Suspect once SuspectAfter passes from env.Now
// without a heartbeat. env.Rand, when set, draws the phase of the first
// heartbeat in [0, Heartbeat), so that hosts started together (a lab boot,
// a simulator) do not send in lock step; without it the first Tick sends.
func New(env core.Env, cfg Config) (*Core, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := CheckMembers(env.ID, env.Members); err != nil {
		return nil, err
	}
	c := &Core{
		cfg:        cfg,
		id:         env.ID,
		det:        NewDetector(env.ID, env.Members, cfg.SuspectAfter, env.Now),
		theirs:     make(map[uint32]wire.Heartbeat, len(env.Members)),
		probed:     make(map[uint32]time.Time),
		answered:   make(map[uint32]time.Time),
		now:        env.Now,
		nextBeat:   env.Now,
		intervalMS: uint32(cfg.Heartbeat.Milliseconds()),
	}
	for _, id := range env.Members {
		if id != env.ID {
			c.peers = append(c.peers, id)
		}
	}
	slices.Sort(c.peers)
	if env.Rand != nil {
		// The phase is drawn once: after it, heartbeats keep a fixed period
		// on the local clock, and the hosts' independent clocks keep their
		// sends apart.
		c.nextBeat = c.nextBeat.Add(time.Duration(env.Rand.Int64N(int64(cfg.Heartbeat))))
	}
	return c, nil
}

// Config returns the configuration with its defaults filled in.
func (c *Core) Config() Config { return c.cfg }

// Detector returns the detector behind the verdicts (read-only use).
func (c *Core) Detector() *Detector { return c.det }

// State returns what the detector believes about member id. Its own ID is
// always Alive; an ID outside the member list is Unknown.
func (c *Core) State(id uint32) State { return c.det.State(id) }

// Alive reports whether member id is currently believed alive.
func (c *Core) Alive(id uint32) bool { return c.det.Alive(id) }

// AliveCount is the number of members believed alive, this one included.
func (c *Core) AliveCount() int { return c.det.AliveCount() }

// Step takes a heartbeat or a heartbeat probe (a sign of life too, which
// it answers with a heartbeat to the prober alone, whether or not this
// member probes itself). Frames from outside the member list and other
// kinds are refused, so that a misrouted or forged frame shows up in the
// node's drop counters instead of changing a verdict.
func (c *Core) Step(m core.Message) error {
	if m.From == c.id {
		return ErrFromSelf
	}
	if _, ok := c.det.Member(m.From); !ok {
		return fmt.Errorf("%w: %d", core.ErrUnknownMember, m.From)
	}
	if m.Kind != wire.KindHeartbeat && m.Kind != wire.KindHeartbeatProbe {
		return fmt.Errorf("%w: liveness takes heartbeats and their probes, got %v", core.ErrUnexpectedKind, m.Kind)
	}
	var hb wire.Heartbeat
	if err := hb.UnmarshalBinary(m.Payload); err != nil {
		return fmt.Errorf("liveness: heartbeat from %d: %w", m.From, err)
	}
	at := m.Time
	if at.IsZero() {
		// A driver without receive stamps: the latest local time known.
		at = c.now
	} else if at.After(c.now) {
		c.now = at
	}
	c.theirs[m.From] = hb
	c.det.Heard(m.From, at)
	c.report()
	if m.Kind == wire.KindHeartbeatProbe {
		c.answer(m.From, at)
	}
	return nil
}

// answerSpacing bounds the answers to one member's probes: a member that
// floods probes (a bug, or a stolen key) gets at most one heartbeat back
// per answerSpacing, each the size of its probe; an honest prober sends
// one per Config.Probe (at least a millisecond apart).
const answerSpacing = time.Millisecond / 2

// answer sends member id a heartbeat, to it alone: it probed this member.
func (c *Core) answer(id uint32, at time.Time) {
	if last, ok := c.answered[id]; ok && at.Sub(last) < answerSpacing && !at.Before(last) {
		return
	}
	c.answered[id] = at
	if c.queue(id, wire.KindHeartbeat, "heartbeat") {
		c.answers++
	}
}

// queue encodes this member's heartbeat as kind for to (core.Broadcast:
// every member); false if the encoding failed (counted and reported:
// core.Bugs).
func (c *Core) queue(to uint32, kind wire.Kind, what string) bool {
	hb := wire.Heartbeat{Interval: c.intervalMS, Alive: uint32(c.AliveCount())}
	payload, ok := c.bugs.Encode(&c.rd.Events, what, hb, make([]byte, 0, wire.HeartbeatLen))
	if !ok {
		return false
	}
	c.rd.Messages = append(c.rd.Messages, core.Message{To: to, Kind: kind, Payload: payload})
	return true
}

// probeDue is when member id is next to be probed, and false when it is
// not to be: probes off, the member suspected, or its suspicion due
// before the probe. A member silent since q is first probed at q +
// Heartbeat + Probe (the heartbeat it owed is late by a probe interval),
// then every Probe.
func (c *Core) probeDue(id uint32) (time.Time, bool) {
	if c.cfg.Probe == 0 {
		return time.Time{}, false
	}
	expires := c.det.Expires(id)
	if expires.IsZero() {
		return time.Time{}, false
	}
	at := c.det.QuietSince(id).Add(c.cfg.Heartbeat + c.cfg.Probe)
	if last, ok := c.probed[id]; ok && !last.Before(at.Add(-c.cfg.Probe)) {
		// Probed in this silence already: the next, a Probe later.
		at = last.Add(c.cfg.Probe)
	}
	if !at.Before(expires) {
		return time.Time{}, false
	}
	return at, true
}

// probe asks every member whose probe is due for a heartbeat.
func (c *Core) probe(now time.Time) {
	for _, id := range c.peers {
		if at, ok := c.probeDue(id); ok && !now.Before(at) {
			c.probed[id] = now
			if c.queue(id, wire.KindHeartbeatProbe, "heartbeat probe") {
				c.probes++
			}
		}
	}
}

// StepDatagram refuses foreign traffic: the detector speaks only synclab
// frames.
func (c *Core) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }

// Tick suspects members silent for SuspectAfter, then sends a heartbeat
// when one is due. It may come at any time: early it does nothing, late (a
// long sleep) it suspects every member whose time passed and sends one
// heartbeat, the next due a full interval later.
func (c *Core) Tick(now time.Time) {
	if now.After(c.now) {
		c.now = now
	}
	c.det.Check(now)
	c.report()
	c.probe(now)
	if now.Before(c.nextBeat) {
		return
	}
	c.nextBeat = c.nextBeat.Add(c.cfg.Heartbeat)
	if !c.nextBeat.After(now) {
		c.nextBeat = now.Add(c.cfg.Heartbeat) // missed beats are not sent in a burst
	}
	// A failed encoding is counted and reported (core.Bugs); the next
	// beat is tried as usual.
	if c.queue(core.Broadcast, wire.KindHeartbeat, "heartbeat") {
		c.sent++
	}
}

// Deadline is the next heartbeat, the next probe or the next suspicion,
// whichever is first (core.Scheduler).
func (c *Core) Deadline() time.Time {
	d := core.Earliest(c.nextBeat, c.det.Deadline())
	for _, id := range c.peers {
		if at, ok := c.probeDue(id); ok {
			d = core.Earliest(d, at)
		}
	}
	return d
}

// report turns the detector's transitions into events.
func (c *Core) report() {
	for _, t := range c.det.Transitions() {
		switch {
		case t.Up():
			c.event(EventMemberUp, fmt.Sprintf("member %d is alive", t.ID),
				"member", t.ID, "flaps", t.Flaps, "heard", t.Heard)
		case t.Heard == 0:
			c.event(EventMemberDown, fmt.Sprintf("member %d not heard since start", t.ID),
				"member", t.ID, "silent", t.Silent)
		default:
			c.event(EventMemberDown, fmt.Sprintf("member %d is suspected", t.ID),
				"member", t.ID, "silent", t.Silent, "last_heard", t.LastHeard)
		}
	}
}

func (c *Core) event(name, msg string, args ...any) {
	c.rd.Events = append(c.rd.Events, core.Event{Name: name, Msg: msg, Args: args})
}

// Ready drains the heartbeats to send and the events to report. The
// detector has no durable state: after a restart it learns everything again
// within SuspectAfter.
func (c *Core) Ready() core.Ready {
	rd := c.rd
	c.rd = core.Ready{}
	return rd
}

// Status is the detector's view, as `X status --json` shows it.
type Status struct {
	ID           uint32        `json:"id"`
	IntervalMS   uint32        `json:"interval_ms"`      // heartbeat interval
	SuspectAfter time.Duration `json:"suspect_after_ns"` // silence before suspicion
	Now          time.Time     `json:"now,omitzero"`     // local clock at the last tick or arrival
	Sent         uint64        `json:"heartbeats_sent"`
	// ProbeMS is how often a member that missed a heartbeat is probed (0:
	// never); Probes the probes sent, Answered the probes answered.
	ProbeMS  uint32         `json:"probe_ms,omitempty"`
	Probes   uint64         `json:"probes_sent,omitempty"`
	Answered uint64         `json:"probes_answered,omitempty"`
	Alive    int            `json:"alive"` // members believed alive, self included
	Members  []MemberStatus `json:"members"`
}

// MemberStatus is the view of one other member. Times are the local clock's,
// and marshal as RFC 3339 with nanoseconds; zero times are left out.
type MemberStatus struct {
	ID         uint32    `json:"id"`
	State      State     `json:"state"`
	Alive      bool      `json:"alive"`
	LastHeard  time.Time `json:"last_heard,omitzero"` // local time of the last heartbeat
	Heard      uint64    `json:"heard"`               // heartbeats accepted
	Since      time.Time `json:"since,omitzero"`      // last state change
	Flaps      uint64    `json:"flaps"`               // suspect -> alive recoveries
	TheirAlive uint32    `json:"their_alive"`         // alive count in its last heartbeat
	// TheirIntervalMS is the heartbeat interval it announces; a value
	// different from ours means the hosts are configured differently.
	TheirIntervalMS uint32 `json:"their_interval_ms"`
}

// Status returns a Status (as any, for core.Core); StatusView returns it
// typed.
func (c *Core) Status() any { return c.StatusView() }

// StatusView returns the detector's view.
func (c *Core) StatusView() Status {
	members := c.det.Members()
	st := Status{
		ID:           c.id,
		IntervalMS:   c.intervalMS,
		SuspectAfter: c.cfg.SuspectAfter,
		Now:          c.now,
		Sent:         c.sent,
		ProbeMS:      uint32(c.cfg.Probe.Milliseconds()),
		Probes:       c.probes,
		Answered:     c.answers,
		Alive:        c.AliveCount(),
		Members:      make([]MemberStatus, 0, len(members)),
	}
	for _, m := range members {
		hb := c.theirs[m.ID]
		st.Members = append(st.Members, MemberStatus{
			ID:              m.ID,
			State:           m.State,
			Alive:           m.State == Alive,
			LastHeard:       m.LastHeard,
			Heard:           m.Heard,
			Since:           m.Since,
			Flaps:           m.Flaps,
			TheirAlive:      hb.Alive,
			TheirIntervalMS: hb.Interval,
		})
	}
	return st
}
