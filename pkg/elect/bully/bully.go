package bully

import (
	"encoding"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/wire"
)

// Role is what a node is doing in the election (elect.Role).
type Role = elect.Role

// The roles, as bully uses them.
const (
	// RoleFollower follows a leader, or waits for a COORDINATOR after a
	// higher-ranked member answered its election.
	RoleFollower = elect.RoleFollower
	// RoleCandidate has sent ELECTION to the higher-ranked members and waits
	// for an ANSWER.
	RoleCandidate = elect.RoleCandidate
	// RoleLeader leads the current term and sends heartbeats.
	RoleLeader = elect.RoleLeader
)

// Handles reports whether k is one of the kinds a bully core steps. Cores
// that embed an election (timed's Berkeley master, mutexd's token
// regeneration) route these kinds to it.
func Handles(k wire.Kind) bool {
	switch k {
	case wire.KindElection, wire.KindAnswer, wire.KindCoordinator, wire.KindLeaderHeartbeat, wire.KindLeaderProbe, wire.KindLeaderWatch:
		return true
	}
	return false
}

// Event names: the shared ones of pkg/elect (see there for their
// arguments), and bully's own.
const (
	EventElectionStarted = elect.EventElectionStarted
	EventElected         = elect.EventElected
	EventDemoted         = elect.EventDemoted
	EventLeaderElected   = elect.EventLeaderElected
	EventLeaderChanged   = elect.EventLeaderChanged
	EventLeaderLost      = elect.EventLeaderLost
	// EventTermsExhausted: this node cannot claim a term: its term is in
	// the last round the term space allows ("term", "err"). Reported once;
	// the node keeps following claims but never leads again until the
	// cluster's terms are reset (see Detail.Exhausted).
	EventTermsExhausted = "terms_exhausted"
	// EventLeaderTimeout: this follower gave up on its silent leader, and
	// why (the fields of TimeoutCause): "leader", "silent_ms",
	// "timeout_ms", "extra_ms", "probes", "probes_due", "tick_late_ms",
	// "stall_ms". Logged before the election it starts.
	EventLeaderTimeout = "leader_timeout"
)

type stepFunc func(b *Core, m *inbound) error

// inbound is a validated, decoded message.
type inbound struct {
	core.Message
	flags  uint8 // Coordinator, LeaderHeartbeat
	higher bool  // the sender outranks this node
}

// Core is the bully election core: an elect.Elector. It is not safe for
// concurrent use: the driver serialises Step, Tick, Ready and Resign.
type Core struct {
	cfg  Config
	id   uint32
	self Member
	rand *rand.Rand
	// ranked lists the members from the lowest to the highest rank; pos maps
	// an ID to its index there.
	ranked []Member
	pos    map[uint32]int

	role Role
	term uint64 // highest term seen; persisted before it is sent
	lead uint32 // leader of term, 0 if unknown; self when leading

	step stepFunc
	tick func(b *Core)

	// deadline is the role's timer: a candidate's answer timeout, a
	// leaderless follower's wait for a COORDINATOR (or for the member
	// below a resigned leader), a leader's next heartbeat. A follower's
	// patience with its leader is the detector's: every member's timeout
	// there is LeaderTimeout plus its stagger (leaderTimeout).
	deadline time.Time
	armed    time.Duration // what deadline was armed with (followers, candidates)
	// running is set by the first Tick: until then the startup election New
	// began may not have left yet (see run); startup says the candidate's
	// timer is still that election's.
	running, startup bool
	det              *liveness.Detector
	// suspected is the detector's last suspicion of the leader followed
	// (read by the leader timeout's cause).
	suspected liveness.Transition
	// suspect is the leader a follower gave up on when its timer was
	// shortened by a resignation: the election that follows does not ask it.
	suspect uint32
	// yielding is set by Resign. A yielding node does not bully: it follows
	// whichever leader appears, even a lower-ranked one, and does not answer
	// an ELECTION that would keep a member ranked above its leader from
	// winning. It competes normally again once its leader fails (or nobody
	// took over within the leader timeout).
	yielding bool

	now       time.Time // the local clock at the last Tick or arrival
	start     time.Time // the local clock at New: the term guard counts from it
	heard     []time.Time
	announced elect.Announcer
	counts    counters

	// limit and guard decide which terms from the wire are plausible (see
	// termLimit); exhausted holds the error once no term is left to claim.
	limit     epoch.Limit
	guard     epoch.Guard
	exhausted error
	// probed is when this follower last probed its silent leader
	// (Config.Probe); answered is when this leader last answered each
	// member's probe (by rank), at most once a millisecond each.
	probed   time.Time
	answered []time.Time
	// leadHeard is the last arrival of the followed leader's claim; late
	// the lateness of its last lateWindow arrivals past the expected
	// heartbeat (a ring, next at lateNext); extra what the leader timeout
	// has grown by for them (see observe).
	leadHeard time.Time
	// standIn: leadHeard was last moved by a probe's answer standing in
	// for a heartbeat; a heartbeat close after it is that one, late.
	standIn  bool
	late     [lateWindow]time.Duration
	lateNext int
	extra    time.Duration

	// hint is the follower's probing of its leader after a hint that
	// its port closed (hint.go, Config.HintProbe). leadArrived is the
	// latest arrival (the frame's own stamp) of a frame of the followed
	// leader's term from it: an episode ends only for one that arrived
	// no earlier than the hint. refusing is the leader (refusingTerm its
	// term) whose TCP port refused a connection while it answered the
	// probes that followed: refused dials to it are no sign of its death
	// (portRefused); refusedWarned is when that was last said at WARN,
	// refusedMore how many times it recurred since.
	hint         hint
	leadArrived  time.Time
	refusing     uint32
	refusingTerm uint64
	// dialTimeouts counts the dials to the leader that timed out in its
	// term (timedOutLead, timedOutTerm): see dialTimeoutsToAsk.
	dialTimeouts  int
	timedOutLead  uint32
	timedOutTerm  uint64
	refusedWarned time.Time
	refusedMore   uint64
	// watched is the leader this follower last sent a LEADER_WATCH,
	// watchTerm in which term, watchAt when (Config.Watch, watch).
	watched   uint32
	watchTerm uint64
	watchAt   time.Time
	// gap is what this follower saw while its leader was silent: the
	// probes it sent and how late its own Ticks ran (reset whenever the
	// leader is heard); lastTimeout is the cause of its last leader
	// timeout (Detail.LastTimeout). tickDue is the Deadline the last
	// Tick was asked for.
	gap         gapStats
	lastTimeout *TimeoutCause
	tickDue     time.Time
	tickLate    time.Duration // how late this Tick ran past tickDue
	// recheckAt is set while a follower whose leader timed out at a late
	// Tick listens a little longer before it gives up (see recheck).
	recheckAt time.Time

	// contested is when this node last told its leader about a newer term
	// it follows it in (stepStale): at most once a heartbeat.
	contested time.Time

	msgs    []core.Message
	events  []core.Event
	bugs    core.Bugs    // our own encodings that failed (metric synclab_elect_bugs_total)
	durable core.Durable // the term: persisted before anything carrying it leaves

	// The reservation (Config.Reserve, state.go): floor is the highest
	// term this member may have claimed in an earlier life (the
	// reservation it restored): it claims above it. reserved is the
	// highest reservation confirmed on disk, a term it may claim without
	// a write; handed is the one the last Ready's State carried, offered
	// whether that Ready carried State and Advance has not come.
	floor, reserved, handed uint64
	offered                 bool
	// claimWaits: this candidate won (or, leading, must move to a newer
	// term) but the reservation on disk does not cover its claim: the
	// write that does failed or has not been confirmed. It claims at the
	// Tick after Advance confirms one (claimDue); leading a term no write
	// covers would let a restart claim that term again.
	claimWaits bool
	// claimWriteFailed: a write while the claim waited failed (the
	// disk, not a loop turn): the member answers no ELECTION, so that
	// the members below it elect among themselves rather than wait, for
	// as long as its disk fails, for a COORDINATOR it cannot send (a
	// review: no leader at all while the top member's disk was full).
	// It takes over above their term once a write covers its claim.
	claimWriteFailed    bool
	electionsUnanswered uint64 // ELECTIONs not answered for it (Detail)
	claimsReserved      uint64 // claims the reservation covered (Detail)
}

