package sim

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// Counters are one node's traffic and life, as the simulator saw them.
// Sender side: Sent, Lost, Cut, NoRoute. Receiver side: the rest.
type Counters struct {
	Ticks        uint64
	Sent         uint64 // packets written (a multicast frame once)
	Lost         uint64 // copies dropped by the link's random loss
	Cut          uint64 // copies dropped by a partition
	NoRoute      uint64 // packets to an address that is no node's
	Duplicated   uint64 // extra copies made by the link
	Delivered    uint64 // copies the node accepted
	Rejected     uint64 // copies the node refused (see its node.Status drop reasons)
	Missed       uint64 // copies that arrived while it was crashed or paused, or on a reset stream
	AdjustErrors uint64 // clock adjustments the clock refused
	// ClockAnomalies counts ticks whose timing had to be clamped because
	// the clock claimed a rate outside (0.25, 8): a bug in the clock, never
	// expected.
	ClockAnomalies uint64
	Restarts       uint64
	// WriteFailures counts state writes the simulated disk failed (see
	// Sim.SetDiskFaults); Withheld, the frames not sent because the state
	// they depended on could not be written.
	WriteFailures uint64
	Withheld      uint64
	// Withdrawn counts failed writes whose calls' promises the core took
	// back, all of them (core.Withdrawer): the daemon answers those calls
	// "not done".
	Withdrawn uint64
	// SlowWrites counts the writes that took time (SetWriteLatency), and
	// WriteWait their total: the time the node's loop was blocked.
	SlowWrites uint64
	WriteWait  time.Duration
	// LastAdjustError is the last refused adjustment's error, if any.
	LastAdjustError error
}

type simNode struct {
	id      uint32
	addr    netip.AddrPort
	newCore func(core.Env) core.Core
	clk     *clock.Sim
	node    *node.Node

	disk []byte
	log  [][]byte // records appended after disk (core.Ready.Entries)
	// stamps is the node's Lamport state as it last saved it
	// (node.Durable.Stamps): a restarted node resumes its clock above
	// every stamp it sent, as a daemon does.
	stamps     node.Stamps
	diskFaults float64 // probability that a state write fails
	// agreement is the configuration agreement its daemon runs
	// (SetAgreement), from its next boot; nil: none (an older build).
	agreement   *node.Agreement
	incarnation uint32
	up, paused  bool
	// life changes at every crash and restart: a copy in flight to an older
	// life is lost, a stream frame between older lives is reset.
	life uint64
	// tickGen changes whenever the scheduled tick must not fire (crash,
	// pause, restart).
	tickGen uint64
	// pending: stream frames, and datagrams its socket buffer kept
	// (SetSocketBuffer), that reached it while paused, in arrival order;
	// buffered, what the kept datagrams charge against rcvBuf.
	pending  []*packet
	rcvBuf   int
	buffered int

	// Tick pacing on the node's clock (see scheduleTick).
	target  time.Time     // monotonic-local time the next tick is due
	stepped time.Duration // sum of clock steps applied: they move wall time, not the ticker
	ticking bool          // inside tick(): the next tick is scheduled after drain
	// scheduled: target is the core's own deadline (node.NextTick), not
	// a fixed-interval tick.
	scheduled bool

	// late is how much later than due its loop may run (SetLate); waiting
	// is what it will do when it runs next (its timer first), waking that
	// it is waiting for the CPU.
	late    time.Duration
	waiting []func()
	waking  bool
	// sendLag is how long after its finalizer's clock reading a datagram
	// of this node leaves (SetSendLag): the kernel's transmit stamp.
	sendLag time.Duration
	// resumeOrder is where its first tick falls among the frames it
	// reads when it resumes (SetResumeOrder).
	resumeOrder ResumeOrder

	// Slow state writes (SetWriteLatency). writeMin..writeMax is how long
	// each write of a Ready's State or Entries takes. While one runs
	// (writing) the node's loop is blocked in it, as the daemon's is in
	// its fdatasync: frames that arrive and Do calls wait in blocked, in
	// order, a tick that falls due waits as tickBlocked, and they run when
	// the write ends. afterPause is the end of a write that finished
	// while the process was stopped: it runs at Resume. appends is the
	// daemon's flag of the same name: the core has handed log records,
	// so its Readies without a promise send before they write, and its
	// frames are stepped in batches (group commit).
	writeMin, writeMax time.Duration
	writing            bool
	blocked            []blockedWork
	tickBlocked        bool
	afterPause         func()
	appends            bool
	saveDebt           time.Duration // the node's own saves (node.Config.Save) since the last drain: their write time
	batching           bool          // stepping blocked frames: their Ready waits for the batch's end

	counters Counters
}

// mono is the node's clock without the steps applied to it: what a
// CLOCK_MONOTONIC-driven ticker follows (frequency and slew move it, steps
// do not).
func (n *simNode) mono() time.Time { return n.clk.Now().Add(-n.stepped) }

// monoAt is mono at true instant t (now or later), as the clock will read
// then if nothing adjusts it meanwhile.
func (n *simNode) monoAt(t time.Time) time.Time { return n.clk.FromKernel(t).Add(-n.stepped) }

