package central

import (
	"encoding"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/internal/mutexcount"
	"github.com/synclab/synclab/pkg/wire"
)

// Name is the algorithm's name (mutexd run --algorithm central).
const Name = "central"

// Errors of Step (the frame is counted and dropped).
var (
	// ErrNotCoordinator: a member's frame to a member that does not
	// coordinate the term it names, or a coordinator's frame from a member
	// that is not the coordinator this member follows in that term.
	ErrNotCoordinator = errors.New("central: not the coordinator of the frame's term")
	// ErrStaleIncarnation: a frame of an older run of a member (or, to a
	// member, about an older run of its own).
	ErrStaleIncarnation = errors.New("central: frame of an older incarnation")
	// ErrBadFence: a grant whose fence is not of its coordinator's term,
	// or a re-announced grant whose fence this coordinator never made.
	ErrBadFence = errors.New("central: fence not of the coordinator's term")
	// ErrBadLease: a lease outside the cluster's bounds, or longer than
	// the one asked for.
	ErrBadLease = errors.New("central: lease out of range")
	// ErrBadEcho: a grant or renewal counted from a stamp this member
	// never sent (or sent too long ago to remember).
	ErrBadEcho = errors.New("central: echo of an unknown stamp")
	// ErrUnknownRequest: a frame about a request the receiver does not
	// have (a duplicate, or one that crossed a release).
	ErrUnknownRequest = errors.New("central: no such request")
	// ErrStale: a sync taken from the member already (a duplicate).
	ErrStale = errors.New("central: stale sync")
)

var rejectLabels = core.ErrorLabels{
	{Err: ErrNotCoordinator, Label: "not_coordinator"},
	{Err: ErrStaleIncarnation, Label: "stale_incarnation"},
	{Err: ErrBadFence, Label: "bad_fence"},
	{Err: ErrBadLease, Label: "bad_lease"},
	{Err: ErrBadEcho, Label: "bad_echo"},
	{Err: ErrUnknownRequest, Label: "unknown_request"},
	{Err: ErrStale, Label: "stale_sync"},
	{Err: ErrBadVector, Label: "bad_vector"},
	{Err: core.ErrUnexpectedKind, Label: "unexpected_kind"},
}

func reason(err error) string { return rejectLabels.Of(err, "payload_"+wire.Reason(err)) }

