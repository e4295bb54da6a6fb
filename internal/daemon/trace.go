package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/trace"
)

// TraceLogWrite is the local event a running trace records after each
// append to the core's log (CoreLogFile), stamped when it ended: records
// appended, write_us (write(2)), sync_us (fdatasync), total_us and
// promise (as TraceStateWrite), so that a
// message's path through a member splits into its wake-up and core, its
// write, and what follows.
const TraceLogWrite = "log_write"

// TraceStateWrite is the local event a running trace records after each
// write of the core's state (CoreStateFile, replaced atomically), stamped
// when it ended: bytes, write_us (write(2)), sync_us (the new file's
// fsync, the directory's after the rename, and the log's removal),
// total_us, and promise (the Ready's messages waited for it). A member
// whose loop is silent between its decision and its message is read by
// it: the write, or something else.
const TraceStateWrite = "state_write"

// traceFlushEvery is how often a running trace's buffered lines reach the
// file: a reader (or a killed daemon) loses at most this much.
const traceFlushEvery = 250 * time.Millisecond

// TraceStatus says whether the daemon records a trace, and where. It is in
// status (GET /v1/status) and what the trace endpoints answer.
type TraceStatus struct {
	On       bool      `json:"on"`
	File     string    `json:"file,omitempty"`
	Since    time.Time `json:"since,omitzero"`
	Bytes    int64     `json:"bytes"`
	MaxBytes int64     `json:"max_bytes,omitempty"`
	// Dropped counts the events left out once the file reached MaxBytes.
	Dropped uint64 `json:"dropped"`
	// Error is the file's write error, if writing failed (the trace then
	// stops growing; stop it and start another).
	Error string `json:"error,omitempty"`
}

// TraceRequest is the body of POST /v1/trace/start.
type TraceRequest struct {
	// File is the trace file to create, an absolute path; empty: a new
	// file in the state directory's traces/. It must not exist.
	File string `json:"file,omitempty"`
	// MaxBytes bounds the file; 0: trace.DefaultMaxBytes.
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// tracing is a running trace: the node's recorder and its file. The
// daemon's field holding it belongs to whoever holds d.mu; the Log is safe
// for concurrent use (its flush timer runs beside the loop).
type tracing struct {
	log      *trace.Log
	file     *os.File
	path     string
	maxBytes int64
	since    time.Time
	stop     chan struct{}
	done     sync.WaitGroup
}

func (t *tracing) status() TraceStatus {
	if t == nil {
		return TraceStatus{}
	}
	st := TraceStatus{On: true, File: t.path, Since: t.since, Bytes: t.log.Bytes(), MaxBytes: t.maxBytes, Dropped: t.log.Dropped()}
	if err := t.log.Err(); err != nil {
		st.Error = err.Error()
	}
	return st
}

// TracesDir is where traces go that the control API asks for without a
// file name, and the only place a caller other than root (a member of the
// control group) may name: the daemon runs as root, and must not create
// files wherever any member of the group asks it to.
func (d *Daemon) TracesDir() string { return filepath.Join(d.cfg.StateDir, "traces") }

// startTrace starts recording to a new file at path (see TraceRequest),
// holding d.mu. replace lets an existing file be set aside as path.old
// (the --trace file of a restarted daemon); otherwise an existing file is
// refused: a trace never overwrites anything.
func (d *Daemon) startTrace(path string, maxBytes int64, replace bool) (TraceStatus, error) {
	if d.tr != nil {
		return TraceStatus{}, ctl.Conflict(fmt.Sprintf("tracing is already on, to %s (stop it first)", d.tr.path))
	}
	if maxBytes < 0 {
		return TraceStatus{}, ctl.BadRequest(fmt.Sprintf("max bytes %d: want a positive bound (0: the default, %d)", maxBytes, trace.DefaultMaxBytes))
	}
	if maxBytes == 0 {
		maxBytes = trace.DefaultMaxBytes
	}
	if path == "" {
		if err := os.MkdirAll(d.TracesDir(), 0o755); err != nil {
			return TraceStatus{}, ctl.Internal(fmt.Sprintf("creating %s: %v", d.TracesDir(), err))
		}
		path = filepath.Join(d.TracesDir(), fmt.Sprintf("%s-%d-%s.trace", d.cfg.Name, d.cfg.ID, time.Now().UTC().Format("20060102T150405.000Z")))
	}
	if replace {
		if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
			if err := os.Rename(path, path+".old"); err != nil {
				return TraceStatus{}, fmt.Errorf("setting the previous trace aside: %w", err)
			}
		}
	}
	// O_EXCL: never an existing file, nor a symlink planted in its place.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return TraceStatus{}, ctl.Conflict(fmt.Sprintf("%s exists: a trace never overwrites a file (remove it or name another)", path))
		}
		return TraceStatus{}, ctl.BadRequest(fmt.Sprintf("cannot create the trace file: %v", err))
	}
	now := d.cfg.Clock.Now()
	lg, err := trace.NewLog(f, d.traceHeader(now), maxBytes)
	if err != nil {
		f.Close()
		os.Remove(path)
		return TraceStatus{}, ctl.BadRequest(err.Error())
	}
	lg.SetClock(d.clockSample)
	t := &tracing{log: lg, file: f, path: path, maxBytes: maxBytes, since: now, stop: make(chan struct{})}
	t.done.Add(1)
	go func() {
		defer t.done.Done()
		tick := time.NewTicker(traceFlushEvery)
		defer tick.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-tick.C:
				t.log.Flush() // a failure sticks and shows in status
			}
		}
	}()
	d.tr = t
	d.setRecorder()
	d.log.Info("tracing started", "file", path, "max_bytes", maxBytes)
	return t.status(), nil
}

