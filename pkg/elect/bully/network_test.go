package bully

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/wire"
)

// network is a minimal synchronous cluster for unit tests: messages are
// delivered in FIFO order with no delay, ticks are applied to every live
// node in ID order, and durable state is kept per node exactly as a driver
// would (persisted before the messages of the same Ready go out). The
// randomized tests over delays, loss and partitions live in sim_test.go.
type network struct {
	t       *testing.T
	members []Member
	cfg     func(id uint32) Config
	rand    func(id uint32) *rand.Rand
	nodes   map[uint32]*Core
	order   []uint32
	state   map[uint32][]byte
	down    map[uint32]bool
	// diskFull makes a node's state writes fail.
	diskFull map[uint32]bool
	cut      map[[2]uint32]bool // directed links that drop everything
	loss     float64            // probability that a message is dropped
	rnd      *rand.Rand         // draws the losses
	queue    []core.Message
	now      time.Time
	// onlyDue ticks a node only when its Deadline has come, as a driver
	// that sleeps until then does: the outcome must be the same.
	onlyDue bool

	delivered map[wire.Kind]int // messages that reached a live node
	events    []nodeEvent
	claims    map[uint64]claim  // term -> the node that reported itself elected, and in which life
	maxTerm   map[uint32]uint64 // highest term each node ever had, across restarts
	lives     map[uint32]int    // starts of each node
	// kill, when set, is asked at each Ready of a live node that carries
	// State where the node dies (SIGKILL at that instant): killNone, or
	// killAtWrite (before the write: a Ready without Promise has sent its
	// messages, as the daemon does, the others nothing), or
	// killAfterWrite (written, nothing sent).
	kill func(id uint32, rd core.Ready) int
}

const (
	killNone = iota
	killAtWrite
	killAfterWrite
)

type claim struct {
	node uint32
	life int
}

type nodeEvent struct {
	node uint32
	core.Event
}

func (e nodeEvent) String() string { return fmt.Sprintf("%d:%s%v", e.node, e.Name, e.Args) }

