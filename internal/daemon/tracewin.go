package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/wire"
)

// Trace windows: the live page (`X web`) draws every member's events. A
// member asks this one for its window over the cluster protocol
// (node.QueryTrace, KindTraceQuery); the first query turns the window on,
// every later one extends it, and nobody asking for TraceWindowIdle turns
// it off. The window is a trace.Log into memory (traceRing: the latest
// events, at most traceRingLines lines, traceRingBytes bytes and
// traceRingAge old, the oldest dropped first), never a file: a member's
// disk is not written for another's page. It records beside an
// operator's trace (trace.Tee), leaving that one alone. There is one
// window at a time, whoever asks.
//
// The asking side is MemberTrace (GET /v1/cluster/trace): it pages
// through a member's window, one query per chunk, until it has caught up,
// its byte budget is spent, or its deadline passes.

// Bounds of the trace window.
const (
	// TraceWindowIdle turns the window off when no member asked for that
	// long.
	TraceWindowIdle = 15 * time.Second
	traceRingLines  = 8192
	traceRingBytes  = 2 << 20
	traceRingAge    = time.Minute
	// MaxMemberTraceBytes bounds what one GET /v1/cluster/trace brings.
	MaxMemberTraceBytes = 256 << 10
	// DefaultMemberTraceBytes is its default.
	DefaultMemberTraceBytes = 64 << 10
)

// traceWin is the trace window the members ask for.
type traceWin struct {
	log   *trace.Log
	ring  *traceRing
	id    uint32
	since time.Time
	// asked is when a member last asked, by member (wall clock), and
	// last the latest of them: traceStep, after every frame, reads last
	// alone.
	asked  map[uint32]time.Time
	last   time.Time
	chunks uint64
	// pending: the node does not record into it yet (traceStep).
	pending bool
}

// TraceWindowStatus is GET /v1/status's view of the window (nil: off).
type TraceWindowStatus struct {
	Window uint32    `json:"window"`
	Since  time.Time `json:"since"`
	// AskedAgoNs is how long ago each member last asked, by member ID.
	AskedAgoNs map[uint32]int64 `json:"asked_ago_ns"`
	Chunks     uint64           `json:"chunks"`
	Lines      int              `json:"lines"`
	Bytes      int              `json:"bytes"`
	// Dropped counts the lines dropped to keep the window bounded.
	Dropped uint64 `json:"dropped"`
}

func (w *traceWin) status() *TraceWindowStatus {
	if w == nil {
		return nil
	}
	st := &TraceWindowStatus{Window: w.id, Since: w.since, AskedAgoNs: map[uint32]int64{}, Chunks: w.chunks}
	for m, at := range w.asked {
		st.AskedAgoNs[m] = int64(time.Since(at))
	}
	st.Lines, st.Bytes, st.Dropped = w.ring.size()
	return st
}

// traceWindow answers member from's trace query q (the node's
// Config.TraceWindow; holding d.mu): the window turned on or extended,
// and its next chunk.
func (d *Daemon) traceWindow(from uint32, q *wire.TraceQuery) (wire.TraceChunk, bool) {
	if d.win == nil {
		now := d.cfg.Clock.Now()
		ring := &traceRing{}
		lg, err := trace.NewLog(ring, d.traceHeader(now), 1<<62)
		if err != nil {
			d.log.Error("cannot keep a trace window for the members", "err", err)
			return wire.TraceChunk{}, false
		}
		lg.SetClock(d.clockSample)
		d.winCount++
		// Another daemon's life, or another window of this one: another
		// ID, for 2^32 windows (the low 8 bits of the count repeated after
		// 256, and an asker could page on into a new window's stream).
		id := uint32(d.started.UnixNano()) + d.winCount
		if id == 0 {
			id = 1
		}
		// The node records into it from the end of this step on
		// (traceStep): this runs inside the node's Receive, which must
		// not be changed under it.
		d.win = &traceWin{log: lg, ring: ring, id: id, since: now, asked: map[uint32]time.Time{}, pending: true}
		d.log.Info("trace window on: a member's live page asked for this member's events (in memory, off when nobody asks for a while)",
			"member", from, "idle", TraceWindowIdle)
	}
	w := d.win
	w.last = time.Now()
	w.asked[from] = w.last
	w.chunks++
	w.log.Flush() // into the ring: Flush fails only on a closed log
	c := w.ring.chunk(q, w.id)
	if d.cfg.ClockName == "sim" {
		c.Flags |= wire.TraceSimClock
	}
	return c, true
}

