package web

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/internal/trace"
)

// fake is a daemon's control API: a three-member table whose leader the
// test sets, a trace that writes real trace files into dir, and the calls
// that change state, counted.
type fake struct {
	dir string

	mu      sync.Mutex
	leader  uint32
	busy    bool
	tr      daemon.TraceStatus
	starts  int
	stops   int
	events  chan struct{}
	cluster int
	// member3 is member 3's trace window (lines, no header): each ask
	// adds an event; asks counts the asks by member.
	member3 []byte
	asks    map[uint32]int
	// ahead3 is how far ahead member 3's clock runs (no bound claimed).
	ahead3 time.Duration
}

func newFake(t *testing.T) *fake {
	return &fake{dir: t.TempDir(), leader: 3, events: make(chan struct{}, 8)}
}

func (f *fake) setLeader(id uint32) {
	f.mu.Lock()
	f.leader = id
	f.mu.Unlock()
	f.events <- struct{}{}
}

func (f *fake) Cluster(ctx context.Context, timeout time.Duration) (*daemon.ClusterStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cluster++
	if f.busy {
		return nil, ctl.Errorf(http.StatusTooManyRequests, "busy", "too many status queries")
	}
	off, bound := int64(1500), int64(400)
	st := &daemon.ClusterStatus{Daemon: "electd", Cluster: "lab", From: 1, TimeoutNs: int64(timeout), Members: 3, Answered: 2}
	for id := uint32(1); id <= 3; id++ {
		r := daemon.ClusterRow{ID: id, Address: fmt.Sprintf("127.0.0.%d:7000", id), Self: id == 1, Reachable: id != 2, Config: "agrees", Agrees: true,
			Role: "follower", Facts: map[string]json.Number{"leader": json.Number(fmt.Sprint(f.leader))}}
		if id == f.leader {
			r.Role = "leader"
		}
		if id == 2 {
			r = daemon.ClusterRow{ID: 2, Address: "127.0.0.2:7000", Config: "silent", Why: "no answer within 400ms"}
		}
		if id == 3 {
			r.Clock = &daemon.RowClock{Wall: true, OffsetNs: &off, OffsetBoundNs: bound}
			// timed's facts: an offset from its source, its error bound.
			r.Facts["offset_ns"], r.Facts["error_bound_ns"] = "-2500", "9000"
		}
		if id == 1 {
			r.Clock = &daemon.RowClock{Wall: true}
			r.Facts["error_bound_ns"] = "7000" // a bound without an offset
		}
		st.Rows = append(st.Rows, r)
	}
	return st, nil
}

func (f *fake) Trace(context.Context) (daemon.TraceStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tr, nil
}

// StartTrace writes a trace file as a daemon would: a header and a few
// events at the current time.
func (f *fake) StartTrace(context.Context) (daemon.TraceStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tr.On {
		return daemon.TraceStatus{}, ctl.Conflict("tracing is already on")
	}
	f.starts++
	path := filepath.Join(f.dir, fmt.Sprintf("w%d.trace", f.starts))
	file, err := os.Create(path)
	if err != nil {
		return daemon.TraceStatus{}, err
	}
	defer file.Close()
	now := time.Now()
	w, err := trace.NewWriter(file, trace.Header{Daemon: "electd", ID: 1, Cluster: "lab", Members: []uint32{1, 2, 3}, Clock: trace.ClockSystem, Started: now}, 0)
	if err != nil {
		return daemon.TraceStatus{}, err
	}
	for i := range 3 {
		w.Write(&trace.Event{Ev: trace.EvLocal, Name: "leader_elected", T: now.Add(time.Duration(i) * time.Millisecond), Lamport: uint64(i + 1),
			Args: map[string]any{"leader": 3, "term": 7}})
	}
	if err := w.Close(); err != nil {
		return daemon.TraceStatus{}, err
	}
	f.tr = daemon.TraceStatus{On: true, File: path, Since: now}
	return f.tr, nil
}

