package node

import (
	"encoding"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// MaxIncarnation is the largest incarnation a sequence number can carry
// (wire.Seq: 24 bits of incarnation, 8 of series, 32 of counter).
const MaxIncarnation = wire.MaxIncarnation

// Config describes a node's place in its cluster.
type Config struct {
	ID      uint32                    // this node's member ID (> 0)
	Members map[uint32]netip.AddrPort // every member's address, this node's included
	Cluster string                    // cluster name; frames of other clusters are dropped
	Keys    []wire.Key                // shared keys; empty: frames are not authenticated. Keys[0] signs.
	// Service names what speaks in the cluster (the daemon: "mutexd"),
	// the same on every member; it is bound into every frame's cluster ID
	// (wire.ServiceClusterID), so that daemons of one host sharing a
	// cluster name and key never take each other's frames. "": the
	// cluster name alone (tests, the simulator).
	Service string
	// Incarnation numbers this run of the node (1..MaxIncarnation). The driver
	// persists it and raises it at every start.
	Incarnation uint32
	// Epochs are the peers' epochs saved by the node's last run
	// (Durable.Epochs): frames of those epochs are refused as possible
	// replays. nil: none (a first start, or a driver without a disk).
	Epochs map[uint32]uint32
	// Stamps is the Lamport state saved by the node's last run
	// (Durable.Stamps): the clock resumes from its floor, and each
	// member's stamps are judged from its last one (see LamportRate).
	// Zero: none (a first start).
	Stamps Stamps
	// Save, if set, writes the node's durable state atomically and
	// durably before returning; the node calls it before it accepts a
	// frame of a peer's new epoch (with keys), before it sends under a
	// new incarnation or a Lamport stamp at its saved floor, and at most
	// once a minute while the members' last stamps change. nil: nothing
	// survives a restart.
	Save func(Durable) error
	// Multicast sends a broadcast as one multicast frame instead of one
	// unicast frame per member.
	Multicast bool
	// Lamport is the node's Lamport clock, the one the driver also hands
	// the core (core.Env.Lamport), so that a stamp the core takes is in
	// the same sequence as the node's. nil: the node keeps its own.
	Lamport *clock.Lamport
	// Vectors makes the node keep a vector clock from the start and stamp
	// every frame with it (see SetVectors); a core that implements
	// core.VectorUser turns it on too.
	Vectors bool
	// Agreement, when set, turns configuration agreement on (agree.go):
	// the node announces its configuration, refuses members whose
	// configuration differs and steps back when its own is in the
	// minority. nil: off (the simulator, tests).
	Agreement *Agreement
	// Report, if set, fills the driver's part of this node's row of the
	// lab's table (cluster.go): its build, uptime, clock and the daemon's
	// own facts. The node then sets what it knows itself (standing,
	// incarnation, configuration fingerprint and key, the query's ID and
	// times). It is called while the node is in use (a Receive, or
	// SelfReport) and must not call the node. nil: the node's part alone.
	Report func(r *wire.StatusReport)
	// TraceWindow, if set, answers member from's trace query q at now
	// (tracewin.go): the driver keeps this node's trace window on (turning
	// it on, extending it) and returns the next chunk of it (QueryID is
	// set by the node). false: no window can be kept (the node refuses,
	// "trace_unavailable"). Called while the node is in use (a Receive);
	// it must not call the node. nil: trace queries are refused.
	TraceWindow func(from uint32, q *wire.TraceQuery, now time.Time) (wire.TraceChunk, bool)
}

func (c *Config) validate() error {
	// ID 0 with no members is a node outside any cluster (a daemon that
	// speaks only its foreign protocol): every frame is a stranger's.
	if c.ID == 0 && len(c.Members) > 0 {
		return errors.New("node: ID must be > 0")
	}
	if _, ok := c.Members[c.ID]; !ok && c.ID != 0 {
		return fmt.Errorf("node: own ID %d is not in the member list", c.ID)
	}
	if _, ok := c.Members[0]; ok {
		return errors.New("node: member ID 0 is reserved")
	}
	if c.Cluster == "" {
		return errors.New("node: cluster name is empty")
	}
	if c.Incarnation == 0 || c.Incarnation > MaxIncarnation {
		return fmt.Errorf("node: incarnation %d out of range 1..%d", c.Incarnation, MaxIncarnation)
	}
	return checkAgreement(c)
}

// Inbound is one received packet, as the driver hands it over.
type Inbound struct {
	From netip.AddrPort // source address
	Data []byte         // the packet; the node may keep references into it
	Time time.Time      // local clock at arrival (a kernel stamp converted by Clock.FromKernel)
	// Stream marks a frame that came over a TCP link.
	Stream bool
	// Datagram marks foreign-protocol traffic (the NTP socket): it goes to
	// the core's StepDatagram untouched.
	Datagram bool
}

// Send is one packet to write.
type Send struct {
	To        netip.AddrPort  // destination; zero when Multicast
	Data      []byte          // encoded; finish with Finalize right before the write
	Kind      wire.Kind       // frame kind (zero for datagrams)
	Multicast bool            // to the cluster's group
	Stream    bool            // over the TCP link to To
	Datagram  bool            // foreign protocol (NTP)
	NTPStamp  bool            // datagram wants its NTP transmit timestamp patched
	NTPSign   *wire.NTPSigner // then an NTP MAC over the patched bytes
	Frame     bool            // datagram is a synclab frame: patch and seal it
	TxStamp   bool            // an answer whose kernel transmit stamp the core wants (AnswerSent)
	// Report: the core asked to hear when this frame left (core.Message
	// Report); the driver calls FrameSent after the write.
	Report bool
	msg    core.Message // what the report gives back (Report only)
	// traced: the frame was encoded while tracing; its send is recorded
	// when it is finalized, or for a stream frame when it is queued
	// (StreamQueued); a pointer, so that a Send is no larger while
	// tracing is off.
	traced *tracedSend
}

// tracedSend is where a traced frame's send is recorded, with its vector
// stamp.
type tracedSend struct {
	rec trace.Recorder
	vc  clock.Vector
	// A datagram's send goes to drec (nil: the recorder has no datagram
	// side) with the node's Lamport time when it was handed over.
	drec    trace.DatagramRecorder
	lamport uint64
}

// Reported says whether the driver must report the datagram back to the
// core once written (Node.DatagramSent): the core wants the transmit time
// it carries.
func (s Send) Reported() bool { return s.Datagram && (s.NTPStamp || s.Frame) }

// Output is what the driver must do after a Receive or Tick, in order:
// persist State or append Entries (and then call Advance), apply
// Adjustments, write Sends, report Events. If State or Entries cannot be
// written and Promise is set, the Sends must not be written at all (see
// core.Ready.Promise and core.Ready.Entries).
type Output struct {
	State       []byte
	Entries     [][]byte
	Promise     bool
	Adjustments []clock.Adjustment
	Sends       []Send
	Events      []core.Event
	// Held says the core was not drained: configuration agreement holds
	// it back (the node starts, or stepped back). What a call made the
	// core do since its last drained Ready is neither written nor sent:
	// a driver must not answer such a call as done (internal/daemon's
	// DoSaved).
	Held bool
}

// Empty reports whether there is nothing to do.
func (o Output) Empty() bool {
	return o.State == nil && len(o.Entries) == 0 && len(o.Adjustments) == 0 && len(o.Sends) == 0 && len(o.Events) == 0
}

// Node wraps a core with framing and validation. It is not safe for
// concurrent use, except Finalize.
type Node struct {
	cfg       Config
	core      core.Core
	validator *wire.Validator
	sealer    *wire.Sealer // signs with Keys[0]; nil: no keys
	cluster   uint32
	inc       uint32 // incarnation (raised while running only when the series run out)
	series    uint8  // series within the incarnation
	seq       uint64 // last sequence number used
	lamport   *clock.Lamport
	others    []uint32 // members other than self, ascending
	peers     map[uint32]*peer
	epochs    map[uint32]uint32 // peers' epochs as last saved (Durable.Epochs)
	own       []core.Message    // the node's own messages (KindEpochRefused), sent with the next Ready
	vectors   bool              // stamping frames with vector timestamps (SetVectors)
	vector    clock.Vector      // the node's vector clock; merged from frames that carry one even while off
	vecBuf    clock.Vector      // decode scratch
	// rec records the node's protocol events while tracing is on; nil:
	// off, and nothing is built for it (SetRecorder).
	rec      trace.Recorder
	drec     trace.DatagramRecorder // rec's datagram side, if it has one
	recClock func() time.Time       // the local clock, for the time of the core's events (nil: now below)
	now      time.Time              // the local time last handed in (Receive, Tick)
	// ticked says the core was ticked, last at lastTick (NextTick).
	ticked   bool
	lastTick time.Time
	stats    Stats
	// agree is configuration agreement (agree.go); nil: off.
	agree *agreement
	// queries are the status queries, asked and answered (cluster.go).
	queries clusterQueries
	// traces are the trace queries, asked and answered (tracewin.go).
	traces traceQueries
	// coreRan says the core was ticked or stepped since it was built: a
	// core that ran is rebuilt when the node steps back (ReplaceCore).
	coreRan bool
	// Lamport state (lamport.go): the saved floor, when the stamps were
	// last saved, whether they changed since, and the reference a member
	// never heard is judged from (unset: none yet, a first start).
	floor         uint64
	stampsAt      time.Time
	stampsChanged bool
	anchor        stampGuard
	// After a restart with keys: how many more times, and when last,
	// the members whose epochs were saved are told (announceRestart).
	noticesLeft int
	noticeAt    time.Time
	// lastNTPXmt is the last transmit timestamp patched into an NTP
	// packet (ntpXmt); atomic: Finalize runs on transport writers.
	lastNTPXmt atomic.Uint64
}

// New wraps c. It fails on a contradictory configuration.
func New(cfg Config, c core.Core) (*Node, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if c == nil {
		return nil, errors.New("node: nil core")
	}
	n := &Node{
		cfg:       cfg,
		core:      c,
		cluster:   wire.ServiceClusterID(cfg.Service, cfg.Cluster),
		validator: wire.NewValidator(wire.ServiceClusterID(cfg.Service, cfg.Cluster), cfg.ID, cfg.Keys),
		inc:       cfg.Incarnation,
		seq:       wire.Seq(cfg.Incarnation, 0, 0),
		peers:     map[uint32]*peer{},
		epochs:    maps.Clone(cfg.Epochs),
		lamport:   cfg.Lamport,
		stats:     newStats(),
	}
	if n.lamport == nil {
		n.lamport = new(clock.Lamport)
	}
	if len(cfg.Keys) > 0 {
		n.sealer = wire.NewSealer(cfg.Keys[0])
	}
	n.vectors = cfg.Vectors
	if u, ok := c.(core.VectorUser); ok && u.UsesVectors() {
		n.vectors = true
	}
	for id := range cfg.Members {
		if id != cfg.ID {
			n.others = append(n.others, id)
		}
	}
	slices.Sort(n.others)
	for id := range n.epochs {
		if _, ok := cfg.Members[id]; !ok || id == cfg.ID {
			delete(n.epochs, id) // a member that left the list
		}
	}
	if cfg.Agreement != nil {
		n.agree = newAgreement(&cfg)
	}
	if len(cfg.Keys) > 0 && len(n.epochs) > 0 {
		n.noticesLeft = restartNotices
	}
	n.restoreStamps(cfg.Stamps)
	return n, nil
}

// Core returns the wrapped core (for drivers that expose core-specific
// operations, such as a lock request, through the control API).
func (n *Node) Core() core.Core { return n.core }

// ID returns this node's member ID.
func (n *Node) ID() uint32 { return n.cfg.ID }

// Receive decodes, validates and steps one packet. A non-nil error says why
// the packet was dropped; it has already been counted.
func (n *Node) Receive(in Inbound) error {
	if in.Datagram {
		n.stats.DatagramsIn++
		if n.drec != nil {
			n.drec.Datagram(trace.EvRecv, in.From, in.Data, n.lamport.Now(), in.Time)
		}
		n.coreRan = true
		if err := n.core.StepDatagram(core.Datagram{Addr: in.From, Data: in.Data, Time: in.Time}); err != nil {
			n.stats.drop("datagram_rejected")
			return err
		}
		return nil
	}
	n.now = in.Time
	var f wire.Frame
	if err := f.UnmarshalBinary(in.Data); err != nil {
		n.refuse(nil, wire.Reason(err))
		return err
	}
	// Membership and source before the validator: they cost nothing, and
	// the node keeps state per sender, which strangers must not make grow.
	// (Another cluster's frames fall through to the validator, which names
	// them as such.)
	if f.Cluster == n.cluster {
		addr, ok := n.cfg.Members[f.Sender]
		if !ok {
			n.refuse(&f, "unknown_member")
			return fmt.Errorf("%w: %d", core.ErrUnknownMember, f.Sender)
		}
		if f.Sender != n.cfg.ID && !fromMember(addr, in) {
			n.refuse(&f, "wrong_source")
			return fmt.Errorf("%w: %d from %s, member address %s", ErrWrongSource, f.Sender, in.From, addr)
		}
	}
	if err := n.validator.Admit(&f, in.Data); err != nil {
		if n.agree != nil {
			n.agreeRefused(&f, in, err)
		}
		n.refuse(&f, wire.Reason(err))
		return err
	}
	// The node's own messages are decoded before anything is recorded
	// (and only they allocate here).
	var refusal *wire.EpochRefused
	var announced *wire.ConfigAnnounce
	var refreshed *wire.ConfigRefresh
	var timings *wire.ConfigTimings
	var query *wire.StatusQuery
	var report *wire.StatusReport
	var traceQuery *wire.TraceQuery
	var traceChunk *wire.TraceChunk
	var own encoding.BinaryUnmarshaler
	switch f.Kind {
	case wire.KindEpochRefused:
		refusal = new(wire.EpochRefused)
		own = refusal
	case wire.KindConfig:
		announced = new(wire.ConfigAnnounce)
		own = announced
	case wire.KindConfigRefresh:
		refreshed = new(wire.ConfigRefresh)
		own = refreshed
	case wire.KindConfigTimings:
		timings = new(wire.ConfigTimings)
		own = timings
	case wire.KindStatusQuery:
		query = new(wire.StatusQuery)
		own = query
	case wire.KindStatusReport:
		report = new(wire.StatusReport)
		own = report
	case wire.KindTraceQuery:
		traceQuery = new(wire.TraceQuery)
		own = traceQuery
	case wire.KindTraceChunk:
		traceChunk = new(wire.TraceChunk)
		own = traceChunk
	}
	if own != nil {
		if err := own.UnmarshalBinary(f.Payload); err != nil {
			n.refuse(&f, wire.Reason(err))
			return err
		}
	}
	if refusal != nil && len(n.cfg.Keys) == 0 {
		n.refuse(&f, "unkeyed_refusal")
		return fmt.Errorf("%w: from %d, naming epoch %#x", ErrUnkeyedRefusal, f.Sender, refusal.Epoch)
	}
	plan, err := n.checkSeq(&f, in.Time)
	if err == nil {
		err = n.checkStamp(f.Sender, f.Sender, f.Lamport, in.Time)
	}
	var vector clock.Vector
	var checked bool
	if err == nil && f.Vector != nil {
		vector, err = n.checkVector(f.Vector, f.Sender, in.Time)
	}
	if err == nil && n.agree != nil && !nodeKind(f.Kind) {
		// Configuration agreement (agree.go): after the checks of what
		// the frame claims, before anything is recorded. The node's own
		// kinds pass: a member whose configuration differs still
		// announces it, and still answers a status query.
		checked, err = n.agreeAdmit(&f, in.Time)
	}
	if err == nil {
		err = n.commitSeq(plan, in.Time)
	}
	if err != nil {
		if errors.Is(err, ErrPreRestart) || plan.renew {
			n.refuseEpoch(f.Sender, wire.SeqEpoch(f.Seq), in.Time)
		}
		n.refusedStamp(err, in.Time)
		n.refuse(&f, reasonOf(err))
		return err
	}
	n.takeStamp(f.Sender, f.Lamport, in.Time)
	n.lamport.Receive(f.Lamport)
	switch {
	case n.vectors:
		n.vector.Receive(n.cfg.ID, vector)
	case vector.Len() > 0:
		// Kept while off too, so that vectors turned on later still
		// know what every frame told.
		n.vector.Merge(vector)
	}
	if nodeKind(f.Kind) {
		// The node's own business: the core never sees it.
		var err error
		switch {
		case announced != nil:
			if n.agree != nil {
				n.configReceived(&f, announced, in.Time)
			}
		case refreshed != nil:
			if n.agree != nil {
				n.configRefreshed(&f, refreshed, in.Time)
			}
		case timings != nil:
			if n.agree != nil {
				n.timingsReceived(&f, timings)
			}
		case query != nil:
			err = n.statusQueried(&f, query, in.Time)
		case report != nil:
			err = n.statusReported(&f, report, in.Time)
		case traceQuery != nil:
			err = n.traceQueried(&f, traceQuery, in.Time)
		case traceChunk != nil:
			err = n.traceAnswered(&f, traceChunk, in.Time)
		default:
			n.epochRefused(*refusal)
		}
		if err != nil {
			n.refuse(&f, reasonOf(err))
			return err
		}
		n.stats.in(f.Kind)
		if n.rec != nil && !untraced(f.Kind) {
			n.recordRecv(f, in.Time)
		}
		return nil
	}
	if n.agree != nil {
		n.agreeHeard(f.Sender, in.Time)
	}
	n.coreRan = true
	m := core.Message{
		From:    f.Sender,
		To:      f.Receiver,
		Kind:    f.Kind,
		Term:    f.Term,
		Payload: f.Payload,
		Stream:  in.Stream,
		Lamport: f.Lamport,
		Vector:  vector,
		Time:    in.Time,
		Checked: checked,
	}
	if f.Xmt != 0 {
		m.Sent = f.Xmt.Time()
	}
	// Recorded before the core steps it: the core's events (reported
	// with its next Ready) come after the receive that caused them. A
	// frame the core then rejects is a receive followed by a drop.
	if n.rec != nil {
		n.recordRecv(f, in.Time)
	}
	if err := n.core.Step(m); err != nil {
		n.refuse(&f, "rejected_"+f.Kind.String())
		return err
	}
	n.stats.in(f.Kind)
	return nil
}

// refuse counts a received frame dropped for reason (f: what was decoded
// of it, nil if nothing) and records it while tracing.
func (n *Node) refuse(f *wire.Frame, reason string) {
	n.stats.drop(reason)
	if n.rec == nil {
		return
	}
	if f == nil {
		n.rec.Drop(nil, reason, n.lamport.Now(), n.now)
		return
	}
	// A copy, so that f itself does not escape (and cost an allocation
	// per frame) while tracing is off.
	c := *f
	n.rec.Drop(&c, reason, n.lamport.Now(), n.now)
}

// recordRecv records the receive of f (a copy: see refuse).
func (n *Node) recordRecv(f wire.Frame, at time.Time) {
	n.rec.Recv(&f, n.lamport.Now(), n.vector, at)
}

// Advance tells the core how the driver acted on the last Output: saved
// says that its State, if it had one, is on disk (core.Advancer). Drivers
// call it after every Output, before writing the Sends.
func (n *Node) Advance(saved bool) {
	if a, ok := n.core.(core.Advancer); ok {
		a.Advance(saved)
	}
}

// Withdraw asks the core to take back what the last Ready's failed write
// promised (core.Withdrawer), for a driver that knows none of that write
// can be read back and withheld its messages. ok is false for a core
// that cannot: the write's promises stay pending, as after any failed
// write, and events stand as they are.
func (n *Node) Withdraw(events []core.Event) (kept []core.Event, taken int, all, ok bool) {
	w, ok := n.core.(core.Withdrawer)
	if !ok {
		return events, 0, false, false
	}
	kept, taken, all = w.Withdraw(events)
	return kept, taken, all, true
}

// Adjusted tells the core the clock's reading right after the driver
// applied the last Output's Adjustments (core.Adjuster).
func (n *Node) Adjusted(at time.Time) {
	if a, ok := n.core.(core.Adjuster); ok {
		a.Adjusted(at)
	}
}

// Answer asks the core to answer datagram in at once (core.Answerer),
// into buf. handled false: the core does not answer it alone (or cannot
// answer at all): step it with Receive. Otherwise the answer, if any, is
// s (s.Data nil: dropped, counted, err says why); write it with
// FinishAnswer's bytes.
func (n *Node) Answer(in Inbound, buf []byte) (s Send, handled bool, err error) {
	a, ok := n.core.(core.Answerer)
	if !ok || !in.Datagram {
		return Send{}, false, nil
	}
	ans, handled, err := a.Answer(core.Datagram{Addr: in.From, Data: in.Data, Time: in.Time}, buf)
	if !handled {
		return Send{}, false, nil
	}
	n.stats.DatagramsIn++
	if n.drec != nil {
		n.drec.Datagram(trace.EvRecv, in.From, in.Data, n.lamport.Now(), in.Time)
	}
	if err != nil {
		n.stats.drop("datagram_rejected")
	}
	if ans.Data == nil {
		return Send{}, true, err
	}
	n.stats.DatagramsOut++
	return n.tracedDatagram(Send{To: ans.Addr, Data: ans.Data, Datagram: true, NTPStamp: ans.NTPStamp, NTPSign: ans.NTPSign, Frame: ans.Frame, TxStamp: ans.TxStamp}), true, err
}

// AnswerSent reports to the core that answer s (Answer, with TxStamp) left
// as b at local time at, the kernel's transmit stamp (core.AnswerStamper).
func (n *Node) AnswerSent(s Send, b []byte, at time.Time) {
	if a, ok := n.core.(core.AnswerStamper); ok && s.TxStamp {
		a.AnswerSent(core.Datagram{Addr: s.To, Data: b, Time: at, Local: true})
	}
}

// Tick advances the core to local time now. A core that schedules its own
// ticks (core.Scheduler) is ticked when NextTick says; any other at a fixed
// interval. A core must be correct when ticked at any time, early, late or
// after a long sleep.
//
// With configuration agreement, the node's own work comes first
// (announcements, the end of the start, members heard no more), and the
// core is ticked only while the node stands agreed: a core held back
// sees a long pause, which every core survives.
func (n *Node) Tick(now time.Time) {
	n.ticked, n.lastTick, n.now = true, now, now
	if len(n.queries.pending) > 0 {
		n.expireClusterQueries(now)
	}
	if len(n.traces.pending) > 0 {
		n.expireTraceQueries(now)
	}
	// Before agreement's first announcements: a member told first moves
	// to a new series before it answers them.
	n.announceRestart(now)
	if n.agree != nil {
		n.agreeTick(now)
		if n.agree.standing != StandingAgreed {
			return
		}
	}
	n.coreRan = true
	n.core.Tick(now)
	n.saveStamps(0, now)
}

// Ready drains the core and encodes its messages.
//
// While configuration agreement holds the core back (the node starts, or
// stepped back), the core is not drained: what it wants (messages made
// when it was built, state to write) waits in it until it runs; only the
// node's own messages leave.
func (n *Node) Ready() Output {
	if n.Standing() != StandingAgreed {
		out := Output{Held: true}
		for _, m := range n.own {
			out.Sends = n.encode(out.Sends, m)
		}
		n.own = n.own[:0]
		return out
	}
	rd := n.core.Ready()
	out := Output{State: rd.State, Entries: rd.Entries, Promise: rd.Promise, Adjustments: rd.Adjustments, Events: rd.Events}
	if n.rec != nil && len(rd.Events) > 0 {
		n.recordEvents(rd)
	}
	if !n.saveStamps(len(n.own)+len(rd.Messages), n.now) {
		// The clock would pass a floor that could not be saved: after a
		// crash, this node's next life would stamp below these frames.
		for _, m := range slices.Concat(n.own, rd.Messages) {
			n.stats.drop("unsent_" + m.Kind.String())
		}
		n.own, rd.Messages = n.own[:0], nil
	}
	for _, m := range n.own {
		out.Sends = n.encode(out.Sends, m)
	}
	n.own = n.own[:0]
	for _, m := range rd.Messages {
		out.Sends = n.encodeCore(out.Sends, m)
	}
	for _, d := range rd.Datagrams {
		n.stats.DatagramsOut++
		out.Sends = append(out.Sends, n.tracedDatagram(Send{To: d.Addr, Data: d.Data, Datagram: true, NTPStamp: d.NTPStamp, NTPSign: d.NTPSign, Frame: d.Frame}))
	}
	return out
}

// tracedDatagram marks datagram s for recording when it is finalized, if
// the node records datagrams.
func (n *Node) tracedDatagram(s Send) Send {
	if n.drec != nil {
		s.traced = &tracedSend{rec: n.rec, drec: n.drec, lamport: n.lamport.Now()}
	}
	return s
}

// recordEvents records the core's events of rd before its messages: the
// core reported them while deciding what to send. Their Lamport time is
// the clock's before this Ready's sends took their stamps (a core that
// stamped a message itself already moved the clock); each is an event of
// its own in the vector clock.
func (n *Node) recordEvents(rd core.Ready) {
	lamport := n.lamport.Now()
	for _, m := range rd.Messages {
		if m.Lamport != 0 && m.Lamport <= lamport {
			lamport = min(lamport, m.Lamport-1)
		}
	}
	at := n.now
	if n.recClock != nil {
		at = n.recClock()
	}
	for _, e := range rd.Events {
		if n.vectors {
			n.vector.Tick(n.cfg.ID)
		}
		n.rec.Local(e, lamport, n.vector, at)
	}
}

// encodeCore encodes the core's message m as encode does, but sends
// nothing to a member whose frames this node refuses (withholds): a
// broadcast goes to the others one by one (a multicast would reach it),
// a message to it alone is dropped, counted "withheld_<kind>".
func (n *Node) encodeCore(sends []Send, m core.Message) []Send {
	if n.agree == nil {
		return n.encode(sends, m)
	}
	if m.To != core.Broadcast {
		if n.withholds(m.To) {
			n.stats.drop("withheld_" + m.Kind.String())
			return sends
		}
		return n.encode(sends, m)
	}
	withheld := false
	for _, id := range n.others {
		if n.withholds(id) {
			withheld = true
			break
		}
	}
	if !withheld {
		return n.encode(sends, m)
	}
	st := n.stamp(m)
	for _, id := range n.others {
		if n.withholds(id) {
			n.stats.drop("withheld_" + m.Kind.String())
			continue
		}
		sends = n.frame(sends, m, id, Send{To: n.cfg.Members[id], Stream: m.Stream}, st)
	}
	return sends
}

func (n *Node) encode(sends []Send, m core.Message) []Send {
	// One logical send, one stamp: every frame of a fan-out carries the
	// same Lamport time (and vector), as one multicast frame does.
	st := n.stamp(m)
	if m.To == core.Broadcast {
		if n.cfg.Multicast && !m.Stream {
			return n.frame(sends, m, 0, Send{Multicast: true}, st)
		}
		for _, id := range n.others {
			sends = n.frame(sends, m, id, Send{To: n.cfg.Members[id], Stream: m.Stream}, st)
		}
		return sends
	}
	addr, ok := n.cfg.Members[m.To]
	if !ok || m.To == n.cfg.ID {
		// A core addressing a stranger or itself is a bug in the core; the
		// daemon must not die of it, so it is counted where status shows it.
		n.stats.drop("bad_destination")
		return sends
	}
	return n.frame(sends, m, m.To, Send{To: addr, Stream: m.Stream}, st)
}

// stamps are the logical times of one send.
type stamps struct {
	lamport uint64
	vector  clock.Vector // empty unless vectors are on
	encoded []byte       // vector's encoding, shared by the fan-out's frames
}

// stamp takes the logical times of the send of m: the core's own Lamport
// stamp if it set one (taken from the node's clock, so never ahead of it:
// one that is ahead is a bug in the core, replaced and counted), else the
// next on the node's clock; and, with vectors on, the vector clock after
// counting the send.
func (n *Node) stamp(m core.Message) stamps {
	var st stamps
	switch {
	case m.Lamport == 0:
		st.lamport = n.lamport.Send()
	case m.Lamport > n.lamport.Now():
		n.stats.OwnStampsAhead++
		st.lamport = n.lamport.Send()
	default:
		st.lamport = m.Lamport
	}
	// The trace exchange's frames carry no vector: they are never traced
	// (untraced), and a vector would grow a chunk past twice its query.
	// Nor does a status report: 12 bytes a member would take it past
	// twice a forged query from 8 members on (11 with a key).
	if n.vectors && !untraced(m.Kind) && m.Kind != wire.KindStatusReport {
		n.vector.Tick(n.cfg.ID)
		st.vector = n.vector.Clone()
		st.encoded, _ = st.vector.AppendBinary(nil) // fails only beyond MaxVectorEntries: members are fewer
	}
	return st
}

func (n *Node) frame(sends []Send, m core.Message, to uint32, s Send, st stamps) []Send {
	seq, ok := n.nextSeq()
	if !ok {
		n.stats.drop("unsent_" + m.Kind.String())
		return sends
	}
	f := wire.Frame{
		Header: wire.Header{
			Kind:     m.Kind,
			Cluster:  n.cluster,
			Sender:   n.cfg.ID,
			Receiver: to,
			Term:     m.Term,
			Seq:      seq,
			Lamport:  st.lamport,
		},
		Payload: m.Payload,
		Vector:  st.encoded,
	}
	b, err := f.AppendBinary(make([]byte, 0, wire.HeaderLen+len(m.Payload)+len(st.encoded)+wire.AuthTrailerLen))
	if err != nil {
		n.stats.drop("encode_" + m.Kind.String())
		return sends
	}
	s.Data, s.Kind = b, m.Kind
	if n.rec != nil && !untraced(m.Kind) {
		s.traced = &tracedSend{rec: n.rec, vc: st.vector}
	}
	if m.Report && !s.Stream {
		s.Report = true
		s.msg = core.Message{From: n.cfg.ID, To: to, Kind: m.Kind, Term: m.Term, Payload: m.Payload, Local: true,
			Lamport: st.lamport, Vector: st.vector}
	}
	n.stats.out(m.Kind)
	return append(sends, s)
}

// checkVector decodes a frame's vector timestamp (its structure already
// checked by wire) and refuses what no member can have sent: more entries
// than members, an entry of a non-member, a counter above what this node
// knows of that member and beyond what its Lamport clock can have reached
// (an entry counts the member's events, which its clock counts too; see
// LamportRate), or, for this node's own entry, more than LamportBurst
// above its clock. The returned vector is the node's own copy.
func (n *Node) checkVector(b []byte, from uint32, now time.Time) (clock.Vector, error) {
	if err := n.vecBuf.UnmarshalBinary(b); err != nil {
		return clock.Vector{}, fmt.Errorf("%w: %v", ErrBadVector, err)
	}
	if n.vecBuf.Len() > len(n.cfg.Members) {
		return clock.Vector{}, fmt.Errorf("%w: %d entries from %d, %d members", ErrBadVector, n.vecBuf.Len(), from, len(n.cfg.Members))
	}
	for _, id := range n.vecBuf.IDs() {
		if _, ok := n.cfg.Members[id]; !ok {
			return clock.Vector{}, fmt.Errorf("%w: an entry of %d, not a member, from %d", ErrBadVector, id, from)
		}
		got := n.vecBuf.Get(id)
		if got <= n.vector.Get(id) {
			continue
		}
		if err := n.checkEntry(id, from, got, now); err != nil {
			return clock.Vector{}, fmt.Errorf("%w: %w", ErrBadVector, err)
		}
	}
	return n.vecBuf.Clone(), nil
}

// SetVectors turns vector timestamps on or off while running (tracing
// turns them on): on, every frame sent carries the node's vector clock and
// every event counts in it. Received vectors are merged either way. A core
// that implements core.VectorUser has them on from the start, and SetVectors
// cannot turn them off under it.
func (n *Node) SetVectors(on bool) {
	if u, ok := n.core.(core.VectorUser); ok && u.UsesVectors() {
		on = true
	}
	n.vectors = on
}

// SetRecorder starts (r non-nil) or stops (nil) recording the node's
// protocol events: every frame sent (when it is finalized, at its transmit
// time; a stream frame when the driver queued it, StreamQueued), every
// frame received (after the merge), every frame refused
// (its reason as counted in status) and every event of the core. While it
// records, the node stamps frames with vector timestamps; when it stops,
// vectors go off again unless the configuration or the core
// (core.VectorUser) wants them. Frames encoded while recording are still
// recorded when they are finalized after it stopped: the recorder must
// accept (or ignore) calls after it was closed. now reads the local clock
// for the time of the core's events (a Ready may follow a control
// request, long after the last Tick); nil: the time of the last Tick or
// Receive (the simulator's).
func (n *Node) SetRecorder(r trace.Recorder, now func() time.Time) {
	n.rec, n.recClock = r, now
	n.drec, _ = r.(trace.DatagramRecorder)
	n.SetVectors(r != nil || n.cfg.Vectors)
}

// Recording reports whether a recorder is set.
func (n *Node) Recording() bool { return n.rec != nil }

// Vectors reports whether the node stamps frames with vector timestamps.
func (n *Node) Vectors() bool { return n.vectors }

// Vector returns a copy of the node's vector clock.
func (n *Node) Vector() clock.Vector { return n.vector.Clone() }

// FrameSent reports to the core that frame s, which it asked about
// (Send.Report), left: patched is the transmit time Finalize wrote into it,
// at when it really left (a kernel stamp, converted by the clock; patched
// when there is none). Drivers call it right after the write; its error is
// the core's.
func (n *Node) FrameSent(s Send, patched, at time.Time) error {
	if !s.Report {
		return nil
	}
	m := s.msg
	m.Sent, m.Time = patched, at
	return n.core.Step(m)
}

// DatagramSent reports to the core that the datagram s left as b at local
// time at (the transmit time Finalize patched in). Drivers call it right
// after writing a datagram that Send.Reported says; its error is the core's.
func (n *Node) DatagramSent(s Send, b []byte, at time.Time) error {
	return n.core.StepDatagram(core.Datagram{Addr: s.To, Data: b, Time: at, Local: true})
}

// Finalize returns the bytes of s as they must leave at local time now: the
// transmit timestamp patched in and, for frames, the MAC appended. It does
// not modify s.Data and is safe for concurrent use (transport writers call it
// from their own goroutines right before the write).
func (n *Node) Finalize(s Send, now time.Time) []byte {
	b := make([]byte, len(s.Data), len(s.Data)+wire.AuthTrailerLen)
	copy(b, s.Data)
	return n.finish(b, s, now)
}

// FinishAnswer is Finalize for an answer (Answer) whose bytes the driver
// owns: it patches and signs them in place, appending to s.Data.
func (n *Node) FinishAnswer(s Send, now time.Time) []byte { return n.finish(s.Data, s, now) }

func (n *Node) finish(b []byte, s Send, now time.Time) []byte {
	ts := wire.NTPTimeFromTime(now)
	if s.Datagram && !s.Frame {
		if s.NTPStamp && len(b) >= wire.NTPHeaderLen {
			putUint64(b[wire.NTPXmtOffset:], uint64(n.ntpXmt(ts)))
			if s.NTPSign != nil {
				b = s.NTPSign.Append(b)
			}
		}
		if s.traced != nil && s.traced.drec != nil {
			s.traced.drec.Datagram(trace.EvSend, s.To, b, s.traced.lamport, now)
		}
		return b
	}
	if len(b) < wire.HeaderLen {
		// Only a core's bug can get here (a Frame datagram that is not
		// a frame): send it as it is rather than panic in PatchXmt.
		return b
	}
	wire.PatchXmt(b, ts)
	switch {
	case s.traced != nil && s.traced.drec != nil:
		// A frame on the datagram socket (Cristian's), to a peer that
		// need not be a member.
		s.traced.drec.Datagram(trace.EvSend, s.To, b, s.traced.lamport, now)
	case s.traced != nil && !s.Stream:
		// The send as it leaves: at the transmit time patched into it.
		// (A stream frame's was recorded when it was queued: this runs
		// on its link's writer, after the loop's later events.)
		s.traced.send(b, now)
	}
	if n.sealer != nil {
		b = n.sealer.Seal(b)
	}
	return b
}

// StreamQueued records the send of stream frame s, which the driver has
// just queued on its link (the transport's SendStream took it) at local
// time at, read before it was handed over. Drivers call it on the loop,
// right after the queueing, so that the send is recorded in the order of
// the node's other events, whose vector and Lamport times follow its own;
// Finalize, which the link's writer calls later on its own goroutine,
// records nothing for a stream frame. The send's time is thus when the
// node sent it, not the transmit time patched in at the write: never
// after it, so never after its delivery. A frame the link drops after
// this (its peer never accepted the connection, it waited past the
// queue's age, the write failed) is a send without a delivery, as it
// happened; one the queue refused (full) was never sent: do not call
// StreamQueued for it. A Send that is not a traced stream frame records
// nothing.
func (n *Node) StreamQueued(s Send, at time.Time) {
	if s.Stream && s.traced != nil && s.traced.drec == nil {
		s.traced.send(s.Data, at)
	}
}

// send records the send of the traced frame b (its bytes, the transmit
// time patched in or not: the trace keeps the header's logical fields
// and the payload) at local time at.
func (t *tracedSend) send(b []byte, at time.Time) {
	var f wire.Frame
	if f.UnmarshalBinary(b) == nil {
		t.rec.Send(&f, t.vc, at)
	}
}

// ntpXmtNudgeMax is how far behind this node's last NTP transmit timestamp
// a clock reading may be and still be nudged past it (ntpXmt): the answers
// of one batch share a reading; a clock set back further than this (by an
// operator: timed never steps back) is taken as it is.
const ntpXmtNudgeMax = wire.NTPTime(1 << 32 / 1000) // 1 ms

// ntpXmt returns the transmit timestamp for an NTP packet stamped with
// clock reading ts: ts with its lowest bit cleared, or two units (2^-31 s,
// 0.47 ns) after the last one this node sent when that is not later.
// Every NTP packet of a node then carries a distinct transmit timestamp,
// as RFC 5905 assumes: a client drops a second packet with the transmit
// time of the last one as a duplicate, and a trace names an NTP packet by
// it. The answers of one datagram batch are stamped with one clock reading
// (internal/daemon), as are a simulated node's sends of one instant, and a
// coarse clock repeats readings; the nudge is far below any clock's
// precision. The timestamp is even, as chronyd makes its own: the server
// makes its receive timestamps odd (interleaved mode), so that a request
// whose origin echoes one of our transmit timestamps, as an RFC 5905
// client's does, is never taken for one in interleaved form.
func (n *Node) ntpXmt(ts wire.NTPTime) wire.NTPTime {
	ts &^= 1
	for {
		last := n.lastNTPXmt.Load()
		next := ts
		if behind := wire.NTPTime(last) - ts; last != 0 && int64(behind) >= 0 && behind < ntpXmtNudgeMax {
			next = wire.NTPTime(last) + 2
		}
		if n.lastNTPXmt.CompareAndSwap(last, uint64(next)) {
			return next
		}
	}
}

func putUint64(b []byte, v uint64) {
	_ = b[7]
	b[0], b[1], b[2], b[3] = byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32)
	b[4], b[5], b[6], b[7] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}

