package permission

import (
	"encoding"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutexcount"
	"github.com/synclab/synclab/pkg/wire"
)

// Errors of Step (the frame is counted and dropped) and of Acquire.
var (
	// ErrImplausible: a frame whose fields no member sends: a request
	// stamped after the frame that carries it, a fence above the sender's
	// clock, a frame without a Lamport time.
	ErrImplausible = errors.New("permission: implausible frame")
	// ErrStaleIncarnation: a frame of an incarnation older than one the
	// sender has already shown (a delayed frame of its previous life).
	ErrStaleIncarnation = errors.New("permission: frame of an older incarnation")
	// ErrIncarnationJump: an incarnation far above the sender's last one
	// (more restarts than can have happened): believing it would make the
	// member's real frames look stale.
	ErrIncarnationJump = errors.New("permission: incarnation jump")
	// ErrNoRoom: a request for a lock this member has no room to track.
	ErrNoRoom = errors.New("permission: frame about a lock the table has no room for")
	// ErrWrongAlgorithm: a frame of the other permission-based algorithm
	// (a member configured with another --algorithm).
	ErrWrongAlgorithm = errors.New("permission: frame of another algorithm")
	// ErrClockExhausted: this member's Lamport clock reached the last
	// stamp a request may carry (wire.MaxPermStamp).
	ErrClockExhausted = errors.New("permission: Lamport clock exhausted: no stamp is left for a request")
)

// MaxIncarnationJump is how far above a member's last incarnation a frame's
// may be: a member moves up by one per start or rejoin.
const MaxIncarnationJump = 1 << 10

// LossStalled is the loss reason of a holder whose member stalled (its loop
// stopped for longer than Config.StallAfter): the others may have given it
// up, so it rejoins with a new incarnation and gives up what it held.
const LossStalled mutex.LossReason = "stalled"

// Event names. Args are slog-style: "request" (uint64), "lock" (string),
// "fence" (uint64) and the ones named.
const (
	// Besides mutex.EventGranted ("incarnation"), EventRenewed, EventLost,
	// EventReleased, and liveness.EventMemberDown and EventMemberUp (a
	// member is no longer waited for / is again):
	//
	// EventRejoined: a member came back with a new incarnation, its old
	// requests dropped ("member", "incarnation"); for this member itself
	// after a stall ("member" is its own ID).
	EventRejoined = "member_rejoined"
	// EventReissued: a request was stamped anew because its fence would
	// not exceed one already granted ("lock", "stamp", "known").
	EventReissued = "request_reissued"
)

// Core is one member of a permission-based mutual exclusion. Not safe for
// concurrent use.
type Core struct {
	cfg      Config
	kinds    []wire.Kind // the variant's (Kinds)
	self     uint32
	index    map[uint32]uint64 // member -> its index, the low bits of its fences
	majority int
	lamport  *clock.Lamport

	now        time.Time
	started    bool
	begun      time.Time
	lastActive time.Time
	det        *liveness.Detector
	lastBeat   time.Time // zero: none yet
	// olderWarned: when EventOlderBuild was last said at WARN.
	olderWarned time.Time
	// beats are this member's last heartbeats to all (requests to all
	// included), oldest first, at most maxBeats: when each left and when
	// the next was due then, for the instant a frame counts for
	// (countFor).
	beats []beat
	// asked are this member's last heartbeats that asked for an
	// acknowledgement (to all or to one member), at most maxAsked: when
	// each left, by its stamp (ackCap).
	asked []beat

	// stamped: the call running is Step, whose now is a frame's receive
	// stamp, not a reading of the clock; grantDue: a grant or a renewal's
	// confirmation Step found due waits for the next reading (tryGrant,
	// confirm).
	stamped, grantDue bool

	// saidBusy: the last heartbeat (or request, sent to every member)
	// said this member may hold or ask: when it stops, it says so within
	// IdleNotice. idleFrom: when its last request ended.
	saidBusy bool
	idleFrom time.Time
	// idleTail: how many idle heartbeats this member still sends at the
	// busy spacing after its idle notice (nextBeat).
	idleTail  int
	restarted bool
	holdUntil time.Time // restart hold: no answers before
	// rejoinFrom: since when this member rejoins (zero: it does not): it
	// asks for nothing until it heard every member since then (and a
	// FreshWindow passed, so they heard it too), or SuspectAfter passed.
	rejoinFrom time.Time
	// ticked is the time of the last Tick: a deadline at or before it was
	// acted on there (Deadline leaves it out, or it is stale: the node
	// ticks the core every StaleRetry until it moves).
	ticked time.Time
	// cutOff: this member heard no majority for RejoinAfter: the others may
	// give it up soon; the answers it holds are void.
	cutOff bool
	// busyUntil: until then this member says it is busy (PermHeartbeat)
	// even when it asks for nothing: a lease of its last life, or one it
	// gave up when it stalled, may still run at its client.
	busyUntil time.Time
	// leases: the lease of each request of this member's clients, for
	// the cap of leaseFrom.
	leases map[mutex.RequestID]time.Duration
	// renewAsked: when each of its pending renewals was asked, confirmed
	// only on a majority heard since (renewFrom).
	renewAsked map[mutex.RequestID]time.Time

	// Lease ends (lease.go): bounded, renewals wait for an end a majority
	// acknowledged (from the first majority's acknowledgement on, for the
	// incarnation); annEnd, the end last announced (never lower); anns,
	// the announcements whose acknowledgements are counted; ackedEnd, the
	// highest end a majority acknowledged; ackAsked, when an unbounded
	// member last asked for acknowledgements.
	bounded  bool
	annEnd   time.Time
	anns     []announced
	ackedEnd time.Time
	ackAsked time.Time
	// busyAsked: when an unbounded member's busy heartbeat last asked
	// (once a heartbeat, as before the idle ones asked: askDue).
	busyAsked time.Time
	// renewSince: since when a bounded renewal waits (zero: none);
	// renewWarned: EventRenewalUnacked was emitted for it.
	renewSince  time.Time
	renewWarned bool
	// lateBy, lateAt: how late this member's loop last sent a heartbeat
	// (more than Margin after it was due), and when (loopLate).
	lateBy time.Duration
	lateAt time.Time
	// lateWarnedAt is when EventLoopLate was last said and lateWarnedBy
	// the lateness it said; lateUnsaid how many late heartbeats came
	// since, the latest of them by up to lateUnsaidMax (loopLateWarnEvery).
	lateWarnedAt  time.Time
	lateWarnedBy  time.Duration
	lateUnsaid    uint64
	lateUnsaidMax time.Duration

	inc     uint32 // this member's incarnation
	floor   uint64 // the persisted Lamport floor
	durable core.Durable

	peers      map[uint32]*peer
	locks      map[string]*lock
	made       map[uint32]int // entries per creator (lockFor)
	share      int            // entries another member's frames may make
	fenceFloor uint64         // the highest fence of a lock reclaimed from the table
	reqs       *mutex.Table

	// releases are the Lamport releases of requests a client's Release
	// ended, held back until this member's next request for the lock
	// carries one (request), any other call makes them (flushReleases),
	// or releaseDue: always after the client has its answer.
	releases   []release
	releaseDue time.Time
	// holdRelease: within Release, a Lamport release is held back for
	// this long (0: to the loop's next turn; -1: not held).
	holdRelease time.Duration

	// forceRelay: the frames being sent go through relays whatever the
	// link looks like (a request sent again for want of an answer);
	// replyVia: so do those for this member (0: none), whose frame, come
	// through a relay, is being answered.
	forceRelay bool
	replyVia   uint32

	msgs     []core.Message
	events   []core.Event
	bugs     core.Bugs
	outcomes []mutex.Outcome
	// unsaved keeps the outcomes from the driver while a promise (the incarnation, the Lamport floor)
	// is not on disk (mutexcount.Hold).
	unsaved  mutexcount.Hold
	counters map[string]uint64
}