// boot builds the node's core and node.Node from its disk and starts
// ticking.
func (s *Sim) boot(n *simNode) {
	n.incarnation++
	lamport := new(clock.Lamport)
	lamport.Restore(n.stamps.Floor)
	c := n.newCore(core.Env{
		ID:      n.id,
		Members: slices.Clone(s.order),
		Now:     n.clk.Now(),
		// Its own stream per node and incarnation, so that a core's
		// draws never move the simulation's (links, tick phases).
		Rand:    rand.New(rand.NewPCG(uint64(s.cfg.Seed), envStream|uint64(n.id)<<32|uint64(n.incarnation))),
		Lamport: lamport,
		State:   bytes.Clone(n.disk),
		Log:     cloneLog(n.log),
	})
	if c == nil {
		panic(fmt.Sprintf("sim: node %d: core constructor returned nil", n.id))
	}
	members := make(map[uint32]netip.AddrPort, len(s.order))
	for _, id := range s.order {
		members[id] = s.nodes[id].addr
	}
	nd, err := node.New(node.Config{
		ID:          n.id,
		Members:     members,
		Cluster:     s.cfg.Cluster,
		Keys:        s.cfg.Keys,
		Incarnation: n.incarnation,
		Multicast:   s.cfg.Multicast,
		Agreement:   n.agreement,
		Lamport:     lamport,
		Stamps:      n.stamps,
		// Only the Lamport state is kept: the simulated restarts have
		// always forgotten the peers' epochs (a node's own incarnation
		// is counted above).
		Save: func(d node.Durable) error {
			d.Stamps.Peers = maps.Clone(d.Stamps.Peers)
			n.stamps = d.Stamps
			// The daemon writes this file on its loop too: with slow
			// writes, the node's output waits for it (drain).
			n.saveDebt += s.writeTime(n)
			return nil
		},
	}, c)
	if err != nil {
		panic(fmt.Sprintf("sim: node %d: %v", n.id, err))
	}
	n.node = nd
	n.up, n.paused = true, false
	n.life++
	n.pending = nil
	n.writing, n.blocked, n.tickBlocked, n.afterPause, n.appends = false, nil, false, nil, false
	s.startTicking(n)
}

// envStream marks the Rand streams of core.Env apart from NewRand's (which
// count up from 1).
const envStream = 1 << 63

// startTicking schedules the first tick at a random phase within one
// interval, as a daemon's ticker starts whenever the process does.
func (s *Sim) startTicking(n *simNode) {
	n.tickGen++
	phase := time.Duration(1 + s.rnd.Int64N(int64(s.cfg.TickInterval)))
	n.target = n.mono().Add(phase)
	n.scheduled = false
	s.scheduleTick(n)
}

// scheduleTick schedules the tick due when the node's monotonic clock
// reaches n.target. The clock's offset is a piecewise-linear function of
// true time that clock.Sim evaluates exactly at future instants too
// (FromKernel), so the true instant is found by the secant method on it:
// exact in one step on a linear piece, a few more across a breakpoint (the
// end of a slew). Aiming at an absolute target keeps an adjustment made after
// the tick was scheduled from adding up over later ticks.
func (s *Sim) scheduleTick(n *simNode) {
	start := s.Now()
	cur := n.monoAt(start)
	switch {
	case !n.target.After(cur) && n.scheduled:
		// The core's deadline is due: tick at once.
		n.target = cur
	case !n.target.After(cur):
		// Missed ticks are skipped, as time.Ticker does.
		n.target = cur.Add(s.cfg.TickInterval)
	}
	x0, y0 := start, cur
	x1 := start.Add(n.target.Sub(cur))
	y1 := n.monoAt(x1)
	for range 16 {
		if y1.Equal(n.target) || y1.Equal(y0) {
			break
		}
		slope := float64(x1.Sub(x0)) / float64(y1.Sub(y0)) // true per local
		x2 := x1.Add(time.Duration(math.Round(float64(n.target.Sub(y1)) * slope)))
		x0, y0, x1, y1 = x1, y1, x2, n.monoAt(x2)
	}
	// The first true nanosecond at which the clock has arrived (the clock
	// rounds to nanoseconds, so a local instant may fall between two).
	for i := 0; i < 64 && n.monoAt(x1).Before(n.target); i++ {
		x1 = x1.Add(1)
	}
	for i := 0; i < 64 && x1.After(start) && !n.monoAt(x1.Add(-1)).Before(n.target); i++ {
		x1 = x1.Add(-1)
	}
	// A clock's rate stays within (0.2, 1.8) of true time (clock.SimConfig's
	// limits); a wait outside [L/4, 8L] for L local nanoseconds to go means
	// the clock misbehaved. Clamping keeps the simulation moving (a wait of
	// 1 ns per tick would never get anywhere), and the count makes it loud.
	wait := x1.Sub(start)
	local := n.target.Sub(cur)
	if lo, hi := local/4, 8*local; wait < lo || wait > hi {
		n.counters.ClockAnomalies++
		wait = min(max(wait, lo), hi)
	}
	wait = max(wait, 1)
	gen := n.tickGen
	s.schedule(s.now+wait, func() {
		if n.tickGen != gen {
			return
		}
		if n.late == 0 {
			s.tick(n)
			return
		}
		s.runLate(n, true, func() {
			if n.tickGen == gen {
				s.tick(n)
			}
		})
	})
}

