package sim

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// DefaultStart is the virtual instant a simulation starts at when
// Config.Start is zero: a fixed date, so that runs (and their traces) do not
// depend on when they happen.
var DefaultStart = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// Config configures a simulation.
type Config struct {
	// Seed is the only source of randomness: link draws, tick phases, and
	// the Rand of every core (NewRand).
	Seed int64
	// Start is the virtual (true) time at the start. Default DefaultStart.
	Start time.Time
	// TickInterval is every node's tick period on its own clock.
	// Default 10 ms, as the daemons.
	TickInterval time.Duration
	// DefaultLink applies to every directed link not set with SetLink.
	// Zero: LANLink().
	DefaultLink LinkConfig
	// Cluster is the cluster name the nodes share. Default "sim".
	Cluster string
	// Keys, when set, make every node authenticate its frames (as
	// --key-file does).
	Keys []wire.Key
	// Multicast makes nodes send broadcasts as one multicast frame (one copy
	// per other node, each through its own link) instead of one unicast
	// frame per member.
	Multicast bool
	// TraceLimit bounds the kept message trace (the Digest still covers
	// everything). 0: 1,000,000 entries; negative: unbounded.
	TraceLimit int
}

func (c *Config) validate() error {
	if c.Start.IsZero() {
		c.Start = DefaultStart
	}
	if c.TickInterval == 0 {
		c.TickInterval = 10 * time.Millisecond
	}
	if c.TickInterval < 0 {
		return fmt.Errorf("sim: negative tick interval %v", c.TickInterval)
	}
	if c.DefaultLink == (LinkConfig{}) {
		c.DefaultLink = LANLink()
	}
	if err := c.DefaultLink.validate(); err != nil {
		return err
	}
	if c.Cluster == "" {
		c.Cluster = "sim"
	}
	if c.TraceLimit == 0 {
		c.TraceLimit = 1_000_000
	}
	return nil
}

// Sim is a deterministic discrete-event simulation of a cluster. It is not
// safe for concurrent use, and never needs to be: nothing in it runs on its
// own.
type Sim struct {
	cfg     Config
	now     time.Duration // virtual time since cfg.Start
	q       queue
	seq     uint64
	rnd     *rand.Rand // link draws and tick phases
	streams uint64     // NewRand streams handed out
	started bool

	nodes  map[uint32]*simNode
	order  []uint32 // node IDs ascending: every iteration over nodes uses it
	byAddr map[netip.AddrPort]uint32
	groups map[netip.AddrPort]bool // AddGroup
	links  map[linkKey]*link

	packets   uint64
	trace     *tracer
	events    []Event
	sent      map[wire.Kind]uint64 // frames written, by kind (a multicast frame once)
	delivered map[wire.Kind]uint64 // frames accepted by a receiver, by kind
	datagrams uint64
	onSend    func(SentFrame)
	onRefused func(Refused)
	onReady   func(Ready)
	traces    *traceFiles // RecordTraces; nil: not recording
}

// New returns an empty simulation. It panics on an invalid Config: a
// simulation is built by tests, where a loud stop is the useful answer.
func New(cfg Config) *Sim {
	if err := cfg.validate(); err != nil {
		panic(err)
	}
	return &Sim{
		cfg:       cfg,
		rnd:       rand.New(rand.NewPCG(uint64(cfg.Seed), 0x73696d)), // "sim"
		nodes:     map[uint32]*simNode{},
		byAddr:    map[netip.AddrPort]uint32{},
		links:     map[linkKey]*link{},
		trace:     newTracer(cfg.TraceLimit),
		sent:      map[wire.Kind]uint64{},
		delivered: map[wire.Kind]uint64{},
	}
}

// Config returns the configuration with its defaults filled in.
func (s *Sim) Config() Config { return s.cfg }

// Seed returns the simulation's seed.
func (s *Sim) Seed() int64 { return s.cfg.Seed }

// Now returns the virtual true time: the ground truth every node's clock is
// measured against.
func (s *Sim) Now() time.Time { return s.cfg.Start.Add(s.now) }

// Elapsed returns the virtual time since Start.
func (s *Sim) Elapsed() time.Duration { return s.now }

// NewRand returns a new random source derived from the seed, for a core's
// Config.Rand: each call gives the next independent stream, so cores built
// in the same order get the same randomness in every run of a seed.
func (s *Sim) NewRand() *rand.Rand {
	s.streams++
	return rand.New(rand.NewPCG(uint64(s.cfg.Seed), s.streams))
}

