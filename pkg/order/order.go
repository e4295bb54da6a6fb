package order

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/wire"
)

// Order is the promise a multicast asks for.
type Order uint8

// Orders.
const (
	// FIFO: every member delivers the sender's messages in the order it
	// sent them, each once.
	FIFO Order = iota + 1
	// Causal: and after every message that causally precedes it.
	Causal
	// TotalOrder: every member delivers the total-order messages in the
	// same order (by the Config's Total algorithm).
	TotalOrder
)

var orderNames = [...]string{FIFO: "fifo", Causal: "causal", TotalOrder: "total"}

func (o Order) String() string {
	if o > 0 && int(o) < len(orderNames) {
		return orderNames[o]
	}
	return fmt.Sprintf("order(%d)", uint8(o))
}

// MarshalText makes an Order read as its name in JSON.
func (o Order) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText reads an Order's name.
func (o *Order) UnmarshalText(b []byte) error {
	v, err := ParseOrder(string(b))
	*o = v
	return err
}

// ParseOrder reads an Order's name.
func ParseOrder(s string) (Order, error) {
	for i, n := range orderNames {
		if n != "" && n == s {
			return Order(i), nil
		}
	}
	return 0, fmt.Errorf("unknown order %q (known: fifo, causal, total)", s)
}

// Events.
const (
	// EventDelivered: a message was delivered (args: order, sender, seq,
	// index, sid for the sequencer's total order, and the state machine's
	// result for total order).
	EventDelivered = "delivered"
	// EventSequencer: this member became the sequencer of a term, having
	// learned the log from a majority (args: term, last, commit).
	EventSequencer = "sequencer"
	// EventSnapshot: this member caught up from a snapshot of the state
	// machine, the log entries before it being no longer kept (args:
	// from, index, skipped_from, skipped_to). The messages in it are not
	// delivered one by one: an EventDelivered with a Delivery whose
	// Skipped names them follows.
	EventSnapshot = "snapshot"
	// EventAckUndone: without a key, a member's word undid an
	// acknowledgement in its name that had already settled, so records
	// it lacks may have been trimmed (args: member, holds, said). Warn.
	EventAckUndone = "ack_undone"
)

// Errors of Multicast.
var (
	// ErrBusy: a window or bound is full; try again later.
	ErrBusy = errors.New("order: too many messages in flight")
	// ErrTooLong: the message exceeds wire.MaxOrderMessage.
	ErrTooLong = errors.New("order: message too long")
	// ErrOrder: an order this core does not know.
	ErrOrder = errors.New("order: unknown order")
)

// Errors of Step, counted under their labels.
var (
	ErrStale       = errors.New("order: stale or duplicate")
	ErrImplausible = errors.New("order: implausible value")
	ErrTerm        = errors.New("order: not the current sequencer's term")
	// errEarlyTerm: a sequencer's term the election has not announced
	// here yet. Its frame is ignored and counted as early_terms, not as
	// bad input (no rejected_ counter, no drop at the node): its sender
	// resends.
	errEarlyTerm  = errors.New("order: a term this member's election has not announced yet")
	ErrNotLeading = errors.New("order: this member is not the sequencer")
	ErrFull       = errors.New("order: bound reached")
)

var stepLabels = core.ErrorLabels{
	{Err: ErrStale, Label: "stale"},
	{Err: ErrImplausible, Label: "implausible"},
	{Err: ErrTerm, Label: "wrong_term"},
	{Err: ErrNotLeading, Label: "not_sequencer"},
	{Err: ErrFull, Label: "full"},
	{Err: core.ErrUnknownMember, Label: "unknown_member"},
	{Err: core.ErrUnexpectedKind, Label: "unexpected_kind"},
}