// traceHeader is the header of a trace of this daemon started at now.
func (d *Daemon) traceHeader(now time.Time) trace.Header {
	host, _ := os.Hostname()
	clockName := trace.ClockSystem
	if d.cfg.ClockName == "sim" {
		clockName = trace.ClockSim
	}
	return trace.Header{Daemon: d.cfg.Name, ID: d.cfg.ID, Host: host, Cluster: d.cfg.Cluster,
		Members: slices.Sorted(maps.Keys(d.cfg.Members)), Clock: clockName, Started: now}
}

// setRecorder gives the node what records its events (holding d.mu): the
// operator's trace, the trace window the members ask for
// (tracewin.go), both, or nothing.
func (d *Daemon) setRecorder() {
	var rs trace.Tee
	if d.tr != nil {
		rs = append(rs, d.tr.log)
	}
	if d.win != nil {
		rs = append(rs, d.win.log)
	}
	switch len(rs) {
	case 0:
		d.node.SetRecorder(nil, nil)
	case 1:
		d.node.SetRecorder(rs[0], d.cfg.Clock.Now)
	default:
		d.node.SetRecorder(rs, d.cfg.Clock.Now)
	}
}

// clockSample is what every event of a trace says of the daemon's clock:
// its error bound while synchronised, and a simulated clock's exact error
// (`X trace check` orders the events of different hosts with them).
func (d *Daemon) clockSample() trace.ClockSample {
	var s trace.ClockSample
	if st, err := d.cfg.Clock.State(); err == nil && st.Synchronized {
		s.MaxError = st.MaxError
	}
	if t, ok := d.cfg.Clock.(trueOffsetter); ok {
		off := t.TrueOffset()
		s.TrueOffset = &off
	}
	return s
}

// stopTrace ends the running trace, holding d.mu: the node stops
// recording (and stamping vectors, unless its core uses them), the file
// gets its last lines and is closed.
func (d *Daemon) stopTrace() (TraceStatus, error) {
	t := d.tr
	if t == nil {
		return TraceStatus{}, ctl.Conflict("tracing is off")
	}
	d.tr = nil
	d.setRecorder()
	close(t.stop)
	t.done.Wait()
	err := t.log.Close()
	st := t.status()
	st.On = false
	if cerr := t.file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		d.log.Error("trace file", "file", t.path, "err", err)
		st.Error = err.Error()
	}
	d.log.Info("tracing stopped", "file", t.path, "bytes", st.Bytes, "dropped", st.Dropped)
	return st, nil
}

// traceRoutes serves `X trace start|stop|status`.
func (d *Daemon) traceRoutes() {
	d.ctl.Handle(http.MethodPost, "/v1/trace/start", func(r *http.Request) (any, error) {
		var req TraceRequest
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		if req.File != "" {
			if !filepath.IsAbs(req.File) {
				return nil, ctl.BadRequest(fmt.Sprintf("trace file %q: want an absolute path (the daemon's working directory is not yours)", req.File))
			}
			req.File = filepath.Clean(req.File)
			p, ok := ctl.PeerOf(r)
			if !ok {
				return nil, ctl.Forbidden("the caller's credentials are unknown")
			}
			if err := mayName(p, uint32(os.Getuid()), req.File, d.TracesDir()); err != nil {
				return nil, err
			}
		}
		var st TraceStatus
		var err error
		if derr := d.Do(r.Context(), func(*node.Node) { st, err = d.startTrace(req.File, req.MaxBytes, false) }); derr != nil {
			return nil, ctl.Unavailable(derr.Error())
		}
		return st, err
	})
	d.ctl.Handle(http.MethodPost, "/v1/trace/stop", func(r *http.Request) (any, error) {
		var st TraceStatus
		var err error
		if derr := d.Do(r.Context(), func(*node.Node) { st, err = d.stopTrace() }); derr != nil {
			return nil, ctl.Unavailable(derr.Error())
		}
		return st, err
	})
	d.ctl.Handle(http.MethodGet, "/v1/trace", func(r *http.Request) (any, error) {
		var st TraceStatus
		if derr := d.Do(r.Context(), func(*node.Node) { st = d.tr.status() }); derr != nil {
			return nil, ctl.Unavailable(derr.Error())
		}
		return st, nil
	})
}

// mayName says whether caller p may have the daemon (running as uid
// self) create the trace file path: root and the daemon's own user may
// name any, anyone else (a member of the control group) only one inside
// dir.
func mayName(p ctl.Peer, self uint32, path, dir string) error {
	if p.UID == 0 || p.UID == self || inside(path, dir) {
		return nil
	}
	return ctl.Forbidden(fmt.Sprintf("trace file %s: only root may name a file outside %s (give no file, or one in it)", path, dir))
}

func inside(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..") && !filepath.IsAbs(rel)
}

// decodeBody reads a JSON request body into v (empty: v stays zero).
func decodeBody(r *http.Request, v any) error {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return ctl.BadRequest("reading the request body: " + err.Error())
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return ctl.BadRequest("request body is not valid: " + strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}