// runLate has node n's loop do fn when it next gets the CPU (SetLate):
// a random 0..late from the first thing it had to do, all it had to do by
// then at once, its timer first (first), then the frames in the order
// they came.
func (s *Sim) runLate(n *simNode, first bool, fn func()) {
	if first {
		n.waiting = append([]func(){fn}, n.waiting...)
	} else {
		n.waiting = append(n.waiting, fn)
	}
	if n.waking {
		return
	}
	n.waking = true
	s.schedule(s.now+time.Duration(s.rnd.Int64N(int64(n.late)+1)), func() {
		todo := n.waiting
		n.waiting, n.waking = nil, false
		for _, f := range todo {
			f()
		}
	})
}

func (s *Sim) tick(n *simNode) {
	if n.writing {
		// The loop is inside a write: the timer's wake-up waits for it.
		n.tickBlocked = true
		return
	}
	n.counters.Ticks++
	n.ticking = true
	n.node.Tick(n.clk.Now())
	s.drain(n)
	n.ticking = false
	if next, ok := n.node.NextTick(n.clk.Now()); ok {
		n.target, n.scheduled = next.Add(-n.stepped), true
	} else {
		n.target, n.scheduled = n.target.Add(s.cfg.TickInterval), false
	}
	s.scheduleTick(n)
}

// reschedule moves the pending tick of a core that schedules its own ticks
// to its deadline as it stands after the core ran (the daemon's loop
// re-arms its timer the same way).
func (s *Sim) reschedule(n *simNode) {
	next, ok := n.node.NextTick(n.clk.Now())
	if !ok || n.ticking {
		return
	}
	if target := next.Add(-n.stepped); !n.scheduled || !target.Equal(n.target) {
		n.tickGen++
		n.target, n.scheduled = target, true
		s.scheduleTick(n)
	}
}

// drain carries out the node's output in the daemon's order: adjust the
// clock, persist, send, report. Without write latency (SetWriteLatency)
// the write takes no time, whatever the Ready: a core cannot tell that
// apart from the daemon's order (its disk faults still lose the write
// after the frames left). With it, drain does what the daemon's loop does
// today: the clock is adjusted first, a Ready without a promise sends
// first where the daemon does, the rest waits for the write, and the loop
// is blocked meanwhile.
func (s *Sim) drain(n *simNode) {
	if n.writing {
		// The loop is inside a write: whatever stepped the core meanwhile
		// (Do, Hint, Forge) has its output carried out after it, in order
		// with the frames that wait (a core is never asked for a Ready
		// before it is told how the last one's write went).
		n.blocked = append(n.blocked, blockedWork{do: func(core.Core) {}})
		return
	}
	out := n.node.Ready()
	if out.Held && out.Empty() {
		// Configuration agreement holds the core back (SetAgreement)
		// and the node has nothing of its own to send: the daemon's loop
		// does nothing with such a Ready (no Advance, no outcomes). The
		// node's own saves made meanwhile (saveDebt) still took their
		// write time inside its calls: the loop waits that long.
		if n.saveDebt > 0 {
			s.payDebt(n)
			return
		}
		s.reschedule(n)
		return
	}
	if n.saveDebt == 0 && (out.State == nil && len(out.Entries) == 0 || n.writeMax == 0) {
		s.adjust(n, &out)
		s.write(n, &out)
		s.traceEvents(n, out)
		s.finish(n, out)
		return
	}
	s.slowWrite(n, out)
}

// write persists out's State or Entries, if any, to the node's disk, or
// fails as SetDiskFaults says (withholding a promise's frames, as the
// daemon does), and tells the node how it went.
func (s *Sim) write(n *simNode, out *node.Output) {
	saved := true
	if out.State != nil || len(out.Entries) > 0 {
		if len(out.Entries) > 0 {
			n.appends = true
		}
		if n.diskFaults > 0 && s.chance(n.diskFaults) {
			// As the daemon does when a write fails: a promise's messages
			// stay home, and the core is told.
			saved = false
			n.counters.WriteFailures++
			if out.Promise {
				n.counters.Withheld += uint64(len(out.Sends))
				out.Sends = nil
			}
		} else if out.State != nil {
			// A snapshot starts the log afresh.
			n.disk, n.log = bytes.Clone(out.State), nil
		} else {
			n.log = append(n.log, cloneLog(out.Entries)...)
		}
	}
	n.node.Advance(saved)
	if !saved && out.Promise {
		// Nothing of a failed write reaches the simulated disk, and its
		// frames stayed home: a core may take back what it promised
		// (core.Withdrawer), as under the daemon.
		if kept, taken, all, ok := n.node.Withdraw(out.Events); ok {
			out.Events = kept
			if all && taken > 0 {
				n.counters.Withdrawn++
			}
		}
	}
}

