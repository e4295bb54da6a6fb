package order

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// msgT is a frame as the core sees it.
type msgT = core.Message

// persisted is everything a member keeps across a crash: its stream and
// what it knows of the others', the causal and Lamport queues, the log,
// the election's state and its Lamport clock. It is written whole, as
// JSON (it is local, never on the wire), before any frame that depends
// on it leaves.
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

func (c *Core) encodeState() []byte {
	c.st.Version = stateVersion
	c.st.Election = c.electState
	c.st.Clock = c.lamport.Now()
	b, err := json.Marshal(c.st)
	if err != nil {
		c.bugs.Report(&c.events, "encode_state", err)
		return nil
	}
	return b
}

func decodeState(b []byte, c *Core) (*persisted, error) {
	st := &persisted{}
	n := len(c.members)
	if b != nil {
		if err := json.Unmarshal(b, st); err != nil {
			return nil, fmt.Errorf("%w: %w", core.ErrState, err)
		}
		if st.Version != stateVersion {
			return nil, fmt.Errorf("%w: version %d, want %d", core.ErrState, st.Version, stateVersion)
		}
	}
	if st.Stream == nil {
		st.Stream = newStream(c.peers)
	} else {
		st.Stream.fill(c.peers)
	}
	s := st.Stream
	for i, r := range s.Sent {
		var rec wire.OrderRecord
		if err := rec.UnmarshalBinary(r.Payload); err != nil || rec.Seq != r.Seq || (i > 0 && r.Seq != s.Sent[i-1].Seq+1) || r.Seq > s.Seq {
			return nil, fmt.Errorf("%w: stream record %d is corrupt", core.ErrState, r.Seq)
		}
	}
	for p, o := range s.Out {
		if o.Acked > s.Seq {
			return nil, fmt.Errorf("%w: member %d acknowledged %d of %d records", core.ErrState, p, o.Acked, s.Seq)
		}
	}
	if len(s.Sent) > 0 && s.Sent[0].Seq > s.minAcked()+1 || len(s.Sent) == 0 && s.minAcked() < s.Seq {
		return nil, fmt.Errorf("%w: stream records missing", core.ErrState)
	}
	cs := &st.Causal
	if cs.V == nil {
		cs.V, cs.Received = make([]uint64, n), make([]uint64, n)
	}
	if len(cs.V) != n || len(cs.Received) != n {
		return nil, fmt.Errorf("%w: causal vector of %d entries for %d members (the member list changed)", core.ErrState, len(cs.V), n)
	}
	for _, m := range cs.Pending {
		if _, ok := c.pos[m.Sender]; !ok || len(m.Vector) != n {
			return nil, fmt.Errorf("%w: held causal message from %d", core.ErrState, m.Sender)
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
			return nil, fmt.Errorf("%w: queued message from %d", core.ErrState, m.Sender)
		}
	}
	l := &st.Log
	if l.Commit > l.last() || l.Applied > l.Commit || l.Base > l.Applied || l.LogTerm > l.Term || l.AppendTerm > l.Term {
		return nil, fmt.Errorf("%w: log base %d applied %d commit %d last %d, terms %d/%d/%d", core.ErrState,
			l.Base, l.Applied, l.Commit, l.last(), l.LogTerm, l.AppendTerm, l.Term)
	}
	for sid := range maps.Keys(l.Submits) {
		if sid > l.SID {
			return nil, fmt.Errorf("%w: submission %d after the last, %d", core.ErrState, sid, l.SID)
		}
	}
	return st, nil
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