// Event names. Args are slog-style.
const (
	// Besides mutex.EventGranted ("mode", "term"), EventRenewed,
	// EventLost and EventReleased:
	//
	// EventCoordinating: this member coordinates a new term ("term",
	// "hold": the longest it waits before granting).
	EventCoordinating = "central_coordinating"
	// EventReady: the coordinator may grant: its hold ended, or every
	// member re-announced its grants ("term", "waited").
	EventReady = "central_ready"
	// EventFollowing: this member follows a new coordinator and sent it
	// its requests ("coordinator", "term").
	EventFollowing = "central_following"
	// EventFencesExhausted: the coordinator cannot number more grants in
	// its term (its round or count ran out) and resigns ("term").
	EventFencesExhausted = "central_fences_exhausted"
	// EventRenewalUnanswered (a WARN): a renewal of this member's client
	// has waited a beat for its confirmation (the message says why it may
	// be: the link to the coordinator, this member's own hold, or its own
	// failing state writes, which keep its frames home); said once per
	// lease until one is confirmed.
	EventRenewalUnanswered = "central_renewal_unanswered"
	// EventLeaseAboveMax (a WARN): a member re-announced a lease, granted
	// by an older coordinator, longer than this coordinator's MaxLease
	// (members configured with different --lease: a member admitted
	// unchecked, a build without configuration agreement): kept until it
	// ends as its member counts it, up to mutex.MaxLeaseLimit ("member",
	// "lock", "lease", "max"); said once per member and term.
	EventLeaseAboveMax = "central_lease_above_max"
	// EventLateHoldUnchecked (a WARN): a member admitted unchecked (an
	// older build, which announces no configuration) re-announced a hold
	// after this coordinator's takeover wait had ended: its --lease may be
	// longer than this coordinator's, and the lock granted inside it
	// ("member", "lock", "left"); said once per member and term.
	EventLateHoldUnchecked = "central_late_hold_unchecked"
	// EventLeaseAboveCluster (a WARN): a member re-announced a hold whose
	// lease is longer than that member may hold (Config.MaxPeerLease when
	// set, else this member's --lease for a member whose configuration
	// agreement compared and matched): no coordinator granted it, so it
	// was forged (without a key) or is a bug; kept for that long only
	// ("member", "lock", "lease", "max"). Said once per member and term.
	EventLeaseAboveCluster = "central_lease_above_cluster"
	// EventHoldsOverCap (a WARN): a member re-announced, across its
	// incarnations, more holds than a member can have at the coordinator
	// (its share and one sync's): the rest are not kept, and no lock is
	// granted before the longest of them (any member's) would end nor
	// before the Hold has run whole ("member", "lock", "holds", "until":
	// when it may grant again). Said after the sync, once per member and
	// term, and again (at most once a second) when a later hold moves
	// "until" further; status says it (Detail.GrantsFrom), at every member
	// (the coordinator's beats count it in their hold).
	EventHoldsOverCap = "central_holds_over_cap"
	// EventCoordinatingUnsaved (a WARN): this member won its election
	// (its claim was covered by the reservation on disk) but the write of
	// the term it coordinates failed: every frame waits for it, so the
	// others elect without it ("term"). Said once per term; status says
	// so while it lasts (Detail.Unsaved).
	EventCoordinatingUnsaved = "central_coordinating_unsaved"
)

// Refused is the loss reason of a request the coordinator refused (its
// queue full, a lease the cluster does not allow).
const Refused mutex.LossReason = "refused"

// lossReasons are the reasons this algorithm gives, metrics show each.
var lossReasons = append(slices.Clone(mutex.LossReasons), Refused)

// Fences: round<<40 | rank<<32 | count. The round and the rank of the
// owner among the members (sorted IDs) order terms exactly as the terms
// themselves (round, then owner), so every fence of a term is above every
// fence of an older one; count numbers the grants within the term.
const (
	fenceCountBits = 32
	fenceRankBits  = 8
	// MaxMembers is the largest cluster whose ranks fit a fence.
	MaxMembers = 1 << fenceRankBits
	// MaxFenceRound is the last term round whose grants can be fenced.
	MaxFenceRound = 1<<(64-fenceCountBits-fenceRankBits) - 1
)

// ErrFencesExhausted: a term of a round above MaxFenceRound.
var ErrFencesExhausted = errors.New("central: term round beyond the fences' range")

// FenceBase is the first fence of term (minus one: grants count from 1),
// for a cluster of members (sorted).
func FenceBase(term uint64, members []uint32) (uint64, error) {
	round := epoch.Round(term)
	rank, ok := slices.BinarySearch(members, epoch.Owner(term))
	switch {
	case !ok:
		return 0, fmt.Errorf("central: term %#x is owned by %d, not a member", term, epoch.Owner(term))
	case round > MaxFenceRound:
		return 0, fmt.Errorf("%w: round %d of term %#x", ErrFencesExhausted, round, term)
	}
	return uint64(round)<<(fenceCountBits+fenceRankBits) | uint64(rank)<<fenceCountBits, nil
}

// FenceText shows a fence as round.rank:count.
func FenceText(f uint64) string {
	return fmt.Sprintf("%d (%d.%d:%d)", f, f>>(fenceCountBits+fenceRankBits), f>>fenceCountBits&(MaxMembers-1), f&(1<<fenceCountBits-1))
}