// slowWrite carries out a Ready whose write takes time (SetWriteLatency)
// in the daemon's order (internal/daemon's process): its clock
// adjustments first, then the frames that depend on nothing unsaved (no
// promise; a core that appends, or one that writes its state) and its
// leading events that say they do not wait for the write
// (core.Event.BeforeSave); the write ends after the drawn latency, and
// then come Advance, the other frames and events. Until then the node
// does nothing else. A crash meanwhile loses the write. The node's own
// saves (node.Config.Save) since the last Ready come before all of it:
// the daemon makes them inside the node's calls, before it acts on the
// Ready, so the Ready waits for them, its adjustments included.
func (s *Sim) slowWrite(n *simNode, out node.Output) {
	s.traceEvents(n, out)
	debt := n.saveDebt
	n.saveDebt = 0
	var took time.Duration
	if out.State != nil || len(out.Entries) > 0 {
		took = s.writeTime(n)
	}
	n.counters.SlowWrites++
	n.counters.WriteWait += debt + took
	n.writing = true
	life := n.life
	write := func() {
		s.adjust(n, &out)
		if (n.appends || out.State != nil) && !out.Promise && len(out.Sends) > 0 {
			for _, snd := range out.Sends {
				s.send(n, snd)
			}
			out.Sends = nil
		}
		early := 0
		for early < len(out.Events) && out.Events[early].BeforeSave {
			s.events = append(s.events, Event{At: s.now, Node: n.id, Local: n.clk.Now(), Event: out.Events[early]})
			early++
		}
		out.Events = out.Events[early:]
		end := func() {
			// The disk has it (or failed) whether or not the process runs.
			s.write(n, &out)
			s.afterWrite(n, func() {
				n.writing = false
				s.finish(n, out)
				s.unblock(n)
			})
		}
		if took == 0 && debt > 0 {
			end() // only the node's own save took time, and it is over
			return
		}
		s.schedule(s.now+took, func() {
			if n.life == life {
				end()
			} // else crashed mid-write: the write is lost
		})
	}
	if debt == 0 {
		write()
		return
	}
	s.schedule(s.now+debt, func() {
		if n.life == life {
			s.afterWrite(n, write)
		}
	})
}

// payDebt blocks the node's loop for the write time of its own saves
// (saveDebt) after a Ready it does nothing with (held and empty), as
// slowWrite does before a Ready it carries out: a crash meanwhile ends
// it, a pause holds the rest back until Resume.
func (s *Sim) payDebt(n *simNode) {
	debt := n.saveDebt
	n.saveDebt = 0
	n.counters.SlowWrites++
	n.counters.WriteWait += debt
	n.writing = true
	life := n.life
	s.schedule(s.now+debt, func() {
		if n.life != life {
			return
		}
		s.afterWrite(n, func() {
			n.writing = false
			s.reschedule(n)
			s.unblock(n)
		})
	})
}

// afterWrite runs fn, the loop's work after a write returned: now, or at
// Resume when the process is stopped.
func (s *Sim) afterWrite(n *simNode, fn func()) {
	if n.paused {
		n.afterPause = fn
		return
	}
	fn()
}

// writeTime draws how long one write of node n takes (SetWriteLatency).
func (s *Sim) writeTime(n *simNode) time.Duration {
	took := n.writeMin
	if n.writeMax > n.writeMin {
		took += time.Duration(s.rnd.Int64N(int64(n.writeMax-n.writeMin) + 1))
	}
	return took
}

// adjust applies out's clock adjustments, first thing in a Ready as the
// daemon does (internal/daemon's process): a discipline counts a slew
// from the tick that decided it, so one left waiting for the Ready's
// write would have the core's bound trust a slew the clock has not begun
// (core.Adjuster is told when the clock took them, all the same).
func (s *Sim) adjust(n *simNode, out *node.Output) {
	retime, applied := false, false
	for _, a := range out.Adjustments {
		if err := clock.Apply(n.clk, a); err != nil {
			n.counters.AdjustErrors++
			n.counters.LastAdjustError = err
			continue
		}
		applied = applied || a.Kind != clock.AdjustSync
		switch a.Kind {
		case clock.AdjustStep:
			n.stepped += a.Offset
		case clock.AdjustSlew, clock.AdjustFrequency:
			retime = true
		}
	}
	out.Adjustments = nil
	if applied {
		n.node.Adjusted(n.clk.Now())
	}
	if retime && !n.ticking {
		// The ticker is a timer on the monotonic clock, whose rate just
		// changed: the pending tick moves with it. (A tick being processed
		// schedules the next one itself, after this.)
		n.tickGen++
		s.scheduleTick(n)
	}
}

// finish carries out the rest of a Ready once its write is done: frames,
// events.
func (s *Sim) finish(n *simNode, out node.Output) {
	for _, snd := range out.Sends {
		s.send(n, snd)
	}
	for _, e := range out.Events {
		s.events = append(s.events, Event{At: s.now, Node: n.id, Local: n.clk.Now(), Event: e})
	}
	if s.onReady != nil {
		s.onReady(Ready{Node: n.id, At: s.now, Local: n.clk.Now(), Core: n.node.Core()})
	}
	s.reschedule(n)
}

// blockedWork is what waited for a node's write: a frame, or the output
// of a Do call (do: nothing left to call, its Ready to drain).
type blockedWork struct {
	p  *packet
	do func(core.Core)
}

// unblock runs what waited for the write that just ended, as the
// daemon's loop does when its fdatasync returns: the frames (and Do
// calls) in the order they came, then the tick that fell due. A core
// that appends steps them all and then writes once (the daemon's group
// commit, daemon.batch); any other steps them one at a time, each with
// its own Ready, so a write there blocks the loop again and the rest
// wait for that one.
func (s *Sim) unblock(n *simNode) {
	if n.appends && len(n.blocked) > 0 {
		work := n.blocked
		n.blocked = nil
		n.batching = true
		for _, w := range work {
			if w.do != nil {
				w.do(n.node.Core())
			} else {
				s.arrive(w.p)
			}
		}
		n.batching = false
		if n.tickBlocked {
			s.blockedTick(n)
			return
		}
		s.drain(n)
		return
	}
	for len(n.blocked) > 0 && !n.writing {
		w := n.blocked[0]
		n.blocked = n.blocked[1:]
		if w.do != nil {
			w.do(n.node.Core())
			s.drain(n)
			continue
		}
		s.arrive(w.p)
	}
	if !n.writing && n.tickBlocked {
		s.blockedTick(n)
	}
}

