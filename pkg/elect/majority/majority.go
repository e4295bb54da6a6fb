package majority

import (
	"cmp"
	"encoding"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/internal/electcount"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/quorum"
	"github.com/synclab/synclab/pkg/wire"
)

// Kinds are the kinds a majority core steps, in counter order.
var Kinds = []wire.Kind{wire.KindVoteRequest, wire.KindVote, wire.KindLeaseRenew, wire.KindLeaseGrant, wire.KindLeaseRelease}

// Step rejects a frame, and counts it, with one of these errors (wrapped),
// core.ErrUnknownMember, core.ErrUnexpectedKind, an *epoch.Error or a
// *wire.DecodeError. A rejected frame changes nothing.
var (
	ErrFromSelf = errors.New("majority: message from self")
	// ErrWeightMismatch: the weight in the payload is not the sender's in
	// this member's list: the lists disagree, and with them "more than
	// half". Fix the configuration.
	ErrWeightMismatch = errors.New("majority: sender's weight differs from the member list")
	// ErrForgedTerm: a request for a term the sender does not own.
	ErrForgedTerm = errors.New("majority: request for a term the sender does not own")
	// ErrBadHolder: a reply naming a holder that is not a member.
	ErrBadHolder = errors.New("majority: reply names a holder that is not a member")
)

var rejectLabels = electcount.Labels(
	core.ErrorLabel{Err: ErrFromSelf, Label: "from_self"},
	core.ErrorLabel{Err: ErrWeightMismatch, Label: "weight_mismatch"},
	core.ErrorLabel{Err: ErrForgedTerm, Label: "forged_term"},
	core.ErrorLabel{Err: ErrBadHolder, Label: "bad_holder"},
)

// stateVersion is the version byte of the durable term (elect.EncodeWord).
const stateVersion = 'M'

// TermBurst is how many rounds ahead of this node's term a frame may be
// after a rest (pkg/epoch), as bully's.
const TermBurst = 1 << 16

// retries is how many times a candidate asks before it gives up.
const retries = 3

// request is one vote or renewal request this node sent, and its votes.
type request struct {
	seq    uint32
	sentAt time.Time
	tally  *quorum.Tally
}

// Core is the majority election core: an elect.Elector. Not safe for
// concurrent use.
type Core struct {
	cfg    Config
	id     uint32
	weight uint32
	voters quorum.Voters
	pos    map[uint32]int
	rand   *rand.Rand

	role Role
	term uint64 // highest term accepted; persisted before anything carrying it leaves
	lead uint32 // the leader this node knows in term (self while leading)

	// The promise: this node voted for (or renewed) holder and votes for
	// nobody else until boundUntil, on its clock. boundTerm is the term of
	// the latest grant (a release of an older term frees nothing).
	holder     uint32
	boundTerm  uint64
	boundUntil time.Time
	// recoverUntil: a restarted node (one with state on disk) may have
	// granted a lease just before it died; it grants nothing before a
	// whole lease has passed.
	recoverUntil time.Time

	// The leader's belief: it leads until leaseUntil (its clock).
	leaseUntil time.Time
	// leaderHeard is when a follower last heard its leader's renewal.
	leaderHeard time.Time

	// reqs are this node's outstanding requests (a candidate's vote
	// requests, a leader's renewals), newest last; seq numbers them.
	reqs     []request
	seq      uint32
	tries    int
	deadline time.Time // candidate: ask again; leader: next renewal
	standAt  time.Time // a free follower stands then (zero: not scheduled)
	yieldTil time.Time // after resigning, no candidacy before this

	start time.Time // uptime origin: the core's construction
	now   time.Time
	heard []time.Time
	// uptime is what each member last said of its uninterrupted uptime,
	// and when (our clock).
	uptime   []time.Duration
	uptimeAt []time.Time
	// ranks is the standing order the last leader's renewal announced
	// (members only, the leader not among them), heard at ranksAt: after
	// the leader is gone, the member at rank r stands r Staggers after
	// the first, so exactly one candidacy runs while the first is alive.
	ranks   []uint32
	ranksAt time.Time
	// lastVote says how this node's last election went (for status).
	lastVote string

	// unsavedWin is a won vote request (its seq; 0: none) whose term's
	// write is not confirmed: a member that wins on its own weight (alone,
	// or heavy enough by its --priorities) sent nothing a failed write
	// would withhold, and leading a term not on disk and then crashing, a
	// restart would read the older term and claim this one again
	// (epoch.Limit.Next): one fencing token for two leaderships. It stays
	// a candidate and leads at the Tick after Advance confirms the write,
	// if the request is still won and its lease still lies ahead.
	unsavedWin uint32
	// timeoutOnSave: the candidate's vote requests wait for its term's
	// write (they carry the term), so its vote timeout runs from the
	// first Tick after Advance confirms it, not from the decision: on a
	// disk slower than VoteTimeout the timer ran out while the requests
	// were still at home, and three tries ended before any vote could
	// come (a 100 ms disk at the LAN defaults: no leader ever).
	timeoutOnSave bool
	// ledTerm is the term this node's leadership has announced: a
	// reassert's newer term is announced only once it is on disk (its
	// renewals leave only then; until that, the leadership it holds is
	// the one of the older term, which is).
	ledTerm uint64

	limit     epoch.Limit
	guard     epoch.Guard
	exhausted error

	announced elect.Announcer
	// observedLead leads observedTerm, as a renewal this node could not
	// grant said (observe).
	observedLead uint32
	observedTerm uint64
	counts       electcount.Counts
	claims       uint64
	msgs         []core.Message
	events       []core.Event
	bugs         core.Bugs
	durable      core.Durable
}