// Core is one member: the client side of every member, and the
// coordinator's queue while the election makes it leader. Not safe for
// concurrent use.
type Core struct {
	cfg      Config
	self     uint32
	members  []uint32 // sorted
	majority int

	el      elect.Embedded // the election, its state saved inside this core's
	durable core.Durable
	writes  writeHealth
	inc     uint32 // this run's incarnation
	// lastSkip is the latest predecessor a request was granted without
	// (the token-asking variant: saySkips), when, for status.
	lastSkip   string
	lastSkipAt time.Time
	// incSaved: a state write carrying inc succeeded. Until then a crash
	// makes the next run raise the same incarnation again (what is on
	// disk is the last run's), so a stamp of it may name two requests
	// (Vector waits for it).
	incSaved bool
	lastLed  uint64 // the last term coordinated, in any run
	// unsavedTerm is the term coordinated whose write (lastLed, a
	// promise) failed and has not succeeded since; unsavedTermSaid the
	// last one EventCoordinatingUnsaved named.
	unsavedTerm, unsavedTermSaid uint64
	// ledTerm and ledCount: the term this run coordinated last, and how
	// many fences it had granted in it when it stopped.
	ledTerm, ledCount uint64

	now     time.Time
	started bool
	begun   time.Time
	// stamped: the call running is Step (or Hint), whose now is a receive
	// stamp, not a reading of the clock: a loop that reads a frame late
	// (a busy host, a paused process) would report, judged on its stamp, a
	// grant whose lease had already ended. A grant that comes in a frame
	// waits in entering, and this member's own grant as coordinator in its
	// queue (ownDue), for the next reading (Tick, or a client's call).
	stamped  bool
	entering []entering
	ownDue   bool
	late     mutexcount.LateGrants

	reqs *mutex.Table // this member's clients' requests
	fol  follower
	co   *coord    // non-nil while coordinating
	ta   *tokenAsk // the token-asking variant's stamps (nil: the central coordinator)

	msgs     []core.Message
	events   []core.Event
	bugs     core.Bugs
	outcomes []mutex.Outcome
	// unsaved keeps the outcomes from the driver while a promise (the incarnation, a term)
	// is not on disk (mutexcount.Hold).
	unsaved  mutexcount.Hold
	counters map[string]uint64
}

var (
	_ mutex.Algorithm = (*Core)(nil)
	_ mutex.Causal    = (*Core)(nil)
	_ core.Advancer   = (*Core)(nil)
)