// AddNode adds member id at addr (zero addr: 127.0.0.1:7000+id). newCore
// builds its core from the environment the simulator hands it, as the
// daemon does (core.Env): the member IDs, the node's clock reading, a Rand
// derived from the seed, the node and incarnation, the node's Lamport
// clock, and the persisted state (nil at the first start, the last
// Output.State at a restart). clk configures the node's clock (a zero
// clk.Seed is derived from the simulation's seed and id). Nodes are added
// before the simulation first runs (the member list is static); the nodes
// start together at the first Run, RunUntil or Step, each at a random phase
// of its first tick.
func (s *Sim) AddNode(id uint32, addr netip.AddrPort, newCore func(env core.Env) core.Core, clk clock.SimConfig) {
	switch {
	case s.started:
		panic(fmt.Sprintf("sim: AddNode(%d) after the simulation started: the member list is static", id))
	case id == 0:
		panic("sim: node ID 0 is reserved")
	case s.nodes[id] != nil:
		panic(fmt.Sprintf("sim: node %d added twice", id))
	case newCore == nil:
		panic(fmt.Sprintf("sim: node %d has no core constructor", id))
	}
	if !addr.IsValid() {
		addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(7000+id))
	}
	if other, ok := s.byAddr[addr]; ok {
		panic(fmt.Sprintf("sim: nodes %d and %d share address %v", other, id, addr))
	}
	n := &simNode{id: id, addr: addr, newCore: newCore}
	n.writeMin, n.writeMax = envWriteLatency()
	if clk.Seed == 0 {
		// Wander, if any, from the simulation's seed too: distinct per
		// node, identical across runs.
		clk.Seed = s.cfg.Seed*1_000_003 + int64(id)
	}
	n.clk = clock.NewSim(clk, s.Now)
	s.nodes[id] = n
	s.byAddr[addr] = id
	s.order = append(s.order, id)
	slices.Sort(s.order)
}

// AddGroup makes addr a broadcast address (or multicast group) of the
// simulated LAN: a datagram sent to it reaches every other node, each copy
// over the sender's link to that node, from the sender's address (NTP's
// broadcast mode, timed --broadcast).
func (s *Sim) AddGroup(addr netip.AddrPort) {
	if s.groups == nil {
		s.groups = map[netip.AddrPort]bool{}
	}
	s.groups[addr] = true
}

// IDs returns the node IDs, ascending.
func (s *Sim) IDs() []uint32 { return slices.Clone(s.order) }

// Addr returns node id's address.
func (s *Sim) Addr(id uint32) netip.AddrPort { return s.mustNode(id).addr }

func (s *Sim) mustNode(id uint32) *simNode {
	n, ok := s.nodes[id]
	if !ok {
		panic(fmt.Sprintf("sim: no node %d", id))
	}
	return n
}

// Start builds and starts every node. Run, RunUntil and Step call it; call
// it directly to look at the nodes before any time passes.
func (s *Sim) Start() {
	if s.started {
		return
	}
	s.started = true
	for _, id := range s.order {
		s.boot(s.nodes[id])
	}
}

// Step fires the next scheduled action, advancing virtual time to it. It
// returns false when nothing is scheduled (every node crashed or paused).
func (s *Sim) Step() bool {
	s.Start()
	if len(s.q) == 0 {
		return false
	}
	it, _ := s.next(s.q[0].at)
	s.now = it.at
	it.fn()
	return true
}

// Run advances virtual time by d, firing everything due meanwhile.
func (s *Sim) Run(d time.Duration) {
	s.Start()
	end := s.now + d
	for {
		it, ok := s.next(end)
		if !ok {
			break
		}
		s.now = it.at
		it.fn()
	}
	s.now = end
}

// RunUntil runs until pred holds (checked before the first action and
// after each one) or max virtual time passed, and reports whether pred
// held. Virtual time stops at the action that made pred true.
func (s *Sim) RunUntil(pred func() bool, max time.Duration) bool {
	s.Start()
	end := s.now + max
	if pred() {
		return true
	}
	for {
		it, ok := s.next(end)
		if !ok {
			break
		}
		s.now = it.at
		it.fn()
		if pred() {
			return true
		}
	}
	s.now = end
	return false
}

// ErrNotRunning is returned by Do for a crashed or paused node.
var ErrNotRunning = errors.New("sim: node is not running")

