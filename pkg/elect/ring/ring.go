package ring

import (
	"encoding"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/delivery"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/wire"
)

// EventTermsExhausted is bully's: no term is left to announce ("term",
// "err"). The other events are pkg/elect's shared ones.
const EventTermsExhausted = bully.EventTermsExhausted

// Handles reports whether k is one of the kinds a ring core steps.
func Handles(k wire.Kind) bool {
	switch k {
	case wire.KindRingElection, wire.KindRingCoordinator, wire.KindRingAck, wire.KindRingHeartbeat:
		return true
	}
	return false
}

// Attempt limits: an election that times out starts again with the next
// attempt number, within its term. A frame may be at most AttemptBurst
// attempts ahead of this member's (a partition of AttemptBurst election
// timeouts without a leader anywhere, far more than one side ever runs),
// and attempts stop growing at MaxAttempt (a new attempt then reuses it).
const (
	AttemptBurst = 1 << 10
	MaxAttempt   = 1 << 30
)

// hop is an election or coordinator message on its way to one neighbour:
// what the outbox resends, and passes on to the next member when the
// neighbour does not acknowledge.
type hop struct {
	kind     wire.Kind
	dir      int // +1: to the successor (clockwise); -1: to the predecessor
	term     uint64
	election wire.RingElection
	coord    wire.RingCoordinator
	msg      core.Message // as sent to the current neighbour
	// skipped are the members this message was given up on: it never goes
	// back to one of them, so that it gets round (or back here) even when
	// older skips expire while it travels.
	skipped []uint32
}

func (h *hop) payload() encoding.BinaryAppender {
	if h.kind == wire.KindRingElection {
		return h.election
	}
	return h.coord
}

func (h *hop) setSeq(s uint64) {
	h.election.Seq, h.coord.Seq = s, s
}

// election is this member's part in the election of one (term, attempt).
type election struct {
	live    bool // set by join: the zero value is no election
	term    uint64
	attempt uint32
	joined  bool // seen or sent a message of it
	// active: takes part on its own: a candidate (naive), a participant
	// (Chang-Roberts), an initiator (lists), active (Franklin).
	active  bool
	decided bool
	top     uint32       // the highest member its messages spoke for, here
	round   uint32       // Franklin's round while active
	got     [2][2]uint32 // Franklin: candidates heard for round, round+1, from the left and the right (0: none)
	started time.Time
}

// Core is a ring election core: an elect.Elector. It is not safe for
// concurrent use: the driver serialises Step, Tick, Ready and Resign.
type Core struct {
	cfg  Config
	id   uint32
	rand *rand.Rand
	ring []uint32 // the logical ring, successor = next
	pos  map[uint32]int

	leading  bool
	term     uint64 // highest term seen; persisted before it is sent
	lead     uint32 // leader of term (its owner), 0 if unknown
	yielding bool   // resigned: relays, never competes, follows anyone
	suspect  uint32 // a resigned leader whose followers wait their stagger
	// resignedTerm and resigner: the last leader heard resigning, and its
	// term, which it never leads again (an election after a resignation
	// decides a newer term): a plain heartbeat of it in that term left
	// before the resignation and arrived after it.
	resignedTerm uint64
	resigner     uint32
	el           election

	// deadline is the role's timer: the leader's next heartbeat, the
	// startup listening window, the wait after a resignation, a
	// participant's election timeout.
	deadline  time.Time
	listening bool // startup: waiting to hear a sitting leader
	running   bool // the first Tick came (see Tick)
	det       *liveness.Detector
	skipped   map[uint32]time.Time // successors that did not acknowledge, when
	// out resends a hop HopTries times before the neighbour is skipped;
	// quick gives up after one send, for a neighbour that is the leader
	// and has missed two heartbeats: the member an election is about is
	// the one most likely dead (see pass).
	out, quick *delivery.Outbox[*hop]
	seen       *delivery.Filter
	seq        uint64
	// lamport is the node's Lamport clock (core.Env.Lamport; nil: the
	// node stamps every frame): each hop takes one stamp when it is first
	// sent, and every resend of it carries the same, so that a receiver's
	// duplicate filter can tell a number forged far ahead from the
	// sender's own (delivery.Filter.Check).
	lamport  *clock.Lamport
	reminded time.Time // last time a stale leader was told the term
	// passedOn is the last term whose announcement this member started or
	// passed on: an announcement goes round once (a term has one leader).
	passedOn uint64
	// floor is the term this member started from when it owns it (its
	// state file's: its own last term, or a reservation bully left): a
	// term it may have led in an earlier life. It never leads it again:
	// an announcement naming it for that term (its own, circling back to
	// it after a restart, or one another member decided from a lower
	// term) starts an election for a term above instead (onCoordinator).
	floor uint64
	// unsavedWin is a term this member was elected in whose write is not
	// confirmed yet: leading it before it is on disk and then crashing, a
	// restart would read the older term and decide this one again
	// (epoch.Limit.Next), one fencing token for two leaderships. It leads
	// once Advance confirms the write (Tick, at once: Deadline); a newer
	// term or another leader forgets it.
	unsavedWin uint64

	now, start time.Time
	heard      []time.Time
	announced  elect.Announcer
	counts     counters

	limit     epoch.Limit
	guard     epoch.Guard
	exhausted error

	msgs    []core.Message
	events  []core.Event
	bugs    core.Bugs
	durable core.Durable
}