// New returns member env.ID's core. It restores env.State (refused with
// core.ErrState when damaged), raises the incarnation, which the first
// Ready hands over to be persisted before anything is sent, and starts the
// election.
func New(env core.Env, cfg Config) (*Core, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	members := slices.Clone(env.Members)
	slices.Sort(members)
	members = slices.Compact(members)
	switch {
	case env.ID == 0 || len(members) == 0 || members[0] == 0:
		return nil, fmt.Errorf("%w: ID %d, members %v: IDs must be > 0", ErrConfig, env.ID, env.Members)
	case len(members) > MaxMembers:
		return nil, fmt.Errorf("%w: %d members, at most %d (a fence numbers the coordinator among them)", ErrConfig, len(members), MaxMembers)
	case !slices.Contains(members, env.ID):
		return nil, fmt.Errorf("%w: own ID %d is not a member", ErrConfig, env.ID)
	}
	saved, err := decodeState(env.State)
	if err != nil {
		return nil, err
	}
	if saved.Incarnation == math.MaxUint32 {
		return nil, fmt.Errorf("%w: central state: incarnations exhausted", core.ErrState)
	}
	newElection := cfg.Election
	if newElection == nil {
		newElection = func(env core.Env) (elect.Elector, error) { return bully.New(env, cfg.BullyConfig(members)) }
	}
	eenv := env
	eenv.Members, eenv.State = members, saved.Election
	el, err := newElection(eenv)
	if err != nil {
		if errors.Is(err, core.ErrState) {
			return nil, fmt.Errorf("%w: election: %w", core.ErrState, err)
		}
		return nil, fmt.Errorf("%w: election: %w", ErrConfig, err)
	}
	c := &Core{cfg: cfg, self: env.ID, members: members, majority: len(members)/2 + 1,
		el: elect.Embedded{Elector: el, State: saved.Election}, inc: saved.Incarnation + 1, lastLed: saved.LastLed,
		now: env.Now, counters: map[string]uint64{}}
	most := wire.MaxSyncEntries
	if cfg.Variant == TokenAsk {
		c.ta = &tokenAsk{stamps: map[mutex.RequestID]clock.Vector{}}
		most = tokenAskEntries(len(members))
	}
	if c.reqs, err = mutex.NewTable(mutex.Limits{Self: env.ID, Members: len(members), Shared: true, Causal: c.ta != nil,
		MinLease: cfg.MinLease, MaxLease: cfg.MaxLease, MaxQueue: min(cfg.MaxQueue, most), MaxLocks: cfg.MaxLocks}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c.fol.init()
	c.durable.Change(true) // the incarnation: nothing leaves before it is on disk
	return c, nil
}

// Config returns the validated configuration.
func (c *Core) Config() Config { return c.cfg }

// Election returns the coordinator election.
func (c *Core) Election() elect.Elector { return c.el.Elector }

// Incarnation is this run's incarnation.
func (c *Core) Incarnation() uint32 { return c.inc }

func (c *Core) observe(now time.Time) {
	if now.IsZero() {
		return
	}
	if !c.started {
		c.started, c.begun = true, now
	}
	if now.After(c.now) {
		c.now = now
	}
}

func (c *Core) count(name string) { c.counters[name]++ }

func (c *Core) emit(name, msg string, args ...any) {
	c.events = append(c.events, core.Event{Name: name, Msg: msg, Args: args})
}

// send queues one frame of term on the member's TCP link (datagram: a
// broadcast beat); an encoding of our own fields that fails is a bug,
// counted and reported, and the frame is not sent.
func (c *Core) send(to uint32, term uint64, k wire.Kind, p encoding.BinaryAppender) []byte {
	b, ok := c.bugs.Encode(&c.events, k.String(), p, nil)
	if !ok {
		return nil
	}
	c.msgs = append(c.msgs, core.Message{To: to, Term: term, Kind: k, Payload: b, Stream: to != core.Broadcast})
	c.count("sent_" + k.String())
	return b
}

// Handles reports whether k is one of this algorithm's own kinds (of
// either variant); every other frame is the election's.
func Handles(k wire.Kind) bool {
	return k >= wire.KindCentralRequest && k <= wire.KindCentralSync || k == wire.KindTokenAskRequest || k == wire.KindTokenAskSync
}

// ownKind says whether k is a kind of this core's variant: the token-asking
// variant's requests and syncs carry stamps, the coordinator's do not.
func (c *Core) ownKind(k wire.Kind) bool {
	switch k {
	case wire.KindCentralRequest, wire.KindCentralSync:
		return c.ta == nil
	case wire.KindTokenAskRequest, wire.KindTokenAskSync:
		return c.ta != nil
	}
	return true
}

// Step feeds one frame: the algorithm's kinds here, the rest to the
// election.
func (c *Core) Step(m core.Message) error {
	c.observe(m.Time)
	c.stamped = true
	defer func() { c.stamped = false }()
	if !Handles(m.Kind) {
		err := c.el.Step(m)
		c.follow()
		return err
	}
	var err error
	if !c.ownKind(m.Kind) {
		err = fmt.Errorf("%w: %s to a %s member", core.ErrUnexpectedKind, m.Kind, c.cfg.Variant)
		c.count("rejected_" + reason(err))
		return err
	}
	switch m.Kind {
	case wire.KindCentralRequest:
		var r wire.CentralRequest
		if err = r.UnmarshalBinary(m.Payload); err == nil {
			err = c.stepRequest(m.From, m.Term, m.Lamport, r, clock.Vector{})
		}
	case wire.KindTokenAskRequest:
		var r wire.TokenAskRequest
		if err = r.UnmarshalBinary(m.Payload); err == nil {
			var v clock.Vector
			if v, err = c.decodeVector(r.Vector); err == nil {
				err = c.stepRequest(m.From, m.Term, m.Lamport, r.CentralRequest, v)
			}
		}
	case wire.KindTokenAskSync:
		var s wire.TokenAskSync
		if err = s.UnmarshalBinary(m.Payload); err == nil {
			vecs := map[uint64]clock.Vector{}
			for _, tv := range s.Vectors {
				var v clock.Vector
				if v, err = c.decodeVector(tv.Vector); err != nil {
					break
				}
				vecs[tv.Seq] = v
			}
			if err == nil {
				err = c.stepSync(m.From, m.Term, m.Lamport, m.Checked, s.CentralSync, vecs)
			}
		}
	case wire.KindCentralRelease:
		var r wire.CentralRelease
		if err = r.UnmarshalBinary(m.Payload); err == nil {
			err = c.stepRelease(m.From, m.Term, m.Lamport, r)
		}
	case wire.KindCentralRenew:
		var r wire.CentralRenew
		if err = r.UnmarshalBinary(m.Payload); err == nil {
			err = c.stepRenew(m.From, m.Term, m.Lamport, r)
		}
	case wire.KindCentralSync:
		var s wire.CentralSync
		if err = s.UnmarshalBinary(m.Payload); err == nil {
			err = c.stepSync(m.From, m.Term, m.Lamport, m.Checked, s, nil)
		}
	case wire.KindCentralGrant, wire.KindCentralRenewed:
		var g wire.CentralGrant
		if err = g.UnmarshalBinary(m.Payload); err == nil {
			err = c.stepGrant(m.From, m.Term, g, m.Kind == wire.KindCentralRenewed)
		}
	case wire.KindCentralRefuse:
		var r wire.CentralRefuse
		if err = r.UnmarshalBinary(m.Payload); err == nil {
			err = c.stepRefuse(m.From, m.Term, r)
		}
	case wire.KindCentralBeat:
		var b wire.CentralBeat
		if err = b.UnmarshalBinary(m.Payload); err == nil {
			err = c.stepBeat(m.From, m.Term, m.Lamport, b)
		}
	default:
		err = core.ErrUnexpectedKind
	}
	if err != nil {
		c.count("rejected_" + reason(err))
	}
	c.drain()
	return err
}

// Hint hands the coordinator election a hint that a member's port closed
// (core.Hinter): with the default election (bully, Config.HintProbe), a
// follower whose coordinator's link closed probes it at once and elects a
// successor if it answers none of bully.HintProbes probes, instead of
// waiting DeadAfter of silence. Nothing else: a hint grants nothing and
// shortens no wait for leases (the successor still needs every other
// member's word, or waits the Hold).
func (c *Core) Hint(h core.Hint) {
	c.observe(h.Time)
	c.stamped = true
	defer func() { c.stamped = false }()
	c.el.Hint(h)
}

// StepDatagram refuses datagrams: the algorithm speaks synclab frames only.
func (c *Core) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }

// Tick runs the timers: the election's, leases, renewals, and the
// coordinator's beats, hold and queue.
func (c *Core) Tick(now time.Time) {
	c.observe(now)
	c.unsaved.Release(c.now, &c.outcomes, &c.events, c.counters)
	c.enterGrants()
	c.el.Tick(c.now)
	c.follow()
	c.reqs.Expire(c.now)
	c.tickFollower()
	if c.co != nil {
		c.tickCoord()
	}
	c.drain()
}

// Deadline is the earliest local time the core needs Tick.
func (c *Core) Deadline() time.Time {
	d := []time.Time{c.el.Deadline(), c.reqs.Deadline(), c.fol.deadline()}
	if len(c.entering) > 0 || c.ownDue {
		d = append(d, c.now.Add(time.Nanosecond)) // a reading of the clock at once (after the last Tick's)
	}
	if c.co != nil {
		d = append(d, c.co.deadline(c.now, c.parkFor(), c.cfg.DeadAfter, c.cfg.BeatInterval, c.ta != nil))
	}
	return core.Earliest(append(d, c.unsaved.Deadline(c.now))...)
}

// Ready drains what the core wants done. State, while pending, is the
// incarnation, the last term coordinated and the election's state:
// persist it before sending (a promise when one of them asked: the
// election's claim its reservation on disk covers does not).
func (c *Core) Ready() core.Ready {
	rd, changed, promise := c.el.Drain()
	if changed {
		c.durable.Change(promise)
	}
	c.durable.Ready(&rd, func() []byte {
		return encodeState(Saved{Incarnation: c.inc, LastLed: c.lastLed, Election: c.el.State})
	})
	c.writes.handed, c.writes.promise = rd.State != nil, rd.Promise
	rd.Messages = append(rd.Messages, c.msgs...)
	rd.Events = append(rd.Events, c.events...)
	c.unsaved.Ready(&rd, &c.outcomes) // after the events: it holds the held outcomes' events
	c.msgs, c.events = nil, nil
	return rd
}