// Role is elect.Role.
type Role = elect.Role

var (
	_ elect.Elector      = (*Core)(nil)
	_ core.Scheduler     = (*Core)(nil)
	_ core.Advancer      = (*Core)(nil)
	_ core.MetricsWriter = (*Core)(nil)
)

// Algorithm is the majority election's entry in the table.
var Algorithm = elect.Algorithm{
	Name:     "majority",
	Rightful: elect.AnyAgreed,
	Quorum:   true,
	Summary:  "a weighted majority's votes elect a leader under a lease it renews; no split brain, the minority side has no leader",
	// The notes give no figure; one election is a broadcast request and
	// the replies: 2(N-1) when the first candidate wins, a few rounds of
	// that when candidacies collide (3 tries each).
	Cost: core.Cost{Text: "2(N-1) per candidacy",
		Messages: func(n int) (float64, float64) { return float64(2 * (n - 1)), float64(2 * (n - 1) * retries) }},
	Kinds: Kinds,
	Guarantees: elect.Guarantees{
		TwoLeaders: "never, at any instant, with clocks within 100 ppm: partitions, pauses and restarts included",
		Minority:   "has no leader, and says why",
		CutOff:     "gives up at the end of its lease",
	},
	New: func(env core.Env, o elect.Options) (elect.Elector, error) {
		return New(env, FromOptions(env.Members, o))
	},
}

// New returns the majority core of member env.ID, its term restored from
// env.State. A node restarted with state on disk grants no vote for a
// lease + margin (it may have granted one just before it died).
func New(env core.Env, cfg Config) (*Core, error) {
	if err := cfg.validate(env.ID, env.Members); err != nil {
		return nil, err
	}
	term, err := elect.DecodeWord("majority", stateVersion, env.State)
	if err != nil {
		return nil, err
	}
	limit := epoch.Spaced(epoch.MaxRound, TermBurst, float64(len(cfg.Members))/float64(cfg.VoteTimeout))
	if err := limit.CheckRestored(term); err != nil {
		return nil, fmt.Errorf("majority: persisted term: %v: %w", err, core.ErrState)
	}
	weights := map[uint32]uint64{}
	c := &Core{cfg: cfg, id: env.ID, pos: map[uint32]int{}, role: elect.RoleFollower, term: term,
		start: env.Now, now: env.Now, limit: limit, rand: env.Rand}
	for i, m := range cfg.Members {
		weights[m.ID] = uint64(m.Weight)
		c.pos[m.ID] = i
		if m.ID == env.ID {
			c.weight = m.Weight
		}
	}
	if c.voters, err = quorum.Weighted(weights); err != nil {
		return nil, fmt.Errorf("majority: %w", err)
	}
	if c.rand == nil {
		c.rand = rand.New(rand.NewPCG(uint64(env.ID), 0x6d616a)) // "maj"
	}
	n := len(cfg.Members)
	c.heard, c.uptime, c.uptimeAt = make([]time.Time, n), make([]time.Duration, n), make([]time.Time, n)
	if env.State != nil {
		c.recoverUntil = env.Now.Add(cfg.Lease + cfg.Margin)
	}
	c.lastVote = "none yet"
	return c, nil
}

// ---- time --------------------------------------------------------------