// Status is the node's own view: identity, sequence numbers and frame
// counters. The core's view is in Core.
type Status struct {
	ID          uint32 `json:"id"`
	Cluster     string `json:"cluster"`
	Incarnation uint32 `json:"incarnation"`
	Series      uint8  `json:"series"`
	Lamport     uint64 `json:"lamport"`
	// Vector is the node's vector clock while it stamps frames with one.
	Vector string `json:"vector,omitempty"`
	// Authenticated: frames carry and need a MAC (keys configured).
	Authenticated bool      `json:"authenticated"`
	Peers         []PeerSeq `json:"peers,omitempty"`
	// Agreement is configuration agreement's view (nil: off).
	Agreement *AgreementStatus `json:"agreement,omitempty"`
	Stats
	Core any `json:"core"`
}

// Status returns the node's view, the core's included.
func (n *Node) Status() Status {
	st := Status{
		ID:            n.cfg.ID,
		Cluster:       n.cfg.Cluster,
		Incarnation:   n.inc,
		Series:        n.series,
		Lamport:       n.lamport.Now(),
		Vector:        n.vectorString(),
		Authenticated: len(n.cfg.Keys) > 0,
		Stats:         n.stats.clone(),
		Core:          n.core.Status(),
	}
	if n.agree != nil {
		st.Agreement = n.agreementStatus()
	}
	for _, id := range n.others {
		if ps := n.Peer(id); ps.Seq != 0 || ps.Saved != 0 || ps.StampsRefused != 0 || ps.Hints != 0 {
			st.Peers = append(st.Peers, ps)
		}
	}
	return st
}

