package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/internal/diagram"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/internal/tracecheck"
	"github.com/synclab/synclab/pkg/wire"
)

// Source is what the server reads the lab through: the daemon's control
// API (CtlSource), or a fake in tests.
type Source interface {
	// Cluster is GET /v1/cluster: every member's row.
	Cluster(ctx context.Context, timeout time.Duration) (*daemon.ClusterStatus, error)
	// Trace, StartTrace and StopTrace are GET /v1/trace and POST
	// /v1/trace/start (a new file in the daemon's traces directory) and
	// /v1/trace/stop.
	Trace(ctx context.Context) (daemon.TraceStatus, error)
	StartTrace(ctx context.Context) (daemon.TraceStatus, error)
	StopTrace(ctx context.Context) (daemon.TraceStatus, error)
	// MemberTrace is GET /v1/cluster/trace: the next piece of member's
	// trace window, from where window and after left off (else from
	// from), within timeout, at most maxBytes.
	MemberTrace(ctx context.Context, member, window uint32, after uint64, from time.Time, timeout time.Duration, maxBytes int) (daemon.MemberTrace, error)
	// Events streams the daemon's events (GET /v1/events), calling fn
	// with each, until ctx ends or the stream does.
	Events(ctx context.Context, fn func(json.RawMessage) error) error
}

// Table is the lab's table as `X status --cluster` prints it.
type Table struct {
	Headers []string   `json:"headers"`
	Rows    []TableRow `json:"rows"`
	Notes   []string   `json:"notes,omitempty"`
}

// TableRow is one member's cells, and what the page colours them by.
type TableRow struct {
	ID          uint32   `json:"id"`
	Self        bool     `json:"self,omitempty"`
	Reachable   bool     `json:"reachable"`
	Differs     bool     `json:"differs,omitempty"`
	SteppedBack bool     `json:"stepped_back,omitempty"`
	Cells       []string `json:"cells"`
}

// Config is a server's setup; New fills the defaults of zero fields.
type Config struct {
	// Daemon names the daemon ("electd"): the page's title.
	Daemon string
	Source Source
	// Table renders the cluster status as the CLI does (app.ClusterTable
	// with the binary's columns). Required.
	Table func(*daemon.ClusterStatus) Table
	// Every is how often the lab is asked for its table (besides at once
	// after each of the daemon's events); default 500ms, at least 250ms
	// (a member answers one query per 250ms).
	Every time.Duration
	// ClusterTimeout is how long each ask waits for the members' answers
	// (a member that does not answer costs that much); default 300ms (at
	// most four fifths of Every), less than Every.
	ClusterTimeout time.Duration
	// History is how many tables the clock charts keep (default 120: a
	// minute at the default pace).
	History int
	// Trace turns a trace window on (Window, DrawEvery, Rotate); false:
	// the page has the table alone.
	Trace bool
	// Window is how far back the diagram and the verdicts go (default
	// 10s); DrawEvery how often they are redrawn (default 1s); Rotate how
	// often the server's own trace file is replaced by a new one, the one
	// before it removed (default 30s, at least Window).
	Window    time.Duration
	DrawEvery time.Duration
	Rotate    time.Duration
	// MaxEvents bounds the events drawn and checked (default 3000): a busy
	// lab's window is cut to its latest ones, and the page says so.
	MaxEvents int
	// HostNames label the diagram's lines (the lab file's names).
	HostNames map[uint32]string
	Log       *slog.Logger
}