// blockedTick runs the tick that fell due during a write. A tick the
// write's Ready rescheduled meanwhile (reschedule) is dropped: this one
// schedules the next.
func (s *Sim) blockedTick(n *simNode) {
	n.tickBlocked = false
	n.tickGen++
	s.tick(n)
}

// packet is one copy in flight.
type packet struct {
	num       uint64
	from, to  *simNode
	data      []byte
	kind      wire.Kind
	stream    bool
	datagram  bool
	multicast bool
	dup       bool
	fromLife  uint64
	toLife    uint64
	epoch     uint64 // the link's cut epoch at send (streams)
	// arrived is when it reached the receiver's kernel, once held back by
	// a late loop (SetLate): the receive stamp.
	arrived time.Duration
	held    bool
	// lag is how long after the send call the datagram leaves its sender
	// (SetSendLag).
	lag time.Duration
}

func (p *packet) entry(at time.Duration, f Fate) TraceEntry {
	return TraceEntry{At: at, Packet: p.num, From: p.from.id, To: p.to.id, Kind: p.kind,
		Size: len(p.data), Fate: f, Stream: p.stream, Multicast: p.multicast, Datagram: p.datagram, Dup: p.dup}
}

func (s *Sim) send(n *simNode, snd node.Send) {
	if s.onSend != nil && !snd.Datagram {
		var f wire.Frame
		if f.UnmarshalBinary(snd.Data) == nil {
			s.onSend(SentFrame{From: n.id, Incarnation: n.incarnation, Frame: f, Disk: n.disk})
		}
	}
	at := n.clk.Now()
	// A stream frame is queued and written at once here: its send is
	// recorded as the daemon records it when it queues one.
	n.node.StreamQueued(snd, at)
	data := n.node.Finalize(snd, at)
	s.traceSend(n, snd)
	lag := time.Duration(0)
	if snd.Datagram {
		lag = n.sendLag
	}
	if snd.Reported() {
		// As the daemon does: the core learns when the datagram left, the
		// kernel's transmit stamp (SetSendLag after the reading patched
		// in). What it wants in return is drained with its next output.
		n.node.DatagramSent(snd, data, n.clk.FromKernel(s.Now().Add(lag)))
	}
	if snd.Report {
		// A simulated frame leaves exactly when it is finalised.
		n.node.FrameSent(snd, at, at)
	}
	s.packets++
	n.counters.Sent++
	if snd.Datagram {
		s.datagrams++
	} else {
		s.sent[snd.Kind]++
	}
	head := TraceEntry{At: s.now, Packet: s.packets, From: n.id, Kind: snd.Kind, Size: len(data),
		Fate: FateSent, Stream: snd.Stream, Multicast: snd.Multicast, Datagram: snd.Datagram}
	if snd.Multicast {
		s.trace.add(head, data)
		for _, id := range s.order {
			if id != n.id {
				s.transmit(&packet{num: s.packets, from: n, to: s.nodes[id], data: data, kind: snd.Kind, multicast: true})
			}
		}
		return
	}
	if snd.Datagram && s.groups[snd.To] {
		// A datagram to a broadcast address or multicast group (AddGroup):
		// every other node hears it, each over its own link.
		head.Multicast = true
		s.trace.add(head, data)
		for _, id := range s.order {
			if id != n.id {
				s.transmit(&packet{num: s.packets, from: n, to: s.nodes[id], data: data, kind: snd.Kind, multicast: true, datagram: true, lag: lag})
			}
		}
		return
	}
	id, ok := s.byAddr[snd.To]
	if ok {
		head.To = id
	}
	s.trace.add(head, data)
	if !ok || id == n.id {
		n.counters.NoRoute++
		head.Fate = FateNoRoute
		s.trace.add(head, nil)
		return
	}
	s.transmit(&packet{num: s.packets, from: n, to: s.nodes[id], data: data, kind: snd.Kind,
		stream: snd.Stream, datagram: snd.Datagram, lag: lag})
}

// transmit puts one copy on its link.
func (s *Sim) transmit(p *packet) {
	l := s.linkFor(p.from.id, p.to.id)
	if l.cut {
		p.from.counters.Cut++
		s.trace.add(p.entry(s.now, FateCut), nil)
		return
	}
	p.fromLife, p.toLife = p.from.life, p.to.life
	if p.stream {
		if !p.to.up {
			// connect() to a dead host: refused at once.
			p.to.counters.Missed++
			s.trace.add(p.entry(s.now, FateDown), nil)
			return
		}
		p.epoch = l.epoch
		at := s.now + s.delay(l)
		if l.cfg.Retransmit > 0 && s.chance(l.cfg.Retransmit) {
			if l.cfg.RetransmitDelay > 0 {
				at += l.cfg.RetransmitDelay
			} else {
				at += RetransmitTimeout
			}
		}
		at = max(at, l.lastStream)
		l.lastStream = at
		s.schedule(at, func() { s.arrive(p) })
		return
	}
	if s.chance(l.cfg.Loss) {
		p.from.counters.Lost++
		s.trace.add(p.entry(s.now, FateLost), nil)
		return
	}
	s.schedule(s.now+p.lag+s.delay(l), func() { s.arrive(p) })
	if s.chance(l.cfg.Duplicate) {
		p.from.counters.Duplicated++
		dup := *p
		dup.dup = true
		s.schedule(s.now+p.lag+s.delay(l), func() { s.arrive(&dup) })
	}
}