var (
	_ elect.Elector  = (*Core)(nil)
	_ core.Scheduler = (*Core)(nil)
)

// Algorithm is bully's entry in an election factory table.
var Algorithm = elect.Algorithm{
	Name:    "bully",
	Summary: "the highest-ranked live member leads (Garcia-Molina); owned terms, no quorum",
	// The notes: O(N) at best (the next-highest member notices and sends
	// N-2 COORDINATORs), O(N^2) at worst (the lowest notices: every member
	// above it holds an election).
	Cost: core.Cost{Text: "O(N) best, O(N^2) worst",
		Messages: func(n int) (float64, float64) { return float64(n - 2), float64(n * n) }},
	Kinds:      electionKinds,
	Guarantees: elect.WithoutQuorum,
	New: func(env core.Env, o elect.Options) (elect.Elector, error) {
		cfg := FromOptions(env.Members, o)
		cfg.Reserve = true
		return New(env, cfg)
	},
}

// FastFailover are the settings of fast failover (docs/electd.md):
// probes let the timeout sit a fraction of a heartbeat above it
// (Config.Probe), for failover within 250 ms at 5 heartbeats a second.
// They are electd's opt-in (electd run --leader-timeout 240ms, beside
// its defaults, Probed): a live leader is given 40 ms of silence, which
// a shared host's stalls exceed.
var FastFailover = elect.Options{Heartbeat: 200 * time.Millisecond, LeaderTimeout: 240 * time.Millisecond, Probe: 4 * time.Millisecond}

// Probed are electd's defaults for bully (orderd's sequencer election
// runs the same): heartbeats every 200 ms, a 400 ms leader timeout and 4
// ms probes. The probes let the heartbeats be four times sparser than
// DefaultLANConfig's 50 ms at the same timeout: a live leader may be
// silent 200 ms (the timeout less the heartbeat) where fast failover
// allows 40, and a lost heartbeat costs a probe's round trip, not a
// timeout. Failover is the timeout plus a hop, as at 50 ms / 400 ms
// (docs/benchmarks/2026-12-06-elect-switch.md). DefaultLANConfig, which
// the daemons that embed bully without probes use, is unchanged.
var Probed = elect.Options{Heartbeat: 200 * time.Millisecond, LeaderTimeout: 400 * time.Millisecond, Probe: 4 * time.Millisecond}

// New returns the bully core of member env.ID. Its term is restored from
// env.State (the last Ready.State a driver saved; nil at the first start),
// refused with a *StateError if it is corrupt or one no member could have
// reached. env.Rand draws the retry jitter (nil: a generator seeded from
// the ID); env.Now is the local clock at start. The core starts (or, after
// a crash, recovers) by starting an election, as the algorithm requires: the
// ELECTION messages are in the first Ready.
func New(env core.Env, cfg Config) (*Core, error) {
	if err := cfg.validate(env.ID, env.Members); err != nil {
		return nil, err
	}
	term, floor, err := RestoreReserved(env.State)
	if err != nil {
		return nil, err
	}
	if err := CheckTerm(term); err != nil {
		return nil, &StateError{Reason: fmt.Sprintf("persisted term: %v", err)}
	}
	if err := CheckTerm(floor); err != nil {
		return nil, &StateError{Reason: fmt.Sprintf("persisted reservation: %v", err)}
	}
	rnd := env.Rand
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(uint64(env.ID), 0x62756c6c79)) // "bully"
	}
	b := &Core{
		cfg:      cfg,
		id:       env.ID,
		rand:     rnd,
		ranked:   slices.Clone(cfg.Members),
		pos:      make(map[uint32]int, len(cfg.Members)),
		term:     term,
		floor:    floor,
		reserved: floor,
		heard:    make([]time.Time, len(cfg.Members)),
		answered: make([]time.Time, len(cfg.Members)),
		limit:    termLimit(cfg),
		now:      env.Now,
		start:    env.Now,
	}
	slices.SortFunc(b.ranked, func(x, y Member) int {
		switch {
		case x.outranks(y):
			return 1
		case y.outranks(x):
			return -1
		}
		return 0
	})
	ids := make([]uint32, len(b.ranked))
	for i, m := range b.ranked {
		b.pos[m.ID] = i
		ids[i] = m.ID
		if m.ID == env.ID {
			b.self = m
		}
	}
	b.det = liveness.NewDetector(env.ID, ids, cfg.LeaderTimeout, env.Now)
	for _, m := range b.ranked {
		b.det.SetTimeout(m.ID, b.leaderTimeout(m.ID))
	}
	if cfg.Reserve && b.reservation() != floor {
		// Reserve the next claim now (above the restored reservation, or
		// first after an older build's state): the startup ELECTIONs
		// leave first, the write follows, and this member's first claim
		// needs none.
		b.durable.Change(false)
	}
	b.campaign(wire.ReasonStartup, 0)
	return b, nil
}

// ---- role changes ----------------------------------------------------------