// Peer is the node's view of member id's sequence numbers and stamps (as
// in Status, without building the rest).
func (n *Node) Peer(id uint32) PeerSeq {
	ps := PeerSeq{ID: id, Saved: n.epochs[id]}
	if p := n.peers[id]; p != nil {
		if p.seen {
			ps.Seq = p.win.Top()
			ps.Incarnation, ps.Series, _ = wire.SeqParts(ps.Seq)
		}
		if p.stamp.set {
			ps.Stamp = p.stamp.last
		}
		if p.stampsRefused > 0 {
			ps.StampsRefused, ps.StampRefusedAt = p.stampsRefused, p.stampRefusedAt
		}
		if p.hints > 0 {
			ps.Hints, ps.HintCause, ps.HintAt = p.hints, p.hintCause.String(), p.hintAt
		}
	}
	return ps
}

func (n *Node) vectorString() string {
	if !n.vectors {
		return ""
	}
	return n.vector.String()
}

// fromMember says whether in came from the member at addr: a datagram from
// its very address and port (members send from the socket they listen on,
// multicast included), a stream frame from its IP (TCP connections leave
// from the member IP and an ephemeral port).
func fromMember(addr netip.AddrPort, in Inbound) bool {
	if in.Stream {
		return in.From.Addr() == addr.Addr()
	}
	return in.From == addr
}