var (
	_ elect.Elector      = (*Core)(nil)
	_ core.Scheduler     = (*Core)(nil)
	_ core.Advancer      = (*Core)(nil)
	_ core.MetricsWriter = (*Core)(nil)
)

// New returns the ring core of member env.ID. Its term is restored from
// env.State (nil at the first start; bully's term format, refused with an
// error wrapping core.ErrState when corrupt or absurd). The core first
// listens for a sitting leader (a heartbeat and a hop timeout), then, if
// none is heard or the one heard ranks below it, starts an election, as a
// recovering process must.
func New(env core.Env, cfg Config) (*Core, error) {
	if err := cfg.validate(env.ID, env.Members); err != nil {
		return nil, err
	}
	// A reservation (bully's second format: a state directory bully
	// wrote before the member changed algorithm) is a term the member may
	// have claimed: the ring starts above it, as it would from the term.
	term, reserved, err := bully.RestoreReserved(env.State)
	if err != nil {
		return nil, fmt.Errorf("ring: %w", err)
	}
	term = max(term, reserved)
	if err := bully.CheckTerm(term); err != nil {
		return nil, fmt.Errorf("ring: persisted term: %v: %w", err, core.ErrState)
	}
	rnd := env.Rand
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(uint64(env.ID), 0x72696e67)) // "ring"
	}
	out, err := delivery.NewOutbox[*hop](delivery.Config{Retry: cfg.HopTimeout, Tries: cfg.HopTries, MaxPending: 4*len(cfg.Ring) + 64})
	if err != nil {
		return nil, err
	}
	quick, err := delivery.NewOutbox[*hop](delivery.Config{Retry: cfg.HopTimeout, Tries: 1, MaxPending: 4*len(cfg.Ring) + 64})
	if err != nil {
		return nil, err
	}
	seen, err := delivery.NewFilter(len(cfg.Ring))
	if err != nil {
		return nil, err
	}
	c := &Core{
		cfg:     cfg,
		id:      env.ID,
		rand:    rnd,
		ring:    cfg.Ring,
		pos:     make(map[uint32]int, len(cfg.Ring)),
		term:    term,
		skipped: map[uint32]time.Time{},
		out:     out,
		quick:   quick,
		seen:    seen,
		// Hop sequence numbers start at the clock, so that a restarted
		// member's hops are new to the others' duplicate filters.
		seq:     uint64(max(env.Now.UnixNano(), 0)),
		lamport: env.Lamport,
		heard:   make([]time.Time, len(cfg.Ring)),
		limit:   epoch.Spaced(epoch.MaxRound, bully.TermBurst, float64(len(cfg.Ring))/float64(cfg.HopTimeout)),
		now:     env.Now,
		start:   env.Now,
	}
	for i, id := range c.ring {
		c.pos[id] = i
	}
	if epoch.Owner(term) == env.ID {
		c.floor = term
	}
	c.det = liveness.NewDetector(env.ID, slices.Sorted(slices.Values(c.ring)), cfg.LeaderTimeout, env.Now)
	for _, id := range c.ring {
		c.det.SetTimeout(id, cfg.LeaderTimeout+c.stagger(id))
	}
	c.listening = true
	c.deadline = env.Now // a Tick at once: the listening window starts with it
	return c, nil
}

// ---- ring order --------------------------------------------------------------

// next is the first member after this one in direction dir that is not
// skipped (nor one of also); this member itself when every other one is.
func (c *Core) next(dir int, also ...uint32) uint32 {
	n := len(c.ring)
	p := c.pos[c.id]
	for i := 1; i < n; i++ {
		id := c.ring[((p+dir*i)%n+n)%n]
		if !c.isSkipped(id) && !slices.Contains(also, id) {
			return id
		}
	}
	return c.id
}

// distance is how many members lie strictly between this one and to,
// going clockwise.
func (c *Core) distance(to uint32) int {
	n := len(c.ring)
	d := (c.pos[to] - c.pos[c.id] + n) % n
	return max(d-1, 0)
}

// stagger is the extra patience with leader lead: Stagger for every member
// between this one and it, so that its predecessor suspects it first.
func (c *Core) stagger(lead uint32) time.Duration {
	if lead == c.id {
		return 0
	}
	return time.Duration(c.distance(lead)) * c.cfg.Stagger
}

func (c *Core) isSkipped(id uint32) bool {
	at, ok := c.skipped[id]
	return ok && c.now.Before(at.Add(c.cfg.SkipFor))
}

// ---- sending -----------------------------------------------------------------