// becomeFollower follows lead in term (lead 0: wait for a COORDINATOR).
func (b *Core) becomeFollower(term uint64, lead uint32, reason string) {
	if lead == b.id {
		panic("bully: becomeFollower of self")
	}
	b.setTerm(term)
	if b.role == RoleLeader {
		b.events = append(b.events, b.announced.Demoted(b.id, b.term, reason, b.now))
	}
	b.role = RoleFollower
	b.step = stepFollower
	b.tick = tickFollower
	b.claimWaits, b.claimWriteFailed = false, false
	if b.lead != lead {
		if b.lead != 0 && b.lead != b.id {
			b.det.SetTimeout(b.lead, b.leaderTimeout(b.lead))
		}
		b.leadHeard, b.standIn, b.leadArrived = time.Time{}, false, time.Time{}
		b.gap = gapStats{}
		b.recheckAt = time.Time{}
		if lead != 0 {
			b.det.SetTimeout(lead, b.leaderTimeout(lead)+b.extra)
		}
	}
	if b.lead != lead {
		b.endHint()
	}
	b.lead = lead
	b.suspect = 0
	b.deadline = time.Time{}
	if lead == 0 {
		jitter := time.Duration(b.rand.Int64N(int64(b.cfg.AnswerTimeout) + 1))
		b.arm(b.cfg.CoordinatorTimeout + jitter)
	}
	// Following lead: the detector times it (Step heard the claim).
	b.announce(reason)
}

// becomeCandidate starts an election in the current term. The term moves
// only when somebody claims one: an election that finds a live leader of
// the current term ends without disturbing anybody's term.
func (b *Core) becomeCandidate(reason wire.ElectionReason) {
	if b.role == RoleLeader {
		panic("bully: invalid transition leader -> candidate")
	}
	b.endHint()
	b.role = RoleCandidate
	b.step = stepCandidate
	b.tick = tickCandidate
	b.lead = 0
	b.suspect = 0
	b.yielding = false
	b.claimWaits, b.claimWriteFailed = false, false
	wait := b.cfg.AnswerTimeout
	if reason == wire.ReasonStartup {
		// A starting node listens a little longer than a round trip: long
		// enough to hear a sitting leader's heartbeat, so that it learns the
		// current term before it claims one.
		wait += b.cfg.Heartbeat
	}
	b.arm(wait)
	b.startup = reason == wire.ReasonStartup
	if b.startup && !b.running {
		b.deadline = b.now // a Tick at once: the wait starts with it (run)
	}
	b.counts.ElectionStarted(b.term, b.now, true)
	b.announce(reason.String())
	b.events = append(b.events, b.announced.ElectionStarted(b.term, reason.String(), b.now))
}

// becomeLeader claims the next term this node owns and announces it. If
// the term space is exhausted it cannot: see exhaust.
func (b *Core) becomeLeader(reassert bool) {
	if b.role != RoleLeader && b.role != RoleCandidate {
		panic("bully: invalid transition " + b.role.String() + " -> leader")
	}
	if reassert != (b.role == RoleLeader) {
		panic("bully: reassert mismatch")
	}
	// The one place a term is created. The next term is owned by this node
	// and above every term it has seen, claims included (the persisted term
	// is at least the last claim): no other node can claim it, and this
	// node cannot claim it twice.
	next, err := b.nextClaim()
	if err != nil {
		b.exhaust(err)
		return
	}
	if b.cfg.Reserve && next > b.reserved {
		b.awaitReservation()
		return
	}
	if next <= b.reserved && !b.durable.PromisePending() {
		// Reserved on disk with the term this member follows (or
		// followed): the COORDINATOR may leave before the write that
		// brings the state up to the claim, which follows it.
		b.term = next
		b.durable.Change(false)
		b.claimsReserved++
	} else {
		b.setTerm(next)
	}
	wasLeader := b.role == RoleLeader
	b.endHint()
	b.role = RoleLeader
	b.step = stepLeader
	b.tick = tickLeader
	b.lead = b.id
	b.claimWaits, b.claimWriteFailed = false, false
	b.suspect = 0
	b.yielding = false
	b.deadline = b.now.Add(b.cfg.Heartbeat)
	b.counts.claims++
	var flags uint8
	if reassert {
		flags = wire.CoordinatorReassert
	}
	b.broadcast(wire.KindCoordinator, wire.Coordinator{Priority: b.self.Priority, Flags: flags})
	if !wasLeader {
		b.events = append(b.events, b.announced.Elected(b.id, b.term, b.now))
	}
	b.announce("claimed")
}

// awaitReservation holds a claim (Config.Reserve) that the reservation on
// disk does not cover: with a healthy disk the reservation was written
// ahead and the claim leaves at once, so this is a claim right after the
// term moved (a takeover above a newer term: the reservation above it is
// in the Ready being written) or after a failed write. The member stays
// (or, leading an older term, becomes) a candidate that announces
// nothing, asks for the reservation above its term to be written, and
// claims at the Tick after Advance confirms it: with a healthy disk the
// same write the claim's COORDINATOR waited for before, so it leaves no
// later. A write that keeps failing keeps it from leading: once a write
// for the held claim has failed it answers no ELECTION, of its term or an
// older one (elections_unanswered: the members below elect among
// themselves), follows a higher-ranked claim meanwhile, and electd's
// status says persist.failing.
func (b *Core) awaitReservation() {
	if b.role == RoleLeader {
		// Its term is over (a newer one was seen); its claim above it
		// waits like any other.
		b.role = RoleCandidate
		b.step = stepCandidate
		b.tick = tickCandidate
		b.lead = 0
		ev := b.announced.Demoted(b.id, b.term, "claim_unsaved", b.now)
		// At WARN in every daemon's log (electd's, and those that embed
		// bully): a leadership lost to its own disk, not to the algorithm.
		ev.Warn = true
		b.events = append(b.events, ev)
		b.announce("claim_unsaved")
	}
	b.yielding = false
	b.claimWaits = true
	b.deadline = time.Time{} // claimDue is its timer
	b.durable.Change(false)  // the Ready carries the reservation above the term
}

// claimDue reports whether a held claim is covered on disk now.
func (b *Core) claimDue() bool {
	if !b.claimWaits {
		return false
	}
	next, err := b.nextClaim()
	return err != nil || next <= b.reserved
}

