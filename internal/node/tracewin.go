package node

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// Trace windows: every member's events on the live page (`X web`). A
// node asks a member for the next piece of its trace window
// (KindTraceQuery); the member's driver keeps the window on while it is
// asked (Config.TraceWindow) and the node answers with one chunk
// (KindTraceChunk), never as much as twice the query's size. The asker
// pages through the window, one query per chunk, at the pace the member
// answers. See the package documentation ("Every member's trace").

// Limits of trace queries.
const (
	// MaxTraceQueries bounds the trace queries of one node waiting for
	// their answers; QueryTrace refuses more (ErrTraceBusy).
	MaxTraceQueries = 16
	// traceQueryTTL drops a query its driver never ended.
	traceQueryTTL = 30 * time.Second
	// traceAnswerBurst and traceAnswerEvery bound the chunks sent to one
	// member: a burst, then one per interval (at most about 100 KB/s to
	// an asker, each chunk answering a query at least half its size). A
	// member that asks faster is refused ("trace_limited").
	traceAnswerBurst = 32
	traceAnswerEvery = 10 * time.Millisecond
)

// Errors of trace queries, asked and answered.
var (
	// ErrTraceBusy: MaxTraceQueries wait already, or this node asks a
	// member faster than members answer.
	ErrTraceBusy = errors.New("node: too many trace queries; try again in a moment")
	// ErrNotMember: the member asked for is not another member.
	ErrNotMember = errors.New("node: not another member of this cluster")
	// ErrTraceLimited: a member asked for trace chunks faster than
	// traceAnswerEvery ("trace_limited").
	ErrTraceLimited = errors.New("node: trace query refused: the member asks too often")
	// ErrTraceUnavailable: this node keeps no trace window for others
	// (its driver has none, or cannot keep one now: "trace_unavailable").
	ErrTraceUnavailable = errors.New("node: trace query refused: this member keeps no trace window")
	// ErrTraceUnsolicited: a chunk that answers no trace query of this
	// node to that member, or a second answer ("trace_unsolicited").
	ErrTraceUnsolicited = errors.New("node: trace chunk that answers no query of this node")
)

// traceQueries is the node's trace queries: its own, waiting for their
// answers, its pace of asking and the budget of answers per member.
type traceQueries struct {
	counter uint32
	pending map[uint64]*traceAsk
	budget  map[uint32]*answerBudget
	asking  map[uint32]*answerBudget
	news    []uint64
}

type traceAsk struct {
	member uint32
	at     time.Time
	answer *wire.TraceChunk // nil until it comes
}

// QueryTrace asks member, at local time now, for the next chunk of its
// trace window: q's Window, After and From (its ID is set here); the
// query leaves with the next Ready. It returns the query's ID
// (TraceAnswer, EndTraceQuery). A node asks each member at the pace the
// member answers: faster, or with MaxTraceQueries waiting, it refuses
// (ErrTraceBusy).
func (n *Node) QueryTrace(now time.Time, member uint32, q wire.TraceQuery) (uint64, error) {
	if !slices.Contains(n.others, member) {
		return 0, fmt.Errorf("%w: %d", ErrNotMember, member)
	}
	t := &n.traces
	if len(t.pending) >= MaxTraceQueries {
		return 0, ErrTraceBusy
	}
	if !budgetOf(&t.asking, member).takePaced(now, traceAnswerBurst, traceAnswerEvery) {
		return 0, fmt.Errorf("%w (member %d answers %d at once, then one per %v)", ErrTraceBusy, member, traceAnswerBurst, traceAnswerEvery)
	}
	if t.pending == nil {
		t.pending = map[uint64]*traceAsk{}
	}
	t.counter++
	q.ID = uint64(n.inc)<<32 | uint64(t.counter)
	payload, _ := q.AppendBinary(nil)
	n.own = append(n.own, core.Message{To: member, Kind: wire.KindTraceQuery, Payload: payload})
	t.pending[q.ID] = &traceAsk{member: member, at: now}
	return q.ID, nil
}

// TraceAnswer returns query id's answer, once it came.
func (n *Node) TraceAnswer(id uint64) (wire.TraceChunk, bool) {
	if a := n.traces.pending[id]; a != nil && a.answer != nil {
		return *a.answer, true
	}
	return wire.TraceChunk{}, false
}

// TraceNews drains the IDs of the trace queries answered since the last
// call.
func (n *Node) TraceNews() []uint64 {
	out := n.traces.news
	n.traces.news = nil
	return out
}

// EndTraceQuery forgets query id (a later answer is refused).
func (n *Node) EndTraceQuery(id uint64) { delete(n.traces.pending, id) }

// expireTraceQueries drops the queries no driver ended in time.
func (n *Node) expireTraceQueries(now time.Time) {
	for id, a := range n.traces.pending {
		if now.Sub(a.at) > traceQueryTTL || a.at.After(now.Add(traceQueryTTL)) {
			delete(n.traces.pending, id)
		}
	}
}

// traceQueried answers member f.Sender's trace query q, which arrived at
// now, unless it asks too often or no window can be kept. Membership, the
// source address and (with keys) the signature were checked before.
func (n *Node) traceQueried(f *wire.Frame, q *wire.TraceQuery, now time.Time) error {
	if !budgetOf(&n.traces.budget, f.Sender).takePaced(now, traceAnswerBurst, traceAnswerEvery) {
		return fmt.Errorf("%w: member %d", ErrTraceLimited, f.Sender)
	}
	if n.cfg.TraceWindow == nil {
		return fmt.Errorf("%w: member %d asked", ErrTraceUnavailable, f.Sender)
	}
	c, ok := n.cfg.TraceWindow(f.Sender, q, now)
	if !ok {
		return fmt.Errorf("%w: member %d asked", ErrTraceUnavailable, f.Sender)
	}
	c.QueryID = q.ID
	payload, err := c.AppendBinary(nil)
	if err != nil {
		// The driver cut a chunk the wire cannot carry: a bug, counted.
		n.stats.drop("unsent_trace_chunk")
		return nil
	}
	n.own = append(n.own, core.Message{To: f.Sender, Kind: wire.KindTraceChunk, Payload: payload})
	return nil
}

// traceAnswered takes member f.Sender's chunk c, which arrived at now.
func (n *Node) traceAnswered(f *wire.Frame, c *wire.TraceChunk, now time.Time) error {
	a := n.traces.pending[c.QueryID]
	switch {
	case a == nil || a.member != f.Sender:
		return fmt.Errorf("%w: member %d, query %#x", ErrTraceUnsolicited, f.Sender, c.QueryID)
	case a.answer != nil:
		return fmt.Errorf("%w: member %d answered query %#x twice", ErrTraceUnsolicited, f.Sender, c.QueryID)
	}
	cc := *c
	cc.Data = slices.Clone(c.Data) // the packet's buffer is the driver's
	a.answer = &cc
	n.traces.news = append(n.traces.news, c.QueryID)
	return nil
}