// Advance is the driver's report on the last Ready (core.Advancer), for
// this core's state and the election's inside it; the outcomes held for
// it leave once every promise is on disk (mutexcount.Hold).
func (c *Core) Advance(saved bool) {
	if saved && c.writes.handed {
		c.incSaved = true // every state written carries this run's incarnation
	}
	c.el.Advance(saved)
	c.durable.Advance(saved)
	c.writes.advance(c.now, saved)
	c.unsaved.Advance(!c.durable.PromisePending(), &c.outcomes, &c.events)
	c.unsavedTerm = 0
	if !saved && c.co != nil && c.durable.PromisePending() {
		// Its term is not on disk: every frame it sends is withheld until
		// a write succeeds, and the others elect without it. It does not
		// coordinate, whatever the election says (its claim needed no
		// write), until the write succeeds.
		c.unsavedTerm = c.co.term
		if c.unsavedTermSaid != c.co.term {
			c.unsavedTermSaid = c.co.term
			c.events = append(c.events, core.Event{Name: EventCoordinatingUnsaved, Warn: true,
				Msg: fmt.Sprintf("coordinating term %s waits for its state write: the write failed, and every frame of this member waits for one that succeeds (the others elect a coordinator without it)",
					epoch.Format(c.co.term)),
				Args: []any{"term", c.co.term, "hint", "see the failed state write (persist: FAILING): free space or fix permissions under --state-dir"}})
		}
	}
}

// writeHealth is what this member knows of its own state writes, for the
// WARNs that would otherwise blame a link: a Ready whose promise the
// driver could not write leaves with none of its frames (core.Durable).
type writeHealth struct {
	handed, promise bool // the last Ready carried state, a promise
	// failing counts the writes failed in a row (0: the last one
	// succeeded); withheldAt is when the last Ready with a promise failed
	// (its frames stayed home), zero if none in this run.
	// withholds: the promise of that Ready is still not on disk, so the
	// driver keeps every frame home (a write saved since, which carries
	// it, ends that; a later failure without a promise withholds nothing).
	failing    int
	withheldAt time.Time
	withholds  bool
}

func (w *writeHealth) advance(now time.Time, saved bool) {
	switch {
	case !w.handed:
	case saved:
		w.failing, w.withholds = 0, false
	default:
		w.failing++
		if w.promise {
			w.withheldAt, w.withholds = now, true
		}
	}
	w.handed, w.promise = false, false
}