// exhaust handles a claim that no term is left for. Terms are refused far
// before the end of the space (pkg/epoch), so only a cluster that really
// ran 2^32 rounds, or state from a build without that check, gets here.
// The node says so once, and from then on follows whoever claims but never
// leads: a leader steps down; a candidate waits for a COORDINATOR.
func (b *Core) exhaust(err error) {
	b.counts.reject(err) // counted as "term_exhausted"
	if b.exhausted == nil {
		b.exhausted = err
		b.emit(EventTermsExhausted, "cannot claim a term: the term space is exhausted; stop every member and remove its state file to reset the cluster's terms",
			"term", b.term, "err", err.Error())
	}
	b.becomeFollower(b.term, 0, "terms_exhausted")
}

// campaign starts an election: ELECTION to every higher-ranked member but
// suspect (the leader this node just gave up on). With nobody to ask, the
// node is the highest live member it knows of and claims at once, except at
// startup, when it first listens for a sitting leader.
func (b *Core) campaign(reason wire.ElectionReason, suspect uint32) {
	b.becomeCandidate(reason)
	asked := 0
	for _, m := range b.ranked[b.pos[b.id]+1:] {
		if m.ID == suspect {
			continue
		}
		b.send(m.ID, wire.KindElection, wire.Election{Priority: b.self.Priority, Reason: reason})
		asked++
	}
	if asked == 0 && reason != wire.ReasonStartup {
		b.becomeLeader(false)
	}
}

// leaderLost is a follower giving up on its leader; gap members ranked
// between them get the stagger (see Config.Stagger).
func (b *Core) leaderLost(reason wire.ElectionReason) {
	lost := b.lead
	if lost == 0 {
		lost = b.suspect
	}
	b.campaign(reason, lost)
}

// leaderTimeout is the follower's patience with lead.
func (b *Core) leaderTimeout(lead uint32) time.Duration {
	return b.cfg.LeaderTimeout + b.stagger(lead)
}

// stagger is Stagger times the number of members ranked strictly between
// this node and lead.
func (b *Core) stagger(lead uint32) time.Duration {
	gap := b.pos[lead] - b.pos[b.id] - 1
	if gap < 0 {
		gap = 0
	}
	return time.Duration(gap) * b.cfg.Stagger
}

// nextClaim is the term this member claims next: the first it owns above
// every term it has seen and every term it may have claimed in an earlier
// life (floor: a reservation it may have sent before a crash).
func (b *Core) nextClaim() (uint64, error) {
	return b.limit.Next(max(b.term, b.floor), b.id)
}

// reservation is the term the state written now reserves: the next claim
// with Config.Reserve, else the floor while it is above the term (a
// member that stopped reserving keeps its earlier life's reservation),
// else 0: none (the first format).
func (b *Core) reservation() uint64 {
	if b.cfg.Reserve {
		if next, err := b.nextClaim(); err == nil {
			return next
		}
	}
	if b.floor > b.term {
		return b.floor
	}
	return 0
}

// setTerm raises the term. Terms never go down. A term at or below the
// reservation on disk is covered already (the larger of the two bounds
// every term this node may have sent, and a restart claims above the
// reservation): what carries it may leave before its write. A successor
// that reads a lower member's claim (it stood while the successor's loop
// stalled) and bullies it thus still claims without waiting for a write.
func (b *Core) setTerm(t uint64) {
	if t < b.term {
		panic(fmt.Sprintf("bully: term going backwards %d -> %d", b.term, t))
	}
	if t > b.term {
		b.term = t
		b.durable.Change(t > b.reserved)
	}
}

// ---- ticks -----------------------------------------------------------------

// Tick runs the timers that are due at now. It may come at any time:
// early it does nothing; late, each due timer acts once (a leader sends one
// heartbeat, not the missed ones); after a stall of this process the
// detector gives the leader time to be heard before it is suspected (see
// liveness.Detector). A timeout acts through the same transitions a message
// does (campaign, becomeLeader), called directly rather than as a local
// message kind: no wire kind can trigger them, so nothing from the network
// can fake a timeout.
func (b *Core) Tick(now time.Time) {
	b.run(now)
	b.tickLate = 0
	if !b.tickDue.IsZero() && now.After(b.tickDue) {
		b.tickLate = now.Sub(b.tickDue)
		b.gap.tickLate = max(b.gap.tickLate, b.tickLate)
	}
	if now.After(b.now) {
		b.now = now
	}
	b.det.Check(now)
	for _, tr := range b.det.Transitions() { // bully acts on its leader's state only, below
		if tr.ID == b.lead && !tr.Up() && b.role == RoleFollower {
			b.suspected = tr
		}
	}
	if b.role != RoleLeader && !b.deadline.IsZero() && now.Sub(b.deadline) > b.armed {
		// Overslept by more than the whole wait: this process did not run
		// (a stall, or a start slower than the core's construction), and
		// what it waits for, an ANSWER or a COORDINATOR, may be unread in
		// its socket. It waits once more from now, as a tick count would
		// have, rather than act on a silence it did not listen to.
		b.deadline = now.Add(b.armed)
		b.counts.overslept++
	}
	b.tick(b)
	b.watch()
	b.Deadline() // for a driver that ticks without asking
}

// run marks the first Tick. The startup election's ELECTIONs leave with
// the first Ready, which a daemon drains when its loop starts, some time
// after it built the core (opening sockets, reading keys, a busy host: a
// quarter of a second is seen); its first Tick comes with the loop too
// (not its first Step: frames queued in the socket meanwhile carry their
// arrival stamps, from before the loop ran). So New asks for a Tick at once
// (its Deadline is the start), and the startup wait counts from that first
// Tick, as a tick count started with the first tick.
func (b *Core) run(at time.Time) {
	if b.running {
		return
	}
	b.running = true
	if b.role == RoleCandidate && b.startup {
		b.deadline = at.Add(b.armed)
	}
}

// arm sets the role's timer to d from now.
func (b *Core) arm(d time.Duration) { b.deadline, b.armed = b.now.Add(d), d }

// Deadline is when Tick next has something to do (core.Scheduler): the
// role's timer or the detector's next expiry.
// The driver ticks at it: Tick measures its own lateness against the
// last one asked for (TimeoutCause.TickLate).
func (b *Core) Deadline() time.Time {
	b.tickDue = core.Earliest(b.deadline, b.det.Deadline(), b.probeAt(), b.recheckDue(), b.hintAt(), b.claimAt())
	return b.tickDue
}

// claimAt is now while a held claim is covered on disk (Advance confirmed
// its reservation): the Tick that takes it.
func (b *Core) claimAt() time.Time {
	if b.claimDue() {
		// After this instant: a deadline at the last Tick's is taken
		// for a core's bug (a stale deadline, ticked 10 ms later).
		return b.now.Add(time.Nanosecond)
	}
	return time.Time{}
}