// Do calls f with node id's core at the current virtual instant (a lock
// request, an operator command through the control API), then carries out
// what the core wants done, exactly as after a Tick. While the node's loop
// is blocked in a write (SetWriteLatency), f waits its turn, as the
// daemon's control call waits for its loop: after the write and the frames
// that came before it; the simulation runs on meanwhile (every node), and
// Do returns once f was called. A node that crashes or is stopped before
// then never calls f: ErrNotRunning.
func (s *Sim) Do(id uint32, f func(c core.Core)) error {
	s.Start()
	n := s.mustNode(id)
	if !n.up || n.paused {
		return fmt.Errorf("%w: %d", ErrNotRunning, id)
	}
	if !n.writing {
		f(n.node.Core())
		s.drain(n)
		return nil
	}
	// Stepped mid-write, a call made what the write's Ready promised and
	// a failure then took back look as if it came first (a multicast made
	// during a failed write went out before the withdrawn one's
	// successors: FIFO and causal order broken in the simulator only).
	done, gone := false, false
	n.blocked = append(n.blocked, blockedWork{do: func(c core.Core) {
		if !gone {
			done = true
			f(c)
		}
	}})
	life := n.life
	for !done && n.up && !n.paused && n.life == life && s.Step() {
	}
	if !done {
		gone = true
		return fmt.Errorf("%w: %d (it stopped while the call waited for its write)", ErrNotRunning, id)
	}
	return nil
}

// Node returns node id's node.Node (nil before Start). After a restart it is
// a new one.
func (s *Sim) Node(id uint32) *node.Node { return s.mustNode(id).node }

// Core returns node id's current core (the dead one while it is crashed).
func (s *Sim) Core(id uint32) core.Core {
	n := s.mustNode(id)
	if n.node == nil {
		return nil
	}
	return n.node.Core()
}

// Clock returns node id's clock. It survives restarts: it is the host's
// clock, not the process's.
func (s *Sim) Clock(id uint32) *clock.Sim { return s.mustNode(id).clk }

// Disk returns a copy of node id's persisted state.
func (s *Sim) Disk(id uint32) []byte { return bytes.Clone(s.mustNode(id).disk) }

// DiskLog returns a copy of the records node id appended after its Disk
// (core.Ready.Entries), as a restart hands them to its core (Env.Log).
func (s *Sim) DiskLog(id uint32) [][]byte { return cloneLog(s.mustNode(id).log) }

// Up reports whether node id is running (not crashed; it may be paused).
func (s *Sim) Up(id uint32) bool { return s.mustNode(id).up }

// Paused reports whether node id is paused.
func (s *Sim) Paused(id uint32) bool { return s.mustNode(id).paused }

// Running reports whether node id is up and not paused.
func (s *Sim) Running(id uint32) bool {
	n := s.mustNode(id)
	return n.up && !n.paused
}

// Incarnation returns node id's current incarnation (1 at the first start).
func (s *Sim) Incarnation(id uint32) uint32 { return s.mustNode(id).incarnation }

// Counters returns node id's counters.
func (s *Sim) Counters(id uint32) Counters { return s.mustNode(id).counters }

// Sent returns how many frames of kind k were written since the last
// ResetCounts (a multicast frame counts once, a broadcast over unicast once
// per member): the cost of a protocol in messages.
func (s *Sim) Sent(k wire.Kind) uint64 { return s.sent[k] }

// CheckDeclared says, as an error naming each, which frames were sent
// since the last ResetCounts of kinds outside kinds (an algorithm's
// registration: mutex.Factory.Kinds, elect.Algorithm.Kinds), the node's
// own (epoch refusals, configuration announcements) aside, that none of
// kinds was sent, or that one of kinds is not a registered kind: the test that an algorithm declares what it sends.
func (s *Sim) CheckDeclared(kinds []wire.Kind) error {
	var errs []error
	for _, k := range kinds {
		if !k.Known() {
			errs = append(errs, fmt.Errorf("its registration lists %v, which wire's registry does not know", k))
		}
	}
	var declared uint64
	for _, k := range slices.Sorted(maps.Keys(s.sent)) {
		switch n := s.sent[k]; {
		case slices.Contains(kinds, k):
			declared += n
		case n > 0 && k != wire.KindEpochRefused && k != wire.KindConfig:
			errs = append(errs, fmt.Errorf("sent %d frames of %v, which its registration does not list (Kinds: %v)", n, k, kinds))
		}
	}
	if declared == 0 {
		errs = append(errs, fmt.Errorf("sent none of its kinds %v", kinds))
	}
	return errors.Join(errs...)
}

// Delivered returns how many frames of kind k receivers accepted since the
// last ResetCounts.
func (s *Sim) Delivered(k wire.Kind) uint64 { return s.delivered[k] }

// DatagramsSent returns how many foreign datagrams were written since the
// last ResetCounts.
func (s *Sim) DatagramsSent() uint64 { return s.datagrams }

// ResetCounts zeroes Sent, Delivered and DatagramsSent, so a test can
// measure the cost of one phase (an election, a lock handoff).
func (s *Sim) ResetCounts() {
	clear(s.sent)
	clear(s.delivered)
	s.datagrams = 0
}