func (c *Config) validate() error {
	if c.Source == nil || c.Table == nil {
		return errors.New("web: a Source and a Table are required")
	}
	if c.Every == 0 {
		c.Every = 500 * time.Millisecond
	}
	if c.ClusterTimeout == 0 {
		c.ClusterTimeout = min(300*time.Millisecond, c.Every*4/5)
	}
	if c.History == 0 {
		c.History = 120
	}
	if c.Window == 0 {
		c.Window = 10 * time.Second
	}
	if c.DrawEvery == 0 {
		c.DrawEvery = time.Second
	}
	if c.Rotate == 0 {
		c.Rotate = 30 * time.Second
	}
	if c.MaxEvents == 0 {
		c.MaxEvents = 3000
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.Every < 250*time.Millisecond || c.Every > time.Minute:
		return fmt.Errorf("web: refresh every %v: want 250ms to 1m (a member answers one status query per 250ms)", c.Every)
	case c.ClusterTimeout < daemon.MinClusterTimeout || c.ClusterTimeout >= c.Every:
		return fmt.Errorf("web: cluster timeout %v: want %v to less than the refresh period %v", c.ClusterTimeout, daemon.MinClusterTimeout, c.Every)
	case c.Window < time.Second || c.Window > 10*time.Minute:
		return fmt.Errorf("web: window %v: want 1s to 10m", c.Window)
	case c.Rotate < c.Window:
		return fmt.Errorf("web: rotate %v: want at least the window %v", c.Rotate, c.Window)
	case c.MaxEvents < 10 || c.MaxEvents > 100000:
		return fmt.Errorf("web: max events %d: want 10 to 100000", c.MaxEvents)
	case c.History < 2 || c.History > 10000:
		return fmt.Errorf("web: history %d: want 2 to 10000", c.History)
	}
	return nil
}

// Sample is one member's clock in one table, for the charts: its offset
// from this host's clock within ±BoundNs, and (timed) its offset from its
// own source within ±SourceBoundNs. Absent values are null.
type Sample struct {
	OffsetNs      *int64 `json:"offset_ns,omitempty"`
	BoundNs       int64  `json:"bound_ns,omitempty"`
	SourceNs      *int64 `json:"source_offset_ns,omitempty"`
	SourceBoundNs *int64 `json:"source_bound_ns,omitempty"`
}

// Point is the members' clocks at one table.
type Point struct {
	UnixMs  int64             `json:"t"`
	Members map[uint32]Sample `json:"members"`
}

// TraceView is what the page says of the trace window.
type TraceView struct {
	// Mode: "off" (not asked for), "own" (the server's window), "operator"
	// (a trace an operator started, read and left alone), "failed".
	Mode   string              `json:"mode"`
	Why    string              `json:"why,omitempty"`
	Status *daemon.TraceStatus `json:"status,omitempty"`
	// Scope says whose events the diagram holds; Members what became of
	// each other member's trace window.
	Scope    string       `json:"scope"`
	Members  []MemberView `json:"members"`
	WindowMs int64        `json:"window_ms"`
	// Diagram counts the drawings (the page reloads it when it changes);
	// Events is how many events the last one drew (Capped: the window
	// held more, the latest MaxEvents drawn); DrawnAt when.
	Diagram int       `json:"diagram"`
	Events  int       `json:"events"`
	Capped  bool      `json:"capped,omitempty"`
	DrawnAt time.Time `json:"drawn_at,omitzero"`
}

// Verdicts is the checker's report over the window.
type Verdicts struct {
	At      time.Time           `json:"at,omitzero"`
	Results []tracecheck.Result `json:"results"`
	Notes   []string            `json:"notes,omitempty"`
	Error   string              `json:"error,omitempty"`
}

// State is GET /api/state, and each server-sent event of /api/stream.
type State struct {
	Daemon string `json:"daemon"`
	// Seq grows with every change.
	Seq uint64 `json:"seq"`
	// Updated is when the table was last read; Error the last ask's
	// failure (the table is then the one before).
	Updated  time.Time             `json:"updated,omitzero"`
	Error    string                `json:"error,omitempty"`
	Cluster  *daemon.ClusterStatus `json:"cluster"`
	Table    *Table                `json:"table"`
	History  []Point               `json:"history"`
	Trace    TraceView             `json:"trace"`
	Verdicts Verdicts              `json:"verdicts"`
}

// Server serves the live page; New makes one, Run drives it.
type Server struct {
	cfg Config

	mu      sync.Mutex
	state   State
	diagram []byte        // the last drawing's page
	asked   time.Time     // when the table in state was asked for
	changed chan struct{} // closed and replaced at each change
	poke    chan struct{} // a daemon's event: ask for the table now
}

