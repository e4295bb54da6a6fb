package order

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/synclab/synclab/pkg/core"
)

// The core's durable state is a snapshot (persisted, whole) and a log of
// records after it (core.Ready.Entries): each Ready that changed
// something hands over one record with what changed since the state
// last handed over, not the whole state. A record carries
//
//   - the scalars that change on nearly every step (the Lamport clock,
//     the delivery counter), always;
//   - each small part (the stream's positions, the causal and Lamport
//     queues, the log's head: terms, commit point, submissions) whole,
//     when its encoding differs from the one last written;
//   - the records this member numbered in its stream since;
//   - the sequencer's log from the first entry changed on (appended,
//     replaced or cut), never the entries before it.
//
// The state machine is not in records: a restart restores it from the
// snapshot and applies the committed entries after it, in order, as it
// did live. Every record sets values rather than adding to them, so
// reading one twice changes nothing.
//
// A snapshot is written instead of a record on the first Ready after a
// start (the log is then read once and folded in), after a failed write
// (core.Durable), when the state machine was replaced by another
// member's snapshot, and when the records since the last snapshot
// outgrow it (snapshotGrowth): the log on disk stays within a few times
// the state's size.
type logRecord struct {
	Clock     uint64          `json:"clock"`
	Delivered uint64          `json:"delivered"`
	Election  []byte          `json:"election,omitempty"`
	Stream    json.RawMessage `json:"stream,omitempty"`
	Sent      []sentRecord    `json:"sent,omitempty"`
	Causal    json.RawMessage `json:"causal,omitempty"`
	Lamport   json.RawMessage `json:"lamport,omitempty"`
	Log       json.RawMessage `json:"log,omitempty"`
	// From, when not zero, is the first log entry changed: the log is cut
	// after From-1 and Entries appended.
	From    uint64     `json:"from,omitempty"`
	Entries []logEntry `json:"entries,omitempty"`
	// Applied are the messages the Lamport total order applied to the
	// state machine since, in order (the sequencer's are its log's).
	Applied [][]byte `json:"applied,omitempty"`

	// Kept are the other members' records handed on since and kept for
	// the relay (relay.go); which of them are still kept follows from the
	// stream's positions.
	Kept []keptRecord `json:"kept,omitempty"`
}

// keptRecord is one record of member From's stream kept for the relay.
type keptRecord struct {
	From uint32 `json:"from"`
	sentRecord
}

// streamHead is a stream's positions, without its kept records.
type streamHead struct {
	Seq uint64              `json:"seq"`
	Out map[uint32]*peerOut `json:"out"`
	In  map[uint32]*peerIn  `json:"in"`
}

// logHead is the log without its entries and the state machine.
func logHead(l logState) logState {
	l.Entries, l.Machine = nil, nil
	return l
}

// snapshotGrowth: a snapshot is written once the records since the last
// one exceed this many times its size (plus snapshotSlack): replaying
// the log then costs at most a few snapshots' reading.
const (
	snapshotGrowth = 4
	snapshotSlack  = 256 << 10
)

// recorder is what was last handed over, the base of the next record.
type recorder struct {
	election                      []byte
	stream, causal, lamport, head []byte
	sent                          uint64   // the last stream record written
	bytes                         int      // of records since the snapshot
	snapshot                      int      // the snapshot's size
	whole                         bool     // the next write must be a snapshot
	applied                       [][]byte // Lamport order's, since

	kept map[uint32]uint64 // per member, the last kept record written
}

// wantWhole says whether the next write is a snapshot.
func (c *Core) wantWhole() bool {
	r := &c.rec
	l := &c.st.Log
	// Entries changed since the last write and no longer held (another
	// member's snapshot replaced them) cannot go in a record.
	cut := l.changed != 0 && l.changed <= l.Base
	return r.whole || cut || r.bytes > snapshotGrowth*r.snapshot+snapshotSlack
}

// marked encodes v and reports whether it differs from *last, moving
// *last to it.
func (c *Core) marked(last *[]byte, v any) (json.RawMessage, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		c.bugs.Report(&c.events, "encode_record", err)
		return nil, false
	}
	if bytes.Equal(b, *last) {
		return nil, false
	}
	*last = b
	return b, true
}

// mark makes the current state the base of the next record (after a
// snapshot).
func (c *Core) mark(snapshot int) {
	r := &c.rec
	s := c.st.Stream
	r.election = c.el.State
	c.marked(&r.stream, streamHead{Seq: s.Seq, Out: s.Out, In: s.In})
	c.marked(&r.causal, &c.st.Causal)
	c.marked(&r.lamport, &c.st.Lamport)
	c.marked(&r.head, logHead(c.st.Log))
	r.sent = s.Seq
	r.kept = map[uint32]uint64{}
	for p, in := range s.In {
		r.kept[p] = in.Next
	}
	r.bytes, r.snapshot, r.whole, r.applied = 0, snapshot, false, nil
	c.st.Log.changed = 0
}