// newNetwork builds a cluster of members; mod (may be nil) adjusts each
// node's config.
func newNetwork(t *testing.T, members []Member, mod func(id uint32, c *Config)) *network {
	t.Helper()
	n := &network{
		t:         t,
		members:   members,
		nodes:     make(map[uint32]*Core),
		state:     make(map[uint32][]byte),
		down:      make(map[uint32]bool),
		diskFull:  make(map[uint32]bool),
		cut:       make(map[[2]uint32]bool),
		delivered: make(map[wire.Kind]int),
		claims:    make(map[uint64]claim),
		maxTerm:   make(map[uint32]uint64),
		lives:     make(map[uint32]int),
		now:       time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	n.cfg = func(id uint32) Config {
		c := DefaultLANConfig()
		c.Members = members
		if mod != nil {
			mod(id, &c)
		}
		return c
	}
	n.rand = func(id uint32) *rand.Rand { return rand.New(rand.NewPCG(uint64(id), 1)) }
	for _, m := range members {
		n.order = append(n.order, m.ID)
		n.start(m.ID)
	}
	return n
}

func ids(n int) []Member {
	ms := make([]Member, n)
	for i := range ms {
		ms[i] = Member{ID: uint32(i + 1)}
	}
	return ms
}

func (n *network) start(id uint32) {
	n.t.Helper()
	b, err := New(core.Env{ID: id, Now: n.now, Rand: n.rand(id), State: n.state[id]}, n.cfg(id))
	if err != nil {
		n.t.Fatalf("node %d: %v", id, err)
	}
	n.nodes[id] = b
	n.down[id] = false
	n.lives[id]++
	n.drain(id)
}

func (n *network) crash(id uint32) {
	n.down[id] = true
	n.nodes[id] = nil
	// What was not persisted is gone (nothing that carried it left: drain
	// checks), so the term a restart may not go below is the persisted one.
	n.maxTerm[id] = n.persisted(id)
}

// drain applies one node's Ready: persist, enqueue, record events.
func (n *network) drain(id uint32) {
	n.t.Helper()
	if tm := n.nodes[id].Term(); tm < n.maxTerm[id] {
		n.t.Fatalf("node %d: term went back %d -> %d", id, n.maxTerm[id], tm)
	} else {
		n.maxTerm[id] = tm
	}
	rd := n.nodes[id].Ready()
	// What is on disk before this Ready's write: a Ready without Promise
	// may send before it writes (core.Ready), so its messages must be
	// covered by it (a claim by the reservation).
	covered := n.covered(id)
	unsent := false // the Ready's claim never left (its promise unwritten)
	if rd.State != nil && n.kill != nil {
		switch n.kill(id, rd) {
		case killAtWrite:
			if !rd.Promise {
				n.send(id, rd.Messages, covered)
				n.record(id, rd.Events, true)
			}
			n.crash(id)
			return
		case killAfterWrite:
			n.state[id] = rd.State
			n.crash(id)
			return
		}
	}
	if rd.State != nil && n.diskFull[id] {
		// The write fails: as the daemon does, nothing of a Ready whose
		// promise could not be written leaves, and the core is told.
		if rd.Promise {
			rd.Messages = nil
			unsent = true
		}
		n.nodes[id].Advance(false)
	} else if rd.State != nil {
		defer n.nodes[id].Advance(true)
		old, _ := Restore(n.state[id])
		nt, err := Restore(rd.State)
		if err != nil {
			n.t.Fatalf("node %d wrote bad state: %v", id, err)
		}
		if nt < old {
			n.t.Fatalf("node %d: persisted term went back %d -> %d", id, old, nt)
		}
		n.state[id] = rd.State
	}
	if rd.Promise || rd.State == nil {
		covered = n.covered(id)
	}
	n.send(id, rd.Messages, covered)
	// The typed changes (elect.Elector) are exactly the leadership events
	// of the same Ready, in order: hooks and watch read the same thing.
	var leadership []string
	for _, e := range rd.Events {
		if elect.LeadershipEvent(e.Name) {
			leadership = append(leadership, fmt.Sprint(e.Name, e.Args))
		}
	}
	var changes []string
	for _, c := range n.nodes[id].Changes() {
		e := c.CoreEvent()
		changes = append(changes, fmt.Sprint(e.Name, e.Args))
	}
	if !slices.Equal(leadership, changes) {
		n.t.Fatalf("node %d: changes %q, leadership events %q", id, changes, leadership)
	}
	// A reserving member reports a claim only once a write covers it:
	// every claim it reports counts, whether its COORDINATOR left or not
	// (electd runs its hooks on the event, not on the frame).
	n.record(id, rd.Events, !unsent || n.cfg(id).Reserve)
}

// record keeps a Ready's events and checks its claims, if they left (a
// claim that never left may be made again): no term is claimed twice,
// by two nodes or by one in two lives.
func (n *network) record(id uint32, events []core.Event, left bool) {
	n.t.Helper()
	for _, e := range events {
		n.events = append(n.events, nodeEvent{id, e})
		if !left || !(e.Name == EventElected || (e.Name == EventLeaderElected && argU32(e, "leader") == id)) {
			continue
		}
		term := argU64(e, "term")
		c := claim{id, n.lives[id]}
		if prev, ok := n.claims[term]; ok && prev != c {
			n.t.Fatalf("term %d claimed twice: by %d (life %d) and %d (life %d)", term, prev.node, prev.life, id, c.life)
		}
		n.claims[term] = c
	}
}

// send queues a Ready's messages, which the disk covered as covered says
// (n.covered): no frame carries a term above the term on disk or its
// reservation (a claim on it, and what follows until the write that
// brings the term up to it).
func (n *network) send(id uint32, msgs []core.Message, covered [2]uint64) {
	n.t.Helper()
	for _, m := range msgs {
		if m.Term > max(covered[0], covered[1]) {
			n.t.Fatalf("node %d sends %v of term %d before persisting it (persisted %d, reserved %d)", id, m.Kind, m.Term, covered[0], covered[1])
		}
		m.From = id
		if m.To == core.Broadcast {
			for _, to := range n.order {
				if to != id {
					mm := m
					mm.To = to
					n.queue = append(n.queue, mm)
				}
			}
			continue
		}
		n.queue = append(n.queue, m)
	}
}

func (n *network) persisted(id uint32) uint64 {
	t, _ := Restore(n.state[id])
	return t
}

// covered is the term on id's disk and its reservation.
func (n *network) covered(id uint32) [2]uint64 {
	t, r, _ := RestoreReserved(n.state[id])
	return [2]uint64{t, r}
}

// deliver runs the queue until it is empty.
func (n *network) deliver() {
	n.t.Helper()
	for steps := 0; len(n.queue) > 0; steps++ {
		if steps > 100000 {
			n.t.Fatal("message storm: queue never drains")
		}
		m := n.queue[0]
		n.queue = n.queue[1:]
		if n.down[m.To] || n.cut[[2]uint32{m.From, m.To}] {
			continue
		}
		if n.loss > 0 && n.rnd.Float64() < n.loss {
			continue
		}
		n.delivered[m.Kind]++
		m.Time = n.now
		if err := n.nodes[m.To].Step(m); err != nil {
			n.t.Fatalf("node %d rejected %v from %d: %v", m.To, m.Kind, m.From, err)
		}
		n.drain(m.To)
	}
}

// tick advances every live node by k ticks, delivering after each.
func (n *network) tick(k int) {
	n.t.Helper()
	for range k {
		n.now = n.now.Add(10 * time.Millisecond)
		for _, id := range n.order {
			if n.down[id] {
				continue
			}
			if d := n.nodes[id].Deadline(); n.onlyDue && (d.IsZero() || n.now.Before(d)) {
				continue
			}
			n.nodes[id].Tick(n.now)
			n.drain(id)
		}
		n.deliver()
	}
}

// stable asserts that every live node follows leader in one term.
func (n *network) stable(leader uint32) uint64 {
	n.t.Helper()
	var term uint64
	for _, id := range n.order {
		if n.down[id] {
			continue
		}
		b := n.nodes[id]
		l, tm, _ := b.Leader()
		if l != leader {
			n.t.Fatalf("node %d: leader %d (role %v, term %d), want %d\nevents: %v", id, l, b.Role(), tm, leader, n.events)
		}
		if term == 0 {
			term = tm
		} else if tm != term {
			n.t.Fatalf("node %d in term %d, others in %d", id, tm, term)
		}
		wantRole := RoleFollower
		if id == leader {
			wantRole = RoleLeader
		}
		if b.Role() != wantRole {
			n.t.Fatalf("node %d: role %v, want %v", id, b.Role(), wantRole)
		}
	}
	if TermOwner(term) != leader {
		n.t.Fatalf("term %d is owned by %d, not by leader %d", term, TermOwner(term), leader)
	}
	return term
}

func (n *network) resetCounts() { n.delivered = make(map[wire.Kind]int) }

func (n *network) eventsNamed(name string) []nodeEvent {
	var out []nodeEvent
	for _, e := range n.events {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func arg(e core.Event, key string) any {
	for i := 0; i+1 < len(e.Args); i += 2 {
		if e.Args[i] == key {
			return e.Args[i+1]
		}
	}
	return nil
}

func argU32(e core.Event, key string) uint32 { v, _ := arg(e, key).(uint32); return v }
func argU64(e core.Event, key string) uint64 { v, _ := arg(e, key).(uint64); return v }

// ticks is d in the test network's ticks of 10 ms.
func ticks(d time.Duration) int { return int(d / (10 * time.Millisecond)) }