// Delivery is one delivered message.
type Delivery struct {
	// Index is this member's delivery counter, from 1: it increases with
	// every delivery and is never given to two messages, and a restart
	// continues after every index the member may have announced
	// (indexSlack past the last one written: a gap); a send taken back
	// after its write failed leaves its index unused (withdraw.go).
	Index   uint64    `json:"index"`
	Order   Order     `json:"order"`
	Sender  uint32    `json:"sender"`
	Seq     uint64    `json:"seq"`               // the sender's stream number, or the total order's number (sequencer)
	SID     uint64    `json:"sid,omitempty"`     // the sender's submission ID (total, sequencer: Core.Submission)
	Lamport uint64    `json:"lamport,omitempty"` // the message's Lamport stamp (total, Lamport)
	Vector  []uint64  `json:"vector,omitempty"`  // the message's vector timestamp, in member order (causal)
	Message []byte    `json:"message"`
	Result  string    `json:"result,omitempty"` // the state machine's answer
	Error   string    `json:"error,omitempty"`  // the state machine's refusal
	At      time.Time `json:"at"`               // local clock at delivery
	// Skipped, on a total-order record with no message: this member did
	// not deliver the numbers From to To (Seq is To) one by one, having
	// caught up from a snapshot of the replicated state (their effect is
	// in it). Nothing else is ever passed over.
	Skipped *Skipped `json:"skipped,omitempty"`

	early bool // announced before its record is written (BeforeSave)
}

// Skipped is a range of the sequencer's numbers a member did not deliver
// one by one (Delivery.Skipped).
type Skipped struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
	// Via is the member whose snapshot of the state this one installed.
	Via uint32 `json:"via"`
}

// Core is the ordered-multicast core. Not safe for concurrent use.
type Core struct {
	cfg     Config
	id      uint32
	members []uint32 // sorted, self included
	peers   []uint32 // members but self
	pos     map[uint32]int
	lamport *clock.Lamport
	el      elect.Embedded // the election, its state saved inside this core's
	now     time.Time

	durable lazyDurable

	st *persisted

	machine StateMachine

	history    []Delivery
	lastSkip   *Skipped // the last numbers skipped through a snapshot
	fresh      []Delivery
	msgs       []core.Message
	events     []core.Event
	bugs       core.Bugs
	counters   map[string]uint64
	nextTick   time.Time
	deliveredN map[Order]uint64

	seqr seqRole // the sequencer's volatile state
	// unsavedTerm is the term this member sequences or recovers while
	// the last write failed with a promise pending (seqUnsaved); 0: none.
	unsavedTerm uint64
	// savedTerm is the term this member sequenced or recovered at the
	// last write that left nothing pending: on disk (seqUnsaved).
	savedTerm uint64
	// started is the local time the core was built; snapJumped what
	// snapshots moved the commit point by since this member last took a
	// sequencer's Append (see snapshotRate).
	started    time.Time
	snapJumped uint64
	relay      relayState // the relay's volatile state (relay.go)
	rec        recorder   // what the last write handed over (record.go)
	idx        indexes    // which delivery indexes are safe to announce before a write
	wd         withdrawal // what a failed write can take back (withdraw.go)
}

// indexes keeps a delivery's index unique across a crash while the
// total order's deliveries are announced before their record is written
// (see doc.go, "Announced before written"). A restart continues from the
// last index written plus indexSlack, so a delivery announced early may
// take any index up to the last one confirmed written plus indexSlack:
// none of them is ever given to another message after a crash.
type indexes struct {
	saved   uint64 // Delivered in the last write confirmed (Advance)
	handed  uint64 // Delivered in the last Ready's write
	offered bool   // the last Ready carried a write
	floor   uint64 // a restart's first index is after it
}

// indexSlack is how far past the last delivery index written a delivery
// may be announced before its own record is written (and how many
// indexes a restart skips).
const indexSlack = 1024