func (f *fake) StopTrace(context.Context) (daemon.TraceStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.tr.On {
		return daemon.TraceStatus{}, ctl.Conflict("tracing is off")
	}
	f.stops++
	st := f.tr
	st.On = false
	f.tr = daemon.TraceStatus{}
	return st, nil
}

// MemberTrace: member 3 answers, a new send to member 1 in its window at
// each ask, in pieces of at most 100 bytes (lines cut across them);
// member 2 never answers.
func (f *fake) MemberTrace(ctx context.Context, member, window uint32, after uint64, from time.Time, timeout time.Duration, maxBytes int) (daemon.MemberTrace, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.asks == nil {
		f.asks = map[uint32]int{}
	}
	f.asks[member]++
	if member != 3 {
		return daemon.MemberTrace{Member: member, Why: "no trace chunk within 100ms: yet heard 50ms ago, after it was asked: an older synclab that does not answer traces"}, nil
	}
	n := f.asks[member]
	f.member3 = trace.AppendEvent(f.member3, &trace.Event{T: time.Now().Add(f.ahead3), Ev: trace.EvSend, Kind: "coordinator", Frame: trace.FrameID(3, uint64(n)), From: 3, To: 1, Term: 7, Lamport: uint64(n)})
	mt := daemon.MemberTrace{Member: 3, Answered: true, Chunks: 1, Window: 9, End: uint64(len(f.member3))}
	if window != 9 {
		window, after, mt.Fresh = 9, 0, true
	}
	end := min(after+100, uint64(len(f.member3)))
	mt.Offset, mt.Next, mt.Data = after, end, f.member3[after:end]
	return mt, nil
}

func (f *fake) Events(ctx context.Context, fn func(json.RawMessage) error) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.events:
			if err := fn(json.RawMessage(`{"event":"leader_changed"}`)); err != nil {
				return err
			}
		}
	}
}

func (f *fake) counts() (starts, stops int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.starts, f.stops
}

func table(st *daemon.ClusterStatus) Table {
	t := Table{Headers: []string{"ID", "Role", "Leader"}}
	for _, r := range st.Rows {
		t.Rows = append(t.Rows, TableRow{ID: r.ID, Self: r.Self, Reachable: r.Reachable, Cells: []string{fmt.Sprint(r.ID), r.Role, r.Facts["leader"].String()}})
	}
	return t
}

// serve runs a server over f until the test ends; the cancel func stops
// its loops and waits for them.
func serve(t *testing.T, f *fake, tracing bool) (*httptest.Server, func()) {
	t.Helper()
	s, err := New(Config{Daemon: "electd", Source: f, Table: table, Every: time.Minute, ClusterTimeout: 100 * time.Millisecond,
		Trace: tracing, Window: time.Second, DrawEvery: 50 * time.Millisecond, Rotate: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	hs := httptest.NewServer(s.Handler(false))
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
			hs.Close()
		})
	}
	t.Cleanup(stop)
	return hs, stop
}