// pass sends h to the next live member in its direction, acknowledged and
// resent by the outbox; with nobody else left, this member receives it.
func (c *Core) pass(h *hop) {
	to := c.next(h.dir, h.skipped...)
	if to == c.id {
		// Nobody else is reachable: this member's own message comes back
		// to it (a member alone elects itself); another's has nowhere to
		// go and is dropped (this member's election timeout takes over).
		if h.election.Origin != c.id && h.coord.Origin != c.id {
			c.counts.stranded++
			return
		}
		c.counts.loopback++
		c.deliver(c.id, h)
		return
	}
	c.seq++
	h.setSeq(c.seq)
	h.term = c.term
	payload, ok := c.bugs.Encode(&c.events, h.kind.String(), h.payload(), nil)
	if !ok {
		return
	}
	h.msg = core.Message{To: to, Kind: h.kind, Term: c.term, Payload: payload}
	if c.lamport != nil {
		h.msg.Lamport = c.lamport.Send()
	}
	out := c.out
	if c.leaderQuiet(to) {
		// The leader has missed two heartbeats and an election passes
		// through: it is probably what the election is about. One send;
		// no acknowledgement, and it is skipped.
		out = c.quick
	}
	if err := out.Send(c.now, delivery.Key{To: to, ID: c.seq}, h); err != nil {
		c.counts.outboxFull++
		return
	}
	c.emit(h.msg)
}

// leaderQuiet reports whether id is the leader this member follows and
// has missed two heartbeats.
func (c *Core) leaderQuiet(id uint32) bool {
	v, ok := c.det.Member(id)
	return ok && id == c.lead && !v.LastHeard.IsZero() && c.now.Sub(v.LastHeard) > 2*c.cfg.Heartbeat
}

// skippedBy takes an election hop that came from `from` travelling in
// direction dir as evidence: the members between the two were skipped by
// the sender. If the leader is one of them and has missed two heartbeats
// here too, this member skips it as well, rather than spend a HopTimeout
// on one send to it (Franklin's messages go both ways, so the leader's
// other neighbour would otherwise wait for it in every failover).
func (c *Core) skippedBy(from uint32, dir int) {
	if c.lead == 0 || c.leading {
		return
	}
	n := len(c.ring)
	for i := 1; i < n; i++ {
		id := c.ring[((c.pos[from]+dir*i)%n+n)%n]
		if id == c.id {
			return
		}
		if id == c.lead && c.leaderQuiet(id) {
			c.skipped[id] = c.now
			return
		}
	}
}

// deliver acts on a hop as if it came from the network (from a member, or
// looped back to this one).
func (c *Core) deliver(from uint32, h *hop) {
	switch h.kind {
	case wire.KindRingElection:
		c.onElection(from, h.election, h.dir)
	case wire.KindRingCoordinator:
		c.onCoordinator(h.coord)
	}
}

func (c *Core) send(to uint32, k wire.Kind, p encoding.BinaryAppender) {
	payload, ok := c.bugs.Encode(&c.events, k.String(), p, nil)
	if !ok {
		return
	}
	c.emit(core.Message{To: to, Kind: k, Term: c.term, Payload: payload})
}

func (c *Core) emit(m core.Message) {
	c.msgs = append(c.msgs, m)
	n := uint64(1)
	if m.To == core.Broadcast {
		n = uint64(len(c.ring) - 1)
	}
	if m.Kind == wire.KindRingElection || m.Kind == wire.KindRingCoordinator {
		c.counts.Sent(m.Kind, int(n)) // an election's cost: its hops
	} else {
		c.counts.SentAside(m.Kind, int(n))
	}
}

func (c *Core) broadcast(k wire.Kind, p encoding.BinaryAppender) {
	if len(c.ring) > 1 {
		c.send(core.Broadcast, k, p)
	}
}

// ---- roles ---------------------------------------------------------------------

// setTerm raises the term (persisted before anything carrying it leaves).
func (c *Core) setTerm(t uint64) {
	if t < c.term {
		panic(fmt.Sprintf("ring: term going backwards %d -> %d", c.term, t))
	}
	if t > c.term {
		c.term = t
		c.durable.Change(true)
		// Hops of an older term would be stale wherever they arrive.
		stale := func(e delivery.Entry[*hop]) bool { return e.Msg.term < t }
		c.out.CancelIf(c.now, stale)
		c.quick.CancelIf(c.now, stale)
	}
}

// adopt moves to a newer term heard from another member: its leader is
// unknown until announced.
func (c *Core) adopt(t uint64) {
	c.setTerm(t)
	c.suspect = 0
	if c.leading {
		c.leading = false
		c.events = append(c.events, c.announced.Demoted(c.id, c.term, "newer_term", c.now))
	}
	c.lead = 0
	c.announce("newer_term")
	c.armElection()
}

// follow makes w the leader of the current term (its owner).
func (c *Core) follow(w uint32, reason string) {
	if w == c.id {
		c.becomeLeader()
		return
	}
	if c.leading {
		c.leading = false
		c.events = append(c.events, c.announced.Demoted(c.id, c.term, reason, c.now))
	}
	c.unsavedWin = 0
	c.lead, c.suspect, c.listening = w, 0, false
	c.deadline = time.Time{}
	if c.current() {
		c.el.decided = true // whatever this member's election was, it is over
	}
	c.announce(reason)
}