// at moves the core's clock to now (never back) and ends what has run
// out: a leader's lease first, so that nothing after it acts as leader.
func (c *Core) at(now time.Time) {
	if now.After(c.now) {
		c.now = now
	}
	if c.role == elect.RoleLeader && !c.now.Before(c.leaseUntil) {
		c.stepDown("lease_expired", wire.ReleaseLost)
	}
	if c.role != elect.RoleLeader && c.lead != 0 && !c.now.Before(c.leaderHeard.Add(c.cfg.Lease+c.cfg.Margin)) {
		c.counts.LeaderTimeouts++
		c.lead = 0
		c.announce("lease_expired")
	}
}

// bound reports whether this node's promise still holds.
func (c *Core) bound() bool { return c.holder != 0 && c.now.Before(c.boundUntil) }

// recovering reports whether a restarted node still waits out old leases.
func (c *Core) recovering() bool { return c.now.Before(c.recoverUntil) }

// uptimeNow is this node's uninterrupted uptime.
func (c *Core) uptimeNow() time.Duration { return c.now.Sub(c.start) }

func uptimeMs(d time.Duration) uint32 {
	return uint32(min(max(d.Milliseconds(), 0), math.MaxUint32))
}

// Leads reports whether this node believes it leads at local time now:
// the instant-by-instant truth the leases protect (never two nodes at one
// real instant). Role says the same as of the last input.
func (c *Core) Leads(now time.Time) bool {
	return c.role == elect.RoleLeader && now.Before(c.leaseUntil)
}

// Tick runs the timers due at now.
func (c *Core) Tick(now time.Time) {
	c.at(now)
	switch c.role {
	case elect.RoleLeader:
		if c.reassertSaved() {
			c.ledTerm = c.term
			c.announce("reasserted")
		}
		if !c.now.Before(c.deadline) {
			c.renew()
		}
	case elect.RoleCandidate:
		if c.requestsSaved() {
			c.timeoutOnSave = false
			c.deadline = c.now.Add(c.cfg.VoteTimeout)
		}
		if c.winSaved() {
			c.takeSavedWin()
		}
		if c.role == elect.RoleCandidate && !c.now.Before(c.deadline) {
			c.retry()
		}
	default:
		c.maybeStand()
	}
}

// winSaved: the term of the win this candidate waits for is on disk now
// (unsavedWin).
func (c *Core) winSaved() bool {
	return c.role == elect.RoleCandidate && c.unsavedWin != 0 && !c.durable.PromisePending()
}

// requestsSaved: the term of this candidate's vote requests is on disk
// now, and they left with the write (timeoutOnSave).
func (c *Core) requestsSaved() bool {
	return c.role == elect.RoleCandidate && c.timeoutOnSave && !c.durable.PromisePending()
}

// reassertSaved: the term this leader moved to is on disk now, and its
// leadership there is announced (ledTerm).
func (c *Core) reassertSaved() bool {
	return c.role == elect.RoleLeader && c.ledTerm != c.term && !c.durable.PromisePending()
}

// takeSavedWin leads the term whose write it waited for, if the request
// it won still gives it: still tracked (a newer request of the same term
// replaces it when it won too), still won, its lease still ahead. If
// not, the candidacy goes on (asks again at its deadline, or gives up).
func (c *Core) takeSavedWin() {
	seq := c.unsavedWin
	c.unsavedWin = 0
	for _, r := range c.reqs {
		if r.seq == seq {
			c.count(r)
			return
		}
	}
}

// Deadline is when Tick next has something to do.
func (c *Core) Deadline() time.Time {
	if c.winSaved() || c.reassertSaved() || c.requestsSaved() {
		// After this instant: a deadline at the last Tick's is taken
		// for a core's bug (ticked 10 ms later, the win led late).
		return c.now.Add(time.Nanosecond)
	}
	switch c.role {
	case elect.RoleLeader:
		return core.Earliest(c.deadline, c.leaseUntil)
	case elect.RoleCandidate:
		return c.deadline
	}
	switch {
	case c.lead != 0:
		return c.leaderHeard.Add(c.cfg.Lease + c.cfg.Margin)
	case c.exhausted != nil:
		return time.Time{}
	case !c.standAt.IsZero():
		return c.standAt
	case !c.freeAt().IsZero():
		return c.freeAt()
	}
	return c.now // free and leaderless: schedule a candidacy
}

// freeAt is when this node may next vote or stand (zero: now).
func (c *Core) freeAt() time.Time {
	t := time.Time{}
	if c.bound() {
		t = c.boundUntil
	}
	if c.recovering() && c.recoverUntil.After(t) {
		t = c.recoverUntil
	}
	if c.now.Before(c.yieldTil) && c.yieldTil.After(t) {
		t = c.yieldTil
	}
	if !t.After(c.now) {
		return time.Time{}
	}
	return t
}

