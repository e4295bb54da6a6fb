package yoyo

import (
	"encoding"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/internal/electcount"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

// Kinds are the kinds a Yo-Yo core steps, in counter order.
var Kinds = []wire.Kind{wire.KindYoYoHello, wire.KindYoYoDown, wire.KindYoYoUp, wire.KindYoYoLeader}

// Step's errors (wrapped), besides core.ErrUnknownMember,
// core.ErrUnexpectedKind, *epoch.Error and *wire.DecodeError.
var (
	ErrFromSelf = errors.New("yoyo: message from self")
	// ErrNotNeighbour: a member that is not our neighbour in the topology
	// (members talk to their neighbours only).
	ErrNotNeighbour = errors.New("yoyo: message from a member that is not a neighbour")
	// ErrTopology: a neighbour configured with another topology.
	ErrTopology = errors.New("yoyo: neighbour's topology differs")
	// ErrOutOfTurn: a message the round's state cannot have produced (a
	// value on an out-edge, a vote on an in-edge, an iteration that is
	// not the current or the next, a second one on an edge).
	ErrOutOfTurn = errors.New("yoyo: message out of turn")
	// ErrBadValue: a candidate or leader ID that is not a member.
	ErrBadValue = errors.New("yoyo: value is not a member")
)

var rejectLabels = electcount.Labels(
	core.ErrorLabel{Err: ErrFromSelf, Label: "from_self"},
	core.ErrorLabel{Err: ErrNotNeighbour, Label: "not_neighbour"},
	core.ErrorLabel{Err: ErrTopology, Label: "topology_mismatch"},
	core.ErrorLabel{Err: ErrOutOfTurn, Label: "out_of_turn"},
	core.ErrorLabel{Err: ErrBadValue, Label: "bad_value"},
)

const stateVersion = 'Y'

// RoundBurst bounds how many rounds ahead a frame may be (pkg/epoch).
const RoundBurst = 1 << 16

// Edge states, as this member sees an edge to a neighbour.
type dir uint8

const (
	unknown dir = iota // no hello from the neighbour this round
	in                 // the neighbour's ID is smaller: it sends us values
	out                // ours is smaller: we send it values
	pruned             // removed from the election (a leaf, or a duplicate path)
	silent             // the neighbour was not heard for a leader timeout when the round began: left out
)

var dirNames = [...]string{unknown: "unoriented", in: "in", out: "out", pruned: "pruned", silent: "silent"}

func (d dir) String() string { return dirNames[d] }

// pendingMsg is a message of the next iteration, kept until this member
// gets there.
type pendingMsg struct {
	from uint32
	kind wire.Kind
	down wire.YoYoDown
	up   wire.YoYoUp
}

// Core is the Yo-Yo core: an elect.Elector. Not safe for concurrent use.
type Core struct {
	cfg    Config
	id     uint32
	nbrs   []uint32
	digest uint32
	rand   *rand.Rand

	round uint64 // current round (owned epoch); persisted before it is sent
	lead  uint32

	// The round's state.
	electing  bool
	edges     map[uint32]dir
	iteration uint32
	values    map[uint32]uint32 // values received on in-edges this iteration
	votes     map[uint32]uint8  // votes received on out-edges this iteration
	sentDown  bool
	minValue  uint32
	pending   []pendingMsg
	greeted   map[uint32]bool // neighbours sent this round's hello
	outcome   string          // "pruned" or "leader": this member's part in the round is over
	lost      bool            // a source that got a NO: a candidate no more
	// unsavedWin: the round is won here but its number is not on disk
	// yet (win). Leading it now and then crashing, a restart would read
	// the older round and pick this one again (epoch.Limit.Next): one
	// fencing token for two leaderships. The win waits for Advance to
	// confirm the write; Tick takes it then (Deadline says at once).
	unsavedWin bool
	roundAt    time.Time
	// suspect is the leader this member followed when it joined the
	// round, if its flood had stopped (the round is likely for its
	// death): its missing hello is given up faster (silentAt).
	suspect uint32
	// keepAt is when this member next repeats, as datagrams, what it
	// sent each neighbour in the round: its keepalive while no leader
	// floods (see keepalive). lastDown are the values it sent in this
	// iteration, lastUp its last vote on each edge.
	keepAt   time.Time
	lastDown map[uint32]wire.YoYoDown
	lastUp   map[uint32]wire.YoYoUp

	// The leader's flood.
	seq      uint32 // the leader's next heartbeat; a follower's last relayed
	heardAt  time.Time
	gaveUp   uint32 // the leader this member last gave up for silence
	nextBeat time.Time
	startAt  time.Time // a member without a leader starts a round then

	now       time.Time
	start     time.Time
	heard     map[uint32]time.Time
	limit     epoch.Limit
	guard     epoch.Guard
	announced elect.Announcer
	counts    electcount.Counts
	perRound  uint64 // messages sent in the current round
	// keepalives are the messages repeated while electing (keepalive);
	// repeats those received and taken as such.
	keepalives, repeats uint64
	msgs                []core.Message
	events              []core.Event
	bugs                core.Bugs
	durable             core.Durable
}

var (
	_ elect.Elector      = (*Core)(nil)
	_ core.Advancer      = (*Core)(nil)
	_ core.MetricsWriter = (*Core)(nil)
)

// Algorithm is Yo-Yo's entry in the table.
var Algorithm = elect.Algorithm{
	Name:     "yoyo",
	Rightful: slices.Min[[]uint32],
	Summary:  "Yo-Yo on any connected topology (--topology 1-2,2-3,...; default complete): the smallest ID leads; members talk only to neighbours",
	// The notes give no figure. Per iteration each remaining edge
	// carries one value down and one vote up; the setup is one hello
	// each way per edge; pruning leaves O(log N) iterations: O(E log N).
	// At N members the counts below are for the complete graph (E =
	// N(N-1)/2): 2E for the setup plus 2E per iteration, 1 to log2 N.
	Cost: core.Cost{Text: "O(E log N): 2E setup + 2E per iteration",
		Messages: func(n int) (float64, float64) {
			e := float64(n * (n - 1) / 2)
			iters := 1.0
			for k := 1; k < n; k *= 2 {
				iters++
			}
			return 4 * e, 2*e + 2*e*iters
		}},
	Kinds: Kinds,
	Guarantees: elect.Guarantees{
		TwoLeaders: "possible under a partition of the graph (the notes' split brain), merged by a new round when the sides meet",
		Minority:   "elects its own leader",
		CutOff:     "as the others without a quorum",
	},
	New: func(env core.Env, o elect.Options) (elect.Elector, error) {
		return New(env, FromOptions(env.Members, o))
	},
}

// New returns the Yo-Yo core of env.ID over its topology; its round is
// restored from env.State. It listens for a leader's flood for two
// heartbeats (and a random part of one) before it starts a round.
func New(env core.Env, cfg Config) (*Core, error) {
	nb, err := cfg.validate(env.ID, env.Members)
	if err != nil {
		return nil, err
	}
	round, err := elect.DecodeWord("yoyo", stateVersion, env.State)
	if err != nil {
		return nil, err
	}
	limit := epoch.Spaced(epoch.MaxRound, RoundBurst, float64(len(cfg.Members))/float64(cfg.LeaderTimeout))
	if err := limit.CheckRestored(round); err != nil {
		return nil, fmt.Errorf("yoyo: persisted round: %v: %w", err, core.ErrState)
	}
	c := &Core{cfg: cfg, id: env.ID, nbrs: nb[env.ID], digest: digest(cfg.Topology), rand: env.Rand, round: round,
		now: env.Now, start: env.Now, heard: map[uint32]time.Time{}, limit: limit}
	if c.rand == nil {
		c.rand = rand.New(rand.NewPCG(uint64(env.ID), 0x796f796f))
	}
	c.startAt = env.Now.Add(2*cfg.Heartbeat + time.Duration(c.rand.Int64N(int64(cfg.Heartbeat)+1)))
	for _, n := range c.nbrs {
		c.heard[n] = env.Now // every neighbour is taken for alive at the start
	}
	return c, nil
}

// ---- rounds -------------------------------------------------------------

// newRound starts a round of this member's own, above r.
func (c *Core) newRound(r uint64, reason string) {
	next, err := c.limit.Next(max(c.round, r), c.id)
	if err != nil {
		c.counts.RejectErr(rejectLabels, err)
		return
	}
	c.counts.ElectionStarted(next, c.now, true)
	c.events = append(c.events, c.announced.ElectionStarted(next, reason, c.now))
	c.enter(next)
}

// enter joins round r: everything of the last round is forgotten, and
// this member says hello to its neighbours.
func (c *Core) enter(r uint64) {
	if !c.counts.Running() {
		c.counts.ElectionStarted(r, c.now, false)
	}
	if c.role() == elect.RoleLeader {
		c.events = append(c.events, c.announced.Demoted(c.id, c.round, "new_round", c.now))
	}
	if r > c.round {
		c.round = r
		c.durable.Change(true)
	}
	c.suspect = 0
	if c.lead != 0 && c.lead != c.id && c.now.Sub(c.heardAt) >= c.cfg.LeaderTimeout/2 {
		c.suspect = c.lead // its flood stopped: the round is likely for its death
	}
	c.lead, c.seq = 0, 0
	c.electing = true
	c.edges = make(map[uint32]dir, len(c.nbrs))
	c.iteration, c.sentDown, c.minValue, c.outcome, c.lost, c.unsavedWin = 0, false, 0, "", false, false
	c.values, c.votes = map[uint32]uint32{}, map[uint32]uint8{}
	c.lastDown, c.lastUp = map[uint32]wire.YoYoDown{}, map[uint32]wire.YoYoUp{}
	c.pending = nil
	c.greeted = make(map[uint32]bool, len(c.nbrs))
	c.roundAt = c.now
	c.keepAt = c.now.Add(c.cfg.Heartbeat)
	c.perRound = 0
	c.announce("new_round")
	for _, n := range c.nbrs {
		if n == c.gaveUp || c.silentBefore(n) {
			// The leader this member gave up, or a neighbour dead or cut
			// off before it: the round runs on the graph that answers; a
			// neighbour that turns out alive joins it, or, if too late for
			// that, starts another.
			c.edges[n] = silent
			continue
		}
		c.greet(n)
	}
	c.advance() // a member without neighbours has won at once
}

// silentBefore reports whether neighbour n was silent before this round:
// unheard for a leader timeout, and, if a leader's flood was heard, since
// a heartbeat before its last one. While a leader lives its flood crosses
// every edge every heartbeat, so a live neighbour was heard with the last
// flood; once the leader is dead nobody floods and every neighbour falls
// silent at once, which says nothing about it. (Going by the leader
// timeout alone, a member that joined a round a little after the one that
// started it took every live neighbour for dead, and each one's hello
// then forced another round.)
func (c *Core) silentBefore(n uint32) bool {
	if c.now.Sub(c.heard[n]) < c.cfg.LeaderTimeout {
		return false
	}
	return c.heardAt.IsZero() || c.heardAt.Sub(c.heard[n]) >= c.cfg.Heartbeat
}

func (c *Core) greet(n uint32) {
	c.greeted[n] = true
	c.send(n, wire.KindYoYoHello, wire.YoYoHello{Digest: c.digest}, true)
}

// silentAt is when neighbour n, if its hello is still missing in the
// round, counts as silent: unheard for a leader timeout (the flood
// crosses every edge every heartbeat while a leader lives, and a member
// in a round repeats its hello every heartbeat: keepalive), and given
// keepaliveGrace heartbeats in the round to be heard, half a heartbeat
// if it is the suspect (the leader whose flood stopped).
//
// The suspect's half heartbeat is for a member that joins a round
// another started: the leader died for both at about the same instant,
// so the joiner sees it silent a few milliseconds after the starter did
// (which marked it silent at once, having given it up); without it a
// joiner waited for the dead leader's hello until RoundTimeout (2 s),
// which was Yo-Yo's failover in the simulator: 2.4 s where the others
// take 0.4 s. Any other neighbour has keepaliveGrace heartbeats: after
// a leader's death every live neighbour is as silent as the dead leader
// (nobody floods), and its hello on the link may be late (a TCP segment
// lost: 0.2-0.6 s under 20% loss). Given half a heartbeat like the
// leader, such a live member was left out of the round; its hello then
// started another round, which left it out again: a round a second, the
// leader demoted each time, and a member every hello reached late led
// alone meanwhile (issue 29). Its keepalives say it lives: one in
// keepaliveGrace-1 heartbeats is enough.
func (c *Core) silentAt(n uint32) time.Time {
	grace := keepaliveGrace * c.cfg.Heartbeat
	if n == c.suspect {
		grace = c.cfg.Heartbeat / 2
	}
	return maxTime(c.heard[n].Add(c.cfg.LeaderTimeout), c.roundAt.Add(grace))
}

// keepaliveGrace is how many heartbeats a neighbour has, in a round, to
// be heard before it counts as silent (silentAt): its first keepalive
// leaves a heartbeat after it joined, and under 20% loss three in a row
// are lost once in 125 rounds.
const keepaliveGrace = 4

// silenceDue marks silent the neighbours whose hello is missing past
// silentAt, while the round is still orienting (no value sent yet); it
// reports whether it marked any.
func (c *Core) silenceDue() bool {
	if !c.orienting() {
		return false
	}
	marked := false
	for _, n := range c.nbrs {
		if c.edges[n] == unknown && !c.now.Before(c.silentAt(n)) {
			c.edges[n] = silent
			marked = true
		}
	}
	return marked
}

// nextSilence is the earliest silentAt of a neighbour whose hello is
// missing in an orienting round, or the zero time.
func (c *Core) nextSilence() time.Time {
	var at time.Time
	if !c.orienting() {
		return at
	}
	for _, n := range c.nbrs {
		if c.edges[n] == unknown {
			if s := c.silentAt(n); at.IsZero() || s.Before(at) {
				at = s
			}
		}
	}
	return at
}

// orienting: a round runs here and no value has been sent yet.
func (c *Core) orienting() bool {
	return c.electing && c.outcome == "" && c.iteration == 0 && !c.sentDown
}

// keepalive repeats, as datagrams, what this member sent each neighbour
// in the round (its hello, this iteration's value, its last vote), every
// Heartbeat while it elects. While no leader floods, it is how a
// neighbour knows this member lives (enter marks silent a neighbour
// unheard for a leader timeout, and a round that stalled must not take
// every live neighbour for dead); and it carries the round past a
// message that is late on the link (a TCP segment lost twice under 20%
// loss costs 0.6 s, a lost SYN a second; a few such on a round's path
// outlasted RoundTimeout). A neighbour that has them already takes the
// repeats as such (take: errRepeat). Not election messages: counted
// aside.
func (c *Core) keepalive() {
	c.keepAt = c.now.Add(c.cfg.Heartbeat)
	for _, n := range c.nbrs {
		if c.greeted[n] {
			c.repeat(n, wire.KindYoYoHello, wire.YoYoHello{Digest: c.digest})
		}
		if d, ok := c.lastDown[n]; ok {
			c.repeat(n, wire.KindYoYoDown, d)
		}
		if u, ok := c.lastUp[n]; ok {
			c.repeat(n, wire.KindYoYoUp, u)
		}
	}
}

// repeat sends a repeat as a datagram, counted aside.
func (c *Core) repeat(to uint32, k wire.Kind, p encoding.BinaryAppender) {
	b, ok := c.bugs.Encode(&c.events, k.String(), p, nil)
	if !ok {
		return
	}
	c.msgs = append(c.msgs, core.Message{To: to, Kind: k, Term: c.round, Payload: b})
	c.counts.SentAside(k, 1)
	c.keepalives++
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// ---- the two phases ------------------------------------------------------

func (c *Core) countDir(d dir) (ids []uint32) {
	for _, n := range c.nbrs {
		if c.edges[n] == d {
			ids = append(ids, n)
		}
	}
	return ids
}

// advance does whatever the round's state allows, until it has to wait.
func (c *Core) advance() {
	for c.electing && c.outcome == "" && c.step() {
	}
}

// step takes one step of the current iteration; it reports whether it
// moved (and may move again).
func (c *Core) step() bool {
	if len(c.countDir(unknown)) > 0 {
		return false // orientation: a hello is missing
	}
	ins, outs := c.countDir(in), c.countDir(out)
	if len(ins) == 0 && len(outs) == 0 && c.iteration == 0 && !c.sentDown {
		c.win() // nobody to elect with: a one-member cluster, or every neighbour silent
		return false
	}
	if !c.sentDown {
		if len(ins) == 0 {
			c.minValue = c.id // a source: its own ID
		} else {
			if len(c.values) < len(ins) {
				return false // YO-: waiting for values on every in-edge
			}
			c.minValue = 0
			for _, v := range c.values {
				if c.minValue == 0 || v < c.minValue {
					c.minValue = v
				}
			}
		}
		for _, o := range outs {
			d := wire.YoYoDown{Iteration: c.iteration, Value: c.minValue}
			c.send(o, wire.KindYoYoDown, d, true)
			c.lastDown[o] = d
		}
		c.sentDown = true
	}
	if len(c.votes) < len(outs) {
		return false // -YO: waiting for votes on every out-edge
	}
	// Every vote is in: flip the edges a NO came up (the notes: "N
	// inverts the edge it travels"), drop the pruned ones.
	yes := true
	for _, o := range outs {
		f := c.votes[o]
		switch {
		case f&wire.YoYoPrune != 0:
			c.edges[o] = pruned
		case f&wire.YoYoYes == 0:
			c.edges[o] = in
		}
		if f&wire.YoYoYes == 0 {
			yes = false
		}
	}
	if len(ins) == 0 {
		// A source: all YES keeps it a source (the last one, once every
		// edge is pruned, leads); any NO and it is one no more.
		if !yes {
			c.lost = true
		}
		if len(c.countDir(out)) == 0 && len(c.countDir(in)) == 0 {
			if yes && !c.lost {
				c.win()
			} else {
				c.outcome = "pruned"
			}
			return false
		}
		c.nextIteration()
		return true
	}
	c.vote(ins, yes)
	c.nextIteration()
	return true
}

// vote sends the -YO votes up the in-edges: YES to the senders of the
// minimum if every vote from below was YES (or this is a sink), NO to
// the others; and prunes: of several in-edges that brought the same
// value all but one, and the last in-edge of a sink that is left with one
// (a leaf: it has nothing more to decide).
func (c *Core) vote(ins []uint32, yes bool) {
	// The edges this member keeps besides its in-edges of this iteration:
	// out-edges that said YES, and those a NO just turned into in-edges.
	others := len(c.countDir(out)) + len(c.countDir(in)) - len(ins)
	keep := map[uint32]bool{}
	flags := map[uint32]uint8{}
	for _, u := range ins {
		v := c.values[u]
		var f uint8
		if yes && v == c.minValue {
			f = wire.YoYoYes
		}
		if keep[v] {
			f |= wire.YoYoPrune // the same value came another way
		}
		keep[v] = true
		flags[u] = f
	}
	remaining := 0
	var last uint32
	for _, u := range ins {
		if flags[u]&wire.YoYoPrune == 0 {
			remaining++
			last = u
		}
	}
	if others == 0 && remaining == 1 {
		flags[last] |= wire.YoYoPrune // a leaf: one edge left, nothing below it
	}
	for _, u := range ins {
		f := flags[u]
		v := wire.YoYoUp{Iteration: c.iteration, Flags: f}
		c.send(u, wire.KindYoYoUp, v, true)
		c.lastUp[u] = v
		switch {
		case f&wire.YoYoPrune != 0:
			c.edges[u] = pruned
		case f&wire.YoYoYes == 0:
			c.edges[u] = out
		}
	}
	if len(c.countDir(in)) == 0 && len(c.countDir(out)) == 0 {
		c.outcome = "pruned"
	}
}

// nextIteration moves to the next iteration and replays what came early.
func (c *Core) nextIteration() {
	c.iteration++
	c.sentDown, c.minValue = false, 0
	c.values, c.votes = map[uint32]uint32{}, map[uint32]uint8{}
	c.lastDown = map[uint32]wire.YoYoDown{}
	early := c.pending
	c.pending = nil
	for _, p := range early {
		if err := c.take(p); errors.Is(err, errRepeat) {
			c.repeats++
		} else if err != nil {
			c.counts.RejectErr(rejectLabels, err)
		}
	}
}

// win: this member is the last source. It leads the round and floods it.
func (c *Core) win() {
	if c.durable.PromisePending() {
		// Nothing announces the round yet (a member alone sends nothing),
		// so nothing was withheld: the win itself must wait (unsavedWin).
		c.unsavedWin = true
		return
	}
	c.unsavedWin = false
	c.outcome = "leader"
	c.electing = false
	c.lead = c.id
	c.events = append(c.events, c.announced.Elected(c.id, c.round, c.now))
	c.announce("elected")
	c.seq = 0
	c.beat()
}

// beat floods the leader's heartbeat.
func (c *Core) beat() {
	c.seq++
	c.nextBeat = c.now.Add(c.cfg.Heartbeat)
	for _, n := range c.nbrs {
		c.send(n, wire.KindYoYoLeader, wire.YoYoLeader{Leader: c.id, Seq: c.seq}, false)
	}
}

// ---- time ----------------------------------------------------------------

// Tick runs the timers due at now.
func (c *Core) Tick(now time.Time) {
	if now.After(c.now) {
		c.now = now
	}
	switch {
	case c.lead == c.id:
		if !c.now.Before(c.nextBeat) {
			c.beat()
		}
	case c.lead != 0:
		if !c.now.Before(c.leaderDeadline()) {
			c.counts.LeaderTimeouts++
			c.gaveUp, c.lead = c.lead, 0
			c.announce("leader_lost")
			c.newRound(c.round, "leader_lost")
		}
	case c.electing:
		if c.unsavedWin && !c.durable.PromisePending() {
			// The round is on disk now: the win it waited for, if the
			// round still gives it (a hello of a neighbour it counted
			// silent may have come meanwhile). If not, the round's
			// timers below go on: left waiting for a win that no longer
			// comes, one forged hello kept the member a candidate for
			// good, ticked every 10 ms (found by review).
			c.unsavedWin = false
			c.advance()
			if !c.electing {
				break
			}
		}
		if !c.now.Before(c.roundAt.Add(c.cfg.RoundTimeout)) {
			c.newRound(c.round, "round_timeout")
			break
		}
		if c.silenceDue() {
			c.advance()
		}
		if c.electing && !c.now.Before(c.keepAt) {
			c.keepalive()
		}
	default:
		if !c.now.Before(c.startAt) {
			c.newRound(c.round, "startup")
		}
	}
}

// Deadline is when Tick next has something to do.
func (c *Core) Deadline() time.Time {
	switch {
	case c.lead == c.id:
		return c.nextBeat
	case c.lead != 0:
		return c.leaderDeadline()
	case c.electing:
		if c.unsavedWin && !c.durable.PromisePending() {
			// After this instant: a deadline at the last Tick's is
			// taken for a core's bug (a stale deadline, ticked 10 ms
			// later).
			return c.now.Add(time.Nanosecond)
		}
		at := c.roundAt.Add(c.cfg.RoundTimeout)
		if s := c.nextSilence(); !s.IsZero() && s.Before(at) {
			at = s
		}
		if c.keepAt.Before(at) {
			at = c.keepAt
		}
		return at
	}
	return c.startAt
}

// leaderDeadline is when this member gives the leader up: a leader
// timeout after its flood was last heard, plus a Stagger for every member
// below this one but the leader (see Config.Stagger).
func (c *Core) leaderDeadline() time.Time {
	below := 0
	for _, m := range c.cfg.Members {
		if m < c.id && m != c.lead {
			below++
		}
	}
	return c.heardAt.Add(c.cfg.LeaderTimeout + time.Duration(below)*c.cfg.Stagger)
}

// ---- messages --------------------------------------------------------------

// Step feeds one received frame.
func (c *Core) Step(m core.Message) error {
	p, err := c.accept(m)
	if err == nil && m.Term > c.round {
		err = c.guard.Admit(c.limit, int64(c.now.Sub(c.start)), c.round, m.Term)
	}
	if err != nil {
		c.counts.RejectErr(rejectLabels, err)
		return err
	}
	if m.Time.After(c.now) {
		c.now = m.Time
	}
	c.counts.Received(m.Kind)
	c.heard[m.From] = c.now
	if m.From == c.gaveUp {
		c.gaveUp = 0 // alive after all (restarted, or back from a partition)
	}
	if !c.electing && c.round != 0 && c.edges[m.From] == silent && m.Term <= c.round {
		// A neighbour the decided round went without is back: the round's
		// leader is the smallest ID of the graph that answered, which
		// may not be the graph's. Elect again, with it.
		c.newRound(c.round, "neighbour_back")
		return nil
	}
	if m.Kind == wire.KindYoYoLeader {
		c.stepLeader(m, p.leader)
		return nil
	}
	switch {
	case m.Term < c.round:
		c.counts.Stale++
		return nil
	case m.Term == c.round && c.took(m.From) && (!c.electing || m.Kind == wire.KindYoYoHello):
		// A message repeated (keepalive) by a neighbour that took part in
		// this round: a hello once the edge is oriented, anything once
		// this member has decided.
		c.repeats++
		return nil
	case m.Term > c.round || !c.electing:
		if m.Term == c.round && !c.electing {
			// A message of the round this member already decided: a
			// neighbour restarted into it; a new round settles it.
			c.newRound(c.round, "neighbour_restarted")
			return nil
		}
		c.enter(m.Term)
	}
	if m.Kind == wire.KindYoYoHello && c.edges[m.From] == silent {
		if c.iteration > 0 || c.sentDown {
			// A neighbour left out is alive after all, and the round has
			// gone too far to take it in: another round, with it.
			c.newRound(c.round, "neighbour_back")
			return nil
		}
		c.edges[m.From] = unknown
		if !c.greeted[m.From] {
			c.greet(m.From)
		}
	}
	if err := c.take(pendingMsg{from: m.From, kind: m.Kind, down: p.down, up: p.up}); errors.Is(err, errRepeat) {
		c.repeats++
		return nil
	} else if err != nil {
		c.counts.RejectErr(rejectLabels, err)
		return err
	}
	c.advance()
	return nil
}

// took reports whether neighbour n took part in the current round: its
// hello oriented the edge.
func (c *Core) took(n uint32) bool {
	switch c.edges[n] {
	case in, out, pruned:
		return true
	}
	return false
}

// take applies one message of the current round.
func (c *Core) take(p pendingMsg) error {
	switch p.kind {
	case wire.KindYoYoHello:
		if c.edges[p.from] != unknown {
			return fmt.Errorf("%w: second hello from %d", ErrOutOfTurn, p.from)
		}
		if p.from < c.id {
			c.edges[p.from] = in
		} else {
			c.edges[p.from] = out
		}
	case wire.KindYoYoDown:
		switch {
		case p.down.Iteration < c.iteration || c.pendingHas(p):
			return errRepeat // an earlier iteration's, taken then
		case p.down.Iteration == c.iteration+1 && len(c.pending) < 2*len(c.nbrs):
			c.pending = append(c.pending, p)
		case p.down.Iteration != c.iteration || c.edges[p.from] != in:
			return fmt.Errorf("%w: value from %d in iteration %d (here %d, edge %v)", ErrOutOfTurn, p.from, p.down.Iteration, c.iteration, c.edges[p.from])
		default:
			if v, dup := c.values[p.from]; dup && v == p.down.Value {
				return errRepeat
			} else if dup {
				return fmt.Errorf("%w: second value from %d (%d, then %d)", ErrOutOfTurn, p.from, v, p.down.Value)
			}
			c.values[p.from] = p.down.Value
		}
	case wire.KindYoYoUp:
		switch {
		case p.up.Iteration < c.iteration || c.pendingHas(p):
			return errRepeat
		case p.up.Iteration == c.iteration+1 && len(c.pending) < 2*len(c.nbrs):
			c.pending = append(c.pending, p)
		case p.up.Iteration != c.iteration || c.edges[p.from] != out || !c.sentDown:
			return fmt.Errorf("%w: vote from %d in iteration %d (here %d, edge %v)", ErrOutOfTurn, p.from, p.up.Iteration, c.iteration, c.edges[p.from])
		default:
			if f, dup := c.votes[p.from]; dup && f == p.up.Flags {
				return errRepeat
			} else if dup {
				return fmt.Errorf("%w: second vote from %d (%#x, then %#x)", ErrOutOfTurn, p.from, f, p.up.Flags)
			}
			c.votes[p.from] = p.up.Flags
		}
	}
	return nil
}

// errRepeat: a message this member took already (a neighbour's
// keepalive repeats it), or one of an iteration it is past: ignored and
// counted as a repeat, not refused.
var errRepeat = errors.New("yoyo: a repeat of a message already taken")

// pendingHas reports whether a message of the next iteration is held
// already.
func (c *Core) pendingHas(p pendingMsg) bool {
	for _, q := range c.pending {
		if q == p {
			return true
		}
	}
	return false
}

// stepLeader is the leader's flood: follow it and pass it on once.
func (c *Core) stepLeader(m core.Message, l wire.YoYoLeader) {
	switch {
	case m.Term < c.round:
		c.counts.Stale++
		return
	case l.Leader == c.id && c.lead != c.id:
		// A flood naming this member, which does not lead in this life:
		// its own from an earlier life (a neighbour relays every flood
		// back to its sender, so it returns after a quick restart), or a
		// forgery. Following it would lead that round a second time (one
		// fencing token for two leaderships). A new round, above it,
		// elects again.
		c.newRound(m.Term, "earlier_life")
		return
	case m.Term > c.round && c.lead != 0:
		// Another leader, of a newer round, while we follow ours: two
		// sides that elected apart meet again. A new round elects one.
		c.newRound(m.Term, "two_leaders")
		return
	case m.Term == c.round && c.lead != 0 && c.lead != l.Leader:
		// Two winners of one round: never from honest members; a new
		// round settles it rather than following both in turn.
		c.newRound(m.Term, "two_leaders")
		return
	case l.Leader > c.id && c.lead != l.Leader:
		// A round this member did not take part in (it was down, or cut
		// off) elected a larger ID than its own: Yo-Yo elects the
		// smallest, so that round did not see this member. Elect again.
		c.newRound(m.Term, "smaller_id")
		return
	case m.Term == c.round && c.lead == c.id:
		return // our own flood, back
	case m.Term == c.round && c.lead == l.Leader && l.Seq <= c.seq:
		return // already relayed
	}
	if m.Term > c.round {
		c.round = m.Term
		c.durable.Change(true)
	}
	first := c.lead != l.Leader
	c.electing, c.outcome = false, ""
	c.lead, c.seq, c.heardAt = l.Leader, l.Seq, c.now
	if first {
		c.announce("flood")
	}
	// Relayed to every neighbour, the sender too: every edge carries the
	// flood both ways, so each member hears each neighbour every
	// heartbeat (what a round's start goes by).
	for _, n := range c.nbrs {
		c.send(n, wire.KindYoYoLeader, l, false)
	}
}

// decoded is a frame's checked payload.
type decoded struct {
	down   wire.YoYoDown
	up     wire.YoYoUp
	leader wire.YoYoLeader
}

func (c *Core) accept(m core.Message) (decoded, error) {
	var p decoded
	if m.From == c.id {
		return p, ErrFromSelf
	}
	if !slices.Contains(c.cfg.Members, m.From) {
		return p, fmt.Errorf("%w: %d", core.ErrUnknownMember, m.From)
	}
	if !slices.Contains(c.nbrs, m.From) {
		return p, fmt.Errorf("%w: %d", ErrNotNeighbour, m.From)
	}
	var err error
	switch m.Kind {
	case wire.KindYoYoHello:
		var h wire.YoYoHello
		if err = h.UnmarshalBinary(m.Payload); err == nil && h.Digest != c.digest {
			err = fmt.Errorf("%w: %d has %08x, we have %08x", ErrTopology, m.From, h.Digest, c.digest)
		}
	case wire.KindYoYoDown:
		if err = p.down.UnmarshalBinary(m.Payload); err == nil && !slices.Contains(c.cfg.Members, p.down.Value) {
			err = fmt.Errorf("%w: value %d from %d", ErrBadValue, p.down.Value, m.From)
		}
	case wire.KindYoYoUp:
		err = p.up.UnmarshalBinary(m.Payload)
	case wire.KindYoYoLeader:
		if err = p.leader.UnmarshalBinary(m.Payload); err == nil && !slices.Contains(c.cfg.Members, p.leader.Leader) {
			err = fmt.Errorf("%w: leader %d from %d", ErrBadValue, p.leader.Leader, m.From)
		}
		if err == nil && epoch.Owner(m.Term) == 0 {
			err = fmt.Errorf("%w: leader flood of round %#x, which nobody started", ErrOutOfTurn, m.Term)
		}
	default:
		return p, fmt.Errorf("%w: %v", core.ErrUnexpectedKind, m.Kind)
	}
	if err != nil {
		return p, fmt.Errorf("yoyo: %v from %d: %w", m.Kind, m.From, err)
	}
	return p, nil
}

// StepDatagram rejects foreign traffic.
func (c *Core) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }

// ---- operations and output ------------------------------------------------------

// Resign is refused: Yo-Yo elects the smallest ID of the graph, so a
// leader that stepped down would win the next round again.
func (c *Core) Resign(time.Time) error { return elect.ErrCannotResign }

// Leader is the leader of the current round, if known.
func (c *Core) Leader() (uint32, uint64, bool) { return c.lead, c.round, c.lead != 0 }

func (c *Core) role() elect.Role {
	switch {
	case c.lead == c.id && c.lead != 0:
		return elect.RoleLeader
	case c.electing && c.outcome == "" && !c.lost && len(c.countDir(in)) == 0 && len(c.countDir(unknown)) == 0:
		return elect.RoleCandidate // a source
	}
	return elect.RoleFollower
}

// Role is leader, candidate while a source, else follower.
func (c *Core) Role() elect.Role { return c.role() }

// Changes drains the leadership changes.
func (c *Core) Changes() []elect.Change { return c.announced.Changes() }

// Ready drains what the core wants done; State carries the round while it
// is not confirmed on disk, and no message leaves before it is.
func (c *Core) Ready() core.Ready {
	rd := core.Ready{Messages: c.msgs, Events: c.events}
	c.durable.Ready(&rd, func() []byte { return elect.EncodeWord(stateVersion, c.round) })
	c.msgs, c.events = nil, nil
	return rd
}

// Advance is the driver's report on the last Ready.
func (c *Core) Advance(saved bool) { c.durable.Advance(saved) }

func (c *Core) send(to uint32, k wire.Kind, p encoding.BinaryAppender, stream bool) {
	payload, ok := c.bugs.Encode(&c.events, k.String(), p, nil)
	if !ok {
		return
	}
	c.msgs = append(c.msgs, core.Message{To: to, Kind: k, Term: c.round, Payload: payload, Stream: stream})
	c.counts.Sent(k, 1)
	if k != wire.KindYoYoLeader {
		c.perRound++
	}
}

func (c *Core) announce(reason string) {
	c.events = append(c.events, c.announced.Leader(c.lead, c.round, c.now, reason)...)
	if c.lead != 0 {
		c.counts.Decided(c.lead, c.now)
	}
}
