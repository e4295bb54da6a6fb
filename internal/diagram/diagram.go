package diagram

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/wire"
)

// Process is one horizontal line: a member of one daemon's cluster, from
// one or more trace files (a daemon restarted with a new file continues its
// line). Member IDs are per cluster: timed's member 1 and electd's member 1
// on one machine are two processes, and their frames never match.
type Process struct {
	ID      uint32
	Host    string
	Daemon  string
	Cluster string
	Files   []string
	// Dropped counts events its writers left out past their bound;
	// Partial, files that ended in a cut line.
	Dropped uint64
	Partial int
}

// Event is one traced event placed in the diagram.
type Event struct {
	trace.Event
	Proc  int // index in Diagram.Procs (its row)
	Group int // index in Diagram.Groups: the point it is drawn at
	// File is the name of the trace file it was read from (its Line is
	// its line there).
	File string
	// Send is the index of the send a recv or drop matches (-1: none in
	// the traces); Recvs the receives (and drops) of a send.
	Send  int
	Recvs []int
}

// Group is a point on a process line: one event, or the frames of one
// logical send. Groups of a process are numbered from 1 in its order.
type Group struct {
	Proc   int
	Pos    int   // 1, 2... on its process
	Col    int   // column: longest causal chain before it
	Events []int // indices in Diagram.Events
	// VC is the group's happened-before vector, rebuilt from the traces:
	// entry p counts the groups of process p (by index in Procs) that
	// happened before or are this one.
	VC []uint32
	// Heartbeat: every event of the group is a send, receive or refusal
	// of a heartbeat kind (IsHeartbeat); such points are folded away by
	// default.
	Heartbeat bool
	// FoldCol is the group's column with the heartbeats folded away: the
	// longest causal chain of other points before it, counting the
	// chains that pass through heartbeats (two points a heartbeat
	// orders are still drawn left to right).
	FoldCol int
}

// Message is an arrow. Recv -1: a frame nobody in the traces received
// (lost, or its receiver's trace is missing); Send -1: a frame received
// whose send is not in the traces. Dropped: the receiver refused it.
type Message struct {
	Send, Recv int
	Kind       string
	Frame      string
	Dropped    bool
	// Op is the frame's operation, for the kinds whose frames carry one
	// (a ring probe's want, locate, prepare or check; a vote's request,
	// grant, release...): its arrows are told apart by it.
	Op string
}

// Arrow kinds: a message kind, or a kind and the operation its frames
// carry ("ring_probe want"). Each has its colour and legend line.
type arrowKind struct {
	name, kind string
}

// opOf is the operation a frame's decoded fields name, if any.
func opOf(e *trace.Event) string {
	op, _ := e.Fields["op"].(string)
	return op
}

// drawKind is the name an event's or a message's arrows go by.
func drawKind(kind, op string) string {
	if op == "" {
		return kind
	}
	return kind + " " + op
}

// Diagram is a run laid out for drawing.
type Diagram struct {
	Procs    []Process
	Events   []Event
	Groups   []Group
	Messages []Message
	Cols     int
	FoldCols int       // columns with the heartbeats folded away
	Start    time.Time // the earliest event's real time
	Members  []uint32  // the traced members and those the vectors name: vector labels' order
	Kinds    []string  // message kinds present, sorted
	Daemons  []string
	Clusters []string
	// arrowKinds are the kinds of the arrows, by name (drawKind).
	arrowKinds []arrowKind
	// HostNames names members by ID for the lines' labels: the lab's
	// host names, set by a caller that knows them (the demo, a lab
	// file). Without one, a line is labelled with its trace's host when
	// that tells the members of its cluster apart, else "member N".
	HostNames map[uint32]string
	// Highlight marks events (by index in Events) the HTML page draws in
	// red: a checker's offending pair (internal/tracecheck); Note is what
	// its info line says before the reader hovers anything.
	Highlight map[int]bool
	Note      string
}