// encodeRecord builds the record of what changed since the last one
// handed over, and makes it the base of the next.
func (c *Core) encodeRecord() []byte {
	r := &c.rec
	s := c.st.Stream
	rec := logRecord{Clock: c.lamport.Now(), Delivered: c.st.Delivered}
	if !bytes.Equal(c.el.State, r.election) {
		rec.Election, r.election = c.el.State, c.el.State
	}
	if b, ok := c.marked(&r.stream, streamHead{Seq: s.Seq, Out: s.Out, In: s.In}); ok {
		rec.Stream = b
	}
	for _, sr := range s.Sent {
		if sr.Seq > r.sent {
			rec.Sent = append(rec.Sent, sr)
		}
	}
	r.sent = s.Seq
	if r.kept == nil {
		r.kept = map[uint32]uint64{}
	}
	for _, p := range c.peers {
		for _, kr := range s.Kept[p] {
			if kr.Seq > r.kept[p] {
				rec.Kept = append(rec.Kept, keptRecord{From: p, sentRecord: kr})
			}
		}
		r.kept[p] = s.In[p].Next
	}
	if b, ok := c.marked(&r.causal, &c.st.Causal); ok {
		rec.Causal = b
	}
	if b, ok := c.marked(&r.lamport, &c.st.Lamport); ok {
		rec.Lamport = b
	}
	l := &c.st.Log
	if b, ok := c.marked(&r.head, logHead(*l)); ok {
		rec.Log = b
	}
	if l.changed != 0 {
		rec.From = l.changed // > l.Base: see wantWhole and logState.compact
		for i := rec.From; i <= l.last(); i++ {
			e, _ := l.entry(i)
			rec.Entries = append(rec.Entries, e)
		}
		l.changed = 0
	}
	rec.Applied, r.applied = r.applied, nil
	b, err := json.Marshal(rec)
	if err != nil {
		c.bugs.Report(&c.events, "encode_record", err)
		r.whole = true
		return nil
	}
	r.bytes += len(b)
	return b
}

// replay brings a snapshot up to date with the records after it. The log
// keeps every entry it reads (the snapshot's and the records'), so that
// the state machine can be brought from the snapshot's applied number to
// the last record's; the entries before the log's base are dropped at
// the end, as the live log had compacted them.
func replay(st *persisted, records [][]byte) (entries []logEntry, base uint64, applied [][]byte, err error) {
	base, entries = st.Log.Base, st.Log.Entries
	for i, b := range records {
		var rec logRecord
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, 0, nil, fmt.Errorf("%w: log record %d: %w", core.ErrState, i+1, err)
		}
		st.Clock, st.Delivered = max(st.Clock, rec.Clock), rec.Delivered
		if rec.Election != nil {
			st.Election = rec.Election
		}
		if rec.Stream != nil {
			var h streamHead
			if err := json.Unmarshal(rec.Stream, &h); err != nil {
				return nil, 0, nil, fmt.Errorf("%w: log record %d: stream: %w", core.ErrState, i+1, err)
			}
			st.Stream.Seq, st.Stream.Out, st.Stream.In = h.Seq, h.Out, h.In
		}
		for _, sr := range rec.Sent {
			if n := len(st.Stream.Sent); n == 0 || sr.Seq > st.Stream.Sent[n-1].Seq {
				st.Stream.Sent = append(st.Stream.Sent, sr)
			}
		}
		for _, kr := range rec.Kept {
			if st.Stream.Kept == nil {
				st.Stream.Kept = map[uint32][]sentRecord{}
			}
			if k := st.Stream.Kept[kr.From]; len(k) == 0 || kr.Seq > k[len(k)-1].Seq {
				st.Stream.Kept[kr.From] = append(k, kr.sentRecord)
			}
		}
		// A part is written whole: absent fields (omitted when empty) are
		// empty, not what the part held before.
		if rec.Causal != nil {
			st.Causal = causalState{}
			if err := json.Unmarshal(rec.Causal, &st.Causal); err != nil {
				return nil, 0, nil, fmt.Errorf("%w: log record %d: causal: %w", core.ErrState, i+1, err)
			}
		}
		if rec.Lamport != nil {
			st.Lamport = lamportState{}
			if err := json.Unmarshal(rec.Lamport, &st.Lamport); err != nil {
				return nil, 0, nil, fmt.Errorf("%w: log record %d: lamport: %w", core.ErrState, i+1, err)
			}
		}
		if rec.Log != nil {
			machine := st.Log.Machine
			st.Log = logState{}
			if err := json.Unmarshal(rec.Log, &st.Log); err != nil {
				return nil, 0, nil, fmt.Errorf("%w: log record %d: log: %w", core.ErrState, i+1, err)
			}
			st.Log.Machine = machine
		}
		if rec.From != 0 {
			if rec.From <= base || rec.From > base+uint64(len(entries))+1 {
				return nil, 0, nil, fmt.Errorf("%w: log record %d changes entry %d, the log holds %d to %d", core.ErrState, i+1, rec.From, base+1, base+uint64(len(entries)))
			}
			entries = append(entries[:rec.From-base-1:rec.From-base-1], rec.Entries...)
		}
		applied = append(applied, rec.Applied...)
	}
	return entries, base, applied, nil
}