// maybeStand runs a free follower's candidacy schedule: once nothing
// binds it and no leader is known, it stands after its stagger.
func (c *Core) maybeStand() {
	if c.lead != 0 || c.exhausted != nil {
		c.standAt = time.Time{}
		return
	}
	if !c.freeAt().IsZero() {
		c.standAt = time.Time{}
		return
	}
	if c.standAt.IsZero() {
		c.standAt = c.now.Add(c.stagger())
		return
	}
	if !c.now.Before(c.standAt) {
		c.stand()
	}
}

// stagger is this node's wait before standing: one Margin (the other
// voters were bound by the same renewal a few milliseconds apart: their
// promises run out that much later than ours), then its place in the
// standing order. The last leader's renewals announced that order (its
// voters, longest uptime first: the stability rule's choice), so every
// member knows its rank: rank r waits r Staggers, no randomness, and the
// first stands alone. A member the order leaves out (the leader did not
// hear it) waits until after every ranked one, and a member that knows
// no recent order falls back on the uptimes it heard itself.
func (c *Core) stagger() time.Duration {
	if c.rankFresh() {
		r := slices.Index(c.ranks, c.id)
		if r >= 0 {
			return c.cfg.Margin + time.Duration(r)*c.cfg.Stagger
		}
		return c.cfg.Margin + time.Duration(len(c.ranks))*c.cfg.Stagger + c.randomStagger()
	}
	return c.cfg.Margin + time.Duration(c.ahead())*c.cfg.Stagger + c.randomStagger()
}

func (c *Core) randomStagger() time.Duration {
	return time.Duration(c.rand.Int64N(int64(c.cfg.Stagger) + 1))
}

// rankFresh reports whether the standing order came from a renewal
// recent enough to describe the members alive now: within two leases
// (the leader's last renewal, a lease waited out, one more lease for the
// candidacies it orders).
func (c *Core) rankFresh() bool {
	return !c.ranksAt.IsZero() && c.now.Sub(c.ranksAt) <= 2*(c.cfg.Lease+c.cfg.Margin)
}

// ahead is how many members heard within a lease have run longer
// without interruption than this node.
func (c *Core) ahead() int {
	mine := c.uptimeNow()
	ahead := 0
	for i, m := range c.cfg.Members {
		if m.ID == c.id || c.uptimeAt[i].IsZero() || c.now.Sub(c.uptimeAt[i]) > c.cfg.Lease+c.cfg.Margin {
			continue
		}
		if c.uptime[i]+c.now.Sub(c.uptimeAt[i]) > mine {
			ahead++
		}
	}
	return ahead
}

// standingOrder is the order a leader announces in its renewals: the
// other members heard within a lease (their replies carry their uptimes),
// longest-running first, then by ID. The first is the member the
// stability rule wants next: no voter refuses it for its uptime.
func (c *Core) standingOrder() []uint32 {
	type ranked struct {
		id     uint32
		uptime time.Duration
	}
	var rs []ranked
	for i, m := range c.cfg.Members {
		if m.ID == c.id || c.uptimeAt[i].IsZero() || c.now.Sub(c.uptimeAt[i]) > c.cfg.Lease+c.cfg.Margin {
			continue
		}
		// Rounded to a Stagger: members started together keep the ID
		// order renewal after renewal, whatever their replies' delays.
		up := (c.uptime[i] + c.now.Sub(c.uptimeAt[i])).Truncate(c.cfg.Stagger)
		rs = append(rs, ranked{m.ID, up})
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		if a.uptime != b.uptime {
			return cmp.Compare(b.uptime, a.uptime)
		}
		return cmp.Compare(a.id, b.id)
	})
	out := make([]uint32, 0, min(len(rs), wire.MaxLeaseRanks))
	for _, r := range rs[:min(len(rs), wire.MaxLeaseRanks)] {
		out = append(out, r.id)
	}
	return out
}

// learnOrder keeps the standing order of a renewal from leader: its
// members (the others are ignored), the leader itself left out.
func (c *Core) learnOrder(leader uint32, ranks []uint32) {
	c.ranks = c.ranks[:0]
	for _, id := range ranks {
		if _, ok := c.pos[id]; ok && id != leader {
			c.ranks = append(c.ranks, id)
		}
	}
	c.ranksAt = c.now
}

// ---- candidacy and leadership --------------------------------------------

