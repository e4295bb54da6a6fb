package maekawa

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutexcount"
	"github.com/synclab/synclab/pkg/wire"
)

// Errors of Step (the frame is counted and dropped).
var (
	// ErrNoRoom: a request for a lock the voter has no room for (its
	// table is full of locks with votes, or the sender has its share).
	ErrNoRoom = errors.New("maekawa: no room for another lock")
	// ErrNotMember: a frame from an ID outside the member list.
	ErrNotMember = errors.New("maekawa: frame from a non-member")
	// ErrBadOp: an op that never travels in this direction or variant (a
	// deny in Maekawa, a shared request in Maekawa).
	ErrBadOp = errors.New("maekawa: op not used by this algorithm")
	// ErrFenceJump: a commit's fence too far above every fence this voter
	// knows: no run of grants makes it, only a forged frame.
	ErrFenceJump = errors.New("maekawa: implausible fence")
)

// Event names. Args are slog-style: "request" (uint64), "lock" (string),
// "fence" (uint64) and the ones named.
const (
	// Besides mutex.EventGranted ("mode"), EventRenewed, EventLost,
	// EventReleased, EventGrantLate, and liveness.EventMemberDown and
	// EventMemberUp:
	//
	// EventNoLiveSet: (Maekawa) no cross of the grid is wholly alive: a
	// request waits until one is ("lock").
	EventNoLiveSet = "no_live_set"
	// EventFrame: (Config.TraceFrames) a vote frame sent, to this member
	// itself too ("to", "op", "lock", "fence", "stamp").
	EventFrame = "vote_frame"
	// EventConfigIgnored: a setting that does nothing any more was set
	// ("setting", "value"); reported once, by New.
	EventConfigIgnored = "config_ignored"
	// EventSlowHeartbeats: a member's heartbeats say it beats slower than
	// this member (an older mutexd, another --heartbeat), so it is given
	// a longer silence before it is taken for down; or it beats in step
	// again ("member", "interval", "down_after"). WARN when slower.
	EventSlowHeartbeats = "heartbeats_slow"
)

// Loss reasons of this core, beyond mutex's.
const (
	// FenceExhausted: a lock's fences reached MaxVoteFence.
	FenceExhausted mutex.LossReason = "fence_exhausted"
)

// Core is one member of a voting lock: a requester for its own clients and
// a voter for every member's requests. Not safe for concurrent use.
type Core struct {
	cfg   Config
	self  uint32
	kind  wire.Kind
	grid  *Grid
	name  string
	stats Stats

	now     time.Time
	started bool
	det     *liveness.Detector
	beat    time.Time
	// stamped: the call running is Step, whose now is a frame's receive
	// stamp, not a reading of the clock: the loop may read the frame long
	// after it came (a busy host, a paused process), so a grant decided
	// on it waits for the next reading (granted).
	stamped bool
	late    mutexcount.LateGrants
	// slow: members whose heartbeats say they beat slower than this one
	// (an older mutexd, another --heartbeat), by their interval: each is
	// given a longer silence (heartbeatFrom).
	slow map[uint32]time.Duration
	// slowWarned is the highest timeout each member was warned of, and
	// when: a member whose interval changes back and forth (a forger,
	// two daemons with one --id) is warned once per new high or per
	// slowRewarn, not per frame.
	slowWarned map[uint32]slowWarning

	// Voter side.
	votes map[string]*vlock
	// era is the highest fence era this voter started in or recorded
	// (persisted: state.go); floor the fence of a lock it has no entry for.
	era   uint32
	floor uint64
	guard epoch.Guard // eras read from frames
	// restarted: a previous run left state; its votes may still be held,
	// so none is given before holdUntil (set at the first clock reading).
	restarted bool
	holdUntil time.Time
	saved     savedState
	durable   core.Durable
	byMember  map[uint32]int // lock entries per member, for shares

	// Requester side.
	// ahead: by member, how far its clock read ahead of this member's when
	// its last frame arrived (the frame's transmit time less its arrival:
	// the one-way delay makes it an underestimate). A proposal reads the
	// fastest live clock (propose).
	ahead   map[uint32]time.Duration
	reqs    *mutex.Table
	asks    map[string]*ask
	attempt uint32

	loop     []loopMsg // frames to this member's own voter or requester
	msgs     []core.Message
	events   []core.Event
	bugs     core.Bugs
	outcomes []mutex.Outcome
	// unsaved keeps the outcomes from the driver while a promise (the era, a vote)
	// is not on disk (mutexcount.Hold).
	unsaved  mutexcount.Hold
	counters map[string]uint64
}