func (c *Core) becomeLeader() {
	if !c.leading && c.durable.PromisePending() {
		// Alone, this member sends nothing the failed write would have
		// withheld: the leadership itself waits (unsavedWin). Its
		// election timeout runs meanwhile, as after a lost COORDINATOR.
		c.unsavedWin = c.term
		had := c.lead
		c.lead, c.suspect, c.listening = 0, 0, false
		if had != 0 {
			c.announce("awaiting_write")
		}
		if c.current() {
			c.el.decided = true
		}
		c.deadline = time.Time{}
		c.armElection()
		return
	}
	c.unsavedWin = 0
	wasLeading := c.leading
	c.leading, c.lead, c.suspect, c.listening, c.yielding = true, c.id, 0, false, false
	c.deadline = c.now.Add(c.cfg.Heartbeat)
	if c.current() {
		c.el.decided = true
	}
	if !wasLeading {
		c.events = append(c.events, c.announced.Elected(c.id, c.term, c.now))
		// The first heartbeat leaves at once: every member follows the
		// owner of a newer term on its heartbeat, one hop away, where the
		// announcement takes up to N hops round the ring (each a
		// scheduling delay on a loaded host, and a state write). The
		// announcement still goes round, as the notes have it.
		c.broadcast(wire.KindRingHeartbeat, wire.RingHeartbeat{})
	}
	c.announce("elected")
}

// decide ends the election with w as leader: the next term w owns, above
// every term seen, announced around the ring. Any member that decides
// the same election computes the same term, and only w leads it.
func (c *Core) decide(w uint32) {
	t, err := c.limit.Next(c.term, w)
	if err != nil {
		c.exhaust(err)
		return
	}
	c.setTerm(t)
	c.el.decided = true
	c.passedOn = t
	c.counts.decided++
	c.det.Heard(w, c.now) // the election just saw it alive
	delete(c.skipped, w)
	// The announcement leaves first, so that it counts among this
	// member's messages for the election (ElectionStats.Sent).
	c.pass(&hop{kind: wire.KindRingCoordinator, dir: +1, coord: wire.RingCoordinator{Attempt: c.el.attempt, Origin: c.id, Leader: w}})
	c.follow(w, "elected")
}

// exhaust: no term is left to announce (see bully's).
func (c *Core) exhaust(err error) {
	c.counts.reject(err)
	if c.exhausted == nil {
		c.exhausted = err
		c.events = append(c.events, core.Event{Name: EventTermsExhausted,
			Msg:  "cannot announce a term: the term space is exhausted; stop every member and remove its state file to reset the cluster's terms",
			Args: []any{"term", c.term, "err", err.Error()}})
	}
}

// announce reports leader changes after every transition and closes the
// election this member took part in once a leader is known.
func (c *Core) announce(reason string) {
	c.events = append(c.events, c.announced.Leader(c.lead, c.term, c.now, reason)...)
	if c.lead != 0 {
		c.counts.Decided(c.lead, c.now)
	}
}

// join makes this member's election the one of the current term and
// attempt, fresh.
func (c *Core) join(attempt uint32) {
	c.el = election{live: true, term: c.term, attempt: attempt, started: c.now}
	c.counts.ElectionStarted(c.term, c.now, false) // counted as started in campaign
	c.armElection()
}

// current reports whether this member's election is one of its term.
func (c *Core) current() bool { return c.el.live && c.el.term == c.term }

// armElection starts the election timeout of a member without a leader.
func (c *Core) armElection() {
	if !c.leading && c.lead == 0 && !c.listening && c.suspect == 0 {
		c.deadline = c.now.Add(c.cfg.ElectionTimeout)
	}
}

// keepElection arms the election timeout unless it is running: a member
// reminded again and again that it should run (a lower leader's
// heartbeats) must not put its own timeout off.
func (c *Core) keepElection() {
	if c.deadline.After(c.now) {
		return
	}
	c.armElection()
}

// campaign is this member suspecting that there is no (rightful) leader:
// it takes part in the current election, or starts one, and initiates its
// own message where the variant says a suspecting member does.
func (c *Core) campaign(reason string, fresh bool) {
	c.listening = false
	c.suspect = 0
	switch {
	case !c.current():
		c.join(0)
	case fresh || c.el.decided:
		c.join(min(c.el.attempt+1, MaxAttempt))
	default:
		c.keepElection()
	}
	if c.yielding || !c.initiates() {
		return
	}
	c.counts.Elections++
	c.events = append(c.events, c.announced.ElectionStarted(c.term, reason, c.now))
	c.el.joined = true
	c.initiate()
}

// ---- ticks -----------------------------------------------------------------------