// stand claims the next term this node owns and asks every member for its
// vote; its own vote binds it like any other.
func (c *Core) stand() {
	next, err := c.limit.Next(c.term, c.id)
	if err != nil {
		c.exhaust(err)
		return
	}
	c.setTerm(next)
	c.role = elect.RoleCandidate
	c.standAt = time.Time{}
	c.lead = 0
	c.tries = 0
	c.reqs = nil
	c.unsavedWin = 0
	c.counts.ElectionStarted(c.term, c.now, true)
	c.events = append(c.events, c.announced.ElectionStarted(c.term, "no_leader", c.now))
	c.announce("candidate")
	c.ask(wire.KindVoteRequest)
}

// ask sends a new request (vote or renewal) in the current term to every
// member, and binds this node to itself for a lease from now.
func (c *Core) ask(k wire.Kind) {
	c.seq++
	r := request{seq: c.seq, sentAt: c.now, tally: quorum.NewTally(c.voters)}
	c.bind(c.id)
	r.tally.Vote(c.id, true)
	c.reqs = append(c.reqs, r)
	if len(c.reqs) > 4 {
		c.reqs = c.reqs[1:]
	}
	c.tries++
	if k == wire.KindLeaseRenew {
		c.deadline = c.now.Add(c.cfg.Renew)
	} else {
		c.deadline = c.now.Add(c.cfg.VoteTimeout)
		// Re-armed when the term is on disk; until then (a write that
		// fails keeps it pending) the timeout runs from now, so that a
		// candidacy that cannot write still ends.
		c.timeoutOnSave = c.durable.PromisePending()
	}
	req := wire.LeaseRequest{Seq: r.seq, Weight: c.weight, Uptime: uptimeMs(c.uptimeNow())}
	if k == wire.KindLeaseRenew {
		req.Ranks = c.standingOrder()
	}
	c.broadcast(k, req)
	c.count(r) // a single-member cluster wins alone
}

// retry is a candidate's vote timeout: ask again, or give up.
func (c *Core) retry() {
	if c.tries >= retries {
		c.giveUp("no majority answered")
		return
	}
	c.ask(wire.KindVoteRequest)
}

// giveUp ends a candidacy that did not win: the node never led this term,
// so it frees its voters at once.
func (c *Core) giveUp(why string) {
	c.lastVote = why + ": " + c.tallyText()
	c.role = elect.RoleFollower
	c.reqs = nil
	c.unsavedWin = 0
	c.unbind()
	c.broadcast(wire.KindLeaseRelease, wire.LeaseRelease{Weight: c.weight, Reason: wire.ReleaseLost})
	// Try again after a vote timeout and the stagger: long enough for a
	// member that is winning to be heard (a leader known cancels it), and
	// for voters still bound to a dead leader to be free.
	c.standAt = c.now.Add(c.cfg.VoteTimeout + c.stagger())
	c.announce("lost")
}

// count acts on the votes of r, if it is still outstanding.
func (c *Core) count(r request) {
	switch r.tally.Result() {
	case quorum.Won:
		until := r.sentAt.Add(c.cfg.Lease - c.cfg.Margin)
		if !until.After(c.now) {
			return // won too late to believe anything
		}
		if c.role == elect.RoleCandidate {
			if c.durable.PromisePending() {
				c.unsavedWin = r.seq
				return
			}
			c.becomeLeader(until)
		} else if until.After(c.leaseUntil) {
			c.leaseUntil = until
		}
	case quorum.Lost:
		if c.role == elect.RoleCandidate && r.seq == c.seq {
			c.giveUp("refused")
		}
	}
}

func (c *Core) becomeLeader(until time.Time) {
	c.unsavedWin = 0
	c.role = elect.RoleLeader
	c.lead = c.id
	c.ledTerm = c.term
	c.leaseUntil = until
	c.claims++
	c.lastVote = "won: " + c.tallyText()
	c.events = append(c.events, c.announced.Elected(c.id, c.term, c.now))
	c.announce("elected")
	c.renew() // tell everyone at once who leads
}

// renew is the leader's renewal round.
func (c *Core) renew() {
	c.tries = 0
	c.ask(wire.KindLeaseRenew)
}

// stepDown ends this node's leadership; release says why the voters are
// freed (they are: this node believes nothing any more).
func (c *Core) stepDown(reason string, release wire.ReleaseReason) {
	c.role = elect.RoleFollower
	c.lead = 0
	c.leaseUntil = time.Time{}
	c.reqs = nil
	c.unbind()
	c.broadcast(wire.KindLeaseRelease, wire.LeaseRelease{Weight: c.weight, Reason: release})
	c.events = append(c.events, c.announced.Demoted(c.id, c.ledTerm, reason, c.now))
	c.lastVote = "stepped down: " + reason
	c.announce(reason)
}