// traceStep (after a step, holding d.mu) wakes the callers whose trace
// query was answered, and turns the window off when nobody asked for
// TraceWindowIdle. It runs after every frame, so its cost does not grow
// with the members that asked: without a window or an answer it reads
// two fields, with a window the clock too (BenchmarkTraceStep).
func (d *Daemon) traceStep() {
	for _, id := range d.node.TraceNews() {
		if ch := d.traceWait[id]; ch != nil {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	if w := d.win; w != nil && w.pending {
		w.pending = false
		d.setRecorder()
	}
	if w := d.win; w != nil {
		if time.Since(w.last) > TraceWindowIdle {
			d.win = nil
			d.setRecorder()
			w.log.Close()
			d.log.Info("trace window off: no member asked for it", "idle", TraceWindowIdle, "chunks", w.chunks)
		}
	}
}

// traceRing is the window's memory: an io.Writer of trace lines (the
// header, then events) that keeps the latest event lines with their
// offsets in the window's byte stream (the header is not part of it).
type traceRing struct {
	mu      sync.Mutex
	header  bool   // the header line was seen
	partial []byte // a line not ended yet
	lines   []ringLine
	bytes   int
	end     uint64 // the stream's length so far
	dropped uint64
}

type ringLine struct {
	off uint64
	t   time.Time
	b   []byte
}

func (r *traceRing) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			r.partial = append(r.partial, p...)
			break
		}
		line := append(r.partial, p[:i+1]...)
		r.partial = nil
		p = p[i+1:]
		if !r.header {
			r.header = true
			continue
		}
		r.add(line)
	}
	return n, nil
}

// add keeps line, dropping the oldest lines past the bounds.
func (r *traceRing) add(line []byte) {
	t := lineTime(line)
	r.lines = append(r.lines, ringLine{off: r.end, t: t, b: line})
	r.end += uint64(len(line))
	r.bytes += len(line)
	drop := 0
	for drop < len(r.lines)-1 && (len(r.lines)-drop > traceRingLines || r.bytes > traceRingBytes ||
		!t.IsZero() && !r.lines[drop].t.IsZero() && t.Sub(r.lines[drop].t) > traceRingAge) {
		r.bytes -= len(r.lines[drop].b)
		drop++
	}
	if drop > 0 {
		// Resliced, not shifted: slices.Delete moved the whole ring
		// (up to 8192 entries) for every line once it was full. append
		// copies the live part when the array runs out: amortised
		// O(1). The dropped entries are cleared so that their lines
		// are freed at once.
		r.dropped += uint64(drop)
		clear(r.lines[:drop])
		r.lines = r.lines[drop:]
	}
}

// lineTime reads an event line's time (`{"t":"...",`); zero if none.
func lineTime(line []byte) time.Time {
	const pre = `{"t":"`
	if !bytes.HasPrefix(line, []byte(pre)) {
		return time.Time{}
	}
	rest := line[len(pre):]
	i := bytes.IndexByte(rest, '"')
	if i < 0 {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:i]))
	if err != nil {
		return time.Time{}
	}
	return t
}

func (r *traceRing) size() (lines, bytes int, dropped uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.lines), r.bytes, r.dropped
}

// chunk cuts the answer to q from window id: where q left off when it
// continues this window and that is still held; else afresh, from the
// first line at or after q.From.
func (r *traceRing) chunk(q *wire.TraceQuery, id uint32) wire.TraceChunk {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := wire.TraceChunk{Window: id, End: r.end}
	oldest := r.end
	if len(r.lines) > 0 {
		oldest = r.lines[0].off
	}
	var start uint64
	switch {
	case q.Window == id && q.After >= oldest && q.After <= r.end:
		start = q.After
	case q.Window == id && q.After < oldest:
		c.Flags |= wire.TraceLost
		start = oldest
	default:
		c.Flags |= wire.TraceFresh
		from := q.From.Time()
		i := sort.Search(len(r.lines), func(i int) bool { return !r.lines[i].t.Before(from) })
		start = r.end
		if i < len(r.lines) {
			start = r.lines[i].off
		}
	}
	c.Offset = start
	i := sort.Search(len(r.lines), func(i int) bool { return r.lines[i].off+uint64(len(r.lines[i].b)) > start })
	for ; i < len(r.lines) && len(c.Data) < wire.MaxTraceChunkData; i++ {
		l := r.lines[i]
		from := int(start + uint64(len(c.Data)) - l.off)
		take := min(len(l.b)-from, wire.MaxTraceChunkData-len(c.Data))
		c.Data = append(c.Data, l.b[from:from+take]...)
	}
	return c
}