func getState(t *testing.T, url string) State {
	t.Helper()
	resp, err := http.Get(url + "/api/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("content type %q", ct)
	}
	var st State
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStateJSON: /api/state carries the daemon's cluster status, the
// table as the CLI renders it, the clock samples of every member that
// answered (this one at 0), the trace window and the verdicts.
func TestStateJSON(t *testing.T) {
	f := newFake(t)
	hs, _ := serve(t, f, true)
	var st State
	eventually(t, "a table and a drawing", func() bool {
		st = getState(t, hs.URL)
		return st.Table != nil && st.Trace.Diagram > 0
	})
	if st.Daemon != "electd" || st.Cluster == nil || st.Cluster.Members != 3 || len(st.Table.Rows) != 3 || st.Error != "" {
		t.Fatalf("state %+v", st)
	}
	if r := st.Table.Rows[1]; r.ID != 2 || r.Reachable {
		t.Errorf("row of the silent member %+v", r)
	}
	p := st.History[len(st.History)-1]
	if s, ok := p.Members[3]; !ok || s.OffsetNs == nil || *s.OffsetNs != 1500 || s.BoundNs != 400 {
		t.Errorf("member 3's sample %+v", p.Members)
	}
	if _, ok := p.Members[2]; ok {
		t.Errorf("the silent member has a sample: %+v", p.Members)
	}
	if st.Trace.Mode != "own" || st.Trace.Status == nil || !st.Trace.Status.On || st.Trace.Events < 3 || !strings.Contains(st.Trace.Scope, "every member's trace") {
		t.Errorf("trace %+v", st.Trace)
	}
	if st.Verdicts.Error != "" || len(st.Verdicts.Results) == 0 {
		t.Errorf("verdicts %+v", st.Verdicts)
	}
	for _, r := range st.Verdicts.Results {
		if r.Property == "one-leader-per-term" && r.Verdict != "holds" {
			t.Errorf("verdict %+v", r)
		}
	}
	// The raw shape: the names the page's script reads.
	resp, err := http.Get(hs.URL + "/api/state")
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	json.NewDecoder(resp.Body).Decode(&raw)
	resp.Body.Close()
	for _, k := range []string{"daemon", "seq", "updated", "cluster", "table", "history", "trace", "verdicts"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("/api/state has no %q", k)
		}
	}
	// The diagram is internal/diagram's page, drawn from the window.
	resp, err = http.Get(hs.URL + "/api/diagram")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "leader_elected") || !strings.Contains(string(b), `id="data"`) {
		t.Errorf("the diagram page does not draw the window: %.300s", b)
	}
}

// TestReadOnly: every method but GET and HEAD is refused on every route,
// before anything is asked of the daemon; with tracing off the server
// never starts or stops a trace.
func TestReadOnly(t *testing.T) {
	f := newFake(t)
	hs, stop := serve(t, f, false)
	eventually(t, "a table", func() bool { return getState(t, hs.URL).Table != nil })
	for _, path := range []string{"/", "/api/state", "/api/stream", "/api/diagram", "/v1/trace/start", "/api/trace/start"} {
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
			req, _ := http.NewRequest(m, hs.URL+path, strings.NewReader(`{}`))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d (Allow %q), want 405", m, path, resp.StatusCode, resp.Header.Get("Allow"))
			}
		}
	}
	stop()
	if starts, stops := f.counts(); starts != 0 || stops != 0 {
		t.Errorf("with tracing off the server started %d traces and stopped %d", starts, stops)
	}
	if st := getStateDirect(t, f); st.On {
		t.Errorf("trace left on: %+v", st)
	}
}

func getStateDirect(t *testing.T, f *fake) daemon.TraceStatus {
	st, _ := f.Trace(context.Background())
	return st
}

// TestTraceWindowOwned: the server turns tracing on, rotates its file
// (removing the one before the last), and when it stops, stops the trace
// and removes its files; an operator's trace is read and left alone.
func TestTraceWindowOwned(t *testing.T) {
	f := newFake(t)
	_, stop := serve(t, f, true)
	eventually(t, "a rotation", func() bool { s, _ := f.counts(); return s >= 3 })
	stop()
	starts, stops := f.counts()
	if stops != starts {
		t.Errorf("%d traces started, %d stopped: the server left one on", starts, stops)
	}
	if left, _ := filepath.Glob(filepath.Join(f.dir, "*.trace")); len(left) != 0 {
		t.Errorf("the window's files are left: %v", left)
	}

	g := newFake(t)
	g.StartTrace(context.Background()) // the operator's
	g.starts = 0
	hs, stop := serve(t, g, true)
	var st State
	eventually(t, "a drawing", func() bool { st = getState(t, hs.URL); return st.Trace.Diagram > 0 })
	if st.Trace.Mode != "operator" || !strings.Contains(st.Trace.Why, "leaves it alone") {
		t.Errorf("trace %+v", st.Trace)
	}
	stop()
	if starts, stops := g.counts(); starts != 0 || stops != 0 {
		t.Errorf("the operator's trace: %d started, %d stopped by the server", starts, stops)
	}
	if left, _ := filepath.Glob(filepath.Join(g.dir, "*.trace")); len(left) != 1 {
		t.Errorf("the operator's file: %v", left)
	}
}