// Tick runs the timers due at now: the hops' resends and skips, the
// leader's heartbeat, a follower's patience with its leader, the startup
// window, the election timeout. Early it does nothing; late, each acts
// once. A timeout acts through the same functions a message does, never
// as a wire kind, so nothing from the network can fake one.
func (c *Core) Tick(now time.Time) {
	if !c.running {
		// The first Tick comes with the daemon's loop, some time after New
		// (sockets, keys): the listening window starts now, as a tick
		// count would.
		c.running = true
		if c.listening {
			c.deadline = now.Add(c.cfg.Heartbeat + c.cfg.HopTimeout)
		}
	}
	if now.After(c.now) {
		c.now = now
	}
	c.det.Check(now)
	c.det.Transitions()
	resend, gaveUp := c.out.Tick(now)
	_, quickGaveUp := c.quick.Tick(now)
	gaveUp = append(gaveUp, quickGaveUp...)
	for _, e := range resend {
		c.counts.resent++
		c.emit(e.Msg.msg)
	}
	for _, r := range gaveUp {
		// The neighbour did not acknowledge HopTries sends: skip it, and
		// pass the message to the one after it.
		c.counts.skips++
		c.skipped[r.Key.To] = now
		r.Msg.skipped = append(r.Msg.skipped, r.Key.To)
		c.pass(r.Msg)
	}
	due := !c.deadline.IsZero() && !now.Before(c.deadline)
	switch {
	case c.winSaved():
		c.becomeLeader()
	case c.leading:
		if due {
			c.deadline = c.deadline.Add(c.cfg.Heartbeat)
			if !c.deadline.After(now) {
				c.deadline = now.Add(c.cfg.Heartbeat)
			}
			c.broadcast(wire.KindRingHeartbeat, wire.RingHeartbeat{})
		}
	case c.lead != 0:
		if !c.det.Alive(c.lead) {
			c.counts.LeaderTimeouts++
			// As dead as this member can tell: its election does not wait
			// for the leader's acknowledgement.
			c.skipped[c.lead] = now
			c.lead, c.yielding = 0, false
			c.announce("leader_lost")
			c.campaign("leader_lost", false)
		}
	case !due:
	case c.listening:
		c.campaign("startup", false)
	case c.suspect != 0:
		c.campaign("leader_resigned", false)
	default:
		// No COORDINATOR within the election timeout (a member died with
		// the message, or it was lost): a new attempt.
		c.yielding = false
		c.campaign("no_coordinator", true)
	}
}

// Deadline is when Tick next has something to do (core.Scheduler).
func (c *Core) Deadline() time.Time {
	// The detector's own deadline, not only the leader's expiry: a Check
	// later than the detector asked for is taken for a stall of this
	// process, and the leader given extra time (liveness.Detector).
	if c.winSaved() {
		// After this instant: a deadline at the last Tick's is taken
		// for a core's bug (a stale deadline, ticked 10 ms later, the
		// win led 10 ms late: every ring win waits for its term's
		// write, found by review).
		return c.now.Add(time.Nanosecond)
	}
	return core.Earliest(c.deadline, c.det.Deadline(), c.out.Deadline(), c.quick.Deadline())
}

// awaitingWrite: this member was elected in its term and waits for the
// term's write to lead it (unsavedWin).
func (c *Core) awaitingWrite() bool {
	return c.unsavedWin != 0 && c.unsavedWin == c.term && c.lead == 0
}

// winSaved: the term this member was elected in is on disk now, and it
// was not overtaken: it leads it (unsavedWin).
func (c *Core) winSaved() bool {
	return c.awaitingWrite() && !c.durable.PromisePending()
}

// ---- receiving --------------------------------------------------------------------

// inbound is a decoded, structurally checked frame.
type inbound struct {
	core.Message
	seq      uint64
	election wire.RingElection
	coord    wire.RingCoordinator
	flags    uint8
}

