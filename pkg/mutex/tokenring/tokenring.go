package tokenring

import (
	"encoding"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutexcount"
	"github.com/synclab/synclab/pkg/quorum"
	"github.com/synclab/synclab/pkg/wire"
)

// Errors of Step (the frame is counted and dropped). Generations are also
// refused with pkg/epoch's errors (ErrAbsurd, ErrTooFast).
var (
	// ErrNoLock: a token or prepare for a lock this member does not know,
	// and the table (or the sender's share of it) has no room.
	ErrNoLock   = errors.New("tokenring: frame about a lock the table has no room for")
	ErrStaleAck = errors.New("tokenring: acknowledgement of no token in flight")
	// ErrBadToken: a token whose fields no member sends (a fence of
	// another round than its generation's).
	ErrBadToken = errors.New("tokenring: implausible token")
)

// Event names. Args are slog-style: "request" (uint64), "lock" (string),
// "fence" (uint64) and the ones named.
const (
	// Besides mutex.EventGranted ("generation"), EventRenewed, EventLost
	// (expired, superseded, renew_refused), EventReleased, EventGrantLate
	// (a grant read after its lease ended, refused: doc.go, "A loop that
	// reads late"), and liveness.EventMemberDown and EventMemberUp:
	//
	// EventRegenerated: this member created a lock's token anew
	// ("generation", "hold").
	EventRegenerated = "token_regenerated"
	// EventTokenStale: this member dropped a token of an older generation
	// ("generation", "newer").
	EventTokenStale = "token_stale"
	// EventMemberSkipped: a successor did not acknowledge a token, or
	// missed a heartbeat when a token was to be passed to it, and is
	// bypassed until heard again ("member"; "silent" for the latter).
	EventMemberSkipped = "member_skipped"
	// EventTokenDisowned: the member a token came from did not vouch for
	// it (it holds the token, passed it elsewhere, or never passed this
	// one): the token was forged or duplicated, and dropped before any use
	// ("lock", "generation", "from").
	EventTokenDisowned = "token_disowned"
	// EventRoundsExhausted: no generation is left to create for a lock
	// ("lock", "err"). Reported once per lock.
	EventRoundsExhausted = "rounds_exhausted"
)

// fenceCountBits: a fence is round<<fenceCountBits | grants in the
// generation.
const fenceCountBits = 40

// maxRound is the last round a fence can hold.
const maxRound = 1<<(64-fenceCountBits) - 1

// GenerationBurst is how many rounds ahead of what this member knows a
// frame's generation may be after a rest (pkg/epoch), summed over every
// lock: far more than regenerations during any outage, a small part of the
// 2^24 rounds a fence can number.
const GenerationBurst = 1 << 16

// LastGenerationRound is the last round a generation may have; the final
// GenerationBurst rounds are never used.
const LastGenerationRound = maxRound - GenerationBurst

// generationLimit is the plausibility rule for generations from the wire.
// A new round needs a loss timeout and a majority; rivals back off half a
// loss timeout: the ring does not create more than two rounds per member
// per loss timeout, and credit comes back at that pace.
func generationLimit(cfg Config) epoch.Limit {
	return epoch.Spaced(maxRound, GenerationBurst, 2*float64(len(cfg.Members))/float64(cfg.LossTimeout))
}

// MakeGeneration returns the generation of round created by member id.
func MakeGeneration(round, id uint32) uint64 { return epoch.Make(round, id) }

// GenerationRound and GenerationOwner split a generation.
func GenerationRound(g uint64) uint32 { return epoch.Round(g) }
func GenerationOwner(g uint64) uint32 { return epoch.Owner(g) }