// TestStreamFollowsEvents: /api/stream sends the state at once, then a
// new one soon after a daemon's event (here a leader change), without
// waiting for the refresh period (a minute in this test).
func TestStreamFollowsEvents(t *testing.T) {
	f := newFake(t)
	hs, _ := serve(t, f, false)
	eventually(t, "a table", func() bool { return getState(t, hs.URL).Table != nil })
	resp, err := http.Get(hs.URL + "/api/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	br := bufio.NewReader(resp.Body)
	next := func() State {
		t.Helper()
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var st State
				if err := json.Unmarshal([]byte(data), &st); err != nil {
					t.Fatal(err)
				}
				return st
			}
		}
	}
	if st := next(); st.Table.Rows[0].Cells[2] != "3" {
		t.Fatalf("first state's leader %q", st.Table.Rows[0].Cells[2])
	}
	f.setLeader(1)
	changed := time.Now()
	for {
		st := next()
		if st.Table.Rows[0].Cells[2] == "1" {
			t.Logf("the stream had the new leader %v after the event", time.Since(changed))
			break
		}
	}
}

// TestBusyIsNotAnError: a table refused as asked too soon (another
// operator's query took the turn) keeps the last one without an error.
func TestBusyIsNotAnError(t *testing.T) {
	f := newFake(t)
	f.busy = true
	s, err := New(Config{Daemon: "electd", Source: f, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	s.poll(context.Background())
	b, _, _ := s.Snapshot()
	var st State
	json.Unmarshal(b, &st)
	if st.Error != "" || st.Table != nil {
		t.Errorf("state after a busy answer: %+v", st)
	}
	f.busy = false
	s.cfg.Source = failing{f}
	s.poll(context.Background())
	b, _, _ = s.Snapshot()
	json.Unmarshal(b, &st)
	if !strings.Contains(st.Error, "connection refused") {
		t.Errorf("a failed ask is not said: %+v", st.Error)
	}
}

type failing struct{ *fake }

func (failing) Cluster(context.Context, time.Duration) (*daemon.ClusterStatus, error) {
	return nil, errors.New("connection refused")
}

// TestLoopbackHostOnly: unless public, a Host that is not loopback or
// localhost is refused (a rebound DNS name), whatever the address.
func TestLoopbackHostOnly(t *testing.T) {
	s, err := New(Config{Daemon: "electd", Source: newFake(t), Table: table})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]int{"127.0.0.1:8080": 200, "localhost:8080": 200, "[::1]:8080": 200, "LOCALHOST": 200,
		"evil.example:8080": http.StatusMisdirectedRequest, "10.0.0.5:8080": http.StatusMisdirectedRequest, "": http.StatusMisdirectedRequest} {
		for _, public := range []bool{false, true} {
			req := httptest.NewRequest(http.MethodGet, "/api/state", nil)
			req.Host = host
			rec := httptest.NewRecorder()
			s.Handler(public).ServeHTTP(rec, req)
			w := want
			if public {
				w = 200
			}
			if rec.Code != w {
				t.Errorf("Host %q (public %v): %d, want %d", host, public, rec.Code, w)
			}
		}
	}
}

// TestPageSelfContained: the page refers to nothing outside this server:
// no address but the SVG namespace name, no src or href attribute, and
// the policy header forbids loading anything from elsewhere.
func TestPageSelfContained(t *testing.T) {
	s, err := New(Config{Daemon: "electd", Source: newFake(t), Table: table})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = "127.0.0.1:8080"
		rec := httptest.NewRecorder()
		s.Handler(false).ServeHTTP(rec, req)
		return rec
	}
	rec := get("/")
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `new EventSource("api/stream")`) {
		t.Fatalf("the page: %d %.200s", rec.Code, rec.Body.String())
	}
	page := strings.ReplaceAll(rec.Body.String(), `"http://www.w3.org/2000/svg"`, "")
	for _, bad := range []string{"http:", "https:", "src=", "href=", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("the page has %q", bad)
		}
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("policy %q", csp)
	}
	if rec = get("/nothing"); rec.Code != http.StatusNotFound {
		t.Errorf("/nothing: %d", rec.Code)
	}
}