type peer struct {
	life epoch.Life // its incarnation as its frames say (Inc 0: none yet)
	// heardAt: its last frame, on this member's clock, directly or
	// through a relay; directAt: its last frame received directly;
	// countAt: the latest instant a direct frame of its counts for toward
	// this member's majority (the cut-off, grants, leases: link.go says
	// why only a direct frame counts): its kernel stamp, capped by this
	// member's own beats sent by then (countFor).
	heardAt, directAt, countAt time.Time
	// down: given up, no longer waited for: this member has been silent
	// from it for its timeout, and a majority confirmed a silence as long
	// over the same stretch of time (link.go). confirm is the
	// confirmation under way (nil: none).
	down    bool
	confirm *confirm
	// The link to it (link.go): relayedAt, when its last frame came
	// through a relay, by relayer; unheardAt, when the last of them said
	// that it hears this member only through relays. linkDown: the
	// broken link was reported (EventLinkDown).
	relayedAt, unheardAt time.Time
	relayer              uint32
	linkDown             bool
	relaying             bool // frames to it go through relays (as of the last Tick)
	// lent: how many locks hold a leave this member gave it (lock.lent),
	// plus one while lentBefore is set: while any does, it is waited for
	// DeadAfter, not SuspectAfter.
	lent int
	// lentBefore (0: none): it may hold a lock without this member's
	// leave, or by a leave this member gave in a life before its restart,
	// in a frame stamped below this: this member rejoined (it restarted,
	// stalled, or was cut off), and the others may have granted without
	// it meanwhile.
	lentBefore uint64
	// Its leases (lease.go): v2, it sends extended heartbeats (its probes
	// get extended answers); ann, its newest announcement taken; lastReq,
	// the Lamport time of its newest request frame taken; acked, the
	// newest of this member's announcements it acknowledged.
	v2      bool
	ann     heardLease
	lastReq uint64
	acked   uint64
	// ackedAt: when the newest of this member's heartbeats that asked
	// for an acknowledgement and that it acknowledged left (zero: none
	// yet, or it runs a build that does not acknowledge): its direct
	// frames count no later than a heartbeat and inFlight after it
	// (beats.go, ackCap). old: it sent a heartbeat of a build older than
	// the extended form since its last extended frame (a busy 5-byte
	// one or a wire.KindHeartbeat: it refuses the extended form, and this
	// member's idle heartbeats go to it short).
	ackedAt time.Time
	// ackedInc: its incarnation when it last moved ackedAt (one that
	// acknowledged in its current incarnation is never taken for older:
	// olderBuild).
	ackedInc uint64
	old      bool
	// shortSent: how many idle heartbeats went to it in the 5-byte form
	// in a row while it was taken for older (sendBeat: every
	// olderProbeEvery-th goes extended, and the first after it is
	// marked).
	shortSent int
	// shortIdle: it sent an idle 5-byte heartbeat since its last
	// extended frame (which marks nothing: it may be of this build,
	// taking this member for older, or of an older build, idle, which
	// refuses the extended form); shortCopies: idle heartbeats sent to it
	// without a 5-byte copy since the last copy (sendBeat).
	shortIdle   bool
	shortCopies int
	// olderSaid: when it was last said taken for older (EventOlderBuild).
	olderSaid time.Time
}

// lock is this member's state of one lock.
type lock struct {
	name    string
	creator uint32    // whose request made the entry (lockFor)
	known   uint64    // the highest fence known for it
	touched time.Time // the last frame or request about it

	// This member's request: its stamp (0: none), whether it holds.
	// In the bakery, phase is the read under way (bakery.go): the stamp
	// is the doorway read's while it reads the numbers, the ticket after.
	stamp   uint64
	granted bool
	phase   phase
	// got: the members whose answer to stamp is in (Ricart-Agrawala: a
	// reply; Lamport: a frame stamped after it); sentAt: when the request
	// last went to each member.
	got    map[uint32]bool
	sentAt map[uint32]time.Time

	// last is the Lamport time of the newest frame about the lock taken
	// from each member in its current incarnation: an older frame is
	// stale (what it says, a newer one said after it).
	last map[uint32]uint64
	// want is each member's request as its newest frame says (Lamport:
	// the queue); deferred the requests this member answers when its own
	// ends (Ricart-Agrawala).
	want     map[uint32]uint64
	deferred map[uint32]deferral
	// choosing (the bakery): the reads of this member's choosing it
	// answers when its doorway ends.
	choosing map[uint32]deferral
	// acked (Lamport): the request of each member this member last
	// acknowledged.
	acked map[uint32]uint64
	// lent is, for each member that may hold l by this member's leave, the
	// Lamport time of the last frame about l sent to it that may count as
	// that leave (Ricart-Agrawala: a reply; Lamport: any frame stamped
	// after its request). It ends when the member shows, in a frame
	// stamped later, that it has no request for l stamped below it.
	lent map[uint32]uint64
}

// release is a Lamport release not yet made: the request stamped stamp
// for lock name ended.
type release struct {
	name  string
	stamp uint64
}