// arrive hands a copy to its receiver, if it can still take it.
func (s *Sim) arrive(p *packet) {
	to := p.to
	switch {
	case !to.up || to.life != p.toLife:
		to.counters.Missed++
		s.trace.add(p.entry(s.now, FateDown), nil)
		return
	case p.stream && (p.from.life != p.fromLife || s.linkFor(p.from.id, to.id).epoch != p.epoch):
		to.counters.Missed++
		s.trace.add(p.entry(s.now, FateReset), nil)
		return
	case to.paused && p.stream:
		// The kernel keeps a stopped process's TCP data; it reads it when it
		// resumes.
		to.pending = append(to.pending, p)
		return
	case to.paused && to.buffered+socketCharge(p) <= to.rcvBuf:
		// Its socket buffer keeps the datagram, stamped by the kernel on
		// arrival; the process reads it when it resumes.
		to.buffered += socketCharge(p)
		p.held, p.arrived = true, s.now
		to.pending = append(to.pending, p)
		return
	case to.paused:
		// Datagrams to a stopped process are lost once its socket buffer
		// is full (SetSocketBuffer; by default it keeps none).
		to.counters.Missed++
		s.trace.add(p.entry(s.now, FatePaused), nil)
		return
	case to.writing:
		// Its loop is inside a write: the frame waits in the kernel,
		// stamped with its arrival, until the write ends.
		if !p.held {
			p.held, p.arrived = true, s.now
		}
		to.blocked = append(to.blocked, blockedWork{p: p})
		return
	case to.late > 0 && !p.held:
		// A busy host: the frame waits in the kernel until the loop reads
		// it, stamped with its arrival.
		p.held, p.arrived = true, s.now
		s.runLate(to, false, func() { s.arrive(p) })
		return
	}
	s.receive(p)
}

func (s *Sim) receive(p *packet) {
	s.deliver(p)
	if !p.to.batching {
		s.drain(p.to)
	}
}

// deliver hands copy p to its node, without acting on the node's Ready.
func (s *Sim) deliver(p *packet) {
	to := p.to
	var dropped map[string]uint64 // the drop counters before, to name a refusal as the node counts it
	if s.traces != nil && !p.datagram && to.node != nil {
		dropped = maps.Clone(to.node.Status().Dropped)
	}
	stamp := s.now
	if p.held {
		stamp = p.arrived
	}
	err := to.node.Receive(node.Inbound{
		From:     p.from.addr,
		Data:     p.data,
		Time:     to.clk.FromKernel(s.cfg.Start.Add(stamp)),
		Stream:   p.stream,
		Datagram: p.datagram,
	})
	s.traceRecv(to, p, err, dropped)
	if err != nil {
		to.counters.Rejected++
		s.trace.add(p.entry(s.now, FateRejected), p.data)
		if s.onRefused != nil && p.from != nil {
			s.onRefused(Refused{At: s.now, Node: to.id, From: p.from.id, Kind: p.kind, Err: err})
		}
	} else {
		to.counters.Delivered++
		if !p.datagram {
			s.delivered[p.kind]++
		}
		s.trace.add(p.entry(s.now, FateDelivered), p.data)
	}
}

// Refused is a frame a node refused (Counters.Rejected), as OnRefused
// reports it: At, in virtual time; Node, the receiver; From, the node
// that sent it; Err, the receiving node's reason (node.Receive's error:
// errors.Is node.ErrConfigUnverified, say, for configuration agreement's
// refusals, SetAgreement).
type Refused struct {
	At         time.Duration
	Node, From uint32
	Kind       wire.Kind
	Err        error
}

// OnRefused calls f for every frame a node refuses.
func (s *Sim) OnRefused(f func(Refused)) { s.onRefused = f }

// SentFrame is a frame as it leaves its node, with what the node's disk
// held at that instant: an oracle checks that nothing a frame announces
// (a term, a promised generation) is missing from the sender's disk.
type SentFrame struct {
	From        uint32
	Incarnation uint32     // the sender's (see Incarnation)
	Frame       wire.Frame // decoded; Payload aliases the sender's buffer
	Disk        []byte     // the sender's persisted state; do not modify
}

// OnSend calls f for every synclab frame any node writes (not for foreign
// datagrams), before it leaves, with the sender's disk.
func (s *Sim) OnSend(f func(SentFrame)) { s.onSend = f }

// Ready is one node's output just carried out, as OnReady reports it.
type Ready struct {
	Node  uint32
	At    time.Duration // virtual time
	Local time.Time     // the node's clock
	Core  core.Core
}

// OnReady calls f after each node's output has been carried out, at the
// instant it was: where a driver drains what a core hands over besides
// its Ready (mutexd's lock outcomes, after every Ready).
func (s *Sim) OnReady(f func(Ready)) { s.onReady = f }

