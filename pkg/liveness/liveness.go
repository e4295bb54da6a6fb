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
	// Unknown: not heard yet, and SuspectTicks have not passed since start.
	Unknown State = iota
	// Alive: heard within the last SuspectTicks ticks.
	Alive
	// Suspect: silent for SuspectTicks ticks (crashed, partitioned, paused,
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

type peer struct {
	id        uint32
	state     State
	lastTick  uint64    // our tick count when last heard (0: never, counts from start)
	lastHeard time.Time // local time of the last heartbeat
	since     time.Time // local time of the last state change
	heard     uint64    // heartbeats accepted
	flaps     uint64    // Suspect -> Alive recoveries
	alive     uint32    // the member's own alive count, from its last heartbeat
	interval  uint32    // the member's announced heartbeat interval, ms
}

// Core is a heartbeat failure detector. Every member broadcasts a heartbeat
// every HeartbeatTicks ticks; a member not heard for SuspectTicks ticks is
// suspected, and alive again as soon as it is heard. It is not safe for
// concurrent use: the driver serialises Step, Tick, Ready and Status.
type Core struct {
	cfg   Config
	peers []*peer // ascending ID, self excluded
	byID  map[uint32]*peer

	tick       uint64    // ticks since start
	now        time.Time // local time at the last tick (to date events of Step without a stamp)
	untilBeat  int       // ticks until the next heartbeat
	sent       uint64    // heartbeats sent
	intervalMS uint32

	rd core.Ready
}

var _ core.Core = (*Core)(nil)

// New validates cfg (filling its defaults) and returns a detector that knows
// nothing yet: every other member is Unknown until heard, or Suspect once
// SuspectTicks pass without a heartbeat.
func New(cfg Config) (*Core, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Core{
		cfg:        cfg,
		byID:       make(map[uint32]*peer, len(cfg.Members)),
		untilBeat:  1,
		intervalMS: uint32(cfg.TickInterval.Milliseconds() * int64(cfg.HeartbeatTicks)),
	}
	ids := slices.Clone(cfg.Members)
	slices.Sort(ids)
	for _, id := range ids {
		if id == cfg.ID {
			continue
		}
		p := &peer{id: id}
		c.peers = append(c.peers, p)
		c.byID[id] = p
	}
	if cfg.Rand != nil {
		// The phase is drawn once: after it, heartbeats keep a fixed period
		// in local ticks, and the hosts' independent clocks keep their
		// sends apart.
		c.untilBeat += cfg.Rand.IntN(cfg.HeartbeatTicks)
	}
	return c, nil
}

// Config returns the configuration with its defaults filled in.
func (c *Core) Config() Config { return c.cfg }

// State returns what the detector believes about member id. Its own ID is
// always Alive; an ID outside the member list is Unknown.
func (c *Core) State(id uint32) State {
	if id == c.cfg.ID {
		return Alive
	}
	if p, ok := c.byID[id]; ok {
		return p.state
	}
	return Unknown
}

// Alive reports whether member id is currently believed alive.
func (c *Core) Alive(id uint32) bool { return c.State(id) == Alive }

// AliveCount is the number of members believed alive, this one included.
func (c *Core) AliveCount() int {
	n := 1
	for _, p := range c.peers {
		if p.state == Alive {
			n++
		}
	}
	return n
}

// Step takes a heartbeat. Frames from outside the member list and kinds
// other than KindHeartbeat are refused, so that a misrouted or forged frame
// shows up in the node's drop counters instead of changing a verdict.
func (c *Core) Step(m core.Message) error {
	if m.From == c.cfg.ID {
		return ErrFromSelf
	}
	p, ok := c.byID[m.From]
	if !ok {
		return fmt.Errorf("%w: %d", core.ErrUnknownMember, m.From)
	}
	if m.Kind != wire.KindHeartbeat {
		return fmt.Errorf("%w: liveness takes heartbeats, got %v", core.ErrUnexpectedKind, m.Kind)
	}
	var hb wire.Heartbeat
	if err := hb.UnmarshalBinary(m.Payload); err != nil {
		return fmt.Errorf("liveness: heartbeat from %d: %w", m.From, err)
	}
	at := m.Time
	if at.IsZero() {
		// A driver without receive stamps: the last tick is the best
		// local time known.
		at = c.now
	}
	p.lastTick = c.tick
	p.lastHeard = at
	p.heard++
	p.alive = hb.Alive
	p.interval = hb.Interval
	if p.state != Alive {
		if p.state == Suspect {
			p.flaps++
		}
		p.state = Alive
		p.since = at
		c.event(EventMemberUp, fmt.Sprintf("member %d is alive", p.id),
			"member", p.id, "flaps", p.flaps, "heard", p.heard)
	}
	return nil
}