type deferral struct {
	stamp uint64
	inc   uint32
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
	saved, err := decodeState(cfg.Persisted)
	if err != nil {
		return nil, err
	}
	c := &Core{
		cfg:       cfg,
		kinds:     Kinds(cfg.Variant),
		self:      cfg.ID,
		index:     map[uint32]uint64{},
		majority:  len(cfg.Members)/2 + 1,
		lamport:   cfg.Lamport,
		restarted: cfg.Persisted != nil,
		peers:     map[uint32]*peer{},
		locks:     map[string]*lock{},
		made:      map[uint32]int{},
		share:     max(1, cfg.MaxLocks/2/max(1, len(cfg.Members)-1)),
		counters:  map[string]uint64{},
		leases:    map[mutex.RequestID]time.Duration{},

		renewAsked: map[mutex.RequestID]time.Time{},

		holdRelease: -1,
	}
	if c.lamport == nil {
		c.lamport = new(clock.Lamport)
	}
	for i, m := range cfg.Members {
		c.index[m] = uint64(i)
		if m != c.self {
			c.peers[m] = &peer{}
			if c.restarted {
				// What the last life gave leave to is lost with it (and
				// the rejoin of the restart adds what was granted
				// without it).
				c.peers[m].lent, c.peers[m].lentBefore = 1, max(saved.floor, 1)
			}
		}
	}
	if c.reqs, err = mutex.NewTable(mutex.Limits{Self: cfg.ID, Members: len(cfg.Members),
		MinLease: cfg.MinLease, MaxLease: cfg.MaxLease, MaxQueue: cfg.MaxQueue, MaxLocks: cfg.MaxLocks}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	// A new life: one incarnation up, the clock above everything the last
	// one sent or saw. Both are promises, written before the first frame.
	c.inc = saved.incarnation + 1
	c.lamport.Restore(saved.floor)
	c.raiseFloor(0)
	c.durable.Change(true)
	return c, nil
}

// Config returns the validated configuration.
func (c *Core) Config() Config { return c.cfg }

// Incarnation is this member's incarnation.
func (c *Core) Incarnation() uint32 { return c.inc }

// raiseFloor puts the persisted floor floorChunk above the clock when the
// clock (plus pending sends) comes within floorSlack of it.
func (c *Core) raiseFloor(pending int) {
	if now := c.lamport.Now(); now+floorSlack+uint64(pending) >= c.floor {
		c.floor = min(now+floorChunk, wire.MaxPermStamp)
		c.durable.Change(true)
	}
}

// observe advances the core's clock, starts the detector at the first call,
// and notices a stall of this member's own loop.
func (c *Core) observe(now time.Time) {
	if now.IsZero() {
		return
	}
	if !c.started {
		c.started = true
		c.begun, c.lastActive, c.now = now, now, now
		c.det = liveness.NewDetector(c.self, c.cfg.Members, c.cfg.SuspectAfter, now)
		for m, p := range c.peers {
			if p.lent > 0 {
				c.det.SetTimeout(m, c.cfg.DeadAfter)
			}
		}
		if c.restarted {
			c.holdUntil = now.Add(c.cfg.RestartHold())
			c.busyUntil = c.holdUntil
			c.startRejoin("restart")
		}
	}
	if now.After(c.now) {
		c.now = now
	}
	if c.now.Sub(c.lastActive) > c.stallAfter() {
		c.stalled(c.now.Sub(c.lastActive))
	}
	c.lastActive = c.now
}

// stallAfter: a gap between two calls longer than this (the core asks for a
// Tick at least every heartbeat) means this member stopped; the others may
// suspect it from SuspectAfter after its last heartbeat.
func (c *Core) stallAfter() time.Duration { return c.cfg.StallAfter() }

// stalled rejoins after a stall: what this member held may have been given
// up by the others (its lease has ended by now, or will before they grant),
// the answers it gathered may have been voided, so it gives up its holds
// (and, as a restarted member does, answers nobody while their leases may
// still run at its clients: holding nothing, it would answer at once),
// drops every answer and every other member's state, takes a new
// incarnation (the others drop its old requests when they see it), and
// asks again.
func (c *Core) stalled(gap time.Duration) {
	c.count("stalls")
	// Nobody is taken for dead for a silence this member did not listen
	// to (startRejoin below raises every member's timeout, which would
	// hide the stall from the detector's own notice).
	c.det.Resume(c.now)
	for _, p := range c.peers {
		p.confirm = nil // asked again, from silences measured anew
	}
	c.inc++
	c.durable.Change(true)
	c.emit(EventRejoined, fmt.Sprintf("this member stalled for %v: rejoining as incarnation %d", gap, c.inc),
		"member", c.self, "incarnation", c.inc)
	for _, name := range slices.Sorted(maps.Keys(c.locks)) {
		l := c.locks[name]
		if e := c.reqs.Expiry(name); e.After(c.holdUntil) {
			// Its client may hold on until then: as after a restart,
			// this member answers nobody before (by the rule of the
			// algorithm it would answer at once, holding nothing now).
			c.holdUntil = e
			c.busyUntil = e
		}
		c.reqs.Lose(name, LossStalled)
		l.stamp, l.granted, l.phase = 0, false, 0
		clear(l.got)
		clear(l.sentAt)
		clear(l.last)
		clear(l.want)
		clear(l.deferred)
		clear(l.acked)
		clear(l.choosing)
	}
	c.drain()
	c.startRejoin("stall")
}

// rejoinAfter is how long this member may go without hearing a majority
// before it takes itself for cut off: a heartbeat and the margin before the
// others could suspect it (they wait SuspectAfter from its last heartbeat).
func (c *Core) rejoinAfter() time.Duration {
	return c.cfg.SuspectAfter - c.cfg.HeartbeatInterval - c.cfg.Margin
}

// startRejoin makes this member ask for nothing until it has heard every
// member again (or SuspectAfter passed): the others may have given it up and
// granted in its absence, and its requests must be stamped after what they
// did (their heartbeats carry their Lamport times). Its pending requests
// are withdrawn, to be stamped anew.
func (c *Core) startRejoin(why string) {
	c.count("rejoins_started")
	c.rejoinFrom = c.now
	// The others may have given this member up and granted without its
	// leave: each is waited for DeadAfter until it says, after the rejoin,
	// that it holds nothing.
	for m, p := range c.peers {
		if p.lentBefore == 0 {
			p.lent++
			if p.lent == 1 && c.det != nil {
				c.det.SetTimeout(m, c.cfg.DeadAfter)
			}
		}
		p.lentBefore = max(p.lentBefore, c.lamport.Now(), 1)
	}
	for _, name := range slices.Sorted(maps.Keys(c.locks)) {
		if l := c.locks[name]; l.stamp != 0 && !l.granted {
			c.exit(l)
		}
	}
	_ = why
}

// rejoining says whether this member still waits to hear everyone.
func (c *Core) rejoining() bool {
	if c.inHold() {
		// A restarted member's request would be, in Lamport's queue, the
		// frame stamped after the others' requests that lets them enter:
		// it asks for nothing while a lease of its last life may run.
		return true
	}
	if c.rejoinFrom.IsZero() {
		return false
	}
	done := !c.now.Before(c.rejoinFrom.Add(c.cfg.SuspectAfter))
	if !done && !c.now.Before(c.rejoinFrom.Add(c.cfg.FreshWindow)) {
		done = true
		for _, p := range c.peers {
			if p.heardAt.Before(c.rejoinFrom) {
				done = false
				break
			}
		}
	}
	if done {
		c.rejoinFrom = time.Time{}
	}
	return !done
}

// heardSince says whether every other member was heard at or after t.
func (c *Core) heardSince(t time.Time) bool {
	for _, p := range c.peers {
		if p.heardAt.Before(t) {
			return false
		}
	}
	return true
}

// checkCutOff notices that this member heard no majority for RejoinAfter
// (it voids the answers it holds: the others may give it up before it
// hears them again) and that it hears one again (it rejoins).
func (c *Core) checkCutOff() {
	heard := func(within time.Duration) bool {
		n := 1
		for _, p := range c.peers {
			if !p.countAt.IsZero() && c.now.Sub(p.countAt) <= within {
				n++
			}
		}
		return n >= c.majority
	}
	switch {
	case !c.cutOff && !heard(c.rejoinAfter()) && c.now.Sub(c.begun) >= c.rejoinAfter():
		c.cutOff = true
		c.count("cut_off")
		c.cutOffWarn()
		for _, l := range c.locks {
			clear(l.got)
		}
	case c.cutOff && heard(c.cfg.FreshWindow):
		c.cutOff = false
		c.startRejoin("majority heard again")
	}
}

// EventLoopLate (WARN): this member's loop sent a heartbeat more than
// Margin after it was due ("late", in ms). EventCutOff (WARN): this
// member heard no majority for RejoinAfter and takes itself for cut off
// ("late", in ms, only when its loop's lateness is why).
const (
	EventLoopLate = "loop_late"
	EventCutOff   = "cut_off"
)

// loopLate reports a heartbeat sent late by late: the others heard
// nothing from this member meanwhile, so the frames its loop read
// meanwhile do not count as a majority heard (heard).
// At most one EventLoopLate every loopLateWarnEvery: a loaded host's loop
// is late beat after beat (a review counted 48 lines of 500 characters in
// a minute, every WARN reaching the log); the count and status keep each.
// A beat at least twice as late as the last line said is said at once: a
// stall of a second after a 250 ms one is news (a review: it went unsaid
// for up to 30 s, and unsaid for good if no late beat came after it), and
// doublings are few before a stall is a cut-off's. The next line says how
// many were late between (repeated) and the worst of them (worst_between).
func (c *Core) loopLate(late time.Duration) {
	c.count("loop_late")
	c.lateBy, c.lateAt = late, c.now
	if !c.lateWarnedAt.IsZero() && c.now.Sub(c.lateWarnedAt) < loopLateWarnEvery && late < 2*c.lateWarnedBy {
		c.lateUnsaid++
		c.lateUnsaidMax = max(c.lateUnsaidMax, late)
		return
	}
	repeated, worst := c.lateUnsaid, c.lateUnsaidMax
	c.lateWarnedAt, c.lateWarnedBy, c.lateUnsaid, c.lateUnsaidMax = c.now, late, 0, 0
	c.warn(EventLoopLate, fmt.Sprintf("this host's loop was late by %v: this member's heartbeat went out that long after it was due, and the others heard nothing from it meanwhile, "+
		"so the frames it read meanwhile do not count as hearing a majority (it takes itself for cut off if that leaves it none for %v, and its clients' leases, counted from before, are not renewed then). "+
		"Check the host: CPU load, swapping, a paused VM or process (SIGSTOP)", late.Round(time.Millisecond), c.rejoinAfter()), "late", late.Milliseconds(), "repeated", repeated, "worst_between", worst.Milliseconds())
}

// loopLateWarnEvery spaces EventLoopLate's lines (repeated: the late
// heartbeats between them).
const loopLateWarnEvery = 30 * time.Second

// cutOffWarn says that this member takes itself for cut off, and why
// when its loop's lateness is the cause: it heard a majority, but read
// their frames while the others heard nothing from it (heard).
func (c *Core) cutOffWarn() {
	var cause string
	var args []any
	if !c.lateAt.IsZero() && c.now.Sub(c.lateAt) <= c.rejoinAfter() {
		args = []any{"late", c.lateBy.Milliseconds()}
		cause = fmt.Sprintf(" (its loop was late by %v %v ago: the frames it read meanwhile, while the others heard nothing from it, do not count)",
			c.lateBy.Round(time.Millisecond), c.now.Sub(c.lateAt).Round(time.Millisecond))
	}
	c.warn(EventCutOff, fmt.Sprintf("this member heard no majority (%d of %d members, itself included) for %v%s: it takes itself for cut off, voids the answers it holds, "+
		"grants and renews nothing (its clients' leases end as counted before), and rejoins once it hears a majority again. "+
		"Check the network between this host and the others, and this host's load", c.majority, len(c.cfg.Members), c.rejoinAfter(), cause), args...)
}

func (c *Core) count(name string) { c.counters[name]++ }

func (c *Core) emit(name, msg string, args ...any) {
	c.events = append(c.events, core.Event{Name: name, Msg: msg, Args: args})
}

// send queues one frame and returns its stamp (0: not sent); lamport is the
// stamp it carries (0: a new one).
// Every frame is stamped here, when it is made, never by the node when it
// leaves: a receiver drops a frame stamped below one it already took from
// this member, so the stamps must grow in the order the frames are made
// (replies made before a request, stamped by the node after the request's
// own stamp, would make the request look stale). An encoding of our own
// fields that fails is a bug, counted and reported (core.Bugs), and the
// frame is not sent. A frame for a member not heard directly goes through
// relays too, with the same stamp (relayCopies).
func (c *Core) send(to uint32, k wire.Kind, p encoding.BinaryAppender, lamport uint64) uint64 {
	b, ok := c.bugs.Encode(&c.events, k.String(), p, nil)
	if !ok {
		return 0
	}
	if lamport == 0 {
		lamport = c.lamport.Send()
	}
	c.msgs = append(c.msgs, core.Message{To: to, Kind: k, Payload: b, Lamport: lamport})
	c.relayCopies(to, k, b, lamport)
	return lamport
}

// others returns every member but this one, in ID order.
func (c *Core) others() []uint32 {
	out := make([]uint32, 0, len(c.cfg.Members)-1)
	for _, m := range c.cfg.Members {
		if m != c.self {
			out = append(out, m)
		}
	}
	return out
}

// givenUp says whether member m is no longer waited for: given up as down,
// on a majority's confirmation (link.go).
func (c *Core) givenUp(m uint32) bool {
	p := c.peers[m]
	return p != nil && p.down
}

// freshMajority says whether this member heard a majority (itself included)
// within FreshWindow: the condition of every grant and renewal.
func (c *Core) freshMajority() bool {
	at := c.majorityHeard()
	return !at.IsZero() && c.now.Sub(at) <= c.cfg.FreshWindow
}

// majorityHeard is the last instant at which this member had heard a
// majority (itself included): the latest time since which a majority
// was heard; zero if never.
func (c *Core) majorityHeard() time.Time {
	need := c.majority - 1
	if need <= 0 {
		return c.now
	}
	heard := make([]time.Time, 0, len(c.peers))
	for _, p := range c.peers {
		heard = append(heard, p.countAt)
	}
	slices.SortFunc(heard, func(a, b time.Time) int { return b.Compare(a) })
	return heard[need-1]
}

// leaseFrom is when a lease of length lease granted or renewed now is
// counted from: now, but never so that it ends more than MaxLease after
// this member last heard a majority. So every lease of a member ends by
// MaxLease after that instant, which the others, who stop hearing it at
// most a heartbeat earlier, wait out (Config.MinDeadAfter) without a
// FreshWindow more for the grants made on a majority heard a while ago.
func (c *Core) leaseFrom(lease time.Duration) time.Time {
	capped := c.majorityHeard().Add(c.cfg.MaxLease - lease)
	if capped.Before(c.now) {
		return capped
	}
	return c.now
}

// confirm confirms the pending renewals of lock name, each capped as
// leaseFrom says.
func (c *Core) confirm(name string) {
	if c.stamped {
		// Confirmed at the next reading of the clock (tryGrant's reason:
		// a lease counted from a frame's stamp may be over when reported).
		c.grantDue = true
		return
	}
	for _, id := range c.reqs.Holders(name) {
		if from, ok := c.renewFrom(id); ok {
			c.reqs.ConfirmRenewal(c.now, from, id)
		}
	}
	c.drain()
}

// nextBeat is when this member sends its next heartbeat: a heartbeat
// after the last, or a busy heartbeat after it while busy (a member that
// asks for the lock, or holds it, is heard often, so that the others can
// bound its lease closely from when they last heard it).
//
// A member that said it was busy and no longer is says so IdleNotice
// after its last request ended (or its busy time of an earlier life did),
// unless it asks again first (its request is heard by all, and says busy):
// the others gave it leaves (Ricart-Agrawala has no release message) and
// would wait DeadAfter for it, not SuspectAfter, should it fall silent
// before its next heartbeat. It keeps the busy spacing for
// BusyBeatsCovered-1 idle heartbeats more (idleTail): a member that lost
// the notice and the one after it heard the third (a working link loses
// fewer: Config.MinDeadAfter), which spends its leave; else it lost the
// link, at most BusyBeatsCovered busy heartbeats after it last heard a
// busy frame of this one, and this member heard the majority no later
// (the package doc, "Lease ends", counts on it).
func (c *Core) nextBeat() time.Time {
	busy := c.busy()
	switch {
	case c.lastBeat.IsZero():
		return c.now
	case c.saidBusy && !busy:
		idle := c.idleFrom
		if c.busyUntil.After(idle) {
			idle = c.busyUntil
		}
		return core.Earliest(idle.Add(c.cfg.IdleNotice()), c.lastBeat.Add(c.cfg.BusyHeartbeat()))
	case busy, c.idleTail > 0:
		// An acknowledgement is asked for a heartbeat after the last ask
		// at the latest (ackCap): a request moves the beats on, and
		// asks for none.
		return core.Earliest(c.lastBeat.Add(c.cfg.BusyHeartbeat()), c.askBy())
	}
	return core.Earliest(c.lastBeat.Add(c.cfg.HeartbeatInterval), c.askBy())
}

// heartbeat is this member's heartbeat now. A busy one names the stamp of
// its oldest open request (PermHeartbeat.Oldest), unless a lease of an
// ended request may still run (busyUntil), which only its idle heartbeat
// or its silence may end.
func (c *Core) heartbeat() wire.PermHeartbeat {
	hb := wire.PermHeartbeat{Interval: uint32(min(c.cfg.HeartbeatInterval.Milliseconds(), 1<<32-1)), Busy: c.busy()}
	if hb.Busy && !c.now.Before(c.busyUntil) {
		hb.Oldest = c.oldestOpen()
	}
	if hb.Busy {
		c.announce(&hb)
	}
	return hb
}

// oldestOpen is the stamp of this member's oldest request still open
// (asked for or held, or ended with its release still held back): 0 if
// none.
func (c *Core) oldestOpen() uint64 {
	var oldest uint64
	open := func(stamp uint64) {
		if stamp != 0 && (oldest == 0 || stamp < oldest) {
			oldest = stamp
		}
	}
	for _, l := range c.locks {
		open(l.stamp)
	}
	for _, r := range c.releases {
		open(r.stamp)
	}
	return oldest
}

// busy says whether this member may hold or ask for a lock, or a lease of
// its may still run at a client (PermHeartbeat.Busy).
func (c *Core) busy() bool {
	if c.now.Before(c.busyUntil) {
		return true
	}
	for _, l := range c.locks {
		if l.stamp != 0 {
			return true
		}
	}
	return false
}

// lend notes that the frame about l stamped at, just sent to member m,
// may count as this member's leave for a request of m: m is waited for
// DeadAfter from now on, not SuspectAfter. A member given up is not: a
// majority was silent from it for SuspectAfter, so it has rejoined or
// stopped, and it takes no old leave for a new one.
func (c *Core) lend(l *lock, m uint32, at uint64) {
	p := c.peers[m]
	if p == nil || at == 0 || c.givenUp(m) {
		return
	}
	if _, ok := l.lent[m]; !ok {
		p.lent++
		if p.lent == 1 && c.det != nil {
			c.det.SetTimeout(m, c.cfg.DeadAfter)
		}
	}
	l.lent[m] = max(l.lent[m], at)
}

// unlend ends the leave l gave member m.
func (c *Core) unlend(l *lock, m uint32) {
	if _, ok := l.lent[m]; !ok {
		return
	}
	delete(l.lent, m)
	c.spent(m)
}

// spent counts one leave given member m as spent.
func (c *Core) spent(m uint32) {
	if p := c.peers[m]; p != nil {
		p.lent--
		if p.lent == 0 && c.det != nil {
			c.det.SetTimeout(m, 0)
		}
	}
}

// unlendBefore ends the leave an earlier life of this member may have
// given member m.
func (c *Core) unlendBefore(m uint32) {
	if p := c.peers[m]; p != nil && p.lentBefore != 0 {
		p.lentBefore = 0
		c.spent(m)
	}
}

// sawWant takes what a frame of member m stamped at says of its request for
// l (want; 0: none): a leave given before at, to a member that has no
// request stamped below it, is spent.
func (c *Core) sawWant(l *lock, m uint32, at, want uint64) {
	if f, ok := l.lent[m]; ok && at > f && (want == 0 || want > f) {
		c.unlend(l, m)
	}
}

// idleBeat takes a heartbeat of member m stamped at that says it holds
// and asks for nothing: every leave given it before at is spent.
func (c *Core) idleBeat(m uint32, at uint64) {
	if p := c.peers[m]; p != nil && p.lentBefore != 0 && at > p.lentBefore && !c.rejoining() {
		// Said after the rejoin ended, when m has heard this member
		// again and grants nothing without its leave any more.
		c.unlendBefore(m)
	}
	for _, l := range c.locks {
		if f, ok := l.lent[m]; ok && at > f {
			c.unlend(l, m)
		}
	}
}

// inHold says whether this member, restarted, still answers nobody.
func (c *Core) inHold() bool { return c.now.Before(c.holdUntil) }

// fence is the fence of a request of member m stamped stamp.
func (c *Core) fence(stamp uint64, m uint32) uint64 { return stamp<<16 | c.index[m] }

// before is the (stamp, ID) order of requests: a's first?
func before(sa uint64, a uint32, sb uint64, b uint32) bool {
	return clock.LamportLess(sa, a, sb, b)
}

// lockFor returns lock name's state, made if need be for creator: this
// member for its clients' requests, else the member whose frame names the
// lock. The entries a member's frames make count against its share,
// MaxLocks/2 split among the other members: half the table is always there
// for this member's clients, and the rest is shared so that no member, nor
// anyone forging its frames, takes the room of the others. A member over
// its share is refused (ErrNoRoom, "share_full") until entries of its own
// are idle again (see idleWants) and reclaimed.
func (c *Core) lockFor(name string, creator uint32) (*lock, error) {
	if l, ok := c.locks[name]; ok {
		return l, nil
	}
	if creator != c.self && c.made[creator] >= c.share {
		c.reclaim(true)
		if c.made[creator] >= c.share {
			c.count("share_full")
			return nil, fmt.Errorf("%w: member %d has %d entries, its share", ErrNoRoom, creator, c.made[creator])
		}
	}
	if len(c.locks) >= c.cfg.MaxLocks {
		c.reclaim(true)
		if len(c.locks) >= c.cfg.MaxLocks {
			return nil, ErrNoRoom
		}
	}
	l := &lock{name: name, creator: creator, known: c.fenceFloor, touched: c.now, got: map[uint32]bool{}, sentAt: map[uint32]time.Time{},
		last: map[uint32]uint64{}, want: map[uint32]uint64{}, deferred: map[uint32]deferral{}, acked: map[uint32]uint64{},
		lent: map[uint32]uint64{}, choosing: map[uint32]deferral{}}
	c.locks[name] = l
	c.made[creator]++
	return l, nil
}

// busyBeat takes a busy heartbeat of member m that says its open requests
// are all stamped oldest or later (PermHeartbeat.Oldest, bounded by the
// frame's own stamp): what this member keeps for m's earlier requests has
// ended as at an idle heartbeat. A leave given m before oldest answered
// one of them (a reply is stamped after the request it answers), so it is
// spent; m's requests stamped earlier have ended, as if their releases had
// come. So a member that keeps asking is not held to its share of the lock
// table by requests it never made until it falls idle.
func (c *Core) busyBeat(m uint32, oldest uint64) {
	for _, l := range c.locks {
		if f, ok := l.lent[m]; ok && oldest > f {
			c.unlend(l, m)
		}
	}
	c.idleWants(m, oldest, 0)
}

// idleWants takes a heartbeat of member m that says every request of it
// stamped before at has ended, as if its release had come (Lamport's
// queue), or needs no answer any more (Ricart-Agrawala's deferrals). So an
// entry that only a request m never made holds (a forged one, or one whose
// release was lost) is idle again at m's next such heartbeat. Frames of m
// about an ended request's lock stamped up to seen (the idle heartbeat's
// own stamp; 0: the ended request's) are stale from then on.
func (c *Core) idleWants(m uint32, at, seen uint64) {
	var ended []string
	for name, l := range c.locks {
		if w := l.want[m]; w != 0 && w < at {
			l.want[m] = 0
			l.last[m] = max(l.last[m], seen, w)
			ended = append(ended, name)
		}
		if d, ok := l.deferred[m]; ok && d.stamp < at {
			delete(l.deferred, m)
			ended = append(ended, name)
		}
		if d, ok := l.choosing[m]; ok && d.stamp < at {
			delete(l.choosing, m)
			ended = append(ended, name)
		}
	}
	slices.Sort(ended) // deterministic output
	for _, name := range slices.Compact(ended) {
		c.count("wants_ended_idle")
		c.advance(c.locks[name])
	}
}

// idle says whether lock l holds nothing worth keeping: no request of this
// member, no queued or deferred request of another, no leave that may be
// in use, no release held back.
func (c *Core) idle(l *lock) bool {
	if l.stamp != 0 || len(l.deferred) > 0 || len(l.choosing) > 0 || len(l.lent) > 0 || c.reqs.Waiting(l.name) > 0 || c.reqs.Held(l.name) || c.releasing(l.name) {
		return false
	}
	for _, w := range l.want {
		if w != 0 {
			return false
		}
	}
	return true
}

// reclaim drops idle locks untouched for DeadAfter (all idle ones when
// urgent), keeping their highest fence in fenceFloor.
func (c *Core) reclaim(urgent bool) {
	for name, l := range c.locks {
		if c.idle(l) && (urgent || c.now.Sub(l.touched) >= c.cfg.DeadAfter) {
			c.fenceFloor = max(c.fenceFloor, l.known)
			delete(c.locks, name)
			c.made[l.creator]--
			c.count("locks_reclaimed")
		}
	}
}

// heard notes that member m spoke: directly, or through a relay
// (relayed), in a frame its kernel stamped at stamp (zero: now).
func (c *Core) heard(m uint32, relayed bool, stamp time.Time) {
	p := c.peers[m]
	if p == nil {
		return
	}
	if stamp.IsZero() {
		// A frame handed without a receive time (the node always gives
		// one; a test may not) counts at this reading of the clock. A
		// stamp is never after c.now: observe moved the clock to it.
		stamp = c.now
	}
	if c.now.After(p.heardAt) {
		p.heardAt = c.now
	}
	if !relayed {
		if c.now.After(p.directAt) {
			p.directAt = c.now
		}
		c.countDirect(p, stamp)
	}
	if c.det != nil && c.det.Heard(m, c.now) {
		c.reportLiveness()
	}
	if (p.down || p.confirm != nil) && c.det != nil && c.det.State(m) != liveness.Suspect {
		// Given up, or asked about, before its timeout (lease.go): the
		// detector saw no silence to end.
		c.heardAgain(m)
	}
}

// countDirect counts a frame of p received directly, stamped at stamp,
// toward this member's majority: at its stamp, capped by this member's
// own beats up to then (countFor, and the package doc, "Links"), whenever
// it is read, and by the last of them p acknowledged (ackCap).
func (c *Core) countDirect(p *peer, stamp time.Time) {
	if at, ok := c.countFor(stamp); ok {
		if at = c.ackCap(p, at); at.After(p.countAt) {
			p.countAt = at
		}
	}
}

// reportLiveness acts on the detector's transitions. A member silent for
// its timeout is not given up yet: the others are asked first (Tick, the
// confirmation of link.go). One heard again is no longer down, and is
// asked again at once.
func (c *Core) reportLiveness() {
	for _, t := range c.det.Transitions() {
		switch {
		case t.To == liveness.Suspect:
			c.count("silences")
		case t.From == liveness.Suspect:
			c.heardAgain(t.ID)
		}
	}
}

// seeIncarnation checks frame incarnation inc of member m, in a frame
// stamped at (epoch.Life): a newer one, or an older one stamped after every
// frame of the one believed (which a forger made up), drops everything known
// of m's other life.
func (c *Core) seeIncarnation(m uint32, inc uint32, at uint64) error {
	p := c.peers[m]
	cur := uint32(p.life.Inc)
	switch p.life.Judge(uint64(inc), at) {
	case epoch.Same:
		p.life.See(uint64(inc), at)
		return nil
	case epoch.Stale:
		return fmt.Errorf("%w: %d from member %d, which is at %d (since a frame stamped %d, this one %d)", ErrStaleIncarnation, inc, m, cur, p.life.Stamp, at)
	case epoch.Newer:
		if cur != 0 && inc-cur > MaxIncarnationJump {
			return fmt.Errorf("%w: %d from member %d, which is at %d", ErrIncarnationJump, inc, m, cur)
		}
	case epoch.Back:
		c.count("incarnations_undone")
	}
	p.life.See(uint64(inc), at)
	p.ann, p.acked, p.v2 = heardLease{}, 0, false
	if cur != 0 {
		c.count("rejoins")
		c.emit(EventRejoined, fmt.Sprintf("member %d rejoined as incarnation %d: its old requests are dropped", m, inc),
			"member", m, "incarnation", inc)
		for _, l := range c.locks {
			delete(l.got, m)
			delete(l.last, m)
			delete(l.want, m)
			delete(l.deferred, m)
			delete(l.sentAt, m)
			delete(l.acked, m)
			delete(l.choosing, m)
		}
	}
	return nil
}

// Step feeds one frame.
func (c *Core) Step(m core.Message) error {
	c.observe(m.Time)
	c.stamped = true
	defer func() { c.stamped = false }()
	c.flushReleases()
	err := c.step(m)
	c.confirmRenewals() // any frame may make the majority fresh again
	if err != nil {
		c.count("rejected_" + reason(err))
	}
	return err
}

func (c *Core) step(m core.Message) error {
	if _, ok := c.peers[m.From]; !ok {
		return core.ErrUnknownMember
	}
	acked := c.peers[m.From].ackedAt
	c.heard(m.From, false, m.Time)
	if m.Lamport == 0 {
		return fmt.Errorf("%w: no Lamport time", ErrImplausible)
	}
	if m.Kind == wire.KindPermRelay {
		return c.stepRelay(m)
	}
	err := c.stepFrame(m)
	if p := c.peers[m.From]; p.ackedAt.After(acked) {
		// It carried an acknowledgement that raised its cap: the frame
		// counts by the new one (a renewal waits for it).
		c.countDirect(p, core.Earliest(m.Time, c.now))
	}
	return err
}

// stepFrame takes a frame of member m.From, received directly or through a
// relay (stepRelay).
func (c *Core) stepFrame(m core.Message) error {
	// A frame of another variant's kind is of another algorithm; the
	// kinds of this one are taken below.
	if !slices.Contains(c.kinds, m.Kind) && slices.Contains(allKinds, m.Kind) {
		return fmt.Errorf("%w: %v", ErrWrongAlgorithm, m.Kind)
	}
	switch m.Kind {
	case wire.KindPermProbe:
		return c.stepProbe(m)
	case wire.KindPermProbeReply:
		return c.stepProbeReply(m)
	case wire.KindPermHeartbeat:
		var h wire.PermHeartbeat
		if err := h.UnmarshalBinary(m.Payload); err != nil {
			return err
		}
		switch {
		case h.Ext:
			if h.Ack != 0 {
				if err := c.stepAck(m.From, m.Lamport, h.Ack); err != nil {
					return err
				}
			}
			c.takeAnnouncement(m.From, m.Lamport, h)
		case !h.Busy:
			// Marks nothing (below), but gets it 5-byte copies
			// (shortCopies), unless stamped before its newest
			// extended frame: a copy of this build's, overtaken by the
			// extended heartbeat sent after it.
			if p := c.peers[m.From]; m.Lamport > p.ann.stamp {
				p.shortIdle = true
			}
		case h.Busy && c.ackedThisRun(m.From):
			c.count("older_marks_refused")
		case h.Busy:
			c.olderBuild(m.From, "a busy 5-byte heartbeat") // a busy heartbeat of an older version
			// An idle 5-byte heartbeat marks nothing: a member of this
			// build sends it to a member it takes for older, and marking
			// it back left two members of this build on the short form
			// for good, uncapped (review-perm6: one whose frames were lost
			// for its upgrade restart's hold). An idle member of an older
			// build gets the extended form and refuses it (the package
			// doc, "Links").
		}
		switch {
		case !h.Busy:
			c.idleBeat(m.From, m.Lamport)
			c.idleWants(m.From, m.Lamport, m.Lamport)
		case h.Oldest != 0:
			c.busyBeat(m.From, min(h.Oldest, m.Lamport))
		}
		return nil
	case wire.KindHeartbeat:
		// The heartbeat of a member of an older version: a sign of life
		// only.
		var h wire.Heartbeat
		if err := h.UnmarshalBinary(m.Payload); err != nil {
			return err
		}
		c.olderBuild(m.From, "a plain heartbeat frame, the kind before perm_heartbeat")
		return nil
	case wire.KindRARequest, wire.KindLamportRequest, wire.KindLamportRelease,
		wire.KindBakeryDoorway, wire.KindBakeryChoosing, wire.KindBakeryTicket:
		var r wire.PermRequest
		if err := r.UnmarshalBinary(m.Payload); err != nil {
			return err
		}
		if r.Stamp > m.Lamport || r.Fence>>16 > m.Lamport {
			return fmt.Errorf("%w: stamp %d, fence %d in a frame of Lamport time %d", ErrImplausible, r.Stamp, r.Fence, m.Lamport)
		}
		if err := c.seeIncarnation(m.From, r.Incarnation, m.Lamport); err != nil {
			return err
		}
		if m.Kind != wire.KindLamportRelease {
			c.tookRequest(m.From, m.Lamport)
		}
		switch m.Kind {
		case wire.KindRARequest:
			return c.stepRARequest(m.From, m.Lamport, r)
		case wire.KindLamportRequest:
			return c.stepLamportRequest(m.From, m.Lamport, r)
		case wire.KindLamportRelease:
			c.stepLamportRelease(m.From, m.Lamport, r)
			return nil
		}
		return c.stepBakeryRead(m.Kind, m.From, m.Lamport, r)
	case wire.KindLamportRequeue:
		var r wire.PermRequeue
		if err := r.UnmarshalBinary(m.Payload); err != nil {
			return err
		}
		// The release is stamped one below the frame: above the request it
		// ends.
		if r.Stamp > m.Lamport || r.Released+1 >= m.Lamport || r.Fence>>16 > m.Lamport {
			return fmt.Errorf("%w: stamp %d, released %d, fence %d in a frame of Lamport time %d", ErrImplausible, r.Stamp, r.Released, r.Fence, m.Lamport)
		}
		if err := c.seeIncarnation(m.From, r.Incarnation, m.Lamport); err != nil {
			return err
		}
		c.tookRequest(m.From, m.Lamport)
		c.stepLamportRelease(m.From, m.Lamport-1, wire.PermRequest{Name: r.Name, Incarnation: r.Incarnation, Stamp: r.Released, Fence: r.Fence})
		return c.stepLamportRequest(m.From, m.Lamport, r.PermRequest)
	case wire.KindRAReply, wire.KindLamportAck, wire.KindBakeryNumber, wire.KindBakeryChosen, wire.KindBakeryTicketReply:
		var r wire.PermReply
		if err := r.UnmarshalBinary(m.Payload); err != nil {
			return err
		}
		if r.Stamp > m.Lamport || r.Want > m.Lamport || r.Fence>>16 > m.Lamport {
			return fmt.Errorf("%w: stamp %d, want %d, fence %d in a frame of Lamport time %d", ErrImplausible, r.Stamp, r.Want, r.Fence, m.Lamport)
		}
		if err := c.seeIncarnation(m.From, r.Incarnation, m.Lamport); err != nil {
			return err
		}
		if c.cfg.Variant == Bakery {
			c.stepBakeryAnswer(m.Kind, m.From, m.Lamport, r)
		} else {
			c.stepAnswer(m.From, m.Lamport, r)
		}
		return nil
	}
	return core.ErrUnexpectedKind
}

// confirmRenewals confirms the renewals waiting for a fresh majority.
func (c *Core) confirmRenewals() {
	if !c.freshMajority() {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(c.locks)) {
		if c.reqs.Renewing(name) {
			c.confirm(name)
		}
	}
}

// rejectLabels are the counter labels of Step's errors ("rejected_" and
// the label); a payload's are pkg/wire's.
var rejectLabels = core.ErrorLabels{
	{Err: ErrImplausible, Label: "implausible"},
	{Err: ErrStaleIncarnation, Label: "stale_incarnation"},
	{Err: ErrIncarnationJump, Label: "incarnation_jump"},
	{Err: ErrNoRoom, Label: "no_room"},
	{Err: ErrWrongAlgorithm, Label: "wrong_algorithm"},
	{Err: core.ErrUnknownMember, Label: "unknown_member"},
	{Err: core.ErrUnexpectedKind, Label: "unexpected_kind"},
}

func reason(err error) string {
	if l := rejectLabels.Of(err, ""); l != "" {
		return l
	}
	return "payload_" + wire.Reason(err)
}

// fresh takes a frame stamped at about lock l from member m if it is newer
// than the last one taken; a stale one is counted and ignored.
func (c *Core) fresh(l *lock, m uint32, at uint64) bool {
	if at <= l.last[m] {
		c.count("stale_frames")
		return false
	}
	l.last[m] = at
	l.touched = c.now
	return true
}

// StepDatagram refuses datagrams: these cores speak synclab frames only.
func (c *Core) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }

// Tick runs the timers: heartbeats, liveness, leases, retries.
func (c *Core) Tick(now time.Time) {
	c.observe(now)
	c.ticked = c.now
	c.rejoining() // a rejoin over ends here, not at the next request (Deadline)
	c.unsaved.Release(c.now, &c.outcomes, &c.events, c.counters)
	c.flushReleases()
	var late time.Duration
	if due := c.nextBeat(); !c.now.Before(due) {
		if !c.lastBeat.IsZero() {
			late = c.now.Sub(due)
		}
		c.sendBeat(core.Broadcast)
	}
	c.det.Check(c.now)
	c.reportLiveness()
	if late > c.cfg.Margin {
		c.loopLate(late)
	}
	c.checkCutOff()
	c.checkRenewals()
	c.checkLinks()
	c.confirmTick()
	c.reqs.Expire(c.now)
	c.drain()
	c.grantDue = false                                       // settled below
	for _, name := range slices.Sorted(maps.Keys(c.locks)) { // sorted: deterministic output
		l := c.locks[name]
		c.resend(l)
		c.settle(l)
	}
	c.reclaim(false)
}

// Deadline is when the core next needs Tick (core.Scheduler).
func (c *Core) Deadline() time.Time {
	if !c.started {
		return time.Time{}
	}
	d := core.Earliest(c.nextBeat(), c.det.Deadline(), c.reqs.Deadline())
	if c.grantDue {
		d = core.Earliest(d, c.now.Add(time.Nanosecond)) // a reading of the clock at once (after the last Tick's)
	}
	d = core.Earliest(d, c.unsaved.Deadline(c.now))
	if len(c.releases) > 0 {
		due := c.releaseDue
		if !due.After(c.ticked) {
			due = c.ticked.Add(time.Nanosecond) // due at once (a Release at the last Tick's reading)
		}
		d = core.Earliest(d, due)
	}
	if c.inHold() {
		d = core.Earliest(d, c.holdUntil)
	}
	if !c.renewSince.IsZero() && !c.renewWarned {
		d = core.Earliest(d, c.renewSince.Add(c.cfg.RetryInterval))
	}
	for _, p := range c.peers {
		if p.confirm != nil {
			d = core.Earliest(d, p.confirm.due)
		}
	}
	d = core.Earliest(d, c.earlyDeadline())
	if !c.rejoinFrom.IsZero() {
		// The rejoin ends FreshWindow in if every member was heard since,
		// else when the last is heard, or at SuspectAfter (rejoining). Past
		// the Tick that looked (a member still unheard, or the restart's
		// hold), only what is still to come: a deadline left at or before
		// that Tick is stale, and had the node tick the core every 10 ms
		// until the rejoin ended.
		fresh, end := c.rejoinFrom.Add(c.cfg.FreshWindow), c.rejoinFrom.Add(c.cfg.SuspectAfter)
		switch {
		case fresh.After(c.ticked):
			d = core.Earliest(d, fresh)
		case !c.inHold() && c.heardSince(c.rejoinFrom):
			d = core.Earliest(d, c.now.Add(time.Nanosecond)) // heard since that Tick: ends at once
		}
		if end.After(c.ticked) {
			d = core.Earliest(d, end)
		}
	}
	if !c.cutOff {
		for _, p := range c.peers {
			// When this member would be cut off if it hears that peer
			// no more: once past a Tick (checkCutOff looked then), it is
			// no deadline. A dead peer's stayed one, stale at every Tick:
			// with a member down the others ticked every 10 ms, for good
			// (TestNoStaleDeadlineWithMemberDown).
			if at := p.countAt.Add(c.rejoinAfter() + time.Millisecond); !p.countAt.IsZero() && at.After(c.ticked) {
				d = core.Earliest(d, at)
			}
		}
	}
	d = core.Earliest(d, c.linkDeadline())
	for _, l := range c.locks {
		if l.stamp == 0 || l.granted {
			continue
		}
		for _, m := range c.others() {
			if c.needs(l, m) && !c.givenUp(m) {
				at := l.sentAt[m].Add(c.cfg.RetryInterval)
				if l.sentAt[m].IsZero() {
					at = c.now.Add(time.Nanosecond) // heardAgain: ask it at once
				}
				d = core.Earliest(d, at)
			}
		}
	}
	return d
}