// Step feeds one received frame: ring kinds only.
func (c *Core) Step(m core.Message) error {
	in, err := c.accept(m)
	if err != nil {
		c.counts.reject(err)
		return err
	}
	c.counts.Received(m.Kind)
	if m.Time.After(c.now) {
		c.now = m.Time
	}
	c.heard[c.pos[m.From]] = c.now
	if err := c.guard.Admit(c.limit, int64(c.now.Sub(c.start)), c.term, m.Term); err != nil {
		err = fmt.Errorf("ring: %v from %d: %w", m.Kind, m.From, err)
		c.counts.reject(err)
		return err
	}
	if m.Kind == wire.KindRingAck {
		c.out.Ack(c.now, delivery.Key{To: m.From, ID: in.seq})
		c.quick.Ack(c.now, delivery.Key{To: m.From, ID: in.seq})
	}
	if m.Kind == wire.KindRingElection && m.Term == c.term {
		if err := c.checkAttempt(in.election.Attempt); err != nil {
			err = fmt.Errorf("ring: election from %d: %w", m.From, err)
			c.counts.reject(err)
			return err
		}
	}
	if m.Kind == wire.KindRingElection || m.Kind == wire.KindRingCoordinator {
		// Every copy is acknowledged (the first ack may have been lost),
		// whatever becomes of it: the sender must not skip a live member.
		c.send(m.From, wire.KindRingAck, wire.RingAck{Seq: in.seq})
		// The frame's stamp is the hop's, the same in every resend: a
		// hop numbered below a number forged in the sender's name, and
		// stamped after it, is the sender's own (delivery.Filter).
		if v := c.seen.Check(m.From, in.seq, m.Lamport); v != delivery.New {
			c.counts.duplicates++
			return nil
		}
	}
	if m.Term < c.term {
		c.counts.Stale++
		if m.Kind == wire.KindRingHeartbeat && c.leading && c.now.Sub(c.reminded) >= c.cfg.Heartbeat {
			// A leader of an older term (back from a partition or a pause):
			// tell it the current one.
			c.reminded = c.now
			c.send(m.From, wire.KindRingHeartbeat, wire.RingHeartbeat{})
		}
		return nil
	}
	c.det.Heard(m.From, c.now)
	delete(c.skipped, m.From)
	if c.cfg.Textbook && c.leading && m.Kind == wire.KindRingCoordinator {
		// The notes' ring 1: an elected member takes any HabemosLider for
		// its own and is installed (Empossado), whoever it names.
		c.counts.textbookSwallowed++
		return nil
	}
	if m.Term > c.term {
		c.adopt(m.Term)
	}
	switch m.Kind {
	case wire.KindRingElection:
		return c.stepElection(in)
	case wire.KindRingCoordinator:
		c.onCoordinator(in.coord)
	case wire.KindRingHeartbeat:
		c.onHeartbeat(m.From, in.flags)
	}
	return nil
}

// accept checks who sent m and decodes its payload against the member
// list; no protocol state.
func (c *Core) accept(m core.Message) (*inbound, error) {
	if m.From == c.id {
		return nil, ErrFromSelf
	}
	if _, ok := c.pos[m.From]; !ok {
		return nil, fmt.Errorf("%w: %d", core.ErrUnknownMember, m.From)
	}
	in := &inbound{Message: m}
	switch m.Kind {
	case wire.KindRingElection:
		if err := in.election.UnmarshalBinary(m.Payload); err != nil {
			return nil, fmt.Errorf("ring: election from %d: %w", m.From, err)
		}
		if err := c.checkElection(&in.election); err != nil {
			return nil, fmt.Errorf("ring: election from %d: %w", m.From, err)
		}
		in.seq = in.election.Seq
	case wire.KindRingCoordinator:
		if err := in.coord.UnmarshalBinary(m.Payload); err != nil {
			return nil, fmt.Errorf("ring: coordinator from %d: %w", m.From, err)
		}
		if !c.member(in.coord.Origin) || !c.member(in.coord.Leader) {
			return nil, fmt.Errorf("%w: coordinator from %d: origin %d, leader %d", ErrNotMember, m.From, in.coord.Origin, in.coord.Leader)
		}
		if epoch.Owner(m.Term) != in.coord.Leader {
			return nil, fmt.Errorf("%w: %d announces %d for term %#x", ErrForgedClaim, m.From, in.coord.Leader, m.Term)
		}
		in.seq = in.coord.Seq
	case wire.KindRingAck:
		var a wire.RingAck
		if err := a.UnmarshalBinary(m.Payload); err != nil {
			return nil, fmt.Errorf("ring: ack from %d: %w", m.From, err)
		}
		in.seq = a.Seq
	case wire.KindRingHeartbeat:
		var h wire.RingHeartbeat
		if err := h.UnmarshalBinary(m.Payload); err != nil {
			return nil, fmt.Errorf("ring: heartbeat from %d: %w", m.From, err)
		}
		if epoch.Owner(m.Term) != m.From {
			return nil, fmt.Errorf("%w: %d heartbeats term %#x", ErrForgedClaim, m.From, m.Term)
		}
		in.flags = h.Flags
	default:
		return nil, fmt.Errorf("%w: %v", core.ErrUnexpectedKind, m.Kind)
	}
	return in, nil
}

func (c *Core) member(id uint32) bool {
	_, ok := c.pos[id]
	return ok
}

// maxRounds is the most Franklin rounds a ring of n can need: each round
// leaves at most half of the active members active, and one more round
// confirms the last.
func maxRounds(n int) uint32 {
	r := uint32(1)
	for a := n; a > 1; a = (a + 1) / 2 {
		r++
	}
	return r
}