// heartbeatKinds are the message kinds of class heartbeat in the wire
// registry: steady-state traffic (heartbeats, lease renewals, the node's
// configuration announcements), not the steps of a protocol.
var heartbeatKinds = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range wire.Kinds() {
		if k.Class() == wire.ClassHeartbeat {
			m[k.String()] = true
		}
	}
	return m
}()

// IsHeartbeat says whether frames of kind are steady-state traffic
// (wire.ClassHeartbeat), drawn only on request.
func IsHeartbeat(kind string) bool { return heartbeatKinds[kind] }

// isHeartbeatEvent: e is a frame of a heartbeat kind (sent, received or
// refused).
func isHeartbeatEvent(e *trace.Event) bool {
	return e.Ev != trace.EvLocal && IsHeartbeat(e.Kind)
}

// Build lays out the events of files (any order, one or more per host).
func Build(files []*trace.File) (*Diagram, error) {
	if len(files) == 0 {
		return nil, errors.New("diagram: no trace files")
	}
	d := &Diagram{}
	byKey := map[string]int{}
	files = append(slices.Clone(files), peerFiles(files)...)
	slices.SortStableFunc(files, func(a, b *trace.File) int {
		return cmp.Or(cmp.Compare(a.Header.Daemon, b.Header.Daemon), cmp.Compare(a.Header.Cluster, b.Header.Cluster),
			cmp.Compare(a.Header.ID, b.Header.ID), a.Header.Started.Compare(b.Header.Started))
	})
	members := map[uint32]bool{}
	addStr := func(list []string, s string) []string {
		if s != "" && !slices.Contains(list, s) {
			list = append(list, s)
		}
		return list
	}
	for _, f := range files {
		h := f.Header
		key := clusterKey(h.Daemon, h.Cluster) + fmt.Sprint(h.ID)
		if h.ID == 0 {
			// A daemon outside any cluster, or a host drawn from its
			// packets (peerFiles): no member ID tells its files apart.
			key += "@" + h.Host + "@" + f.Name
		}
		p, ok := byKey[key]
		if !ok {
			p = len(d.Procs)
			byKey[key] = p
			d.Procs = append(d.Procs, Process{ID: h.ID, Host: h.Host, Daemon: h.Daemon, Cluster: h.Cluster})
		}
		pr := &d.Procs[p]
		pr.Files = append(pr.Files, f.Name)
		pr.Dropped += f.Dropped
		if f.Partial {
			pr.Partial++
		}
		// Vector labels run over the members the data names, not over the
		// headers' lists: a member nobody traced and no vector counts would
		// only add zeros (and a header may list many).
		members[h.ID] = true
		d.Daemons = addStr(d.Daemons, h.Daemon)
		d.Clusters = addStr(d.Clusters, h.Cluster)
		for _, e := range f.Events {
			if e.Ev == trace.EvTruncated {
				continue
			}
			d.Events = append(d.Events, Event{Event: e, Proc: p, File: f.Name, Send: -1})
			for id := range e.VC {
				members[id] = true
			}
		}
	}
	for m := range members {
		d.Members = append(d.Members, m)
	}
	slices.Sort(d.Members)
	// Events are in file order per process (files of a process by start);
	// Procs are sorted by daemon, cluster and ID since files were.
	d.group()
	if err := d.match(); err != nil {
		return nil, err
	}
	if err := d.layout(); err != nil {
		return nil, err
	}
	kinds := map[string]bool{}
	arrows := map[string]string{}
	for _, m := range d.Messages {
		kinds[m.Kind] = true
		arrows[drawKind(m.Kind, m.Op)] = m.Kind
	}
	for k := range kinds {
		d.Kinds = append(d.Kinds, k)
	}
	slices.Sort(d.Kinds)
	for name, k := range arrows {
		d.arrowKinds = append(d.arrowKinds, arrowKind{name, k})
	}
	slices.SortFunc(d.arrowKinds, func(a, b arrowKind) int { return cmp.Compare(a.name, b.name) })
	for i, e := range d.Events {
		if !e.T.IsZero() && (d.Start.IsZero() || e.T.Before(d.Start)) {
			d.Start = d.Events[i].T
		}
	}
	return d, nil
}