// reassert moves a leader whose lease holds into a term above t (a member
// saw a newer term, from a candidacy that could not win): its voters are
// bound to it, not to a term, so it goes on renewing there.
func (c *Core) reassert(t uint64) {
	next, err := c.limit.Next(max(c.term, t), c.id)
	if err != nil {
		c.exhaust(err)
		return
	}
	c.setTerm(next)
	c.claims++
	// Announced at the Tick after the write (reassertSaved): a leader
	// that reported the newer term and crashed before it was on disk
	// would read the older one after its restart and could claim this
	// one again.
	c.renew()
}

func (c *Core) exhaust(err error) {
	c.counts.RejectErr(rejectLabels, err)
	if c.exhausted == nil {
		c.exhausted = err
		c.events = append(c.events, core.Event{Name: "terms_exhausted", Msg: "cannot claim a term: the term space is exhausted; stop every member and remove its state file",
			Args: []any{"term", c.term, "err", err.Error()}})
	}
	if c.role == elect.RoleLeader {
		c.stepDown("terms_exhausted", wire.ReleaseLost)
	}
	c.role = elect.RoleFollower
}

func (c *Core) bind(holder uint32) {
	c.holder, c.boundTerm, c.boundUntil = holder, c.term, c.now.Add(c.cfg.Lease+c.cfg.Margin)
}

func (c *Core) unbind() { c.holder, c.boundUntil = 0, time.Time{} }

func (c *Core) setTerm(t uint64) {
	if t > c.term {
		c.term = t
		c.durable.Change(true)
	}
}

// ---- messages -----------------------------------------------------------

// inbound is a decoded, checked frame.
type inbound struct {
	core.Message
	req   wire.LeaseRequest
	reply wire.LeaseReply
	rel   wire.LeaseRelease
}

// Step feeds one received frame.
func (c *Core) Step(m core.Message) error {
	in, err := c.accept(m)
	if err == nil && m.Term > c.term {
		// Plausibility of a newer term (pkg/epoch): at most a burst ahead,
		// then the protocol's pace.
		err = c.guard.Admit(c.limit, int64(c.now.Sub(c.start)), c.term, m.Term)
	}
	if err != nil {
		c.counts.RejectErr(rejectLabels, err)
		return err
	}
	c.counts.Received(m.Kind)
	c.at(m.Time)
	c.heard[c.pos[m.From]] = c.now
	switch m.Kind {
	case wire.KindVoteRequest, wire.KindLeaseRenew:
		i := c.pos[m.From]
		c.uptime[i], c.uptimeAt[i] = time.Duration(in.req.Uptime)*time.Millisecond, c.now
		c.stepRequest(in)
	case wire.KindVote, wire.KindLeaseGrant:
		i := c.pos[m.From]
		c.uptime[i], c.uptimeAt[i] = time.Duration(in.reply.Uptime)*time.Millisecond, c.now
		c.stepReply(in)
	case wire.KindLeaseRelease:
		c.stepRelease(in)
	}
	return nil
}

// accept checks the sender and decodes the payload; no protocol state.
func (c *Core) accept(m core.Message) (*inbound, error) {
	if m.From == c.id {
		return nil, ErrFromSelf
	}
	i, ok := c.pos[m.From]
	if !ok {
		return nil, fmt.Errorf("%w: %d", core.ErrUnknownMember, m.From)
	}
	in := &inbound{Message: m}
	var w uint32
	switch m.Kind {
	case wire.KindVoteRequest, wire.KindLeaseRenew:
		if err := in.req.UnmarshalBinary(m.Payload); err != nil {
			return nil, fmt.Errorf("majority: %v from %d: %w", m.Kind, m.From, err)
		}
		if epoch.Owner(m.Term) != m.From {
			return nil, fmt.Errorf("%w: %d asks in term %#x of %d", ErrForgedTerm, m.From, m.Term, epoch.Owner(m.Term))
		}
		w = in.req.Weight
	case wire.KindVote, wire.KindLeaseGrant:
		if err := in.reply.UnmarshalBinary(m.Payload); err != nil {
			return nil, fmt.Errorf("majority: %v from %d: %w", m.Kind, m.From, err)
		}
		if h := in.reply.Holder; h != 0 {
			if _, ok := c.pos[h]; !ok {
				return nil, fmt.Errorf("%w: %d names %d", ErrBadHolder, m.From, h)
			}
		}
		w = in.reply.Weight
	case wire.KindLeaseRelease:
		if err := in.rel.UnmarshalBinary(m.Payload); err != nil {
			return nil, fmt.Errorf("majority: %v from %d: %w", m.Kind, m.From, err)
		}
		w = in.rel.Weight
	default:
		return nil, fmt.Errorf("%w: %v", core.ErrUnexpectedKind, m.Kind)
	}
	if want := c.cfg.Members[i].Weight; w != want {
		return nil, fmt.Errorf("%w: %d says %d, member list says %d", ErrWeightMismatch, m.From, w, want)
	}
	return in, nil
}