// New returns a server for cfg.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, changed: make(chan struct{}), poke: make(chan struct{}, 1)}
	s.state = State{Daemon: cfg.Daemon, History: []Point{}, Trace: TraceView{Mode: "off", WindowMs: cfg.Window.Milliseconds(), Scope: scope},
		Verdicts: Verdicts{Results: []tracecheck.Result{}}}
	if cfg.Trace {
		s.state.Trace.Mode = "starting"
	}
	return s, nil
}

// scope says what the diagram holds.
const scope = "every member's trace: this host's, and each other member's trace window, asked for over the cluster's authenticated protocol (the page's own status queries left out); a member that does not answer is drawn as such"

// update changes the state under the lock and wakes the streams.
func (s *Server) update(f func(*State)) {
	s.mu.Lock()
	f(&s.state)
	s.state.Seq++
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// Snapshot returns the current state (as JSON) and a channel closed at
// the next change.
func (s *Server) Snapshot() ([]byte, <-chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := json.Marshal(&s.state)
	return b, s.changed, err
}

// Run drives the server until ctx ends: it asks for the table, follows
// the daemon's events and, with Config.Trace, keeps the trace window,
// stopping the trace it started when it returns.
func (s *Server) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.pollLoop(ctx) }()
	go func() { defer wg.Done(); s.eventLoop(ctx) }()
	if s.cfg.Trace {
		wg.Add(1)
		go func() { defer wg.Done(); s.traceLoop(ctx) }()
	}
	wg.Wait()
	return nil
}

// pollLoop asks for the table every Config.Every, and at once after a
// daemon's event (a leader change, a grant), though never twice within
// minGap: a member answers one query per 250ms. An ask waits up to
// ClusterTimeout for a member that does not answer; two may be in flight
// at once, so that an event's ask does not wait behind a tick's, and the
// later ask's table wins.
func (s *Server) pollLoop(ctx context.Context) {
	const minGap = 250 * time.Millisecond
	tick := time.NewTicker(s.cfg.Every)
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	inflight := make(chan struct{}, 2)
	var last time.Time
	ask := func() {
		select {
		case inflight <- struct{}{}:
		default:
			return // two asks waiting already: the next tick
		}
		last = time.Now()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-inflight }()
			s.poll(ctx)
		}()
	}
	var later <-chan time.Time // a poke within minGap of the last ask
	ask()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if time.Since(last) >= minGap {
				ask()
			}
		case <-s.poke:
			if wait := minGap - time.Since(last); wait > 0 {
				if later == nil {
					later = time.After(wait)
				}
				continue
			}
			ask()
		case <-later:
			later = nil
			ask()
		}
	}
}

func (s *Server) poll(ctx context.Context) {
	asked := time.Now()
	cctx, cancel := context.WithTimeout(ctx, s.cfg.ClusterTimeout+5*time.Second)
	st, err := s.cfg.Source.Cluster(cctx, s.cfg.ClusterTimeout)
	cancel()
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		var ce *ctl.Error
		if errors.As(err, &ce) && ce.Status == statusTooMany {
			return // someone else's `status --cluster` took the turn: the next one
		}
		s.update(func(v *State) {
			if v.Error == "" {
				s.cfg.Log.Warn("reading the lab's table failed; the page shows the last one", "err", err)
			}
			v.Error = err.Error()
		})
		return
	}
	tab := s.cfg.Table(st)
	p := Point{UnixMs: time.Now().UnixMilli(), Members: map[uint32]Sample{}}
	for _, r := range st.Rows {
		if !r.Reachable {
			continue
		}
		var sm Sample
		if c := r.Clock; c != nil && c.OffsetNs != nil {
			sm.OffsetNs, sm.BoundNs = c.OffsetNs, c.OffsetBoundNs
		}
		if r.Self && r.Clock != nil && r.Clock.Wall {
			zero := int64(0)
			sm.OffsetNs = &zero
		}
		sm.SourceNs = fact(r.Facts, "offset_ns")
		sm.SourceBoundNs = fact(r.Facts, "error_bound_ns")
		p.Members[r.ID] = sm
	}
	s.update(func(v *State) {
		if asked.Before(s.asked) {
			return // a later ask's table is in already
		}
		s.asked = asked
		if v.Error != "" {
			s.cfg.Log.Info("reading the lab's table again")
		}
		v.Error = ""
		v.Updated = time.Now()
		v.Cluster, v.Table = st, &tab
		v.History = append(v.History, p)
		if n := len(v.History) - s.cfg.History; n > 0 {
			v.History = slices.Clone(v.History[n:])
		}
	})
}