// group puts each event in a group: consecutive sends of a process with the
// same (non-zero) Lamport stamp are the frames of one logical send.
func (d *Diagram) group() {
	pos := make([]int, len(d.Procs))
	for i := range d.Events {
		e := &d.Events[i]
		if i > 0 && e.Ev == trace.EvSend && e.Lamport != 0 {
			prev := &d.Events[i-1]
			if prev.Proc == e.Proc && prev.Ev == trace.EvSend && prev.Lamport == e.Lamport {
				e.Group = prev.Group
				g := &d.Groups[e.Group]
				g.Events = append(g.Events, i)
				continue
			}
		}
		pos[e.Proc]++
		e.Group = len(d.Groups)
		d.Groups = append(d.Groups, Group{Proc: e.Proc, Pos: pos[e.Proc], Events: []int{i}, Heartbeat: isHeartbeatEvent(&e.Event)})
	}
}

// clusterKey names the cluster a process belongs to: frames are matched
// and member IDs resolved within it.
func clusterKey(daemon, cluster string) string { return daemon + "\x00" + cluster + "\x00" }

func (d *Diagram) frameKey(i int) string {
	p := &d.Procs[d.Events[i].Proc]
	return clusterKey(p.Daemon, p.Cluster) + d.Events[i].Frame
}

// procOf returns the index of member id of process p's cluster, -1 if
// it is not traced.
func (d *Diagram) procOf(p int, id uint32) int {
	for i, q := range d.Procs {
		if q.ID == id && q.Daemon == d.Procs[p].Daemon && q.Cluster == d.Procs[p].Cluster {
			return i
		}
	}
	return -1
}

// match pairs receives and drops with their sends by frame ID.
func (d *Diagram) match() error {
	sends := map[string]int{}
	for i, e := range d.Events {
		if e.Ev != trace.EvSend || e.Frame == "" {
			continue
		}
		if j, dup := sends[d.frameKey(i)]; dup {
			return fmt.Errorf("diagram: frame %s sent twice (by %s and %s): traces of two runs of a cluster mixed?",
				e.Frame, d.procName(d.Events[j].Proc), d.procName(e.Proc))
		}
		sends[d.frameKey(i)] = i
	}
	for i := range d.Events {
		e := &d.Events[i]
		if (e.Ev != trace.EvRecv && e.Ev != trace.EvDrop) || e.Frame == "" {
			continue
		}
		if j, ok := sends[d.frameKey(i)]; ok {
			e.Send = j
			d.Events[j].Recvs = append(d.Events[j].Recvs, i)
		}
	}
	for i, e := range d.Events {
		switch {
		case e.Ev == trace.EvSend:
			for _, r := range e.Recvs {
				d.Messages = append(d.Messages, Message{Send: i, Recv: r, Kind: e.Kind, Frame: e.Frame, Dropped: d.Events[r].Ev == trace.EvDrop, Op: opOf(&e.Event)})
			}
			if len(e.Recvs) == 0 && (e.To == 0 || d.procOf(e.Proc, e.To) >= 0) {
				d.Messages = append(d.Messages, Message{Send: i, Recv: -1, Kind: e.Kind, Frame: e.Frame, Op: opOf(&e.Event)})
			}
		case e.Ev == trace.EvRecv && e.Send < 0:
			d.Messages = append(d.Messages, Message{Send: -1, Recv: i, Kind: e.Kind, Frame: e.Frame, Op: opOf(&e.Event)})
		}
	}
	return nil
}

func (d *Diagram) procName(p int) string {
	return fmt.Sprintf("%s %d (%s)", d.Procs[p].Daemon, d.Procs[p].ID, d.Procs[p].Host)
}