// MemberTrace is GET /v1/cluster/trace: a piece of a member's trace
// window.
type MemberTrace struct {
	Member uint32 `json:"member"`
	// Answered: at least one chunk came. Why says, when none did, what is
	// known of why.
	Answered bool   `json:"answered"`
	Why      string `json:"why,omitempty"`
	// notAsked: this node's own limits kept the query from leaving (a
	// page asking many members at once), which says nothing of the
	// member.
	notAsked bool
	Chunks   int `json:"chunks"`
	// Window is the member's window Data is of; Offset where Data starts
	// in its stream, Next where it ends (ask again from there), End the
	// stream's end as the member last said (more to fetch while Next is
	// less). Fresh: Data starts afresh (a new window, or the one asked for
	// is gone); Lost: the events between the offset asked for and Offset
	// were dropped by the member (its window is bounded).
	Window   uint32 `json:"window"`
	Offset   uint64 `json:"offset"`
	Next     uint64 `json:"next"`
	End      uint64 `json:"end"`
	Fresh    bool   `json:"fresh,omitempty"`
	Lost     bool   `json:"lost,omitempty"`
	SimClock bool   `json:"sim_clock,omitempty"`
	// Data is trace lines (internal/trace's format, no header), cut
	// anywhere: the last line may go on in the next piece.
	Data []byte `json:"data"`
}

// TraceAsk is GET /v1/status's view of this member's last ask for
// another member's trace window (the live page's, `X web`).
type TraceAsk struct {
	Member   uint32 `json:"member"`
	AgoNs    int64  `json:"ago_ns"`
	Answered bool   `json:"answered"`
	Why      string `json:"why,omitempty"`
	// notAsked: this node's own limits kept the query from leaving (a
	// page asking many members at once), which says nothing of the
	// member.
	notAsked bool
}

// traceAskShown is how long the status shows an ask: a page stopped a
// minute ago no longer says anything of the members.
const traceAskShown = time.Minute

// traceAsks is the status's list of the last asks, of the last
// traceAskShown (holding d.mu).
func (d *Daemon) traceAsks() []TraceAsk {
	var out []TraceAsk
	for _, m := range slices.Sorted(maps.Keys(d.asks)) {
		a, ago := d.asks[m], time.Since(d.askedAt[m])
		if ago > traceAskShown {
			continue
		}
		a.AgoNs = int64(ago)
		out = append(out, a)
	}
	return out
}

// MemberTrace asks member for its trace window from where q leaves off
// (q.Window, q.After; else from q.From) and pages through it until it has
// caught up, maxBytes came, or timeout passed.
func (d *Daemon) MemberTrace(ctx context.Context, member uint32, q wire.TraceQuery, timeout time.Duration, maxBytes int) (MemberTrace, error) {
	out, err := d.memberTrace(ctx, member, q, timeout, maxBytes)
	if err == nil && !out.notAsked {
		d.Do(context.WithoutCancel(ctx), func(*node.Node) {
			prev, seen := d.asks[member]
			d.asks[member] = TraceAsk{Member: member, Answered: out.Answered, Why: out.Why}
			d.askedAt[member] = time.Now()
			switch {
			case !out.Answered && (!seen || prev.Answered):
				d.log.Warn("a member does not answer for its trace window: the live page shows it as not answering traces", "member", member, "why", out.Why)
			case out.Answered && seen && !prev.Answered:
				d.log.Info("a member answers for its trace window again", "member", member)
			}
		})
	}
	return out, err
}