// TestConfigValidate: a tired administrator's values are refused with
// what is wanted.
func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Every: 100 * time.Millisecond}, "want 250ms to 1m"},
		{Config{Every: time.Second, ClusterTimeout: time.Second}, "less than the refresh period"},
		{Config{Window: 100 * time.Millisecond}, "want 1s to 10m"},
		{Config{Window: time.Minute, Rotate: 30 * time.Second}, "at least the window"},
	} {
		c.cfg.Source, c.cfg.Table = newFake(t), table
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
	// The fastest refresh a flag allows: the ask's deadline follows it.
	if s, err := New(Config{Every: 250 * time.Millisecond, Source: newFake(t), Table: table}); err != nil || s.cfg.ClusterTimeout != 200*time.Millisecond {
		t.Errorf("every 250ms: %v", err)
	}
	if _, err := New(Config{Table: table}); err == nil {
		t.Error("no source accepted")
	}
}

// TestLastWindow: only the last window of the events, on this host's
// clock, is kept.
func TestLastWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := &trace.File{}
	for i := range 20 {
		f.Events = append(f.Events, trace.Event{Ev: trace.EvLocal, Name: "x", T: t0.Add(time.Duration(i) * time.Second)})
	}
	now := t0.Add(19 * time.Second)
	cut, ahead := lastWindow([]*trace.File{f}, now, 5*time.Second)
	if !slices.Equal(seconds(cut[0], t0), []int{14, 15, 16, 17, 18, 19}) || ahead[0].n != 0 {
		t.Errorf("kept seconds %v, %d ahead", seconds(cut[0], t0), ahead[0].n)
	}
	if cut, _ := lastWindow([]*trace.File{f}, now, time.Minute); len(cut[0].Events) != 20 {
		t.Errorf("a window longer than the run keeps %d of 20", len(cut[0].Events))
	}
}

func seconds(f *trace.File, t0 time.Time) []int {
	var ts []int
	for _, e := range f.Events {
		ts = append(ts, int(e.T.Sub(t0)/time.Second))
	}
	return ts
}

// TestLastWindowMemberAhead: a member whose clock runs 30 s ahead no
// longer moves the window off the other members' recent events (it ended
// at the newest event of anyone): its events after this host's now are
// left out and counted. An event is placed by its host's bound: a
// synchronised clock's maximum error (member 3, 5 s ahead but saying 6 s),
// a simulated clock's true offset (member 4, 40 s ahead, exactly known).
func TestLastWindowMemberAhead(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(19 * time.Second)
	file := func(ahead time.Duration, bound int64, trueOff bool) *trace.File {
		f := &trace.File{}
		for i := range 20 {
			e := trace.Event{Ev: trace.EvLocal, Name: "x", T: t0.Add(time.Duration(i)*time.Second + ahead), MaxError: bound}
			if trueOff {
				off := int64(ahead)
				e.TrueOffset = &off
			}
			f.Events = append(f.Events, e)
		}
		return f
	}
	self, fast := file(0, 0, false), file(30*time.Second, 0, false)
	bounded, sim := file(5*time.Second, int64(6*time.Second), false), file(40*time.Second, 0, true)
	cut, ahead := lastWindow([]*trace.File{self, fast, bounded, sim}, now, 5*time.Second)
	if got := seconds(cut[0], t0); !slices.Equal(got, []int{14, 15, 16, 17, 18, 19}) {
		t.Errorf("this host's events: kept seconds %v, want its last 5 s", got)
	}
	if len(cut[1].Events) != 0 || ahead[1].n != 20 || ahead[1].by < 29*time.Second || ahead[1].by > 30*time.Second {
		t.Errorf("the member 30 s ahead: %d kept, %d ahead by up to %v; want 0, 20 by 29.9 s", len(cut[1].Events), ahead[1].n, ahead[1].by)
	}
	// Member 3's events, stamped t0+5..24 s, may lie 6 s either side:
	// those that may be in [14, 19] s are stamped 8..24 s, and none is
	// after now by more than its bound.
	if got := seconds(cut[2], t0); len(got) != 17 || got[0] != 8 || got[16] != 24 || ahead[2].n != 0 {
		t.Errorf("the member with a 6 s bound: kept seconds %v, %d ahead", got, ahead[2].n)
	}
	if got := seconds(cut[3], t0); !slices.Equal(got, []int{54, 55, 56, 57, 58, 59}) || ahead[3].n != 0 {
		t.Errorf("the simulated clock 40 s ahead: kept seconds %v, %d ahead", got, ahead[3].n)
	}
}