// withholding says why frames of this member may not have left since
// since: a state write carrying a promise failed after it (the driver
// kept that Ready's frames home); "" if none did.
func (w *writeHealth) withholding(now, since time.Time) string {
	if w.withheldAt.IsZero() || w.withheldAt.Before(since) {
		return ""
	}
	if w.withholds {
		return fmt.Sprintf("this member's own state writes are failing (%d in a row, the last that carried a promise %v ago), and the daemon keeps home every frame that depends on an unwritten promise "+
			"(the election's new term): its renewals, syncs and beats have not left; the link is not to blame: free or repair this host's disk "+
			"(persist_failed in the daemon's log and mutexd status)", w.failing, now.Sub(w.withheldAt).Round(time.Millisecond))
	}
	return fmt.Sprintf("this member's own state writes failed %v ago, and the daemon kept home the frames that depended on the unwritten promise "+
		"(the election's new term): its renewal may have left only since its disk recovered; check this host's disk "+
		"(persist_failed in the daemon's log and mutexd status)", now.Sub(w.withheldAt).Round(time.Millisecond))
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

// follow starts or stops coordinating, and follows a new coordinator, as
// the election's leader changes.
func (c *Core) follow() {
	lead, term, ok := c.el.Leader()
	leading := ok && lead == c.self && c.el.Role() == elect.RoleLeader
	if c.co != nil && (!leading || term != c.co.term) {
		c.stopCoordinating()
	}
	if !ok {
		lead, term = 0, 0
	}
	changed := lead != c.fol.leader || term != c.fol.term
	if changed {
		c.fol.leader, c.fol.term, c.fol.beat, c.fol.beatStamp, c.fol.holdMS = lead, term, 0, 0, 0
		// Until now it backed older coordinators only: every sync of the
		// term says so, not only the first (which a restarted
		// coordinator's node may refuse, or the link lose), and not its
		// answers to this term's beats since.
		c.fol.backedOlder = c.backedAt()
		c.fol.prevCoord, c.fol.prevLocal = c.fol.lastBeatFrom, c.fol.localBacked
		// A grant or a renewal held for the clock's reading is the word
		// of the coordinator followed until now: void. What this member
		// tells the new one in its sync (below) is what holds; a renewal
		// entered after that sync lengthened a lease the new coordinator
		// did not know of, and it granted the lock at the old end (two
		// holders: TestRenewalHeldAcrossTakeover).
		for range c.entering {
			c.count("grants_superseded")
		}
		c.entering, c.fol.syncOwed = nil, 0 // the beat owed an answer was the old coordinator's
	}
	// The election may name this member before it leads (and leads in the
	// same term later): coordinate once it leads, once per term.
	if leading && c.co == nil && c.fol.tried != term {
		c.fol.tried = term
		c.startCoordinating(term)
		return
	}
	if !changed || lead == 0 || lead == c.self {
		return
	}
	c.emit(EventFollowing, fmt.Sprintf("following coordinator %d in term %s", lead, epoch.Format(term)), "coordinator", lead, "term", term)
	c.sendSync(0)
}

// drain moves the table's outcomes to the core's, each reported as an
// event too (for logs and hooks), in the order they happened; a request
// that ended is no longer renewed or listed in syncs.
func (c *Core) drain() {
	mutexcount.Drain(c.reqs, &c.outcomes, &c.events, mutexcount.Grants{Mode: true, Epoch: "term"}, func(id mutex.RequestID) {
		delete(c.fol.renewing, id)
		delete(c.fol.listed, id)
		if c.ta != nil {
			delete(c.ta.stamps, id)
		}
	})
}

// msDown is d in whole milliseconds, rounded down (a lease cut to end by
// an instant must not end a fraction later).
func msDown(d time.Duration) uint32 {
	if d <= 0 {
		return 0
	}
	return uint32(min(d/time.Millisecond, math.MaxUint32))
}

func ms(d time.Duration) uint32 {
	if d <= 0 {
		return 0
	}
	return uint32(min(math.Ceil(float64(d)/float64(time.Millisecond)), math.MaxUint32))
}