// stepRequest is a vote request or a renewal, at any role.
func (c *Core) stepRequest(in *inbound) {
	replyKind := wire.KindVote
	if in.Kind == wire.KindLeaseRenew {
		replyKind = wire.KindLeaseGrant
	}
	reply := func(v wire.LeaseVerdict) {
		h := uint32(0)
		switch {
		case c.bound():
			h = c.holder
		case v == wire.VerdictBound:
			h = c.lead
		}
		c.send(in.From, replyKind, wire.LeaseReply{Seq: in.req.Seq, Weight: c.weight, Holder: h, Verdict: v, Uptime: uptimeMs(c.uptimeNow())})
	}
	switch {
	case in.Term < c.term:
		c.counts.Stale++
		reply(wire.VerdictStale)
		return
	case c.role == elect.RoleLeader:
		// Another member asks in a term at or above ours: it has not
		// heard us. Ours holds (its voters cannot be ours): move above
		// its term, so that it hears us there, and say who holds us.
		if in.Term > c.term {
			c.reassert(in.Term)
		}
		reply(wire.VerdictBound)
		return
	case c.recovering():
		c.observe(in)
		reply(wire.VerdictRecovering)
		return
	case c.bound() && c.holder != in.From:
		c.observe(in)
		reply(wire.VerdictBound)
		return
	case in.Kind == wire.KindVoteRequest && c.lead != 0 && c.lead != in.From:
		// A leader we heard within a lease is alive: a candidate that
		// does not hear it (it came back from the other side of a
		// partition) would only disturb it. Refusing is always safe.
		reply(wire.VerdictBound)
		return
	case in.Kind == wire.KindVoteRequest && !c.bound() && c.outlasts(in):
		reply(wire.VerdictUptime)
		return
	}
	// Grant: bound to the sender for a lease from now, in its term.
	if c.role == elect.RoleCandidate {
		// Only a request of our own holder gets here, and we hold
		// ourselves while candidates: this is another member's renewal
		// after our own candidacy's binding ran out. Give up.
		c.giveUp("another member leads")
	}
	newTerm := in.Term > c.term
	c.setTerm(in.Term)
	c.bind(in.From)
	if in.Kind == wire.KindLeaseRenew {
		if c.lead != in.From || newTerm {
			c.lead = in.From
			c.counts.Decided(in.From, c.now)
		}
		c.leaderHeard = c.now
		c.standAt = time.Time{}
		c.learnOrder(in.From, in.req.Ranks)
	} else if c.lead != 0 && c.lead != in.From {
		c.lead = 0
	}
	if newTerm && !c.counts.Running() && c.lead == 0 {
		c.counts.ElectionStarted(c.term, c.now, false)
	}
	reply(wire.VerdictGranted)
	c.announce("newer_term")
}

// observe notes the leader a renewal names, where this node cannot grant
// it (it waits out a restart, or is bound to a candidate that cannot win):
// knowing who leads binds nothing, not even its term (this node's own
// term is where its next candidacy starts). The leader is still announced
// and reported in its own term, never as the leader of an older one.
func (c *Core) observe(in *inbound) {
	if in.Kind != wire.KindLeaseRenew {
		return
	}
	c.observedLead, c.observedTerm = in.From, in.Term
	c.lead, c.leaderHeard = in.From, c.now
	c.learnOrder(in.From, in.req.Ranks)
	c.announce("observed")
}

// outlasts is the stability rule: a voter does not help a candidate that
// has run for less than it has (by more than a lease, for the requests'
// delays): it would rather stand itself, and the longest-running member
// stands first (stagger).
func (c *Core) outlasts(in *inbound) bool {
	return time.Duration(in.req.Uptime)*time.Millisecond+c.cfg.Lease < c.uptimeNow()
}