// TestMemberClockAheadKeepsOurEvents: the live page with member 3's clock
// a minute ahead still draws this host's events (the window ended at
// member 3's newest event, a minute after them), and says member 3's are
// left out.
func TestMemberClockAheadKeepsOurEvents(t *testing.T) {
	f := newFake(t)
	f.ahead3 = time.Minute
	hs, _ := serve(t, f, true)
	var st State
	var html string
	eventually(t, "this host's events drawn, member 3's said to be ahead", func() bool {
		st = getState(t, hs.URL)
		if len(st.Trace.Members) != 2 || st.Trace.Members[1].Ahead == 0 || st.Trace.Events == 0 {
			return false
		}
		resp, err := http.Get(fmt.Sprintf("%s/api/diagram?n=%d", hs.URL, st.Trace.Diagram))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		html = string(b)
		return strings.Contains(html, "leader_elected")
	})
	if m3 := st.Trace.Members[1]; m3.ID != 3 || m3.AheadMs < 59_000 || m3.AheadMs > 60_000 {
		t.Errorf("member 3 %+v, want its events a minute ahead", m3)
	}
	if strings.Contains(html, `"frame":"`+trace.FrameID(3, 1)+`"`) {
		t.Error("member 3's events, a minute ahead, drawn")
	}
}

// TestMembersTraces: the page asks for every other member's trace window:
// member 3's events (sent in pieces cut mid-line) are drawn on its own
// line beside this host's and checked; member 2, which never answers, is
// said not to answer traces, on the page and on its line of the diagram.
func TestMembersTraces(t *testing.T) {
	f := newFake(t)
	hs, _ := serve(t, f, true)
	var st State
	eventually(t, "member 3's events drawn", func() bool {
		st = getState(t, hs.URL)
		return len(st.Trace.Members) == 2 && st.Trace.Members[1].Events >= 2
	})
	m2, m3 := st.Trace.Members[0], st.Trace.Members[1]
	if m2.ID != 2 || m2.Answering || !strings.Contains(m2.Why, "does not answer traces") {
		t.Errorf("member 2 %+v", m2)
	}
	if m3.ID != 3 || !m3.Answering || m3.Why != "" {
		t.Errorf("member 3 %+v", m3)
	}
	resp, err := http.Get(fmt.Sprintf("%s/api/diagram?n=%d", hs.URL, st.Trace.Diagram))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	html := string(b)
	for _, want := range []string{"member 2 (not answering traces)", "member 3", trace.FrameID(3, 2)} {
		if !strings.Contains(html, want) {
			t.Errorf("the diagram lacks %q", want)
		}
	}
	if st.Verdicts.Error != "" {
		t.Errorf("verdicts %+v", st.Verdicts)
	}
}