// checkElection applies the member list and the variant to an election
// message: every ID it names is a member, a list names each at most once,
// the fields the variant does not use are zero, a round is one the ring
// can reach.
func (c *Core) checkElection(e *wire.RingElection) error {
	if !c.member(e.Origin) {
		return fmt.Errorf("%w: origin %d", ErrNotMember, e.Origin)
	}
	lists := c.cfg.Variant == IDList || c.cfg.Variant == FredricksonLynch
	if lists {
		if e.Candidate != 0 || e.Round != 0 || e.Flags != 0 {
			return fmt.Errorf("%w: candidate %d, round %d, flags %#x in a list", ErrImplausible, e.Candidate, e.Round, e.Flags)
		}
		if len(e.IDs) == 0 || len(e.IDs) > len(c.ring) {
			return fmt.Errorf("%w: a list of %d IDs on a ring of %d", ErrImplausible, len(e.IDs), len(c.ring))
		}
		var seen [64]uint32 // small rings without allocating
		dup := seen[:0]
		for _, id := range e.IDs {
			if !c.member(id) {
				return fmt.Errorf("%w: listed %d", ErrNotMember, id)
			}
			if slices.Contains(dup, id) {
				return fmt.Errorf("%w: %d listed twice", ErrNotMember, id)
			}
			dup = append(dup, id)
		}
		return nil
	}
	if len(e.IDs) != 0 {
		return fmt.Errorf("%w: a list of %d IDs in %v", ErrImplausible, len(e.IDs), c.cfg.Variant)
	}
	if !c.member(e.Candidate) && !(c.cfg.Textbook && e.Candidate == 0) {
		return fmt.Errorf("%w: candidate %d", ErrNotMember, e.Candidate)
	}
	if c.cfg.Variant == Franklin {
		if e.Round == 0 || e.Round > maxRounds(len(c.ring)) {
			return fmt.Errorf("%w: round %d on a ring of %d (at most %d)", ErrImplausible, e.Round, len(c.ring), maxRounds(len(c.ring)))
		}
	} else if e.Round != 0 || e.Flags != 0 {
		return fmt.Errorf("%w: round %d, flags %#x in %v", ErrImplausible, e.Round, e.Flags, c.cfg.Variant)
	}
	return nil
}

// stepElection handles an election hop of the current term.
func (c *Core) stepElection(in *inbound) error {
	e := in.election
	if err := c.checkAttempt(e.Attempt); err != nil {
		// A newer term's election (checked after the term moved).
		err = fmt.Errorf("ring: election from %d: %w", in.From, err)
		c.counts.reject(err)
		return err
	}
	switch {
	case !c.current(), e.Attempt > c.el.attempt:
		c.join(e.Attempt)
	case e.Attempt < c.el.attempt:
		c.counts.staleAttempt++
		return nil
	}
	dir := +1
	if e.Flags&wire.RingCounterclockwise != 0 {
		dir = -1
	}
	c.onElection(in.From, e, dir)
	return nil
}

// checkAttempt refuses an election attempt no member could have reached
// yet: more than AttemptBurst above this member's (or than AttemptBurst
// in a term it has no election of), or beyond MaxAttempt.
func (c *Core) checkAttempt(a uint32) error {
	base := uint32(0)
	if c.current() {
		base = c.el.attempt
	}
	if a > MaxAttempt || a > base && a-base > AttemptBurst {
		return fmt.Errorf("%w: attempt %d, this member's %d", ErrImplausible, a, base)
	}
	return nil
}

// onElection is an election message of this member's election, arriving
// travelling in direction dir (from the predecessor when +1).
func (c *Core) onElection(from uint32, e wire.RingElection, dir int) {
	if c.leading && !c.cfg.Textbook {
		if highest(e) <= c.id {
			// A false suspicion: this leader is alive and would win. Tell
			// the member whose election it is, and let it go no further.
			c.counts.swallowed++
			if e.Origin != c.id {
				c.send(e.Origin, wire.KindRingHeartbeat, wire.RingHeartbeat{})
			}
			return
		}
		// A member above this leader campaigns: it must win.
		c.leading = false
		c.events = append(c.events, c.announced.Demoted(c.id, c.term, "higher_member", c.now))
		c.lead = 0
		c.announce("higher_member")
		c.armElection()
	}
	if c.el.decided {
		c.counts.swallowed++
		return
	}
	c.el.joined = true
	c.el.top = max(c.el.top, highest(e))
	if from != c.id {
		c.skippedBy(from, dir)
	}
	c.step(from, e, dir)
}

// highest is the highest member an election message speaks for.
func highest(e wire.RingElection) uint32 {
	h := max(e.Origin, e.Candidate)
	for _, id := range e.IDs {
		h = max(h, id)
	}
	return h
}

// forward passes an election message on in its direction.
func (c *Core) forward(e wire.RingElection, dir int) {
	c.pass(&hop{kind: wire.KindRingElection, dir: dir, election: e})
}