// recheck decides whether a follower whose leader timed out listens a
// little longer first (with probes only). A Tick that ran more than Probe
// past its deadline says this process was not running: the leader's
// heartbeat or a probe's answer may be waiting in the socket, for the
// reader, which was no more running than the loop was (the loop's timer
// and the reader's socket wake together, in either order), and the
// probes due meanwhile did not go. So the follower probes once more and
// gives up only at a Tick as long after as it was late (time it did not
// run is not time it listened; at least 2 x Probe, at most half the
// leader timeout, as the detector's rule for stalls), if it has heard
// nothing meanwhile: the reader has run by then, and a live leader has
// answered. Once per timeout. The detector's own rule for stalls (half
// the timeout more after a Check a quarter of the timeout late) covers
// only a Check late past the leader's expiry, not one late past a probe's
// deadline: in the lab at load 13 followers whose loop ran 64-137 ms late
// sent none of the 12-33 probes due and elected at the first Tick.
func (b *Core) recheck() bool {
	if b.cfg.Probe == 0 {
		return false
	}
	if b.recheckAt.IsZero() {
		if b.tickLate <= b.cfg.Probe {
			return false
		}
		b.recheckAt = b.now.Add(max(2*b.cfg.Probe, min(b.tickLate, b.cfg.LeaderTimeout/2)))
		b.gap.rechecked = true
		b.probe()
		return true
	}
	if b.now.Before(b.recheckAt) {
		return true
	}
	b.recheckAt = time.Time{}
	return false
}

// recheckDue is when a rechecking follower decides (zero: not rechecking).
func (b *Core) recheckDue() time.Time {
	if b.role != RoleFollower || b.lead == 0 {
		return time.Time{}
	}
	return b.recheckAt
}

// probeAt is when this follower next probes its leader (Config.Probe):
// Probe after the heartbeat it expected (firstProbe), then every Probe, as
// long as that is before the leader timeout; zero when it has nothing to
// probe.
func (b *Core) probeAt() time.Time {
	if b.cfg.Probe == 0 || b.role != RoleFollower || b.lead == 0 {
		return time.Time{}
	}
	quiet := b.det.QuietSince(b.lead)
	at := b.probeStart(quiet)
	if b.probed.After(quiet) {
		at = later(at, b.probed.Add(b.cfg.Probe))
	}
	if !at.Before(b.det.Expires(b.lead)) {
		return time.Time{} // suspected already, or the timeout decides first
	}
	return at
}