// Core is the token ring of one member. Not safe for concurrent use.
type Core struct {
	cfg      Config
	self     uint32
	majority int
	voters   quorum.Voters // every member, weight 1
	hold     time.Duration

	now     time.Time
	started bool
	begun   time.Time // the first Tick or Step
	// det says which members are down (silent for DeadAfter); it is made
	// at the first Tick or Step, when the core first has a clock, so every
	// member is presumed alive from then on (Unknown counts as up: a
	// member that never speaks is found out after DeadAfter).
	det *liveness.Detector
	// watching is the neighbours this member watches and sends its
	// heartbeats to, each since when (watch.go); reportedDown, those
	// reported down and not heard since.
	watching     map[uint32]time.Time
	reportedDown map[uint32]bool
	skipped      map[uint32]bool
	nextBeat     time.Time
	// listenedFrom is the end of this member's last stall (its loop a
	// loss timeout or more behind its timers): see missedBeat.
	listenedFrom time.Time
	// beatOf is the heartbeat interval each member last said it keeps
	// (its own --heartbeat may differ from this member's): see quiet.
	beatOf map[uint32]time.Duration

	// catchUp is when a Tick put off at catchUpFrom (the loop was not
	// running: a busy host) runs, after the frames that waited meanwhile
	// were read (zero: none pending); see lateTick. lateBy is the
	// longest delay of a loop lately, at lateAt (see lateness).
	catchUp, catchUpFrom time.Time
	lateBy               time.Duration
	lateAt               time.Time

	// stamped: the call running is Step, whose now is a frame's receive
	// stamp, not a reading of the clock; grantDue: a grant or a renewal
	// that Step found due waits for the next reading (tryGrant,
	// finishRenewal), which Deadline asks for at once. late says the ones
	// the reading refused (grants_late, mutex.EventGrantLate).
	stamped, grantDue bool
	late              mutexcount.LateGrants
	// from is the sender of the frame the running Step takes.
	from uint32

	table
	// confirmedFloor is the latest time this member may have answered OK
	// to a check of a lock that has no entry here (answered from the
	// floor, or an entry since reclaimed), or before this run began: an
	// entry made now takes it as its answeredOK.
	confirmedFloor time.Time
	reqs           *mutex.Table // this member's clients' requests
	nonce          uint32

	msgs     []core.Message
	events   []core.Event
	bugs     core.Bugs // our own encodings that failed (counters "bug_*")
	outcomes []mutex.Outcome
	// unsaved keeps the outcomes from the driver while a promised
	// generation is not on disk (mutexcount.Hold).
	unsaved  mutexcount.Hold
	counters map[string]uint64
}

var (
	_ mutex.Algorithm = (*Core)(nil)
	_ core.Scheduler  = (*Core)(nil)
)