// Ready drains what the core wants done. State, while a change is not
// confirmed on disk (Advance), is the incarnation and the Lamport floor:
// persist it before sending.
func (c *Core) Ready() core.Ready {
	c.raiseFloor(len(c.msgs))
	rd := core.Ready{Messages: c.msgs, Events: c.events}
	c.durable.Ready(&rd, func() []byte { return encodeState(savedState{incarnation: c.inc, floor: c.floor}) })
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

// Expires returns the local time at which granted request id's lease ends.
func (c *Core) Expires(id mutex.RequestID) (time.Time, bool) { return c.reqs.Expires(id) }

// linkDeadline is when checkLinks next has something to do (review-hunt):
// a relay to start (RelayAfter without a direct frame, or an unheard
// relay's RelayAfter over), a broken link to report (SuspectAfter without
// a direct frame, its frames relayed), a repaired one to report (a direct
// frame came since the last Tick).
func (c *Core) linkDeadline() time.Time {
	var d time.Time
	soon := c.now.Add(time.Nanosecond)
	later := func(t time.Time) {
		if t.After(c.ticked) {
			d = core.Earliest(d, t)
		}
	}
	for _, m := range c.others() {
		p := c.peers[m]
		if p.down || c.det == nil {
			continue
		}
		direct := p.directAt
		if direct.IsZero() {
			direct = c.begun
		}
		if relay := c.viaRelay(m); relay != p.relaying {
			d = core.Earliest(d, soon) // a Step changed it: the beat goes at once
		}
		if !p.relaying {
			later(direct.Add(c.cfg.RelayAfter()))
		}
		if !p.unheardAt.IsZero() {
			later(p.unheardAt.Add(c.cfg.RelayAfter()))
		}
		switch at := direct.Add(c.cfg.SuspectAfter); {
		case !p.linkDown && at.After(c.ticked):
			later(at)
		case !p.linkDown && c.relayedRecently(m) && c.now.Sub(direct) >= c.cfg.SuspectAfter:
			d = core.Earliest(d, soon)
		case p.linkDown && c.directSilence(m) < c.cfg.RelayAfter():
			d = core.Earliest(d, soon)
		}
	}
	return d
}