// label is a process's line label: its host's name (HostNames, else its
// trace's host where that tells the members of its cluster apart, else
// "member N"), with its daemon when the diagram holds several.
func (d *Diagram) label(p int) string {
	pr := &d.Procs[p]
	if pr.ID == 0 {
		if strings.HasPrefix(pr.Host, "ntp ") || len(pr.Files) == 0 {
			return pr.Host // a host drawn from its packets
		}
		// A daemon outside any cluster: its host and trace file.
		return pr.Host + " " + filepath.Base(pr.Files[0])
	}
	name := d.HostNames[pr.ID]
	if name == "" {
		name = fmt.Sprintf("member %d", pr.ID)
		if pr.Host != "" && d.hostTellsApart(p) {
			name = pr.Host
		}
	}
	if len(d.Daemons) > 1 || len(d.Clusters) > 1 {
		return name + " " + pr.Daemon
	}
	return name
}

// hostTellsApart: no other member of p's cluster has p's host name (the
// daemons of a lab on one machine all say the machine's).
func (d *Diagram) hostTellsApart(p int) bool {
	pr := &d.Procs[p]
	for i, q := range d.Procs {
		if i != p && q.ID != 0 && q.ID != pr.ID && q.Host == pr.Host && q.Daemon == pr.Daemon && q.Cluster == pr.Cluster {
			return false
		}
	}
	return true
}

// layout orders the groups topologically (Kahn) over the process order and
// the message edges, giving each its column and happened-before vector. A
// refused frame (drop) is drawn after its send but teaches its receiver
// nothing: it orders the columns, not the vectors.
func (d *Diagram) layout() error {
	n := len(d.Groups)
	indeg := make([]int, n)
	type edge struct {
		to     int
		causal bool
	}
	out := make([][]edge, n)
	last := make([]int, len(d.Procs))
	for i := range last {
		last[i] = -1
	}
	for gi := range d.Groups {
		p := d.Groups[gi].Proc
		if last[p] >= 0 {
			out[last[p]] = append(out[last[p]], edge{gi, true})
			indeg[gi]++
		}
		last[p] = gi
	}
	for _, m := range d.Messages {
		if m.Send < 0 || m.Recv < 0 {
			continue
		}
		from, to := d.Events[m.Send].Group, d.Events[m.Recv].Group
		if from == to {
			return fmt.Errorf("diagram: frame %s received by its own send", m.Frame)
		}
		out[from] = append(out[from], edge{to, !m.Dropped})
		indeg[to]++
	}
	// Ready groups are taken in index order: the layout is a function of
	// the input alone.
	queue := make([]int, 0, n)
	for gi := range n {
		if indeg[gi] == 0 {
			queue = append(queue, gi)
		}
	}
	for gi := range d.Groups {
		d.Groups[gi].VC = make([]uint32, len(d.Procs))
	}
	done := 0
	for len(queue) > 0 {
		gi := queue[0]
		queue = queue[1:]
		done++
		g := &d.Groups[gi]
		g.VC[g.Proc] = uint32(g.Pos)
		d.Cols = max(d.Cols, g.Col+1)
		step := 1 // a point a heartbeat precedes is drawn after it only when unfolded
		if g.Heartbeat {
			step = 0
		} else {
			d.FoldCols = max(d.FoldCols, g.FoldCol+1)
		}
		for _, e := range out[gi] {
			h := &d.Groups[e.to]
			h.Col = max(h.Col, g.Col+1)
			h.FoldCol = max(h.FoldCol, g.FoldCol+step)
			if e.causal {
				for p, v := range g.VC {
					h.VC[p] = max(h.VC[p], v)
				}
			}
			if indeg[e.to]--; indeg[e.to] == 0 {
				queue = append(queue, e.to)
			}
		}
	}
	if done < n {
		var frames []string
		for _, m := range d.Messages {
			if m.Send >= 0 && m.Recv >= 0 && indeg[d.Events[m.Recv].Group] > 0 {
				frames = append(frames, m.Frame)
			}
		}
		if len(frames) > 5 {
			frames = append(frames[:5], "...")
		}
		return fmt.Errorf("diagram: the traces order events in a cycle (frames %s received before they were sent): traces of different runs mixed?",
			strings.Join(frames, ", "))
	}
	return nil
}