func (d *Daemon) memberTrace(ctx context.Context, member uint32, q wire.TraceQuery, timeout time.Duration, maxBytes int) (MemberTrace, error) {
	if d.cfg.Standalone() {
		return MemberTrace{}, ctl.Errorf(http.StatusConflict, "no_cluster", "%s runs outside any cluster: there are no members to ask", d.cfg.Name)
	}
	out := MemberTrace{Member: member, Window: q.Window, Offset: q.After, Next: q.After, Data: []byte{}}
	deadline := time.Now().Add(timeout)
	var askedClock time.Time
	for len(out.Data) < maxBytes && ctx.Err() == nil {
		done := make(chan struct{}, 1)
		var id uint64
		var qerr error
		if err := d.Do(ctx, func(n *node.Node) {
			if askedClock.IsZero() {
				askedClock = d.cfg.Clock.Now()
			}
			if id, qerr = n.QueryTrace(d.cfg.Clock.Now(), member, q); qerr == nil {
				d.traceWait[id] = done
			}
		}); err != nil {
			return out, err
		}
		switch {
		case errors.Is(qerr, node.ErrNotMember):
			return out, ctl.BadRequest(qerr.Error())
		case errors.Is(qerr, node.ErrTraceBusy):
			if out.Answered || time.Until(deadline) < 20*time.Millisecond {
				return out, d.traceWhy(&out, askedClock, timeout, qerr)
			}
			time.Sleep(10 * time.Millisecond) // the member's pace
			continue
		case qerr != nil:
			return out, qerr
		}
		t := time.NewTimer(max(time.Until(deadline), 0))
		select {
		case <-done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		var c wire.TraceChunk
		var ok bool
		if err := d.Do(context.WithoutCancel(ctx), func(n *node.Node) {
			c, ok = n.TraceAnswer(id)
			n.EndTraceQuery(id)
			delete(d.traceWait, id)
		}); err != nil {
			return out, err
		}
		if !ok {
			return out, d.traceWhy(&out, askedClock, timeout, nil)
		}
		if out.Answered && (c.Window != out.Window || c.Offset != out.Next) {
			break // the window changed under us: the next call starts from here
		}
		if !out.Answered {
			out.Window, out.Offset = c.Window, c.Offset
			out.Fresh, out.Lost = c.Flags&wire.TraceFresh != 0, c.Flags&wire.TraceLost != 0
		}
		out.Answered = true
		out.SimClock = c.Flags&wire.TraceSimClock != 0
		out.Chunks++
		out.Data = append(out.Data, c.Data...)
		out.Next, out.End = c.Offset+uint64(len(c.Data)), c.End
		q.Window, q.After = c.Window, out.Next
		if out.Next >= c.End || len(c.Data) == 0 || time.Now().After(deadline) {
			break
		}
	}
	return out, nil
}

// traceWhy says, of a member that answered no (further) trace query,
// what is known of why; nil: nothing to say (it answered before).
func (d *Daemon) traceWhy(out *MemberTrace, askedClock time.Time, timeout time.Duration, busy error) error {
	if out.Answered {
		return nil
	}
	if busy != nil {
		out.Why = fmt.Sprintf("not asked: %v", busy)
		out.notAsked = true
		return nil
	}
	var heard time.Time
	d.Do(context.Background(), func(n *node.Node) { heard = n.LastHeard(out.Member) })
	now := d.cfg.Clock.Now()
	why := fmt.Sprintf("no trace chunk within %v", timeout)
	switch {
	case heard.IsZero():
		why += fmt.Sprintf(": never heard since this member started: down, unreachable, or refusing this member's frames (see its `%s status`)", d.cfg.Name)
	case !heard.Before(askedClock):
		why += fmt.Sprintf(": yet heard %v ago, after it was asked: an older synclab that does not answer traces (it counts trace_query as unknown_kind), or it refused (its `%s status` counts trace_limited or trace_unavailable)", agoText(now.Sub(heard)), d.cfg.Name)
	default:
		why += fmt.Sprintf(": last heard %v ago: down or unreachable (or its answer was lost)", agoText(now.Sub(heard)))
	}
	out.Why = why
	return nil
}

// memberTraceRoute serves GET /v1/cluster/trace?member=N[&window=W&after=A]
// [&from=UNIX_NS][&timeout=D][&max_bytes=B].
func (d *Daemon) memberTraceRoute() {
	d.ctl.Handle(http.MethodGet, "/v1/cluster/trace", func(r *http.Request) (any, error) {
		v := r.URL.Query()
		num := func(name string, bits int, def uint64) (uint64, error) {
			s := v.Get(name)
			if s == "" {
				return def, nil
			}
			n, err := strconv.ParseUint(s, 10, bits)
			if err != nil {
				return 0, ctl.BadRequest(fmt.Sprintf("%s %q: want a number (%d bits)", name, s, bits))
			}
			return n, nil
		}
		member, err := num("member", 32, 0)
		if err != nil {
			return nil, err
		}
		if _, ok := d.cfg.Members[uint32(member)]; !ok || uint32(member) == d.cfg.ID {
			return nil, ctl.BadRequest(fmt.Sprintf("member %d: want another member's ID (%v)", member, slices.Sorted(maps.Keys(d.cfg.Members))))
		}
		window, err := num("window", 32, 0)
		if err != nil {
			return nil, err
		}
		after, err := num("after", 64, 0)
		if err != nil {
			return nil, err
		}
		fromNs, err := num("from", 63, 0)
		if err != nil {
			return nil, err
		}
		maxBytes, err := num("max_bytes", 32, DefaultMemberTraceBytes)
		if err != nil {
			return nil, err
		}
		if maxBytes < wire.MaxTraceChunkData || maxBytes > MaxMemberTraceBytes {
			return nil, ctl.BadRequest(fmt.Sprintf("max_bytes %d: want %d to %d", maxBytes, wire.MaxTraceChunkData, MaxMemberTraceBytes))
		}
		timeout := DefaultClusterTimeout
		if s := v.Get("timeout"); s != "" {
			if timeout, err = time.ParseDuration(s); err != nil || timeout < MinClusterTimeout || timeout > MaxClusterTimeout {
				return nil, ctl.BadRequest(fmt.Sprintf("timeout %q: want %v to %v", s, MinClusterTimeout, MaxClusterTimeout))
			}
		}
		q := wire.TraceQuery{Window: uint32(window), After: after}
		if fromNs > 0 {
			q.From = wire.NTPTimeFromTime(time.Unix(0, int64(fromNs)))
		}
		return d.MemberTrace(r.Context(), uint32(member), q, timeout, int(maxBytes))
	})
}