// probeStart is when a follower whose leader is silent since quiet first
// probes it: Probe after the heartbeat it expects, which is Heartbeat
// after quiet plus the latest lateness of the leader's last lateWindow
// arrivals (half of extra, see observe). A leader whose heartbeats run 30
// ms late is not asked for each of them 4 ms after it was due: its answers
// would cost it as much as its heartbeats, on the host least able to
// afford them. The leader timeout grows by twice that lateness, so the
// probes keep the window they had (LeaderTimeout - Heartbeat - Probe) and
// more.
func (b *Core) probeStart(quiet time.Time) time.Time {
	return quiet.Add(b.cfg.Heartbeat + b.extra/2 + b.cfg.Probe)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// due reports whether the role's timer has expired.
func (b *Core) due() bool { return !b.deadline.IsZero() && !b.now.Before(b.deadline) }

func tickFollower(b *Core) {
	switch {
	case b.lead != 0:
		if !b.det.Alive(b.lead) {
			if b.recheck() {
				return
			}
			b.counts.LeaderTimeouts++
			b.timedOut()
			b.leaderLost(wire.ReasonLeaderLost)
			return
		}
		b.recheckAt = time.Time{} // heard again while rechecking
		if b.tickHint() {
			return
		}
		if at := b.probeAt(); !at.IsZero() && !b.now.Before(at) {
			b.probe()
		}
	case !b.due():
	case b.suspect != 0:
		b.leaderLost(wire.ReasonLeaderResigned)
	default:
		// An ANSWER that was never followed by a COORDINATOR, or a
		// resignation after which nobody took over: start over.
		b.campaign(wire.ReasonNoCoordinator, 0)
	}
}

// probe asks the leader for a heartbeat now.
func (b *Core) probe() {
	b.probed = b.now
	b.counts.probes++
	b.gap.probes++
	b.send(b.lead, wire.KindLeaderProbe, wire.LeaderProbe{Priority: b.self.Priority})
}

func tickCandidate(b *Core) {
	if b.due() || b.claimDue() {
		// No higher-ranked member answered in time: none is alive (or none
		// could be reached; see the package doc on partitions).
		b.becomeLeader(false)
	}
}

func tickLeader(b *Core) {
	if !b.due() {
		return
	}
	b.deadline = b.deadline.Add(b.cfg.Heartbeat)
	if !b.deadline.After(b.now) {
		b.deadline = b.now.Add(b.cfg.Heartbeat) // missed heartbeats are not sent in a burst
	}
	b.broadcast(wire.KindLeaderHeartbeat, wire.LeaderHeartbeat{Priority: b.self.Priority})
}

// ---- messages ----------------------------------------------------------------

// Step feeds one received frame. Election kinds only; anything else is
// rejected with core.ErrUnexpectedKind.
func (b *Core) Step(m core.Message) error {
	in, err := b.accept(m)
	if err != nil {
		b.counts.reject(err)
		return err
	}
	b.counts.Received(m.Kind)
	if m.Time.After(b.now) {
		b.now = m.Time // the freshest local reading
	}
	b.heard[b.pos[m.From]] = b.now

	// A newer term moves this node's for good (and is persisted): it must
	// be one the cluster could have reached by now (see termLimit).
	if err := b.guard.Admit(b.limit, b.sinceStart(), b.term, m.Term); err != nil {
		err = fmt.Errorf("bully: %v from %d: %w", m.Kind, m.From, err)
		b.counts.reject(err)
		return err
	}
	if m.Term < b.term {
		b.counts.Stale++
		return b.stepStale(in)
	}
	// A frame of the current or a newer term is a sign of life (a stale
	// one is not: it may be a forged claim in the leader's name).
	b.det.Heard(m.From, b.now)
	if m.From == b.lead {
		b.gap = gapStats{}
		if b.role == RoleFollower {
			at := m.Time
			if at.IsZero() {
				at = b.now
			}
			b.leadArrived = later(b.leadArrived, at)
			b.heardLeader()
		}
	}
	if err := b.step(b, in); err != nil {
		return err
	}
	if b.role == RoleFollower && in.From == b.lead && in.Term == b.term && isClaim(in.Kind) {
		at := m.Time
		if at.IsZero() {
			at = b.now
		}
		b.observe(at, in.Kind == wire.KindLeaderHeartbeat && in.flags&wire.HeartbeatAnswer != 0)
	}
	b.watch()
	return nil
}

// lateWindow is how many of the leader's last arrivals the follower's
// timeout adapts to (Config.Probe): 16 heartbeats, about 3 s at 200 ms
// heartbeats.
const lateWindow = 16

// observe records the arrival at `at` of a claim of the leader this node
// follows: how late it came after the heartbeat it expected (the last
// arrival plus Heartbeat; a claim right after another says nothing of the
// schedule and is skipped, and an answer to a probe stands for the
// heartbeat it replaces, on time), and moves the leader
// timeout to LeaderTimeout plus twice the latest of the last lateWindow,
// at most two heartbeats more. On a quiet LAN nothing comes late and the
// timeout stays LeaderTimeout; on a loaded host, whose leader's heartbeats
// and answers run tens of milliseconds late, it grows with them, so that
// the short timeout does not take a busy leader for a dead one. Only with
// probes: without them LeaderTimeout already spans several heartbeats.
func (b *Core) observe(at time.Time, answer bool) {
	if b.cfg.Probe == 0 {
		return
	}
	prev := b.leadHeard
	if answer {
		// The answer to a probe (wire.HeartbeatAnswer), after a
		// heartbeat lost or late: it says the leader is alive, nothing
		// of its schedule. It stands for the heartbeat it replaces, on
		// time. Counted as late, each loss would teach the margin
		// probing waits (probeStart) and the probes' round trips, and
		// under steady loss the timeout would climb to its cap. A
		// leader really late is late with its heartbeats too, and the
		// next one says by how much.
		if !prev.IsZero() && !at.Before(prev.Add(b.cfg.Heartbeat)) {
			b.leadHeard, b.standIn = prev.Add(b.cfg.Heartbeat), true
		}
		return
	}
	standIn := b.standIn
	b.standIn = false
	if at.After(prev) {
		b.leadHeard = at
	}
	if prev.IsZero() {
		return
	}
	late := at.Sub(prev) - b.cfg.Heartbeat
	switch {
	case standIn && at.Sub(prev) < b.cfg.Heartbeat/2:
		// The heartbeat the answer stood for, this late (else an answer
		// that always came first would hide a leader's lateness for good,
		// and the follower would probe at every heartbeat).
		late = at.Sub(prev)
	case at.Sub(prev) < b.cfg.Heartbeat/2:
		return
	}
	b.late[b.lateNext] = max(late, 0)
	b.lateNext = (b.lateNext + 1) % lateWindow
	b.adapt()
}

// adapt sets the leader's timeout in the detector from the lateness seen.
func (b *Core) adapt() {
	worst := slices.Max(b.late[:])
	b.extra = min(2*worst, 2*b.cfg.Heartbeat)
	if b.lead != 0 && b.lead != b.id {
		b.det.SetTimeout(b.lead, b.leaderTimeout(b.lead)+b.extra)
	}
}

// accept checks who sent m and decodes its payload: structure and the
// member list, no protocol state.
func (b *Core) accept(m core.Message) (*inbound, error) {
	if m.From == b.id {
		return nil, ErrFromSelf
	}
	i, ok := b.pos[m.From]
	if !ok {
		return nil, fmt.Errorf("%w: %d", core.ErrUnknownMember, m.From)
	}
	in := &inbound{Message: m, higher: i > b.pos[b.id]}
	var prio uint32
	switch m.Kind {
	case wire.KindElection:
		var p wire.Election
		if err := p.UnmarshalBinary(m.Payload); err != nil {
			return nil, fmt.Errorf("bully: election from %d: %w", m.From, err)
		}
		prio = p.Priority // the reason is for traces; it changes nothing
		if in.higher {
			return nil, fmt.Errorf("%w: ELECTION from higher-ranked %d", ErrWrongDirection, m.From)
		}
	case wire.KindAnswer:
		var p wire.Answer
		if err := p.UnmarshalBinary(m.Payload); err != nil {
			return nil, fmt.Errorf("bully: answer from %d: %w", m.From, err)
		}
		prio = p.Priority
		if !in.higher {
			return nil, fmt.Errorf("%w: ANSWER from lower-ranked %d", ErrWrongDirection, m.From)
		}
	case wire.KindCoordinator:
		var p wire.Coordinator
		if err := p.UnmarshalBinary(m.Payload); err != nil {
			return nil, fmt.Errorf("bully: coordinator from %d: %w", m.From, err)
		}
		prio, in.flags = p.Priority, p.Flags
	case wire.KindLeaderHeartbeat:
		var p wire.LeaderHeartbeat
		if err := p.UnmarshalBinary(m.Payload); err != nil {
			return nil, fmt.Errorf("bully: leader heartbeat from %d: %w", m.From, err)
		}
		prio, in.flags = p.Priority, p.Flags
	case wire.KindLeaderProbe:
		var p wire.LeaderProbe
		if err := p.UnmarshalBinary(m.Payload); err != nil {
			return nil, fmt.Errorf("bully: leader probe from %d: %w", m.From, err)
		}
		prio = p.Priority
	case wire.KindLeaderWatch:
		var p wire.LeaderWatch
		if err := p.UnmarshalBinary(m.Payload); err != nil {
			return nil, fmt.Errorf("bully: leader watch from %d: %w", m.From, err)
		}
		prio = p.Priority
	default:
		return nil, fmt.Errorf("%w: %v", core.ErrUnexpectedKind, m.Kind)
	}
	if want := b.ranked[i].Priority; prio != want {
		return nil, fmt.Errorf("%w: %d says %d, member list says %d", ErrRankMismatch, m.From, prio, want)
	}
	if isClaim(m.Kind) && TermOwner(m.Term) != m.From {
		return nil, fmt.Errorf("%w: %d claims term %d of %d", ErrForgedClaim, m.From, m.Term, TermOwner(m.Term))
	}
	return in, nil
}

func isClaim(k wire.Kind) bool {
	return k == wire.KindCoordinator || k == wire.KindLeaderHeartbeat
}

// stepStale handles a message of an older term. Its content is ignored, but
// the sender is behind and is told the current term where that helps it:
//   - a lower-ranked candidate gets an ANSWER (so it does not crown itself
//     in a term everybody else has left);
//   - the leader tells any stale sender who leads now with a COORDINATOR of
//     the current term. A deposed leader that comes back learns the term
//     this way, and then steps down, or, if it outranks the current leader,
//     takes over in a term above it: never a second leader in one term.
func (b *Core) stepStale(in *inbound) error {
	if isClaim(in.Kind) && in.From == b.lead && b.role == RoleFollower && in.higher && in.flags&wire.HeartbeatResign == 0 {
		// Our leader claims an older term than the one we follow it in.
		// An honest leader never goes back: a late frame aside, the newer
		// claim was not its own (a forged frame) and it does not know the
		// term we are in. Tell it as bully does, with an ELECTION in our
		// term: it takes the cluster back above that term, and the forged
		// claim is stale everywhere.
		if b.contested.IsZero() || b.now.Sub(b.contested) >= b.cfg.Heartbeat {
			b.contested = b.now
			b.counts.contested++
			b.send(in.From, wire.KindElection, wire.Election{Priority: b.self.Priority, Reason: wire.ReasonPreempt})
		}
		return nil
	}
	if in.Kind == wire.KindElection && b.answers(in) {
		if b.claimWaits && b.claimWriteFailed {
			// Its claim cannot be written: an ANSWER would keep the
			// sender waiting for a COORDINATOR that cannot come, in an
			// older term as in ours (stepCandidate).
			b.electionsUnanswered++
		} else {
			b.send(in.From, wire.KindAnswer, wire.Answer{Priority: b.self.Priority})
		}
	}
	if b.role == RoleLeader && in.Kind != wire.KindAnswer {
		b.send(in.From, wire.KindCoordinator, wire.Coordinator{Priority: b.self.Priority})
	}
	return nil
}

// From here on m.Term >= b.term.

func stepFollower(b *Core, in *inbound) error {
	switch in.Kind {
	case wire.KindElection:
		b.adopt(in.Term)
		if b.answers(in) {
			b.send(in.From, wire.KindAnswer, wire.Answer{Priority: b.self.Priority})
		}
		if in.From == b.lead {
			// The leader this node follows runs an election: it no
			// longer leads (it restarted before this node's leader
			// timeout, or lost its term). Only with Sticky can a leader
			// be below its followers; the members above it then answer
			// it and would wait for its COORDINATOR while it waits for
			// theirs. This node answered it, so it runs for leader
			// itself, as a node whose leader was lost does.
			b.suspect = in.From
			b.leaderLost(wire.ReasonLeaderLost)
			return nil
		}
		// In the notes a node that answers runs an election of its own. A
		// follower does not need to: either it has a leader it heard within
		// the leader timeout (ranked above it, and asked by the candidate
		// too: it answers and tells the candidate who leads), or it is
		// already waiting for the COORDINATOR of an election run above it
		// (an ELECTION of a newer term ended its leader's: adopt set the
		// wait). Its own timers start an election if that leader or that
		// election fails. This keeps a restarting low-ranked member, or
		// one that lost a few heartbeats, from dragging every member above
		// it into an election and the leader into a new term.
	case wire.KindAnswer:
		// A late answer to an election this node gave up; only its term
		// matters.
		if in.Term > b.term {
			b.becomeFollower(in.Term, 0, "answer")
		}
	case wire.KindCoordinator, wire.KindLeaderHeartbeat:
		b.stepClaim(in)
	}
	return nil
}

func stepCandidate(b *Core, in *inbound) error {
	switch in.Kind {
	case wire.KindElection:
		b.adopt(in.Term)
		if b.claimWaits && b.claimWriteFailed {
			b.electionsUnanswered++
			return nil
		}
		// Already running: answer, keep the timer.
		b.send(in.From, wire.KindAnswer, wire.Answer{Priority: b.self.Priority})
	case wire.KindAnswer:
		// A higher-ranked member is alive and takes over: wait for its
		// COORDINATOR.
		b.becomeFollower(in.Term, 0, "answered")
	case wire.KindCoordinator, wire.KindLeaderHeartbeat:
		b.stepClaim(in)
	}
	return nil
}

func stepLeader(b *Core, in *inbound) error {
	switch in.Kind {
	case wire.KindElection:
		if in.Term > b.term {
			// The candidate has seen a newer term than this leader's:
			// somebody claimed one while this node was cut off. Being
			// higher-ranked, this leader takes the cluster back in a term
			// above it.
			b.setTerm(in.Term)
			b.becomeLeader(true)
			b.send(in.From, wire.KindAnswer, wire.Answer{Priority: b.self.Priority})
			return nil
		}
		// A false suspicion (lost heartbeats): answer and remind the
		// candidate who leads. No term changes.
		b.send(in.From, wire.KindAnswer, wire.Answer{Priority: b.self.Priority})
		b.send(in.From, wire.KindCoordinator, wire.Coordinator{Priority: b.self.Priority})
	case wire.KindLeaderProbe:
		// A follower missed a heartbeat of this term: one to it alone now,
		// at most one a millisecond to each member (a probe of a newer
		// term is nobody's: this node owns its term).
		i := b.pos[in.From]
		if in.Term == b.term && (b.answered[i].IsZero() || b.now.Sub(b.answered[i]) >= liveness.MinTimeout) {
			b.answered[i] = b.now
			b.counts.probesAnswered++
			b.send(in.From, wire.KindLeaderHeartbeat, wire.LeaderHeartbeat{Priority: b.self.Priority, Flags: wire.HeartbeatAnswer})
		}
	case wire.KindLeaderWatch:
		// A follower keeps its link to this leader open (Config.Watch):
		// counted with the frames by kind, nothing to do.
	case wire.KindAnswer:
		// A higher-ranked member is alive and running an election it will
		// win.
		b.becomeFollower(in.Term, 0, "higher_ranked_alive")
	case wire.KindCoordinator, wire.KindLeaderHeartbeat:
		// in.Term > b.term: the claim check makes equal terms impossible
		// (this node owns its term).
		resigning := in.Kind == wire.KindLeaderHeartbeat && in.flags&wire.HeartbeatResign != 0
		if in.higher && !resigning {
			b.becomeFollower(in.Term, in.From, "higher_ranked_leader")
			return nil
		}
		// A lower-ranked leader of a newer term (it won while this node was
		// cut off), or one resigning it: take over above its term.
		b.setTerm(in.Term)
		b.becomeLeader(true)
	}
	return nil
}

// stepClaim handles a COORDINATOR or leader heartbeat of the current or a
// newer term on a follower or candidate.
func (b *Core) stepClaim(in *inbound) {
	if in.flags&wire.HeartbeatResign != 0 && in.Kind == wire.KindLeaderHeartbeat {
		b.stepResigned(in)
		return
	}
	if in.higher || b.yielding || b.cfg.Sticky {
		if in.From == b.lead && in.Term == b.term {
			return // the common case: a heartbeat (Step told the detector)
		}
		b.becomeFollower(in.Term, in.From, "coordinator")
		return
	}
	// A lower-ranked leader while this node is alive: bully it. The claim
	// will be above in.Term. (A leader this follower was about to give up
	// on a hint is not asked: hintGivenUp.)
	var lost uint32
	if b.role != RoleCandidate {
		lost = b.hintGivenUp()
	}
	b.adopt(in.Term)
	if b.role != RoleCandidate {
		b.campaign(wire.ReasonPreempt, lost)
	}
}

// stepResigned: the leader of in.Term steps down. The member ranked next
// below it runs at once; the others wait their stagger, by which time its
// COORDINATOR is normally there.
func (b *Core) stepResigned(in *inbound) {
	if b.role == RoleCandidate {
		b.adopt(in.Term)
		return
	}
	if in.Term == b.term && b.lead != 0 && b.lead != in.From {
		return // not our leader; ours is fine
	}
	b.becomeFollower(in.Term, 0, "leader_resigned")
	b.suspect = in.From
	wait := b.stagger(in.From)
	b.arm(wait)
	if wait == 0 {
		b.leaderLost(wire.ReasonLeaderResigned)
	}
}

// adopt moves a follower or candidate to a newer term whose leader it does
// not know (yet).
//
// A follower that had a leader no longer follows it (its term is over) and
// waits for the newer term's claim as after an ANSWER: the coordinator
// timer, then an election of its own if no claim came (tickFollower). With
// no timer it followed nobody and never stood: the top live member, told
// of a newer term by an ELECTION before its own timeout on a leader that
// had died (or back from a pause to one), answered every ELECTION from
// below, and the candidates waited for its COORDINATOR for ever
// (TestAdoptedTermStands; TestSimOracle seeds 1197, 4856 and 19207).
func (b *Core) adopt(t uint64) {
	if t <= b.term {
		return
	}
	if b.role == RoleLeader {
		panic("bully: leader adopting a term without a transition")
	}
	if b.lead != 0 {
		b.becomeFollower(t, 0, "newer_term") // ends the hint: about a leader no longer followed
		return
	}
	b.setTerm(t)
}

// StepDatagram rejects foreign-protocol traffic: bully speaks none.
func (b *Core) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }

// ---- operations --------------------------------------------------------------

// Resign makes the leader step down at local time now: it tells the
// followers at once (a heartbeat flagged "resign"), and they elect somebody
// else right away. This node does not take part in that election and
// follows its winner even if it outranks it; it competes again in later
// elections. If nobody takes over within the leader timeout (this node is
// alone), it starts an election of its own.
func (b *Core) Resign(now time.Time) error {
	if b.role != RoleLeader {
		return ErrNotLeader
	}
	if now.After(b.now) {
		b.now = now
	}
	b.broadcast(wire.KindLeaderHeartbeat, wire.LeaderHeartbeat{Priority: b.self.Priority, Flags: wire.HeartbeatResign})
	b.becomeFollower(b.term, 0, "resigned")
	b.yielding = true
	b.arm(b.cfg.LeaderTimeout)
	return nil
}

// answers reports whether this node answers the ELECTION in. A yielding node
// keeps quiet when nobody leads (the election is to replace it) or when the
// candidate outranks its leader (bully lets the candidate win); otherwise
// the candidate is told that a higher-ranked member is alive.
func (b *Core) answers(in *inbound) bool {
	if !b.yielding {
		return true
	}
	return b.lead != 0 && b.pos[b.lead] > b.pos[in.From]
}

// Leader returns the leader this node knows (0 and ok false if none) and
// the term.
func (b *Core) Leader() (id uint32, term uint64, ok bool) { return b.lead, b.term, b.lead != 0 }