// stepReply is a vote or a renewal grant (or refusal).
func (c *Core) stepReply(in *inbound) {
	if in.reply.Verdict == wire.VerdictStale && in.Term > c.term {
		// The voter is in a newer term (a candidacy we did not hear). A
		// leader moves above it; anyone else adopts it.
		if c.role == elect.RoleLeader {
			c.reassert(in.Term)
		} else if c.role == elect.RoleCandidate {
			c.setTerm(in.Term)
			c.giveUp("a newer term")
		} else {
			c.setTerm(in.Term)
		}
		return
	}
	if in.Term != c.term || (c.role != elect.RoleCandidate && c.role != elect.RoleLeader) {
		c.counts.Stale++
		return
	}
	want := wire.KindVote
	if c.role == elect.RoleLeader {
		want = wire.KindLeaseGrant
	}
	if in.Kind != want {
		c.counts.Stale++
		return
	}
	for _, r := range c.reqs {
		if r.seq == in.reply.Seq {
			r.tally.Vote(in.From, in.reply.Granted())
			c.count(r)
			return
		}
	}
	c.counts.Stale++ // a request we no longer track
}

// stepRelease frees this node from its promise to the sender.
func (c *Core) stepRelease(in *inbound) {
	if c.holder != in.From || in.Term < c.boundTerm {
		return
	}
	c.unbind()
	if c.lead == in.From {
		c.lead = 0
		c.announce("leader_released")
	}
	c.standAt = time.Time{}
}

// StepDatagram rejects foreign traffic.
func (c *Core) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }

// ---- operations ------------------------------------------------------------

// Resign makes the leader step down at once and free its voters; it does
// not stand again for a lease, so another member takes over.
func (c *Core) Resign(now time.Time) error {
	c.at(now)
	if c.role != elect.RoleLeader {
		return elect.ErrNotLeader
	}
	c.stepDown("resigned", wire.ReleaseResigned)
	c.yieldTil = c.now.Add(c.cfg.Lease)
	return nil
}

// Leader returns the leader this node knows, and the term.
func (c *Core) Leader() (uint32, uint64, bool) { return c.lead, c.leaderTerm(), c.lead != 0 }

// leaderTerm is the term of the leader this node knows: its own term,
// or the newer one a leader it only observed leads.
func (c *Core) leaderTerm() uint64 {
	if c.role == elect.RoleLeader {
		return c.ledTerm
	}
	if c.lead != 0 && c.lead == c.observedLead {
		return max(c.term, c.observedTerm)
	}
	return c.term
}

// Role is this node's role.
func (c *Core) Role() Role { return c.role }

// Term is the highest term this node accepted.
func (c *Core) Term() uint64 { return c.term }

// Changes drains the leadership changes.
func (c *Core) Changes() []elect.Change { return c.announced.Changes() }

// Ready drains what the core wants done; State carries the term while it
// is not confirmed on disk, and no message leaves before it is.
func (c *Core) Ready() core.Ready {
	rd := core.Ready{Messages: c.msgs, Events: c.events}
	c.durable.Ready(&rd, func() []byte { return elect.EncodeWord(stateVersion, c.term) })
	c.msgs, c.events = nil, nil
	return rd
}

// Advance is the driver's report on the last Ready.
func (c *Core) Advance(saved bool) { c.durable.Advance(saved) }

func (c *Core) send(to uint32, k wire.Kind, p encoding.BinaryAppender) {
	payload, ok := c.bugs.Encode(&c.events, k.String(), p, nil)
	if !ok {
		return
	}
	c.msgs = append(c.msgs, core.Message{To: to, Kind: k, Term: c.term, Payload: payload})
	n := 1
	if to == core.Broadcast {
		n = len(c.cfg.Members) - 1
	}
	c.counts.Sent(k, n)
}

func (c *Core) broadcast(k wire.Kind, p encoding.BinaryAppender) {
	if len(c.cfg.Members) > 1 {
		c.send(core.Broadcast, k, p)
	}
}

func (c *Core) announce(reason string) {
	c.events = append(c.events, c.announced.Leader(c.lead, c.leaderTerm(), c.now, reason)...)
	if c.lead != 0 {
		c.counts.Decided(c.lead, c.now)
	}
}

// tallyText says how the latest request's vote stands.
func (c *Core) tallyText() string {
	if len(c.reqs) == 0 {
		return "no request"
	}
	t := c.reqs[len(c.reqs)-1].tally
	var yes []uint32
	for _, id := range c.voters.IDs() {
		if y, ok := t.Voted(id); ok && y {
			yes = append(yes, id)
		}
	}
	slices.Sort(yes)
	return fmt.Sprintf("votes of weight %d %v of %d, need %d", t.Yes(), yes, c.voters.Total(), c.voters.Needed())
}