// StepDatagram refuses foreign traffic: the detector speaks only synclab
// frames.
func (c *Core) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }

// Tick advances the detector by one tick: it suspects members silent for
// SuspectTicks ticks, then sends a heartbeat when one is due.
func (c *Core) Tick(now time.Time) {
	c.tick++
	c.now = now
	for _, p := range c.peers {
		if p.state == Suspect || c.tick-p.lastTick < uint64(c.cfg.SuspectTicks) {
			continue
		}
		p.state = Suspect
		p.since = now
		if p.heard == 0 {
			c.event(EventMemberDown, fmt.Sprintf("member %d not heard since start", p.id),
				"member", p.id, "silent_ticks", c.tick-p.lastTick)
		} else {
			c.event(EventMemberDown, fmt.Sprintf("member %d is suspected", p.id),
				"member", p.id, "silent_ticks", c.tick-p.lastTick, "last_heard", p.lastHeard)
		}
	}
	c.untilBeat--
	if c.untilBeat > 0 {
		return
	}
	c.untilBeat = c.cfg.HeartbeatTicks
	hb := wire.Heartbeat{Interval: c.intervalMS, Alive: uint32(c.AliveCount())}
	payload, err := hb.AppendBinary(make([]byte, 0, wire.HeartbeatLen))
	if err != nil {
		// Fixed-size fields of values validate() bounded: cannot fail.
		panic("liveness: encoding a heartbeat: " + err.Error())
	}
	c.sent++
	c.rd.Messages = append(c.rd.Messages, core.Message{
		To:      core.Broadcast,
		Kind:    wire.KindHeartbeat,
		Payload: payload,
	})
}

func (c *Core) event(name, msg string, args ...any) {
	c.rd.Events = append(c.rd.Events, core.Event{Name: name, Msg: msg, Args: args})
}

// Ready drains the heartbeats to send and the events to report. The
// detector has no durable state: after a restart it learns everything again
// within SuspectTicks.
func (c *Core) Ready() core.Ready {
	rd := c.rd
	c.rd = core.Ready{}
	return rd
}

// Status is the detector's view, as `X status --json` shows it.
type Status struct {
	ID             uint32         `json:"id"`
	HeartbeatTicks int            `json:"heartbeat_ticks"`
	SuspectTicks   int            `json:"suspect_ticks"`
	IntervalMS     uint32         `json:"interval_ms"`
	Ticks          uint64         `json:"ticks"`
	Now            time.Time      `json:"now,omitzero"` // local clock at the last tick
	Sent           uint64         `json:"heartbeats_sent"`
	Alive          int            `json:"alive"` // members believed alive, self included
	Members        []MemberStatus `json:"members"`
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
	st := Status{
		ID:             c.cfg.ID,
		HeartbeatTicks: c.cfg.HeartbeatTicks,
		SuspectTicks:   c.cfg.SuspectTicks,
		IntervalMS:     c.intervalMS,
		Ticks:          c.tick,
		Now:            c.now,
		Sent:           c.sent,
		Alive:          c.AliveCount(),
		Members:        make([]MemberStatus, 0, len(c.peers)),
	}
	for _, p := range c.peers {
		st.Members = append(st.Members, MemberStatus{
			ID:              p.id,
			State:           p.state,
			Alive:           p.state == Alive,
			LastHeard:       p.lastHeard,
			Heard:           p.heard,
			Since:           p.since,
			Flaps:           p.flaps,
			TheirAlive:      p.alive,
			TheirIntervalMS: p.interval,
		})
	}
	return st
}