// New returns a member's core, restoring cfg.Persisted.
func New(cfg Config) (*Core, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	saved, err := decodeState(cfg.Persisted)
	if err != nil {
		return nil, err
	}
	c := &Core{
		cfg:      cfg,
		self:     cfg.ID,
		majority: len(cfg.Members)/2 + 1,
		hold:     cfg.Hold(),
		skipped:  map[uint32]bool{}, beatOf: map[uint32]time.Duration{},
		watching: map[uint32]time.Time{}, reportedDown: map[uint32]bool{},
		counters: map[string]uint64{},
	}
	if c.voters, err = quorum.Majority(cfg.Members...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.reqs, err = mutex.NewTable(mutex.Limits{Self: cfg.ID, Members: len(cfg.Members),
		MinLease: cfg.MinLease, MaxLease: cfg.MaxLease, MaxQueue: cfg.MaxQueue, MaxLocks: cfg.MaxLocks}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := c.table.restore(cfg, saved); err != nil {
		return nil, err
	}
	return c, nil
}

// Config returns the validated configuration.
func (c *Core) Config() Config { return c.cfg }

// observe advances the core's clock (never backwards: a frame's receive
// stamp may precede the last tick by a little).
func (c *Core) observe(now time.Time) {
	if now.IsZero() {
		return
	}
	if !c.started {
		c.started = true
		c.begun = now
		c.det = liveness.NewDetector(c.self, c.cfg.Members, c.cfg.DeadAfter, now)
		c.nextBeat = now
		c.rewatch()
		// A restarted member cannot know what it granted before it went
		// down: for every lock it knew, a lease may run for up to MaxLease
		// after the crash, which was before now. Proposers are told.
		// Nor what it confirmed: as if it answered a check of every lock
		// just now.
		c.confirmedFloor = now
		for _, l := range c.locks {
			l.outstanding = now.Add(c.cfg.MaxLease)
			l.answeredOK = now
		}
	}
	if now.After(c.now) {
		c.now = now
	}
}

func (c *Core) count(name string) { c.counters[name]++ }

// nanos is the core's clock as pkg/epoch counts it.
func (c *Core) nanos() int64 { return c.now.UnixNano() }

func (c *Core) emit(name, msg string, args ...any) {
	c.events = append(c.events, core.Event{Name: name, Msg: msg, Args: args})
}

// send queues one frame; an encoding of our own fields that fails is a
// bug, counted and reported (core.Bugs), and the frame is not sent.
func (c *Core) send(to uint32, k wire.Kind, p encoding.BinaryAppender, stream bool) {
	b, ok := c.bugs.Encode(&c.events, k.String(), p, nil)
	if !ok {
		return
	}
	c.msgs = append(c.msgs, core.Message{To: to, Kind: k, Payload: b, Stream: stream})
}

func (c *Core) nextNonce() uint32 {
	c.nonce++
	return c.nonce
}

// up says whether member m may be passed the token: not down and not
// skipped since it was last heard.
func (c *Core) up(m uint32) bool {
	return m == c.self || !c.down(m) && !c.skipped[m]
}

// heard notes that member m spoke.
func (c *Core) heard(m uint32) {
	if c.det == nil || !c.det.Heard(m, c.now) {
		return // not a member, or this one
	}
	c.det.Transitions() // the watch reports its own (watch.go)
	c.heardFrom(m)
	if c.skipped[m] {
		delete(c.skipped, m)
		c.count("members_rejoined")
	}
}

// successor is the next member after this one in ring order that is up; 0
// if none is.
func (c *Core) successor() uint32 {
	ms := c.cfg.Members
	i, _ := slices.BinarySearch(ms, c.self)
	for k := 1; k < len(ms); k++ {
		if m := ms[(i+k)%len(ms)]; c.up(m) {
			return m
		}
	}
	return 0
}

// raise records a newer generation for l: a promise, persisted before
// anything that depends on it leaves.
func (c *Core) raise(l *lock, g uint64) {
	if g > l.promised {
		l.promised, l.promisedAt = g, c.now
		c.durable.Change(true)
	}
}

// Step feeds one frame.
func (c *Core) Step(m core.Message) error {
	c.observe(m.Time)
	c.stamped, c.from = true, m.From
	defer func() { c.stamped, c.from = false, 0 }()
	c.heard(m.From)
	var err error
	switch m.Kind {
	case wire.KindHeartbeat:
		var h wire.Heartbeat
		if err = h.UnmarshalBinary(m.Payload); err == nil && c.member(m.From) {
			c.beatOf[m.From] = time.Duration(h.Interval) * time.Millisecond
		}
	case wire.KindToken:
		var t wire.Token
		if err = t.UnmarshalBinary(m.Payload); err == nil {
			err = c.stepToken(m.From, t)
		}
	case wire.KindTokenAck:
		var a wire.TokenAck
		if err = a.UnmarshalBinary(m.Payload); err == nil {
			err = c.stepAck(m.From, a)
		}
	case wire.KindRingProbe:
		var p wire.RingProbe
		if err = p.UnmarshalBinary(m.Payload); err == nil {
			err = c.stepProbe(m.From, p)
		}
	case wire.KindRingProbeReply:
		var r wire.RingProbeReply
		if err = r.UnmarshalBinary(m.Payload); err == nil {
			err = c.stepReply(m.From, r)
		}
	default:
		err = core.ErrUnexpectedKind
	}
	if err != nil {
		c.count("rejected_" + reason(err))
	}
	return err
}

// rejectLabels are the counter labels of Step's own errors ("rejected_"
// and the label); a generation's are pkg/epoch's, a payload's pkg/wire's.
var rejectLabels = core.ErrorLabels{
	{Err: ErrNoLock, Label: "no_lock"},
	{Err: ErrStaleAck, Label: "stale_ack"},
	{Err: ErrBadToken, Label: "bad_token"},
	{Err: core.ErrUnexpectedKind, Label: "unexpected_kind"},
}

func reason(err error) string {
	if l := rejectLabels.Of(err, ""); l != "" {
		return l
	}
	if r := epoch.Reason(err); r != "" {
		return "generation_" + r // generation_absurd, generation_too_fast
	}
	return "payload_" + wire.Reason(err)
}

// StepDatagram refuses datagrams: the ring speaks synclab frames only.
func (c *Core) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }

// Tick runs the timers: heartbeats, liveness, leases, acknowledgements,
// probes, loss.
func (c *Core) Tick(now time.Time) {
	// A Tick at the instant of the latest frame's stamp (or before) reads
	// no later than that frame: the grants it made due wait for a reading
	// past it, which Deadline asks for.
	reading := now.After(c.now)
	c.unsaved.Release(now, &c.outcomes, &c.events, c.counters)
	if c.started && now.Sub(c.timersDeadline()) >= c.cfg.LossTimeout {
		// A stall of this member's own: the others' silence meanwhile
		// was not heard, it was not listened for (missedBeat).
		c.listenedFrom = now
	}
	if c.lateTick(now) {
		return
	}
	c.observe(now)
	now = c.now
	if c.grantDue && !reading {
		c.stamped = true
		defer func() { c.stamped = false }()
	}
	c.grantDue = false // settled below (tickLock), or made due again
	c.det.Check(now)
	c.reportLiveness()
	if !now.Before(c.nextBeat) {
		c.heartbeat()
		c.nextBeat = now.Add(c.cfg.HeartbeatInterval)
	}
	for _, name := range slices.Sorted(maps.Keys(c.locks)) { // sorted: deterministic output
		c.tickLock(c.locks[name])
	}
	c.reclaim()
}

// lateTick says whether a Tick at now must wait for the frames that may
// have come while the loop was not running: then the Tick is put off for
// a moment (catchUpDelay), so that they count first. On a busy host a
// loop that gets the CPU back runs its timer before its socket's reader
// (the Go scheduler runs expired timers first), and what it decides on
// its timeouts it decides blind: a prepare started with a rival's prepare
// unread crosses it, a locate or check times out with its answers unread.
// So a Tick is put off when it came late (after its deadline by more than
// a tenth of a probe timeout, this lateness remembered: lateness), or when
// the loop had not run for as long and a probe's timeout or a prepare is
// due (its deadline may have fallen within the loop's wait for the CPU).
// Not after a stall (late by a loss timeout or more: pkg/liveness's
// concern, and every timeout acts at once as it always did), nor alone.
func (c *Core) lateTick(now time.Time) bool {
	if !c.started || len(c.cfg.Members) == 1 {
		return false
	}
	slack := c.cfg.ProbeTimeout / 10
	if !c.catchUp.IsZero() {
		// The put-off Tick: the frames that came before it was put off
		// have been read. But a probe's timeout or a prepare that fell due
		// meanwhile fell due while the loop waited again: once more.
		from := c.catchUpFrom
		c.catchUp, c.catchUpFrom = time.Time{}, time.Time{}
		if !c.answersDue(from, now) {
			return false
		}
	} else {
		// Late behind its timers, not behind a grant a frame made due at
		// once (its deadline is the frame's stamp).
		late := now.Sub(c.timersDeadline())
		if late >= c.cfg.LossTimeout {
			return false
		}
		if late > slack {
			c.observe(now)
			c.noteLate(late)
		}
		if late <= slack && (now.Sub(c.now) <= slack || !c.answersDue(time.Time{}, now)) {
			return false
		}
	}
	c.catchUp, c.catchUpFrom = now.Add(catchUpDelay), now
	c.count("ticks_late")
	return true
}

// answersDue says whether a probe's timeout or a prepare (decisions on
// what the other members answered) fell due after from, by now.
func (c *Core) answersDue(from, now time.Time) bool {
	due := func(t time.Time) bool { return !t.IsZero() && t.After(from) && !now.Before(t) }
	for _, l := range c.locks {
		if due(l.prepareAt) {
			return true
		}
		for _, p := range []*probe{l.locate, l.prepare, l.check, l.vouch} {
			if p != nil && due(p.Deadline()) {
				return true
			}
		}
	}
	return false
}

// catchUpDelay is how long a late Tick waits for the frames that came
// meanwhile: long enough for the driver to read its sockets (the daemon's
// reader runs when its loop sleeps), short beside every timeout.
const catchUpDelay = time.Millisecond

// noteLate notes that a loop ran d late: this member's own (a Tick after
// its deadline), or the others' (an answer's delay). A loss timeout or
// more is a stall, not load (and an answer's delay is bounded by its
// probe's life anyway): the waits it stretches stretch by at most
// ProbeTries+1 loss timeouts.
func (c *Core) noteLate(d time.Duration) {
	if d < c.cfg.LossTimeout && d > c.lateness() {
		c.lateBy, c.lateAt = d, c.now
	}
}

// lateness is how late the members' loops ran lately: the longest delay of
// this member's Ticks, or of the answers to its probes, within the last
// few loss timeouts. A wait for what another member does next must allow
// for it.
func (c *Core) lateness() time.Duration {
	if c.lateAt.IsZero() || c.now.Sub(c.lateAt) > 4*c.cfg.LossTimeout {
		return 0
	}
	return c.lateBy
}

// Outcomes drains the typed answers about requests (mutex.Algorithm).
func (c *Core) Outcomes() []mutex.Outcome {
	out := c.outcomes
	c.outcomes = nil
	return out
}

// Lookup returns request id as it stands (mutex.Algorithm).
func (c *Core) Lookup(id mutex.RequestID) (mutex.RequestStatus, bool) {
	st, ok := c.reqs.Lookup(c.now, id)
	st.Unsaved = c.unsaved.Unsaved(id)
	return st, ok
}

// Ready drains what the core wants done. State, while a promise is not
// confirmed on disk (Advance), is the whole lock table's promised
// generations: persist it before sending.
func (c *Core) Ready() core.Ready {
	rd := core.Ready{Messages: c.msgs, Events: c.events}
	c.durable.Ready(&rd, func() []byte { return encodeState(c.floor, c.locks) })
	c.unsaved.Ready(&rd, &c.outcomes)
	c.msgs, c.events = nil, nil
	return rd
}

// Advance is the driver's report on the last Ready (core.Advancer): until
// it confirms the table on disk, every Ready carries it again, and the
// driver sends nothing of a Ready whose promises it could not write, nor
// hands over the outcomes that came with it (mutexcount.Hold).
func (c *Core) Advance(saved bool) {
	c.durable.Advance(saved)
	c.unsaved.Advance(!c.durable.PromisePending(), &c.outcomes, &c.events)
}

// holdUntil returns when a token regenerated by prepare p may grant
// first. Every lease an older token granted has ended by then: if a member
// did not promise (it may hold an older token), Hold after the promises
// made a majority; and in any case the longest lease the promisers (and
// this member, outstanding) said may still run on a token they dropped,
// padded for clock rates.
//
// When not every member promised, a member outside the majority may hold an
// older token and have granted on it: the new token waits until every lease
// such a grant may carry has ended. A grant or renewal needs a check a
// majority passed, and the lease it gives ends within MaxLease of that
// check's sending (grantFrom); that majority meets this prepare's in a
// member that answered the check before it promised. So the lease ends
// within MaxLease of the last check (or promise) some promiser answered,
// which each promiser says (ConfirmLeft), padded for clock rates. Any
// majority of the promisers meets that check's majority, so the wait is
// the latest bound of the majority whose bounds end first, not of every
// promiser: a promiser whose loop ran late when it answered the holder's
// last check (it counts from its answer) does not hold the token back.
// A promiser that did not say (an older build), or a later bound, counts
// as the Hold from the moment the promises made a majority: any such
// check came before it.
func (c *Core) holdUntil(p *probe, outstanding time.Time) time.Time {
	until := later(c.now, p.leaseUntil)
	if orphan := outstanding.Sub(c.now); orphan > 0 {
		until = later(until, c.now.Add(c.pad(orphan)))
	}
	if p.Count()+1 < len(c.cfg.Members) {
		from := p.majorityAt
		if from.IsZero() {
			from = c.now // cannot happen (no token without a majority); be safe
		}
		wait := from.Add(c.hold)
		bounds := make([]time.Time, 0, len(p.confirms))
		for _, b := range p.confirms {
			if b.IsZero() || b.After(wait) {
				b = wait
			}
			bounds = append(bounds, b)
		}
		if len(bounds) >= c.majority {
			slices.SortFunc(bounds, time.Time.Compare)
			wait = bounds[c.majority-1]
		}
		until = later(until, wait)
	}
	return until
}

// pad lengthens d, a duration of another member's clock, for the rates of
// two clocks (MaxDriftPPM) and for rounding (HoldMargin).
func (c *Core) pad(d time.Duration) time.Duration {
	return time.Duration(math.Ceil(float64(d)*(1+2*c.cfg.MaxDriftPPM*1e-6))) + c.cfg.HoldMargin
}

// confirmLeft is how much longer a lease may run on what this member last
// confirmed of lock l (a check it passed, a promise it made, or for all it
// knows one just before this run began): MaxLease from then, on the
// granting member's clock, padded for the rates.
func (c *Core) confirmLeft(l *lock) time.Duration {
	if l.answeredOK.IsZero() {
		return 0
	}
	return max(l.answeredOK.Add(c.leaseReach()).Sub(c.now), 0)
}

// leaseReach is how long a lease may run on a confirmation, on another
// member's clock: MaxLease from the check's sending (grantFrom), padded for
// the rates. The check was sent before any member answered it.
func (c *Core) leaseReach() time.Duration { return c.cfg.leaseReach() }

func msCeil(d time.Duration) uint32 {
	if d <= 0 {
		return 0
	}
	return uint32(min(math.Ceil(float64(d)/float64(time.Millisecond)), math.MaxUint32))
}