// onCoordinator is an announcement of the leader of the current term.
func (c *Core) onCoordinator(p wire.RingCoordinator) {
	if p.Leader == c.resigner && c.term == c.resignedTerm {
		// The leader resigned this term after announcing it: the
		// announcement was overtaken by the resignation.
		c.counts.announcementsStopped++
		return
	}
	if c.passedOn == c.term {
		// Known already: the announcement has been around, or this member
		// passed one of this term on and then preempted its leader: it
		// stops here. A member that follows the leader already (its first
		// heartbeat, which leaves at once, got here first) passes it on
		// still: the announcement goes round once, as the notes count it.
		c.counts.announcementsStopped++
		return
	}
	c.passedOn = c.term
	if p.Leader == c.id && c.term <= c.floor {
		// A term this member may have led in an earlier life: leading it
		// again would give one term two leaderships (a fence counted
		// from it twice). The election is decided again, above it.
		c.campaign("earlier_life", true)
		return
	}
	c.el.decided = c.current()
	// The election just saw the leader alive: the announcement must reach
	// it even if this member skipped it before (it died and restarted).
	c.det.Heard(p.Leader, c.now)
	delete(c.skipped, p.Leader)
	preempt := p.Leader < c.id && !c.yielding
	c.pass(&hop{kind: wire.KindRingCoordinator, dir: +1, coord: wire.RingCoordinator{Attempt: p.Attempt, Origin: p.Origin, Leader: p.Leader}})
	c.follow(p.Leader, "coordinator")
	if preempt {
		// This member was skipped (or woke too late) and ranks above the
		// winner: the highest live member must lead.
		c.lead = 0
		c.announce("preempt")
		c.campaign("preempt", false)
	}
}

// onHeartbeat is the leader of the current term (from) proving it lives.
func (c *Core) onHeartbeat(from uint32, flags uint8) {
	if flags&wire.HeartbeatResign != 0 {
		if c.lead != 0 && c.lead != from {
			return
		}
		// The leader steps down: its predecessor runs at once, the others
		// after their stagger (by when its election has reached them).
		c.resignedTerm, c.resigner = c.term, from
		c.lead = 0
		c.announce("leader_resigned")
		c.suspect = from
		if wait := c.stagger(from); wait > 0 {
			c.deadline = c.now.Add(wait)
		} else {
			c.campaign("leader_resigned", false)
		}
		return
	}
	if from == c.resigner && c.term == c.resignedTerm {
		c.counts.Stale++ // overtaken by its resignation
		return
	}
	if c.lead == from {
		if c.current() && c.el.joined && !c.el.decided && c.el.top <= from {
			// This member relayed an election of the term its leader
			// would win: a false suspicion (or a start-up election the
			// leader ended), which the leader swallowed. It is over here
			// too: in Franklin and Fredrickson-Lynch a member that has
			// seen an election does not start another, so, left open, it
			// would keep this member from starting the one the leader's
			// real death calls for, until ElectionTimeout (1 s: the
			// 1.4 s failovers the simulator showed).
			c.el.decided = true
		}
		return
	}
	if from > c.id || c.yielding {
		c.follow(from, "heartbeat")
		return
	}
	// A leader below this live member: bully it, the ring's way.
	if !(c.current() && c.el.active && !c.el.decided) {
		c.campaign("preempt", false)
	}
}

// ---- operations ----------------------------------------------------------------------

// Resign makes the leader step down at local time now: a last heartbeat
// flagged "resign", and the others elect somebody else at once. This
// member relays but does not compete in that election and follows its
// winner; if nobody takes over within the leader timeout, it runs again.
func (c *Core) Resign(now time.Time) error {
	if !c.leading {
		return ErrNotLeader
	}
	if now.After(c.now) {
		c.now = now
	}
	c.broadcast(wire.KindRingHeartbeat, wire.RingHeartbeat{Flags: wire.HeartbeatResign})
	c.leading, c.lead, c.yielding = false, 0, true
	c.events = append(c.events, c.announced.Demoted(c.id, c.term, "resigned", c.now))
	c.announce("resigned")
	if !c.current() {
		c.join(0) // the election that replaces it, which it relays
	}
	c.deadline = c.now.Add(c.cfg.LeaderTimeout)
	return nil
}

// Leader returns the leader this member knows (0 and ok false if none) and
// the term.
func (c *Core) Leader() (id uint32, term uint64, ok bool) { return c.lead, c.term, c.lead != 0 }

// Role returns what this member does: it leads, takes part in an election
// without a leader, or follows (or waits for) one.
func (c *Core) Role() elect.Role {
	switch {
	case c.leading:
		return elect.RoleLeader
	case c.lead == 0 && (c.current() && c.el.joined && !c.el.decided || c.awaitingWrite()):
		return elect.RoleCandidate
	}
	return elect.RoleFollower
}

// Term returns the highest term this member has seen.
func (c *Core) Term() uint64 { return c.term }

// Changes drains the leadership changes since the last call.
func (c *Core) Changes() []elect.Change { return c.announced.Changes() }

// StepDatagram rejects foreign-protocol traffic.
func (c *Core) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }

// Ready drains what the core wants done. State is set while the term moved
// and is not yet confirmed on disk; the driver persists it before sending
// the messages, which may carry it.
func (c *Core) Ready() core.Ready {
	rd := core.Ready{Messages: c.msgs, Events: c.events}
	c.durable.Ready(&rd, func() []byte { return bully.EncodeState(c.term) })
	c.msgs, c.events = nil, nil
	return rd
}

// Advance is the driver's report on the last Ready (core.Advancer).
func (c *Core) Advance(saved bool) { c.durable.Advance(saved) }