// SetDiskFaults makes each state write of node id fail with probability p
// (as a full or read-only disk would), from now on and across restarts. A
// failed write leaves the disk as it was; the node's driver withholds the
// frames of a Ready whose promise could not be written and tells the core,
// exactly as the daemon does.
func (s *Sim) SetDiskFaults(id uint32, p float64) {
	if p < 0 || p > 1 {
		panic(fmt.Sprintf("sim: disk fault probability %g", p))
	}
	s.mustNode(id).diskFaults = p
}

// Crash stops node id at once, as SIGKILL or a power cut: no more ticks,
// inbound copies lost, its stream connections reset. Its disk (the last
// Output.State) survives.
func (s *Sim) Crash(id uint32) {
	s.Start()
	n := s.mustNode(id)
	if !n.up {
		return
	}
	n.up, n.paused = false, false
	n.life++
	n.tickGen++
	n.pending, n.buffered = nil, 0
	n.saveDebt = 0
	s.simEvent(id, "sim.crash", fmt.Sprintf("node %d crashed", id))
}

// Restart starts node id again (crashing it first if it runs): a new core
// built from its disk, a new node.Node with the next incarnation, a fresh
// tick phase. Its clock kept running meanwhile.
func (s *Sim) Restart(id uint32) {
	s.Start()
	n := s.mustNode(id)
	if n.up {
		s.Crash(id)
	}
	n.counters.Restarts++
	s.boot(n)
	s.simEvent(id, "sim.restart", fmt.Sprintf("node %d restarted, incarnation %d", id, n.incarnation), "incarnation", n.incarnation)
}

// Pause stops node id without killing it, as SIGSTOP: no ticks, datagrams
// to it lost (or kept, up to its socket buffer: SetSocketBuffer), stream
// frames held by its kernel. Resume continues with the same state, however
// stale.
func (s *Sim) Pause(id uint32) {
	s.Start()
	n := s.mustNode(id)
	if !n.up || n.paused {
		return
	}
	n.paused = true
	n.tickGen++
	s.simEvent(id, "sim.pause", fmt.Sprintf("node %d paused", id))
}

// SetLate makes node id's loop run up to max later than due from now on,
// as on a busy host whose CPUs other processes hold (0: on time): when a
// tick falls due or a frame arrives, the loop gets the CPU a random 0..max
// later, and then does everything that fell due meanwhile, its timer
// first: a tick due after a datagram came runs before the datagram is
// read, as a daemon's timer wakes its loop before its socket's reader
// runs. Frames keep their receive stamps (the kernel's) and their order.
func (s *Sim) SetLate(id uint32, max time.Duration) {
	if max < 0 {
		panic(fmt.Sprintf("sim: negative lateness %v", max))
	}
	s.mustNode(id).late = max
}

// SetSendLag makes node id's datagrams leave lag after its finalizer read
// the clock for them, from now on (0: at once), as a send call's path
// through the kernel takes on a real host: the transmit time a datagram
// carries is that earlier reading, and the kernel's transmit stamp, which
// the daemon reports to the core (node.DatagramSent), is lag later. The
// link's delay counts from the departure. Frames between members are not
// delayed.
func (s *Sim) SetSendLag(id uint32, lag time.Duration) {
	if lag < 0 {
		panic(fmt.Sprintf("sim: negative send lag %v", lag))
	}
	s.mustNode(id).sendLag = lag
}

// SetWriteLatency makes each write of node id's state (a Ready's State
// or Entries) take min..max (drawn uniformly from the seed; min == max:
// fixed), from now on and across restarts (0, 0: none, the default), as
// a slow or busy disk's fdatasync does. The node behaves as the daemon's
// loop does today: a Ready's clock adjustments are made before the write;
// its frames that depend on the write (Promise) leave after it, and so do
// the others except where the daemon sends them first (a Ready without a
// promise, of a core that writes its state or appends);
// the core is told (Advance) when it ends; and the loop is blocked
// meanwhile: frames that arrive wait, stamped with their arrival, a tick
// that falls due waits, and so does a Do call (it returns once the core
// was stepped, the simulation run on until then). A crash mid-write loses
// it; a pause lets it end on disk, and the node carries on at Resume.
func (s *Sim) SetWriteLatency(id uint32, min, max time.Duration) {
	if min < 0 || max < min {
		panic(fmt.Sprintf("sim: write latency %v..%v", min, max))
	}
	n := s.mustNode(id)
	n.writeMin, n.writeMax = min, max
}

// Resume continues a paused node: it reads the frames held for it (stream
// frames, and the datagrams its socket buffer kept, with their arrival
// stamps), in the order they came, and ticks again (its clock kept
// running: its first tick sees the gap). Where that tick falls among the
// frames is the node's ResumeOrder (SetResumeOrder; by default after
// them all).
func (s *Sim) Resume(id uint32) {
	n := s.mustNode(id)
	if !n.up || !n.paused {
		return
	}
	n.paused = false
	if end := n.afterPause; end != nil {
		// A write ended while it was stopped: its loop goes on from there.
		n.afterPause = nil
		end()
	}
	held := n.pending
	n.pending, n.buffered = nil, 0
	order := n.resumeOrder
	if order == ResumeDrawn {
		order = ResumeOrder(1 + s.rnd.IntN(3))
	}
	split := len(held) // frames read before the first tick
	switch order {
	case ResumeTickFirst:
		split = 0
	case ResumeMixed:
		split = s.rnd.IntN(len(held) + 1)
	}
	if n.resumeOrder == ResumeFramesFirst {
		s.simEvent(id, "sim.resume", fmt.Sprintf("node %d resumed", id))
	} else {
		s.simEvent(id, "sim.resume", fmt.Sprintf("node %d resumed (%s: %d of %d kept frames before its first tick)", id, order, split, len(held)),
			"order", order.String(), "before_tick", split, "kept", len(held))
	}
	for i, p := range held {
		if i == split {
			s.resumeTick(n)
		} else if i > split && n.up && !n.paused && n.node.TickDue(n.clk.Now()) {
			// As the daemon's loop ticks a core whose deadline a step
			// made due when no frame waits in its channel.
			s.resumeTick(n)
		}
		// Held frames went through the same checks when they arrived;
		// only a crash of the sender since can reset them now.
		s.arrive(p)
	}
	if split == len(held) {
		s.startTicking(n)
	}
}