// nodeKind says whether frames of kind k are the node's own business,
// never the core's: epoch refusals, configuration announcements, status
// queries and their answers.
func nodeKind(k wire.Kind) bool {
	switch k {
	case wire.KindEpochRefused, wire.KindConfig, wire.KindConfigRefresh, wire.KindConfigTimings, wire.KindStatusQuery, wire.KindStatusReport,
		wire.KindTraceQuery, wire.KindTraceChunk:
		return true
	}
	return false
}

// untraced says whether frames of kind k are left out of traces: the
// trace windows' own queries and chunks, which would otherwise fill the
// window they page through (each chunk sent a new event to send).
func untraced(k wire.Kind) bool { return k == wire.KindTraceQuery || k == wire.KindTraceChunk }

// reasonOf is the drop reason of an error from Receive's own checks.
func reasonOf(err error) string {
	for _, r := range [...]struct {
		err    error
		reason string
	}{
		{ErrWrongSource, "wrong_source"},
		{ErrImplausibleSeq, "implausible_seq"},
		{ErrPreRestart, "pre_restart"},
		{ErrBadVector, "bad_vector"}, // before lamport_ahead: an entry's *StampError is wrapped in it
		{ErrLamportAhead, "lamport_ahead"},
		{ErrUnsaved, "unsaved"},
		{ErrConfigDiffers, "config_differs"},
		{ErrConfigUnverified, "config_unverified"},
		{ErrSteppedBack, "stepped_back"},
		{ErrStarting, "starting"},
		{ErrStatusLimited, "status_limited"},
		{ErrStatusUnsolicited, "status_unsolicited"},
		{ErrTraceLimited, "trace_limited"},
		{ErrTraceUnsolicited, "trace_unsolicited"},
		{ErrTraceUnavailable, "trace_unavailable"},
	} {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	return wire.Reason(err)
}
