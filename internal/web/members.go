package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/internal/trace"
)

// Every member's trace: each draw, the server asks its daemon for the
// next piece of every other member's trace window (GET
// /v1/cluster/trace, which pages through the member's window over the
// cluster protocol: node.QueryTrace, KindTraceQuery), keeps the last
// window of each member's events, and draws them beside this host's.

// MemberView is what the page says of one member's trace.
type MemberView struct {
	ID   uint32 `json:"id"`
	Name string `json:"name,omitempty"`
	// Answering: its last piece came; else Why says what is known.
	Answering bool   `json:"answering"`
	Why       string `json:"why,omitempty"`
	Events    int    `json:"events"`
	// Lost: the member dropped events before this page read them (its
	// window is bounded, or the page fell behind).
	Lost bool `json:"lost,omitempty"`
	// Ahead counts its events stamped after this host's clock reads now,
	// beyond their error bound (its clock runs ahead), left out of the
	// window; AheadMs is by how much the newest of them is.
	Ahead   int   `json:"ahead,omitempty"`
	AheadMs int64 `json:"ahead_ms,omitempty"`
}

// Bounds of what the page keeps of a member's trace.
const (
	// memberPartialMax bounds a line not ended yet: a longer one is a
	// member's bug (or an attack), dropped.
	memberPartialMax = 64 << 10
	// memberFetchBytes is what one draw brings of a member at most.
	memberFetchBytes = daemon.DefaultMemberTraceBytes
)

// memberTrace is the server's copy of one member's window.
type memberTrace struct {
	window  uint32
	next    uint64
	partial []byte
	events  []trace.Event
	sim     bool
	view    MemberView
}

// fetchMembers brings every member's window up to date (members: the
// other members' IDs), in parallel, each within timeout.
func (w *window) fetchMembers(ctx context.Context, members []uint32, timeout time.Duration) {
	if w.members == nil {
		w.members = map[uint32]*memberTrace{}
	}
	for id := range w.members {
		if !slices.Contains(members, id) {
			delete(w.members, id)
		}
	}
	var wg sync.WaitGroup
	for _, id := range members {
		m := w.members[id]
		if m == nil {
			m = &memberTrace{view: MemberView{ID: id}}
			w.members[id] = m
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.fetch(ctx, m, timeout)
		}()
	}
	wg.Wait()
}

// fetch asks for member m's next piece and takes it in.
func (w *window) fetch(ctx context.Context, m *memberTrace, timeout time.Duration) {
	c := w.s.cfg
	from := time.Now().Add(-c.Window)
	cctx, cancel := context.WithTimeout(ctx, timeout+5*time.Second)
	defer cancel()
	mt, err := c.Source.MemberTrace(cctx, m.view.ID, m.window, m.next, from, timeout, memberFetchBytes)
	if ctx.Err() != nil {
		return
	}
	switch {
	case err != nil:
		m.view.Answering, m.view.Why = false, "cannot ask the daemon for it: "+err.Error()
		return
	case !mt.Answered:
		m.view.Answering, m.view.Why = false, mt.Why
		return
	}
	m.view.Answering, m.view.Why = true, ""
	m.sim = mt.SimClock
	if mt.Fresh || mt.Window != m.window || mt.Offset != m.next {
		// A new window, or a gap: what was kept stays (it happened), the
		// cut line is dropped.
		m.partial = nil
		m.view.Lost = m.view.Lost || mt.Lost || (!mt.Fresh && mt.Offset != m.next)
	}
	m.window, m.next = mt.Window, mt.Next
	m.take(mt.Data, w.s.cfg.Daemon)
	// Keep two windows' worth: the draw cuts its own.
	if n := len(m.events); n > 0 {
		cut := m.events[n-1].T.Add(-2 * c.Window)
		i := 0
		for i < n && m.events[i].T.Before(cut) {
			i++
		}
		m.events = slices.Delete(m.events, 0, i)
	}
	// And at most MaxEvents of them, the latest: a member's times are its
	// word, and must not make the page hold more than it draws.
	if n := len(m.events) - c.MaxEvents; n > 0 {
		m.events = slices.Delete(m.events, 0, n)
		m.view.Lost = true
	}
}

// take reads the complete lines of data (after what was left of the
// last piece) as trace events; a line that does not parse is left out
// and said.
func (m *memberTrace) take(data []byte, daemonName string) {
	buf := append(m.partial, data...)
	i := bytes.LastIndexByte(buf, '\n')
	if i < 0 {
		m.partial = buf
		if len(m.partial) > memberPartialMax {
			m.partial = nil
			m.view.Why = fmt.Sprintf("a trace line of member %d longer than %d bytes was left out", m.view.ID, memberPartialMax)
		}
		return
	}
	lines := buf[:i+1]
	m.partial = slices.Clone(buf[i+1:])
	h, _ := json.Marshal(trace.Header{Version: trace.Version, Daemon: daemonName, ID: m.view.ID})
	h = append(h, '\n')
	// All of them at once (a reader and its 64 KiB buffer a piece, not a
	// line); line by line only when one of them does not parse, to leave
	// out just that one.
	if f, err := trace.Read(bytes.NewReader(append(slices.Clone(h), lines...)), "member"); err == nil {
		m.events = append(m.events, f.Events...)
		return
	}
	for len(lines) > 0 {
		j := bytes.IndexByte(lines, '\n')
		line := lines[:j+1]
		lines = lines[j+1:]
		f, err := trace.Read(bytes.NewReader(append(slices.Clone(h), line...)), "member")
		if err != nil {
			m.view.Why = fmt.Sprintf("a trace line of member %d does not parse, left out: %v", m.view.ID, err)
			continue
		}
		m.events = append(m.events, f.Events...)
	}
}

// memberFiles are the members' windows as trace files for the diagram
// and the checker, and the page's view of each; names is the lines'
// labels, a member that does not answer marked so.
func (w *window) memberFiles(cluster string, all []uint32, names map[uint32]string) ([]*trace.File, []MemberView, map[uint32]string) {
	lab := names
	names = maps.Clone(names)
	if names == nil {
		names = map[uint32]string{}
	}
	// Every line named alike: a member the lab file does not name is
	// "member N", this host's line included (its trace would say its
	// host name, the others' nothing).
	for _, id := range all {
		if names[id] == "" {
			names[id] = fmt.Sprintf("member %d", id)
		}
	}
	var files []*trace.File
	var views []MemberView
	for _, id := range slices.Sorted(maps.Keys(w.members)) {
		m := w.members[id]
		clock := trace.ClockSystem
		if m.sim {
			clock = trace.ClockSim
		}
		files = append(files, &trace.File{Name: fmt.Sprintf("member %d's window", id),
			Header: trace.Header{Version: trace.Version, Daemon: w.s.cfg.Daemon, ID: id, Cluster: cluster, Members: all, Clock: clock},
			Events: slices.Clone(m.events)})
		v := m.view
		v.Name, v.Events = lab[id], len(m.events)
		if !v.Answering {
			names[id] += " (not answering traces)"
		}
		views = append(views, v)
	}
	return files, views, names
}