// Relation says how events a and b relate by happened-before, as rebuilt
// from the traces: Before (a happened before b), After, Concurrent, or
// Equal (the same point: the same event, or frames of one logical send).
func (d *Diagram) Relation(a, b int) clock.Ordering {
	ga, gb := d.Events[a].Group, d.Events[b].Group
	if ga == gb {
		return clock.Equal
	}
	A, B := &d.Groups[ga], &d.Groups[gb]
	switch {
	case A.VC[A.Proc] <= B.VC[A.Proc]:
		return clock.Before
	case B.VC[B.Proc] <= A.VC[B.Proc]:
		return clock.After
	}
	return clock.Concurrent
}

// Title describes the run in one line.
func (d *Diagram) Title() string {
	msgs := 0
	for _, m := range d.Messages {
		if m.Send >= 0 && m.Recv >= 0 {
			msgs++
		}
	}
	return fmt.Sprintf("%s · cluster %s · %d processes · %d events · %d messages",
		strings.Join(d.Daemons, "+"), strings.Join(d.Clusters, "+"), len(d.Procs), len(d.Events), msgs)
}

// Label is an event's time label: its Lamport time, or its vector time
// over the members in order ("(3,4,0)"); "" when the trace has none.
func (d *Diagram) Label(i int, vector bool) string {
	e := &d.Events[i]
	if vector {
		if len(e.VC) == 0 {
			return ""
		}
		return e.VC.String(d.Members)
	}
	if e.Lamport == 0 {
		return ""
	}
	return fmt.Sprint(e.Lamport)
}

// FromFirstEvent drops what the traces hold before the run's first
// protocol event (its earliest in real time that is not a heartbeat
// frame), so that a diagram of an act starts where the act does; the
// heartbeats after it are kept (folded by default). Traces with no such
// event are returned as they are.
func FromFirstEvent(files []*trace.File) []*trace.File {
	return fromFirst(files, func(e *trace.Event) bool { return !isHeartbeatEvent(e) })
}

// FromFirstKind drops what the traces hold before the first frame of
// kind (sent or received), so that a diagram starts where a protocol's
// step does (a Berkeley round at its first "clock_poll"). Traces with no
// such frame are returned as they are.
func FromFirstKind(files []*trace.File, kind string) []*trace.File {
	return fromFirst(files, func(e *trace.Event) bool { return e.Ev != trace.EvLocal && e.Kind == kind })
}

// fromFirst drops the events before the earliest one that from accepts.
func fromFirst(files []*trace.File, from func(*trace.Event) bool) []*trace.File {
	var first time.Time
	for _, f := range files {
		for _, e := range f.Events {
			if e.Ev != trace.EvTruncated && !e.T.IsZero() && from(&e) && (first.IsZero() || e.T.Before(first)) {
				first = e.T
			}
		}
	}
	if first.IsZero() {
		return files
	}
	out := make([]*trace.File, len(files))
	for i, f := range files {
		c := *f
		c.Events = nil
		for _, e := range f.Events {
			if e.T.IsZero() || !e.T.Before(first) {
				c.Events = append(c.Events, e)
			}
		}
		out[i] = &c
	}
	return out
}

// Window keeps the events of files whose real time lies in [from, until]
// after the earliest event of all (until 0: no end), for a diagram of one
// phase of a long run. Arrows whose other end falls outside are drawn as
// stubs. Events without a time are kept.
func Window(files []*trace.File, from, until time.Duration) []*trace.File {
	var start time.Time
	for _, f := range files {
		for _, e := range f.Events {
			if !e.T.IsZero() && (start.IsZero() || e.T.Before(start)) {
				start = e.T
			}
		}
	}
	out := make([]*trace.File, len(files))
	for i, f := range files {
		c := *f
		c.Events = nil
		for _, e := range f.Events {
			at := e.T.Sub(start)
			if e.T.IsZero() || (at >= from && (until == 0 || at <= until)) {
				c.Events = append(c.Events, e)
			}
		}
		out[i] = &c
	}
	return out
}
