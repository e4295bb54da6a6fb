package order

import (
	"encoding/json"
	"fmt"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// msgT is a frame as the core sees it.
type msgT = core.Message

// persisted is everything a member keeps across a crash: its stream and
// what it knows of the others', the causal and Lamport queues, the log,
// the election's state and its Lamport clock. It is local, never on the
// wire: written whole, as JSON, as a snapshot now and then, and as
// records of what changed (record.go) in between, before any frame that
// depends on it leaves.
type persisted struct {
	Version  int          `json:"version"`
	Stream   *stream      `json:"stream"`
	Causal   causalState  `json:"causal"`
	Lamport  lamportState `json:"lamport_order"`
	Log      logState     `json:"log"`
	Election []byte       `json:"election,omitempty"`
	// Clock is the Lamport clock, restored on start so that no stamp
	// repeats one issued before the crash.
	Clock     uint64 `json:"lamport_clock"`
	Delivered uint64 `json:"delivered"`
}

const stateVersion = 1

// encodeState is the snapshot: the whole state, the state machine at the
// applied number included. It becomes the base of the next record.
func (c *Core) encodeState() []byte {
	c.st.Version = stateVersion
	c.st.Election = c.el.State
	c.st.Clock = c.lamport.Now()
	c.st.Log.Machine = nil
	if c.machine != nil {
		c.st.Log.Machine = c.machine.Snapshot()
	}
	b, err := json.Marshal(c.st)
	c.st.Log.Machine = nil // only the snapshot needs it
	if err != nil {
		c.bugs.Report(&c.events, "encode_state", err)
		c.rec.whole = true
		return nil
	}
	c.mark(len(b))
	return b
}

// decodeState restores the snapshot b and the records after it. The log
// it returns holds every entry from the snapshot's base (see replay), and
// machine is the state machine as the snapshot holds it, at applied:
// restoreMachine brings it to the log's applied number and compacts the
// log.
func decodeState(b []byte, records [][]byte, c *Core) (st *persisted, r restored, err error) {
	st = &persisted{}
	n := len(c.members)
	if b != nil {
		if err := json.Unmarshal(b, st); err != nil {
			return nil, r, fmt.Errorf("%w: %w", core.ErrState, err)
		}
		if st.Version != stateVersion {
			return nil, r, fmt.Errorf("%w: version %d, want %d", core.ErrState, st.Version, stateVersion)
		}
	}
	if st.Stream == nil {
		st.Stream = newStream(c.peers)
	}
	r.applied, r.machine = st.Log.Applied, st.Log.Machine
	r.full, r.base, r.lamport, err = replay(st, records)
	if err != nil {
		return nil, r, err
	}
	if l := &st.Log; l.Base < r.base || l.Base > r.base+uint64(len(r.full)) {
		return nil, r, fmt.Errorf("%w: log base %d, entries from %d to %d", core.ErrState, l.Base, r.base+1, r.base+uint64(len(r.full)))
	} else {
		l.Entries = r.full[l.Base-r.base:]
		l.Machine = nil
	}
	if err := check(st, c, n); err != nil {
		return nil, r, err
	}
	if st.Log.Applied < r.applied {
		return nil, r, fmt.Errorf("%w: applied %d after the snapshot's %d", core.ErrState, st.Log.Applied, r.applied)
	}
	return st, r, nil
}

// restored is what rebuilding the state machine needs (restoreMachine).
type restored struct {
	full    []logEntry // the log from base on, uncompacted
	base    uint64
	applied uint64   // the snapshot's applied number
	machine []byte   // the state machine at applied
	lamport [][]byte // the Lamport order's messages applied after the snapshot
}

// check validates a restored state.
func check(st *persisted, c *Core, n int) error {
	st.Stream.fill(c.peers)
	s := st.Stream
	for i, r := range s.Sent {
		var rec wire.OrderRecord
		if err := rec.UnmarshalBinary(r.Payload); err != nil || rec.Seq != r.Seq || (i > 0 && r.Seq != s.Sent[i-1].Seq+1) || r.Seq > s.Seq {
			return fmt.Errorf("%w: stream record %d is corrupt", core.ErrState, r.Seq)
		}
	}
	for p, in := range s.In {
		if in.Stable > in.Next {
			return fmt.Errorf("%w: member %d's stream stable at %d, past the %d handed on", core.ErrState, p, in.Stable, in.Next)
		}
	}
	for p := range s.Kept {
		trimKept(s, p, c.cfg.Window)
		for i, r := range s.Kept[p] {
			var rec wire.OrderRecord
			if err := rec.UnmarshalBinary(r.Payload); err != nil || rec.Seq != r.Seq || (i > 0 && r.Seq != s.Kept[p][i-1].Seq+1) || r.Seq > s.In[p].Next {
				return fmt.Errorf("%w: record %d of member %d's stream, kept for the relay, is corrupt", core.ErrState, r.Seq, p)
			}
		}
	}
	gone := s.gone()
	for p, o := range s.Out {
		if o.Acked > s.Seq {
			return fmt.Errorf("%w: member %d acknowledged %d of %d records", core.ErrState, p, o.Acked, s.Seq)
		}
		// With a key, what is acknowledged is settled; without one, what
		// was trimmed was (a state of an earlier build has no Settled).
		o.Settled = min(max(o.Settled, gone), o.Acked)
		if !c.cfg.Unkeyed {
			o.Settled = o.Acked
		}
	}
	s.trim()
	if len(s.Sent) > 0 && s.Sent[0].Seq > s.minSettled()+1 || len(s.Sent) == 0 && s.minSettled() < s.Seq {
		return fmt.Errorf("%w: stream records missing", core.ErrState)
	}
	cs := &st.Causal
	if cs.V == nil {
		cs.V, cs.Received = make([]uint64, n), make([]uint64, n)
	}
	if len(cs.V) != n || len(cs.Received) != n {
		return fmt.Errorf("%w: causal vector of %d entries for %d members (the member list changed)", core.ErrState, len(cs.V), n)
	}
	for _, m := range cs.Pending {
		if _, ok := c.pos[m.Sender]; !ok || len(m.Vector) != n {
			return fmt.Errorf("%w: held causal message from %d", core.ErrState, m.Sender)
		}
	}
	ls := &st.Lamport
	if ls.Latest == nil {
		ls.Latest = map[uint32]uint64{}
	}
	if ls.Early == nil {
		ls.Early = map[string][]uint32{}
	}
	for _, m := range ls.Queue {
		if _, ok := c.pos[m.Sender]; !ok {
			return fmt.Errorf("%w: queued message from %d", core.ErrState, m.Sender)
		}
	}
	l := &st.Log
	if l.Commit > l.last() || l.Applied > l.Commit || l.Base > l.Applied || l.LogTerm > l.Term || l.AppendTerm > l.Term {
		return fmt.Errorf("%w: log base %d applied %d commit %d last %d, terms %d/%d/%d", core.ErrState,
			l.Base, l.Applied, l.Commit, l.last(), l.LogTerm, l.AppendTerm, l.Term)
	}
	return nil
}

// restoreMachine restores the state machine from the snapshot's (at
// applied) and applies the committed entries after it, in order, as they
// were applied live.
func (c *Core) restoreMachine(r restored) error {
	if c.machine == nil {
		return nil
	}
	if r.machine != nil {
		if err := c.machine.Restore(r.machine); err != nil {
			return fmt.Errorf("%w: state machine: %w", core.ErrState, err)
		}
	}
	for i := r.applied + 1; i <= c.st.Log.Applied; i++ {
		if i <= r.base || i > r.base+uint64(len(r.full)) {
			return fmt.Errorf("%w: entry %d, applied after the snapshot, is not in the log (%d to %d)", core.ErrState, i, r.base+1, r.base+uint64(len(r.full)))
		}
		_, _ = c.machine.Apply(r.full[i-r.base-1].Message)
	}
	for _, m := range r.lamport {
		_, _ = c.machine.Apply(m)
	}
	return nil
}
func bugEvent(msg string) core.Event {
	return core.Event{Name: "refused", Msg: msg}
}

func eventf(name, format string, a ...any) core.Event {
	n := 0
	for i := 0; i < len(format); i++ {
		if format[i] == '%' && i+1 < len(format) && format[i+1] != '%' {
			n++
		}
	}
	return core.Event{Name: name, Msg: fmt.Sprintf(format, a[:n]...), Args: a[n:]}
}