// Changes drains the leadership changes since the last call (elect.Elector).
func (b *Core) Changes() []elect.Change { return b.announced.Changes() }

// Role returns this node's role.
func (b *Core) Role() Role { return b.role }

// Term returns the highest term this node has seen.
func (b *Core) Term() uint64 { return b.term }

// ---- output ------------------------------------------------------------------

// Ready drains what the core wants done since the last call. State is set
// while the term moved and is not yet confirmed on disk (Advance); the
// driver must persist it before sending the messages, which may carry it.
func (b *Core) Ready() core.Ready {
	rd := core.Ready{Messages: b.msgs, Events: b.events}
	b.durable.Ready(&rd, func() []byte {
		b.handed, b.offered = b.reservation(), true
		return appendReserved(nil, b.term, b.handed)
	})
	b.msgs, b.events = nil, nil
	return rd
}

// Advance is the driver's report on the last Ready (core.Advancer): until
// it confirms the term on disk, every Ready carries it again, and the
// driver sends nothing of a Ready whose term it could not write. A
// reservation is claimable once its write is confirmed.
func (b *Core) Advance(saved bool) {
	if b.offered && saved {
		b.reserved = max(b.reserved, b.handed)
	}
	b.offered = false
	if b.claimWaits {
		b.claimWriteFailed = !saved
	}
	b.durable.Advance(saved)
}

// sendStream queues one frame for the TCP link to member to.
func (b *Core) sendStream(to uint32, k wire.Kind, p encoding.BinaryAppender) {
	b.send(to, k, p)
	if n := len(b.msgs); n > 0 && b.msgs[n-1].Kind == k && b.msgs[n-1].To == to {
		b.msgs[n-1].Stream = true
	}
}

// send queues one frame; an encoding of our own fields that fails is a
// bug, counted and reported (core.Bugs), and the frame is not sent.
func (b *Core) send(to uint32, k wire.Kind, p encoding.BinaryAppender) {
	payload, ok := b.bugs.Encode(&b.events, k.String(), p, nil)
	if !ok {
		return
	}
	b.msgs = append(b.msgs, core.Message{To: to, Kind: k, Term: b.term, Payload: payload})
	n := 1
	if to == core.Broadcast {
		n = len(b.ranked) - 1
	}
	b.counts.Sent(k, n)
}

// sinceStart is the term guard's clock: nanoseconds of the local clock
// since New (a clock that goes back regains no credit, see epoch.Guard).
func (b *Core) sinceStart() int64 { return int64(b.now.Sub(b.start)) }

func (b *Core) broadcast(k wire.Kind, p encoding.BinaryAppender) {
	if len(b.ranked) > 1 {
		b.send(core.Broadcast, k, p)
	}
}

func (b *Core) emit(name, msg string, args ...any) {
	b.events = append(b.events, core.Event{Name: name, Msg: msg, Args: args})
}

// announce reports leader changes (elect.Announcer's rules) after every
// transition, and closes the election this node started once a leader is
// known.
func (b *Core) announce(reason string) {
	b.events = append(b.events, b.announced.Leader(b.lead, b.term, b.now, reason)...)
	if b.lead != 0 {
		b.counts.Decided(b.lead, b.now)
	}
}