type loopMsg struct {
	from uint32
	v    wire.Vote
}

var (
	_ mutex.Algorithm = (*Core)(nil)
	_ core.Scheduler  = (*Core)(nil)
	_ core.Advancer   = (*Core)(nil)
)

// New returns a member's core, restoring cfg.Persisted.
func New(cfg Config) (*Core, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	saved, err := decodeState(cfg.Persisted, cfg.MaxLocks)
	if err != nil {
		return nil, err
	}
	c := &Core{
		cfg:        cfg,
		self:       cfg.ID,
		kind:       wire.KindMaekawa,
		name:       Name,
		grid:       NewGrid(cfg.Members),
		votes:      map[string]*vlock{},
		byMember:   map[uint32]int{},
		asks:       map[string]*ask{},
		ahead:      map[uint32]time.Duration{},
		slow:       map[uint32]time.Duration{},
		slowWarned: map[uint32]slowWarning{},
		counters:   map[string]uint64{},
		era:        saved.era,
		saved:      saved,
		attempt:    cfg.Rand.Uint32(),
	}
	// A new era for this run, on disk before anything leaves (Change with
	// a promise): every lock starts above every fence the last run knew.
	if !saved.fresh {
		c.era++
	}
	c.floor = floorOf(c.era)
	c.durable.Change(true)
	if cfg.Quorum > 0 {
		c.kind, c.name = wire.KindQuorumLock, MajorityName
	}
	if cfg.WriterWindow != 0 {
		c.count("config_ignored")
		c.emit(EventConfigIgnored, fmt.Sprintf("WriterWindow %v is ignored: writers wait in the coordinators' queues, which holds new readers back", cfg.WriterWindow),
			"setting", "WriterWindow", "value", cfg.WriterWindow)
	}
	if c.reqs, err = mutex.NewTable(mutex.Limits{Self: cfg.ID, Members: len(cfg.Members), Shared: cfg.Shared,
		MinLease: cfg.MinLease, MaxLease: cfg.MaxLease, MaxQueue: cfg.MaxQueue, MaxLocks: cfg.MaxLocks}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	switch {
	case cfg.PersistVotes:
		c.restarted = len(saved.outstanding) > 0
	case !cfg.Forgetful:
		c.restarted = len(cfg.Persisted) > 0
	}
	return c, nil
}

// Config returns the validated configuration.
func (c *Core) Config() Config { return c.cfg }

// Grid returns the grid the crosses are drawn on.
func (c *Core) Grid() *Grid { return c.grid }

func (c *Core) majority() bool { return c.cfg.Quorum > 0 }

// observe advances the core's clock (never backwards).
func (c *Core) observe(now time.Time) {
	if now.IsZero() {
		return
	}
	if !c.started {
		c.started = true
		c.det = liveness.NewDetector(c.self, c.cfg.Members, c.cfg.DeadAfter, now)
		c.beat = now
		// A vote this member gave before it went down may still be held:
		// it votes again only once any lease granted on it has surely
		// ended: on every lock, or (PersistVotes) on those it wrote down.
		if c.restarted {
			hold := now.Add(c.cfg.stretch(c.cfg.MaxLease))
			if !c.cfg.PersistVotes {
				c.holdUntil = hold
				c.count("restart_holds")
			}
			for name := range c.saved.outstanding {
				c.votes[name] = &vlock{name: name, fence: c.floor, holdUntil: hold}
				c.count("restart_holds")
			}
		}
	}
	if now.After(c.now) {
		c.now = now
	}
}

func (c *Core) count(name string) { c.counters[name]++ }

func (c *Core) emit(name, msg string, args ...any) {
	c.events = append(c.events, core.Event{Name: name, Msg: msg, Args: args})
}

// post sends v to member to: through the member's TCP link, or, to this
// member itself, on the loop (handled before the call that posted it
// returns; it costs no message).
func (c *Core) post(to uint32, v wire.Vote, lamport uint64) {
	if c.cfg.TraceFrames {
		c.emit(EventFrame, "", "to", to, "op", v.Op.String(), "lock", v.Name, "fence", v.Fence, "stamp", v.Stamp)
	}
	if to == c.self {
		c.loop = append(c.loop, loopMsg{from: c.self, v: v})
		return
	}
	b, ok := c.bugs.Encode(&c.events, "vote", v, nil)
	if !ok {
		return
	}
	c.msgs = append(c.msgs, core.Message{To: to, Kind: c.kind, Payload: b, Stream: true, Lamport: lamport})
	c.count("sent_" + v.Op.String())
	c.stats.Sent[v.Op]++
}

// settle runs what the last call set going: frames on the loop, requests
// that may start, outcomes to report.
func (c *Core) settle() {
	for len(c.loop) > 0 {
		m := c.loop[0]
		c.loop = c.loop[1:]
		c.handle(m.from, m.v)
	}
	c.pump()
	for len(c.loop) > 0 { // a request just started asks this member too
		m := c.loop[0]
		c.loop = c.loop[1:]
		c.handle(m.from, m.v)
	}
	if !c.stamped {
		for _, name := range slices.Sorted(maps.Keys(c.asks)) {
			switch a := c.asks[name]; {
			case a.phase == entering:
				c.enter(a)
			case a.phase == held && a.renewed:
				c.confirmRenewal(a)
			}
		}
	}
	c.drain()
}

// drain moves the table's outcomes to the core's, each also an event.
func (c *Core) drain() {
	mutexcount.Drain(c.reqs, &c.outcomes, &c.events, mutexcount.Grants{Mode: true}, nil)
}

// Step feeds one frame.
func (c *Core) Step(m core.Message) error {
	c.observe(m.Time)
	c.stamped = true
	defer func() { c.stamped = false }()
	if _, ok := slices.BinarySearch(c.cfg.Members, m.From); !ok || m.From == c.self {
		c.count("rejected_not_member")
		return ErrNotMember
	}
	if c.det != nil && c.det.Heard(m.From, c.now) {
		c.reportLiveness()
	}
	if !m.Sent.IsZero() && !m.Time.IsZero() {
		c.ahead[m.From] = m.Sent.Sub(m.Time)
	}
	var err error
	switch m.Kind {
	case wire.KindHeartbeat:
		var h wire.Heartbeat
		if err = h.UnmarshalBinary(m.Payload); err == nil && c.det != nil {
			c.heartbeatFrom(m.From, h.Interval)
		}
	case c.kind:
		var v wire.Vote
		if err = v.UnmarshalBinary(m.Payload); err == nil {
			err = c.handle(m.From, v)
		}
	default:
		err = core.ErrUnexpectedKind
	}
	if err != nil {
		c.count("rejected_" + rejectLabels.Of(err, "payload_"+wire.Reason(err)))
	}
	c.settle()
	return err
}

var rejectLabels = core.ErrorLabels{
	{Err: ErrNoRoom, Label: "no_room"},
	{Err: ErrNotMember, Label: "not_member"},
	{Err: ErrBadOp, Label: "bad_op"},
	{Err: ErrFenceJump, Label: "fence_jump"},
	{Err: core.ErrUnexpectedKind, Label: "unexpected_kind"},
}

// handle dispatches a vote frame to the voter or the requester side.
func (c *Core) handle(from uint32, v wire.Vote) error {
	switch v.Op {
	case wire.VoteRequest, wire.VoteRelinquish, wire.VoteRelease, wire.VoteCommit, wire.VoteRenew:
		return c.voterStep(from, v)
	}
	return c.requesterStep(from, v)
}

// StepDatagram refuses datagrams.
func (c *Core) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }

// Tick runs the timers: heartbeats, liveness, vote and lease expiry,
// attempts and backoffs.
func (c *Core) Tick(now time.Time) {
	c.observe(now)
	now = c.now
	c.unsaved.Release(now, &c.outcomes, &c.events, c.counters)
	if !now.Before(c.beat) {
		c.msgs = append(c.msgs, core.Message{To: core.Broadcast, Kind: wire.KindHeartbeat,
			Payload: mustHeartbeat(c.cfg.HeartbeatInterval, c.det.AliveCount())})
		c.beat = now.Add(c.cfg.HeartbeatInterval)
	}
	c.det.Check(now)
	c.reportLiveness()
	if !c.holdUntil.IsZero() && !now.Before(c.holdUntil) {
		c.holdUntil = time.Time{} // the restart's hold is over: queued requests get their votes below
	}
	for _, name := range slices.Sorted(maps.Keys(c.votes)) {
		c.tickVotes(c.votes[name])
	}
	for _, lock := range c.reqs.Expire(now) {
		if a := c.asks[lock]; a != nil && a.phase == held {
			if _, ok := c.reqs.Lookup(c.now, a.id); !ok {
				c.endAsk(a)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.asks)) {
		c.tickAsk(c.asks[name])
	}
	c.settle()
}

func mustHeartbeat(interval time.Duration, alive int) []byte {
	b, _ := wire.Heartbeat{Interval: uint32(interval / time.Millisecond), Alive: uint32(alive)}.AppendBinary(nil)
	return b
}

// heartbeatFrom fits member from's silence timeout to the interval its
// heartbeat says it beats at (ms). This member takes a member silent for
// DeadAfter for down: two of its own heartbeats and an allowance for the
// second to be late (DeadAfter - 2 HeartbeatInterval, half a --heartbeat
// in mutexd). A member beating slower (mutexd before 2026-12-06 beat
// Maekawa's heartbeats every 1.5 --heartbeat against 1.25 now, or
// another --heartbeat) gets two of its heartbeats and the same
// allowance: one of its heartbeats lost would take it for down
// otherwise. Its interval counts up to DeadAfter at most, so a member
// that says it beats once an hour (a bug, or a lie) is not kept for up
// an hour: 2 DeadAfter and the allowance at most. Liveness only: the
// detector never decides a vote (doc.go). WARN when its timeout rises
// above what this member was warned of, or an hour after that warning,
// INFO on other changes, and a status line while it lasts.
// slowWarning is the timeout a member was last warned of, and when.
type slowWarning struct {
	timeout time.Duration
	at      time.Time
}

// slowRewarn is how soon a member slow again, no slower than it was
// warned of, is warned again (a member upgraded, then rolled back).
const slowRewarn = time.Hour

func (c *Core) heartbeatFrom(from, intervalMS uint32) {
	interval := time.Duration(intervalMS) * time.Millisecond
	late := max(c.cfg.DeadAfter-2*c.cfg.HeartbeatInterval, 0)
	timeout := max(c.cfg.DeadAfter, min(2*min(interval, c.cfg.DeadAfter)+late, liveness.MaxTimeout))
	if timeout > c.cfg.DeadAfter {
		c.slow[from] = interval
	} else {
		delete(c.slow, from)
	}
	if c.det.Timeout(from) == timeout {
		return // said once, when it changed
	}
	c.det.SetTimeout(from, timeout)
	args := []any{"member", from, "interval", interval, "down_after", timeout}
	if w := c.slowWarned[from]; timeout == c.cfg.DeadAfter || timeout <= w.timeout && c.now.Sub(w.at) < slowRewarn {
		// Back in step, or no slower than it was warned of already: said
		// at INFO (the daemon's log limits a flood of it).
		c.events = append(c.events, core.Event{Name: EventSlowHeartbeats, Args: args,
			Msg: fmt.Sprintf("member %d beats every %v: taken for down after %v of silence", from, interval, timeout)})
		return
	}
	c.slowWarned[from] = slowWarning{timeout, c.now}
	c.count("heartbeats_slow")
	c.events = append(c.events, core.Event{Name: EventSlowHeartbeats, Warn: true, Args: args,
		Msg: fmt.Sprintf("member %d beats every %v, slower than this member's %v (an older mutexd, or another --heartbeat): taken for down after %v of silence instead of %v; run the same mutexd with the same --heartbeat on every member",
			from, interval, c.cfg.HeartbeatInterval, timeout, c.cfg.DeadAfter)})
}

func (c *Core) reportLiveness() {
	for _, t := range c.det.Transitions() {
		switch {
		case t.To == liveness.Suspect:
			c.emit(liveness.EventMemberDown, fmt.Sprintf("member %d is down: silent for %v", t.ID, t.Silent), "member", t.ID)
		case t.From == liveness.Suspect:
			c.emit(liveness.EventMemberUp, fmt.Sprintf("member %d is up", t.ID), "member", t.ID)
		}
	}
}

// alive says whether member m is not taken for down.
func (c *Core) alive(m uint32) bool {
	return m == c.self || c.det == nil || c.det.State(m) != liveness.Suspect
}

// Deadline is when the core next needs Tick.
func (c *Core) Deadline() time.Time {
	if !c.started {
		return time.Time{}
	}
	d := core.Earliest(c.beat, c.det.Deadline(), c.reqs.Deadline(), c.holdUntil)
	for _, l := range c.votes {
		d = core.Earliest(d, l.deadline())
	}
	for _, a := range c.asks {
		d = core.Earliest(d, a.deadline, a.renewBy)
		if a.phase == collecting {
			d = core.Earliest(d, a.refreshAt)
		}
	}
	return core.Earliest(d, c.unsaved.Deadline(c.now))
}

// Ready drains what the core wants done. State, while the era (or, with
// PersistVotes, a vote) is not confirmed on disk (Advance), is the
// voter's durable state: persist it before sending (Promise).
func (c *Core) Ready() core.Ready {
	rd := core.Ready{Messages: c.msgs, Events: c.events}
	c.durable.Ready(&rd, c.encodeState)
	c.unsaved.Ready(&rd, &c.outcomes)
	c.msgs, c.events = nil, nil
	return rd
}

// Advance is the driver's report on the last Ready (core.Advancer); the
// outcomes held for it leave once every promise is on disk
// (mutexcount.Hold).
func (c *Core) Advance(saved bool) {
	c.durable.Advance(saved)
	c.unsaved.Advance(!c.durable.PromisePending(), &c.outcomes, &c.events)
}

// Outcomes drains the typed answers about requests.
func (c *Core) Outcomes() []mutex.Outcome {
	out := c.outcomes
	c.outcomes = nil
	return out
}

// Lookup returns request id as it stands.
func (c *Core) Lookup(id mutex.RequestID) (mutex.RequestStatus, bool) {
	st, ok := c.reqs.Lookup(c.now, id)
	st.Unsaved = c.unsaved.Unsaved(id)
	return st, ok
}

// Guarantees is what the algorithm promises.
func (c *Core) Guarantees() mutex.Guarantees { return c.cfg.Guarantees() }

// Guarantees is what a core of this configuration promises.
func (c *Config) Guarantees() mutex.Guarantees {
	if c.Quorum > 0 {
		return majorityGuarantees(c.Forgetful)
	}
	return maekawaGuarantees
}