// New builds the core from its environment.
func New(env core.Env, cfg Config) (*Core, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	members := slices.Clone(env.Members)
	slices.Sort(members)
	members = slices.Compact(members)
	if !slices.Contains(members, env.ID) {
		return nil, fmt.Errorf("%w: %d is not a member", ErrConfig, env.ID)
	}
	if len(members) > wire.MaxOrderVector {
		return nil, fmt.Errorf("%w: %d members, at most %d", ErrConfig, len(members), wire.MaxOrderVector)
	}
	c := &Core{cfg: cfg, id: env.ID, members: members, pos: map[uint32]int{}, lamport: env.Lamport, now: env.Now, started: env.Now,
		counters: map[string]uint64{}, deliveredN: map[Order]uint64{}}
	if c.lamport == nil {
		c.lamport = &clock.Lamport{}
	}
	for i, m := range members {
		c.pos[m] = i
		if m != env.ID {
			c.peers = append(c.peers, m)
		}
	}
	st, r, err := decodeState(env.State, env.Log, c)
	if err != nil {
		return nil, err
	}
	c.st = st
	c.idx.saved = st.Delivered
	if env.State != nil || len(env.Log) > 0 {
		// The last incarnation may have announced deliveries after the
		// last one written (EventDelivered, BeforeSave).
		c.idx.floor = st.Delivered + indexSlack
	}
	c.lamport.Restore(st.Clock)
	if cfg.Machine != nil {
		c.machine = cfg.Machine()
	}
	if err := c.restoreMachine(r); err != nil {
		return nil, err
	}
	eenv := env
	eenv.State = st.Election
	el, err := cfg.Election(eenv)
	if err != nil {
		if errors.Is(err, core.ErrState) {
			return nil, fmt.Errorf("%w: election: %w", core.ErrState, err)
		}
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c.el = elect.Embedded{Elector: el, State: st.Election}
	c.seqr.reset()
	c.relay.reset(env.Now, members)
	// The first write is a snapshot: it folds the log read at the start
	// into one file (and starts it on a first start).
	c.rec.whole = true
	c.durable.Change(false)
	if cfg.Total == Sequencer {
		if err := c.newEra(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Election returns the sequencer's election.
func (c *Core) Election() elect.Elector { return c.el.Elector }

// Hint hands the sequencer's election a hint that a member's port closed
// (core.Hinter): with bully's HintProbe and Watch (orderd's
// --hint-probe) its followers probe a sequencer whose link closed and
// give it up if none of the probes is answered, without waiting for the
// leader timeout. A hint about anyone else changes nothing.
func (c *Core) Hint(h core.Hint) {
	if h.Time.After(c.now) {
		c.now = h.Time
	}
	c.el.Hint(h)
	c.followElection()
}

// UsesVectors says no: a causal message carries its own vector (the
// notes' delivery vector, counting delivered messages), not the node's
// event clock.
func (c *Core) UsesVectors() bool { return false }

// StepDatagram refuses datagrams.
func (c *Core) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }

func (c *Core) count(label string) { c.counters[label]++ }

// Multicast sends msg to every member (this one included) with the given
// order, at local time now.
func (c *Core) Multicast(now time.Time, o Order, msg []byte) error {
	c.now = now
	if len(msg) > wire.MaxOrderMessage {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrTooLong, len(msg), wire.MaxOrderMessage)
	}
	switch o {
	case FIFO:
		if !c.st.Stream.room(c.cfg.Window) {
			return c.busy()
		}
		seq := c.emit(wire.OrderRecord{Type: wire.OrderFIFO, Message: msg})
		c.deliver(Delivery{Order: FIFO, Sender: c.id, Seq: seq, Message: msg})
		c.wd.sends = append(c.wd.sends, ownSend{order: FIFO, seq: seq, index: c.st.Delivered})
	case Causal:
		if !c.st.Stream.room(c.cfg.Window) {
			return c.busy()
		}
		c.st.Causal.V[c.pos[c.id]]++
		vec := slices.Clone(c.st.Causal.V)
		seq := c.emit(wire.OrderRecord{Type: wire.OrderCausal, Vector: vec, Message: msg})
		c.deliver(Delivery{Order: Causal, Sender: c.id, Seq: seq, Vector: vec, Message: msg})
		c.wd.sends = append(c.wd.sends, ownSend{order: Causal, seq: seq, index: c.st.Delivered})
	case TotalOrder:
		if c.cfg.Total == Lamport {
			if !c.st.Stream.room(c.cfg.Window) {
				return c.busy()
			}
			seq, stamp := c.lamportSend(msg)
			c.wd.sends = append(c.wd.sends, ownSend{order: TotalOrder, seq: seq, stamp: stamp})
		} else {
			// Volatile until the sequencer's log holds it (submit).
			return c.submit(msg)
		}
	default:
		return fmt.Errorf("%w: %v", ErrOrder, o)
	}
	c.durable.Change(true)
	return nil
}

func (c *Core) busy() error {
	c.count("busy")
	slow := []uint32{}
	for _, p := range c.peers {
		if c.st.Stream.slow(p, c.cfg.Window) {
			slow = append(slow, p)
		}
	}
	return fmt.Errorf("%w: %d records unacknowledged by member(s) %v (down?), or %d not yet settled (no key: see status's settled)", ErrBusy, c.cfg.Window, slow, settleWindows*c.cfg.Window)
}

// emit numbers a record, keeps it and sends it to every member.
func (c *Core) emit(r wire.OrderRecord) uint64 {
	s := c.st.Stream
	s.Seq++
	r.Seq = s.Seq
	c.wd.records = append(c.wd.records, r)
	if c.relay.pending.IsZero() {
		c.relay.pending = c.now
	}
	b, ok := c.bugs.Encode(&c.events, "order_record", r, nil)
	if !ok {
		return r.Seq
	}
	s.Sent = append(s.Sent, sentRecord{Seq: r.Seq, Payload: b})
	for _, p := range c.peers {
		o := s.Out[p]
		if o.backoff <= c.cfg.Retry {
			// The member answers: the record goes at once, behind the
			// ones in flight (the window bounds them). To a silent one
			// (backing off) only the resends go, until it answers.
			c.sendRecord(p, b)
		}
		if o.due.IsZero() {
			o.due, o.backoff = c.now.Add(c.cfg.Retry), c.cfg.Retry
		}
	}
	c.wake(c.now.Add(c.cfg.Retry))
	return r.Seq
}

func (c *Core) sendRecord(to uint32, payload []byte) {
	c.msgs = append(c.msgs, core.Message{To: to, Kind: wire.KindOrderRecord, Payload: payload})
}

func (c *Core) wake(t time.Time) {
	if c.nextTick.IsZero() || t.Before(c.nextTick) {
		c.nextTick = t
	}
}

// Step feeds one frame.
func (c *Core) Step(m core.Message) error {
	if !m.Time.IsZero() {
		c.now = m.Time
	}
	if bully.Handles(m.Kind) {
		err := c.el.Step(m)
		c.followElection()
		return err
	}
	if m.Local {
		return nil
	}
	var err error
	if _, ok := c.pos[m.From]; !ok || m.From == c.id {
		err = core.ErrUnknownMember
	} else {
		switch m.Kind {
		case wire.KindOrderRecord:
			err = c.stepRecord(m)
		case wire.KindOrderStreamAck:
			err = c.stepStreamAck(m)
		case wire.KindOrderSubmit:
			err = c.stepSubmit(m)
		case wire.KindOrderAppend:
			err = c.stepAppend(m)
		case wire.KindOrderAppendAck:
			err = c.stepAppendAck(m)
		case wire.KindOrderRecover:
			err = c.stepRecover(m)
		case wire.KindOrderRecoverReply:
			err = c.stepRecoverReply(m)
		case wire.KindOrderFetch:
			err = c.stepFetch(m)
		case wire.KindOrderFetchReply:
			err = c.stepFetchReply(m)
		case wire.KindOrderSnapshot:
			err = c.stepSnapshot(m)
		case wire.KindOrderHolding:
			err = c.stepHolding(m)
		case wire.KindOrderRelay:
			err = c.stepRelay(m)
		default:
			err = core.ErrUnexpectedKind
		}
	}
	if errors.Is(err, errEarlyTerm) {
		c.count("early_terms")
		return nil
	}
	if err != nil {
		c.count("rejected_" + stepLabels.Of(err, wire.Reason(err)))
	}
	return err
}

func (c *Core) stepRecord(m core.Message) error {
	var r wire.OrderRecord
	if err := r.UnmarshalBinary(m.Payload); err != nil {
		return err
	}
	return c.acceptRecord(m.From, r, 0, m.Lamport)
}

// acceptRecord takes a record of from's stream, from from itself or
// relayed by member via (relay.go), in a frame stamped at (its Lamport
// time): either way it is handed on once, in order.
//
// A record's stamp is never above the frame that carries it: its sender
// stamped it when it made it, and every frame that carries it later, its
// own or a relay's (which merged the stamp of the frame it came in), is
// stamped after. So the stamp is bounded by the frame's, which the node
// bounds by what a member can have reached (internal/node's LamportRate):
// a record stamped near the end of the clock's range, merged, would stop
// the member's clock there, and every member's total order with it.
func (c *Core) acceptRecord(from uint32, r wire.OrderRecord, via uint32, at uint64) error {
	in := c.st.Stream.In[from]
	switch {
	case r.Seq <= in.Next:
		if via == 0 {
			in.ack = true // its ack may have been lost
		}
		c.count("duplicates")
		return nil
	case r.Seq-in.Next > uint64(c.cfg.Window):
		return fmt.Errorf("%w: record %d of %d's stream, %d ahead of the next expected (window %d)", ErrImplausible, r.Seq, from, r.Seq-in.Next, c.cfg.Window)
	}
	if (r.Type == wire.OrderTotal || r.Type == wire.OrderTotalAck) && r.Stamp >= at {
		// Refused before it is held: a genuine record of this number is
		// taken when it comes.
		return fmt.Errorf("%w: record %d of %d's stream stamped %d, in a frame stamped %d", ErrImplausible, r.Seq, from, r.Stamp, at)
	}
	if r.Type == wire.OrderCausal && len(r.Vector) != len(c.members) {
		// Refused before it is held: it is the sender's bug, and holding
		// it would stall the stream behind it.
		return fmt.Errorf("%w: causal vector of %d entries for %d members", ErrImplausible, len(r.Vector), len(c.members))
	}
	if _, dup := in.held[r.Seq]; dup {
		c.count("duplicates")
		return nil
	}
	r.Message = slices.Clone(r.Message)
	in.held[r.Seq] = r
	for {
		next, ok := in.held[in.Next+1]
		if !ok {
			break
		}
		delete(in.held, in.Next+1)
		in.Next++
		in.ack = true
		c.handOn(from, next)
		c.keep(from, next)
	}
	if in.ack {
		c.durable.Change(true)
	}
	return nil
}

// handOn takes a record from sender's stream, in order, exactly once.
func (c *Core) handOn(from uint32, r wire.OrderRecord) {
	switch r.Type {
	case wire.OrderFIFO:
		c.deliver(Delivery{Order: FIFO, Sender: from, Seq: r.Seq, Message: r.Message})
	case wire.OrderCausal:
		c.causalReceive(from, r)
	case wire.OrderTotal:
		c.lamportReceive(from, r)
	case wire.OrderTotalAck:
		c.lamportAckReceive(from, r)
	}
}

func (c *Core) stepStreamAck(m core.Message) error {
	var a wire.OrderStreamAck
	if err := a.UnmarshalBinary(m.Payload); err != nil {
		return err
	}
	return c.acked(m.From, a.Upto, m.Lamport)
}

// acked takes member from's word, in a frame stamped at, that it holds
// this member's stream up to upto.
func (c *Core) acked(from uint32, upto, at uint64) error {
	s := c.st.Stream
	o := s.Out[from]
	switch {
	case upto > s.Seq:
		return fmt.Errorf("%w: ack of record %d, only %d sent", ErrImplausible, upto, s.Seq)
	case upto < o.Acked && c.cfg.Unkeyed:
		c.undoAck(from, o, upto, at)
		return nil
	case upto <= o.Acked:
		return nil
	}
	o.Acked = upto
	if c.cfg.Unkeyed {
		c.raised(from, o, at)
	} else {
		o.Settled = upto
	}
	if o.backoff > c.cfg.Retry {
		// It was silent, and new records were kept from it: it answers
		// again, so what it lacks goes now rather than at the next
		// resend.
		c.resend(from, o)
	}
	o.backoff = c.cfg.Retry
	if o.Acked == s.Seq {
		o.due = time.Time{}
	} else {
		o.due = c.now.Add(c.cfg.Retry)
		c.wake(o.due)
	}
	old := len(s.Sent)
	s.trim()
	if len(s.Sent) != old {
		c.durable.Change(false)
	}
	if due := c.announceDue(); !due.IsZero() {
		c.wake(due) // relayTick announces it
	}
	return nil
}

// Tick advances timers.
func (c *Core) Tick(now time.Time) {
	c.now = now
	c.el.Tick(now)
	c.followElection()
	c.nextTick = time.Time{}
	s := c.st.Stream
	for _, p := range c.peers {
		o := s.Out[p]
		if o.Acked >= s.Seq {
			o.due = time.Time{}
			continue
		}
		if o.due.IsZero() {
			o.due, o.backoff = now.Add(c.cfg.Retry), c.cfg.Retry
		}
		if !now.Before(o.due) {
			c.resend(p, o)
			o.backoff = min(2*o.backoff, 16*c.cfg.Retry)
			o.due = now.Add(o.backoff)
		}
		c.wake(o.due)
	}
	c.settleTick(now)
	c.relayTick(now)
	c.seqTick(now)
	if !c.durable.due.IsZero() {
		c.wake(c.durable.due)
	}
}

// resend sends member p the records it has not acknowledged, at most
// maxBurst of them.
func (c *Core) resend(p uint32, o *peerOut) {
	s := c.st.Stream
	for seq := o.Acked + 1; seq <= s.Seq && seq <= o.Acked+maxBurst; seq++ {
		if b, ok := s.record(seq); ok {
			c.sendRecord(p, b)
			c.count("resent_records")
		}
	}
}

// Deadline is when Tick is next needed.
func (c *Core) Deadline() time.Time { return core.Earliest(c.el.Deadline(), c.nextTick) }

// Ready drains the output.
func (c *Core) Ready() core.Ready {
	rd, changed, promise := c.el.Drain()
	if changed {
		c.durable.Change(promise)
	}
	c.flushAppends()
	c.flushAnswers()
	for _, p := range c.peers {
		if in := c.st.Stream.In[p]; in.ack {
			in.ack = false
			b, _ := wire.OrderStreamAck{Upto: in.Next}.AppendBinary(nil)
			c.msgs = append(c.msgs, core.Message{To: p, Kind: wire.KindOrderStreamAck, Payload: b})
		}
	}
	if !c.deferRecord() {
		c.durable.ReadyLog(&rd, c.wantWhole(), c.encodeState, c.encodeRecord)
		c.seqr.handed = c.st.Log.last()
		if rd.State != nil || len(rd.Entries) > 0 {
			c.idx.handed, c.idx.offered = c.st.Delivered, true
			c.durable.handed()
		}
	}
	c.wd.ready(rd.State != nil || len(rd.Entries) > 0)
	rd.Messages = append(rd.Messages, c.msgs...)
	rd.Events = append(rd.Events, c.events...)
	c.msgs, c.events = nil, nil
	return rd
}

// Advance is the driver's report on the last Ready.
func (c *Core) Advance(saved bool) {
	c.el.Advance(saved)
	c.durable.Advance(saved)
	if c.idx.offered && saved {
		c.idx.saved = c.idx.handed
	}
	if c.idx.offered && !saved {
		c.durable.urgent = true // the write is retried at once, whole
	}
	c.idx.offered = false
	if saved {
		c.wd.inWrite.sends, c.wd.inWrite.records = nil, nil
	}
	c.seqUnsaved(saved)
	if saved && !c.durable.Pending() {
		c.savedThrough()
	}
}

// deliver hands a message to the application.
func (c *Core) deliver(d Delivery) {
	c.st.Delivered = max(c.st.Delivered, c.idx.floor) + 1
	d.Index = c.st.Delivered
	d.At = c.now
	// The sequencer's total order is announced without waiting for this
	// delivery's record: the entry is committed, on a majority of disks,
	// and a restart delivers it again from the log, at the same number
	// (d.Seq), with the same message (doc.go, "Announced before
	// written"). Its index must be one no restart gives away.
	// A skip is not: it is written with the snapshot that caused it, and
	// a crash before that write may catch up from another snapshot, at
	// another number.
	d.early = d.Order == TotalOrder && c.cfg.Total == Sequencer && d.Skipped == nil && d.Index <= c.idx.saved+indexSlack
	c.deliveredN[d.Order]++
	if len(c.history) >= 2*c.cfg.History {
		// Cut once History more piled up, not at every delivery: a copy
		// of the whole history per delivery was most of a member's CPU
		// on the total order's path (BenchmarkSequencerMulticast).
		c.history = append(c.history[:0:0], c.history[len(c.history)-c.cfg.History+1:]...)
	}
	c.history = append(c.history, d)
	if len(c.fresh) < c.cfg.History {
		// Bounded for a driver that never drains them (the daemon reads
		// History instead).
		c.fresh = append(c.fresh, d)
	}
	args := []any{"order", d.Order.String(), "sender", d.Sender, "seq", d.Seq, "index", d.Index}
	if d.Skipped != nil {
		args = append(args, "skipped_from", d.Skipped.From, "skipped_to", d.Skipped.To, "via", d.Skipped.Via)
	}
	if d.SID != 0 {
		args = append(args, "sid", d.SID)
	}
	if d.Result != "" {
		args = append(args, "result", d.Result)
	}
	if d.Error != "" {
		args = append(args, "error", d.Error)
	}
	msg := fmt.Sprintf("delivered %s message %d of %d", d.Order, d.Seq, d.Sender)
	if k := d.Skipped; k != nil {
		msg = fmt.Sprintf("skipped %s numbers %d to %d via member %d's snapshot", d.Order, k.From, k.To, k.Via)
	}
	c.events = append(c.events, core.Event{Name: EventDelivered, Msg: msg, Args: args, BeforeSave: d.early})
	if d.early {
		c.durable.Lazy() // its record may wait (lazy.go)
	} else {
		c.durable.Change(false)
	}
}

// Deliveries drains the messages delivered since the last call, in
// delivery order (at most History of them are kept undrained).
func (c *Core) Deliveries() []Delivery {
	f := c.fresh
	c.fresh = nil
	return f
}

// History returns the last History deliveries, oldest first, from index
// after on (0: all).
func (c *Core) History(after uint64) []Delivery {
	h := c.history[max(0, len(c.history)-c.cfg.History):]
	i, _ := slices.BinarySearchFunc(h, after+1, func(d Delivery, idx uint64) int {
		switch {
		case d.Index < idx:
			return -1
		case d.Index > idx:
			return 1
		}
		return 0
	})
	return slices.Clone(h[i:])
}

// Machine returns the replicated state machine (nil without one).
func (c *Core) Machine() StateMachine { return c.machine }