func fact(f map[string]json.Number, name string) *int64 {
	v, err := strconv.ParseInt(f[name].String(), 10, 64)
	if err != nil {
		return nil
	}
	return &v
}

// eventLoop follows the daemon's events and pokes the poll loop at each,
// reconnecting after a second when the stream ends.
func (s *Server) eventLoop(ctx context.Context) {
	for ctx.Err() == nil {
		err := s.cfg.Source.Events(ctx, func(json.RawMessage) error {
			select {
			case s.poke <- struct{}{}:
			default:
			}
			return nil
		})
		if ctx.Err() != nil {
			return
		}
		s.cfg.Log.Debug("the daemon's event stream ended; following it again in a second", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// traceLoop keeps the trace window: on while the server runs (turned on
// again if it goes off: a daemon restarted, an operator stopped it),
// drawn and checked every DrawEvery, its files rotated every Rotate.
func (s *Server) traceLoop(ctx context.Context) {
	w := &window{s: s}
	defer w.close()
	tick := time.NewTicker(s.cfg.DrawEvery)
	defer tick.Stop()
	for {
		w.step(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// window is the trace loop's own state.
type window struct {
	s       *Server
	own     []string // the files the server's traces went to, oldest first
	tails   map[string]*tail
	members map[uint32]*memberTrace
	started time.Time
	failed  string // the last failure, said once at WARN
}

func (w *window) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if msg != w.failed {
		w.s.cfg.Log.Warn("trace window: " + msg)
		w.failed = msg
	}
	w.s.update(func(v *State) { v.Trace.Mode, v.Trace.Why = "failed", msg })
}

func (w *window) step(ctx context.Context) {
	c := w.s.cfg
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := c.Source.Trace(cctx)
	if err != nil {
		if ctx.Err() == nil {
			w.fail("cannot read the daemon's trace status: %v", err)
		}
		return
	}
	mode, why := "own", fmt.Sprintf("a trace window the page keeps on (a new file every %v in the daemon's traces directory, the one before removed)", c.Rotate)
	current := len(w.own) > 0 && st.On && st.File == w.own[len(w.own)-1]
	switch {
	case st.On && !current:
		mode, why = "operator", "tracing was already on (an operator's trace, to "+st.File+"): the page reads it and leaves it alone"
	case !st.On || time.Since(w.started) >= c.Rotate:
		if st.On {
			if _, err := c.Source.StopTrace(cctx); err != nil {
				w.fail("cannot stop the trace window to rotate it: %v", err)
				return
			}
		}
		nst, err := c.Source.StartTrace(cctx)
		if err != nil {
			w.fail("cannot turn tracing on: %v", err)
			return
		}
		st = nst
		w.started = time.Now()
		w.own = append(w.own, st.File)
		if len(w.own) == 1 {
			c.Log.Info("trace window on", "file", st.File)
		} else {
			c.Log.Debug("trace window rotated", "file", st.File)
		}
		for len(w.own) > 2 {
			w.remove(w.own[0])
			w.own = w.own[1:]
		}
	}
	if st.Error != "" {
		w.fail("the trace file %s: %s", st.File, st.Error)
		return
	}
	var paths []string
	if mode == "own" {
		paths = slices.Clone(w.own)
	} else {
		paths = []string{st.File}
	}
	files, err := w.read(paths, st.File)
	if err != nil {
		w.fail("cannot read the trace (is `X web` run by a user who may read the daemon's traces directory?): %v", err)
		return
	}
	w.failed = ""
	w.s.mu.Lock()
	cst := w.s.state.Cluster
	w.s.mu.Unlock()
	names := c.HostNames
	var views []MemberView
	if cst != nil {
		var all, others []uint32
		for _, r := range cst.Rows {
			all = append(all, r.ID)
			if !r.Self {
				others = append(others, r.ID)
			}
		}
		w.fetchMembers(ctx, others, c.ClusterTimeout)
		var mf []*trace.File
		mf, views, names = w.memberFiles(cst.Cluster, all, names)
		files = append(files, mf...)
	}
	own := len(files) - len(views)
	files, ahead := lastWindow(files, time.Now(), c.Window)
	for i := range views {
		views[i].Ahead, views[i].AheadMs = ahead[own+i].n, ahead[own+i].by.Milliseconds()
		views[i].Events = len(files[own+i].Events)
	}
	html, events, capped, verdicts := draw(files, c.MaxEvents, names)
	w.s.mu.Lock()
	w.s.diagram = html
	w.s.mu.Unlock()
	w.s.update(func(v *State) {
		st := st
		v.Trace.Mode, v.Trace.Why, v.Trace.Status = mode, why, &st
		v.Trace.Diagram++
		v.Trace.Events, v.Trace.Capped = events, capped
		v.Trace.Members = views
		v.Trace.DrawnAt = time.Now()
		v.Verdicts = verdicts
	})
}

// read brings the tails of paths up to date and returns their files, the
// events before the window (and a margin) forgotten. An older file of the
// server's own that is gone (removed by someone else) is left out;
// current must be there.
func (w *window) read(paths []string, current string) ([]*trace.File, error) {
	if w.tails == nil {
		w.tails = map[string]*tail{}
	}
	for p := range w.tails {
		if !slices.Contains(paths, p) {
			delete(w.tails, p)
		}
	}
	var files []*trace.File
	var last time.Time
	for _, p := range paths {
		t := w.tails[p]
		if t == nil {
			t = &tail{path: p}
			w.tails[p] = t
		}
		if err := t.read(); err != nil {
			if errors.Is(err, os.ErrNotExist) && p != current {
				delete(w.tails, p)
				continue
			}
			delete(w.tails, p) // read it afresh next time
			return nil, err
		}
		if t.file == nil {
			continue // just created: its header not flushed yet
		}
		for _, e := range t.file.Events {
			if e.T.After(last) {
				last = e.T
			}
		}
		files = append(files, t.file)
	}
	for _, t := range w.tails {
		t.trim(last.Add(-2 * w.s.cfg.Window))
	}
	return files, nil
}

// close stops the server's trace and removes its files.
func (w *window) close() {
	if len(w.own) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := w.s.cfg.Source.Trace(ctx)
	if err == nil && st.On && st.File == w.own[len(w.own)-1] {
		if _, err := w.s.cfg.Source.StopTrace(ctx); err != nil {
			w.s.cfg.Log.Warn("trace window: cannot stop it; stop it with `trace stop`", "file", st.File, "err", err)
		}
	}
	for _, p := range w.own {
		w.remove(p)
	}
	w.own = nil
}

func (w *window) remove(path string) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		w.s.cfg.Log.Warn("trace window: cannot remove an old window's file; remove it by hand", "file", path, "err", err)
	}
}

// draw cuts files (their last window: lastWindow) to at most maxEvents
// of their latest events, draws them and checks them: the diagram's page,
// its event count, whether the cap cut it, and the verdicts.
func draw(files []*trace.File, maxEvents int, names map[uint32]string) ([]byte, int, bool, Verdicts) {
	v := Verdicts{At: time.Now(), Results: []tracecheck.Result{}}
	cut, capped := latest(withoutStatus(files), maxEvents)
	n := 0
	for _, f := range cut {
		n += len(f.Events)
	}
	if n == 0 {
		v.Error = "no events in the window yet"
		return nil, 0, false, v
	}
	var b bytes.Buffer
	d, err := diagram.Build(cut)
	if err == nil {
		d.HostNames = names
		err = d.WriteHTML(&b)
	}
	if err != nil {
		v.Error = "cannot draw the window: " + err.Error()
		return nil, n, capped, v
	}
	rep, err := tracecheck.Check(cut, tracecheck.Options{ClockBound: -1})
	if err != nil {
		v.Error = "cannot check the window: " + err.Error()
		return b.Bytes(), n, capped, v
	}
	v.Results, v.Notes = rep.Results, rep.Notes
	if v.Results == nil {
		v.Results = []tracecheck.Result{}
	}
	return b.Bytes(), n, capped, v
}

// latest keeps at most max events of files, the latest in time (and
// those without a time); capped says some were left out.
func latest(files []*trace.File, max int) ([]*trace.File, bool) {
	var ts []time.Time
	for _, f := range files {
		for _, e := range f.Events {
			if !e.T.IsZero() {
				ts = append(ts, e.T)
			}
		}
	}
	if len(ts) <= max {
		return files, false
	}
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	from := ts[len(ts)-max]
	out := make([]*trace.File, len(files))
	for i, f := range files {
		c := *f
		c.Events = slices.DeleteFunc(slices.Clone(f.Events), func(e trace.Event) bool { return !e.T.IsZero() && e.T.Before(from) })
		out[i] = &c
	}
	return out, true
}

// withoutStatus leaves out the status queries and their answers: the
// page's own asking (twice a second), which would crowd out the protocol.
func withoutStatus(files []*trace.File) []*trace.File {
	status := map[string]bool{wire.KindStatusQuery.String(): true, wire.KindStatusReport.String(): true,
		wire.KindTraceQuery.String(): true, wire.KindTraceChunk.String(): true}
	out := make([]*trace.File, len(files))
	for i, f := range files {
		c := *f
		c.Events = slices.DeleteFunc(slices.Clone(f.Events), func(e trace.Event) bool { return e.Ev != trace.EvLocal && status[e.Kind] })
		out[i] = &c
	}
	return out
}

// lastWindow keeps the events of files that may have happened in the
// last window on this host's clock, [now-window, now]: each at its time
// give or take its host's error bound, the one the checker uses
// (tracecheck): a simulated clock's true offset, exactly; the maximum
// error a synchronised clock recorded with the event; else clockSlack.
// The window does not follow the members' times: one whose clock runs
// ahead would take it off every other member's recent events. That
// member's events after now, beyond their bound, are left out instead,
// and counted in ahead (by file), with how far the newest of them is.
// Events without a time are kept.
func lastWindow(files []*trace.File, now time.Time, window time.Duration) ([]*trace.File, []aheadCount) {
	out := make([]*trace.File, len(files))
	ahead := make([]aheadCount, len(files))
	from := now.Add(-window)
	for i, f := range files {
		c := *f
		c.Events = nil
		for _, e := range f.Events {
			if e.T.IsZero() {
				c.Events = append(c.Events, e)
				continue
			}
			lo, hi := possibleTimes(e)
			switch {
			case lo.After(now):
				ahead[i].n++
				ahead[i].by = max(ahead[i].by, lo.Sub(now))
			case !hi.Before(from):
				c.Events = append(c.Events, e)
			}
		}
		out[i] = &c
	}
	return out, ahead
}

// aheadCount is how many of a file's events lastWindow left out as
// stamped after now beyond their bound, and by how much at most.
type aheadCount struct {
	n  int
	by time.Duration
}

// clockSlack is the error allowed an event whose host claims no bound
// (its clock not synchronised, or by a program that keeps no maximum
// error): LAN clocks kept by NTP agree far better, and one off by more
// is worth seeing on the page.
const clockSlack = 100 * time.Millisecond

// maxClockBound caps a recorded bound (tracecheck's maxBound): a larger
// one says nothing more.
const maxClockBound = 24 * time.Hour

// possibleTimes is when, on the true time this host's clock keeps, event
// e may have happened.
func possibleTimes(e trace.Event) (lo, hi time.Time) {
	switch {
	case e.TrueOffset != nil:
		t := e.T.Add(-time.Duration(*e.TrueOffset))
		return t, t
	case e.MaxError > 0:
		b := min(time.Duration(e.MaxError), maxClockBound)
		return e.T.Add(-b), e.T.Add(b)
	}
	return e.T.Add(-clockSlack), e.T.Add(clockSlack)
}