// resumeTick is a resumed node's tick amid the frames it reads: its loop
// ticks, and goes on ticking on its core's deadlines.
func (s *Sim) resumeTick(n *simNode) {
	if !n.up || n.paused {
		return
	}
	n.tickGen++
	s.tick(n)
}

// ResumeOrder is where a resumed node's first tick falls among the frames
// it reads (SetResumeOrder). The daemon promises no order: its socket's
// reader (8 datagrams a read) and its loop run apart, and the loop, woken
// by its overdue timer, drains only the frames already handed over and
// ticks whenever its channel is empty (internal/daemon, run and
// tickIfDue), so after a SIGSTOP its tick may come before every kept
// datagram, after them all, or between any two, and again whenever a
// step makes the core's deadline due with nothing waiting.
type ResumeOrder uint8

// Resume orders.
const (
	// ResumeFramesFirst: every kept frame, then the tick (the default).
	ResumeFramesFirst ResumeOrder = iota
	// ResumeTickFirst: the tick, then the kept frames.
	ResumeTickFirst
	// ResumeMixed: the tick after a random number of kept frames (none
	// to all), and again between two frames whenever the core's deadline
	// is due.
	ResumeMixed
	// ResumeDrawn: each resume draws one of the three.
	ResumeDrawn
)

func (o ResumeOrder) String() string {
	switch o {
	case ResumeFramesFirst:
		return "frames first"
	case ResumeTickFirst:
		return "tick first"
	case ResumeMixed:
		return "mixed"
	case ResumeDrawn:
		return "drawn"
	}
	return fmt.Sprintf("ResumeOrder(%d)", uint8(o))
}

// SetResumeOrder sets where node id's first tick falls among the frames
// it reads when it resumes (ResumeOrder). The default, frames first, draws
// nothing; ResumeMixed and ResumeDrawn draw from the simulation's stream.
func (s *Sim) SetResumeOrder(id uint32, o ResumeOrder) {
	if o > ResumeDrawn {
		panic(fmt.Sprintf("sim: resume order %d", o))
	}
	s.mustNode(id).resumeOrder = o
}

// SetAgreement makes node id run configuration agreement (internal/node's
// Agreement, as the daemons do) from its next boot (Start, Restart): it
// announces a, compares the members' announcements, holds its core back
// while it starts or stands in the minority, refuses the frames of a
// member whose configuration differs and, until its announcement has
// come, those of an incarnation it has not heard announce (admitted
// unchecked after three announce Intervals, as an older build's), and
// marks core.Message.Checked on the frames of the incarnation whose
// matching configuration it heard. The announcements are frames like any
// other: lost, delayed, cut, kept by a paused node's kernel. nil (the
// default) runs none, as a build without agreement: no frame it receives
// is Checked, and it announces nothing.
func (s *Sim) SetAgreement(id uint32, a *node.Agreement) {
	n := s.mustNode(id)
	if a != nil {
		c := *a
		c.Params = maps.Clone(a.Params)
		a = &c
	}
	n.agreement = a
}

// SetSocketBuffer makes node id's kernel keep, while the node is paused,
// the datagrams that reach it, up to bytes of socket buffer (0, the
// default: none is kept), as a stopped process's UDP socket does until
// its receive buffer (net.core.rmem_default, 212992 bytes on the lab's
// hosts) is full; each datagram is charged its length and SocketOverhead,
// as the kernel charges a buffer's truesize. When the node resumes it
// reads them, stamped with their arrival, before its first tick. A core
// then sees frames stamped during its pause, read by a loop that sent
// nothing meanwhile: what a daemon sees after SIGSTOP, a swap storm or a
// VM's pause.
func (s *Sim) SetSocketBuffer(id uint32, bytes int) {
	if bytes < 0 {
		panic(fmt.Sprintf("sim: negative socket buffer %d", bytes))
	}
	s.mustNode(id).rcvBuf = bytes
}

// SocketOverhead is what the simulated kernel charges a kept datagram
// besides its bytes (SetSocketBuffer): about the truesize of a small
// datagram's buffer on Linux.
const SocketOverhead = 768

// socketCharge is what datagram p costs its receiver's socket buffer.
func socketCharge(p *packet) int {
	if p.stream {
		return 0 // a stream's data is the connection's, not the datagram socket's
	}
	return len(p.data) + SocketOverhead
}

func cloneLog(l [][]byte) [][]byte {
	if l == nil {
		return nil
	}
	c := make([][]byte, len(l))
	for i, r := range l {
		c[i] = bytes.Clone(r)
	}
	return c
}
