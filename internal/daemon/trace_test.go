package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/internal/transport"
)

// TestTraceFromStartEndsCleanly: a daemon with TraceFile records from its
// start (a previous trace kept as .old), vectors on the wire while it
// does, status says so, and stopping the daemon (what SIGTERM does) ends
// the file cleanly: every line whole, the last one included.
func TestTraceFromStartEndsCleanly(t *testing.T) {
	net := transport.NewMemNetwork()
	dir := shortDir(t)
	path := filepath.Join(dir, "h1.trace")
	if err := os.WriteFile(path, []byte("an older trace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ds []*Daemon
	for id := uint32(1); id <= 2; id++ {
		cfg := testConfig(t, net, dir, id, 2)
		if id == 1 {
			cfg.TraceFile = path
		}
		d, err := New(cfg, livenessFactory(id, 2))
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ds[0].Run(ctx) }()
	start(t, ds[1])
	eventually(t, "control socket", func() bool {
		_, err := os.Stat(ds[0].Config().ControlPath)
		return err == nil
	})
	eventually(t, "frames traced", func() bool {
		st := status(t, ds[0].Config().ControlPath)
		return st.Trace.On && st.Trace.File == path && st.Trace.Bytes > 2000 && st.Node.Vector != ""
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path + ".old"); err != nil || string(b) != "an older trace\n" {
		t.Errorf("the previous trace: %q, %v; want it kept as .old", b, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(b), "}\n") {
		t.Errorf("the trace does not end with a whole line: ...%q", b[max(0, len(b)-80):])
	}
	f, err := trace.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, e := range f.Events {
		kinds[e.Ev]++
		if (e.Ev == trace.EvSend || e.Ev == trace.EvRecv) && len(e.VC) == 0 {
			t.Errorf("%s without a vector: %+v", e.Ev, e)
		}
	}
	if f.Partial || f.Header.Daemon != "testd" || f.Header.ID != 1 || f.Header.Clock != trace.ClockSim || kinds[trace.EvSend] == 0 || kinds[trace.EvRecv] == 0 {
		t.Errorf("trace: partial %v, header %+v, events %v", f.Partial, f.Header, kinds)
	}
}

// TestTraceControl: start and stop at run time through the control API,
// with its refusals; vectors off again after the stop.
func TestTraceControl(t *testing.T) {
	net := transport.NewMemNetwork()
	dir := shortDir(t)
	var ds []*Daemon
	for id := uint32(1); id <= 2; id++ {
		d, err := New(testConfig(t, net, dir, id, 2), livenessFactory(id, 2))
		if err != nil {
			t.Fatal(err)
		}
		start(t, d)
		ds = append(ds, d)
	}
	c := ctl.NewClient(ds[0].Config().ControlPath, "testd")
	ctx := context.Background()
	var st TraceStatus
	if err := c.Get(ctx, "/v1/trace", &st); err != nil || st.On {
		t.Fatalf("trace status at start: %+v, %v", st, err)
	}
	for _, bad := range []struct {
		req  TraceRequest
		want string
	}{
		{TraceRequest{File: "rel.trace"}, "absolute path"},
		{TraceRequest{File: filepath.Join(dir, "nodir", "x.trace")}, "cannot create"},
		{TraceRequest{MaxBytes: 10}, "does not hold the header"},
		{TraceRequest{MaxBytes: -1}, "positive"},
	} {
		if err := c.Post(ctx, "/v1/trace/start", bad.req, &st); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("start %+v: %v, want %q", bad.req, err, bad.want)
		}
	}
	if entries, _ := os.ReadDir(ds[0].TracesDir()); len(entries) != 0 {
		t.Errorf("a refused start left files: %v", entries)
	}
	if err := c.Post(ctx, "/v1/trace/start", TraceRequest{}, &st); err != nil || !st.On || !strings.HasPrefix(st.File, ds[0].TracesDir()) {
		t.Fatalf("start: %+v, %v", st, err)
	}
	file := st.File
	if err := c.Post(ctx, "/v1/trace/start", TraceRequest{}, &st); err == nil || !strings.Contains(err.Error(), "already on") {
		t.Errorf("a second start: %v", err)
	}
	eventually(t, "frames traced and flushed", func() bool {
		fi, err := os.Stat(file)
		return err == nil && fi.Size() > 1000
	})
	if err := c.Post(ctx, "/v1/trace/stop", struct{}{}, &st); err != nil || st.On || st.File != file || st.Bytes < 1000 {
		t.Fatalf("stop: %+v, %v", st, err)
	}
	if s := status(t, ds[0].Config().ControlPath); s.Trace.On || s.Node.Vector != "" {
		t.Errorf("after the stop: trace %+v, vector %q; want both off", s.Trace, s.Node.Vector)
	}
	if err := c.Post(ctx, "/v1/trace/stop", struct{}{}, &st); err == nil || !strings.Contains(err.Error(), "tracing is off") {
		t.Errorf("stop while off: %v", err)
	}
	if err := c.Post(ctx, "/v1/trace/start", TraceRequest{File: file}, &st); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("start over the last trace: %v", err)
	}
	f, err := trace.ReadFile(file)
	if err != nil || f.Partial || len(f.Events) == 0 {
		t.Fatalf("the trace: %v, %+v", err, f)
	}
}

// TestTraceFileOnlyRootAnywhere: a control-group member who is not root
// may only have the daemon (root) create traces in its traces directory.
func TestTraceFileOnlyRootAnywhere(t *testing.T) {
	const dir = "/var/lib/testd/traces"
	for _, c := range []struct {
		uid  uint32
		path string
		ok   bool
	}{
		{0, "/etc/cron.d/x", true},
		{1000, "/var/lib/testd/traces/a.trace", true},
		{1000, "/var/lib/testd/traces/sub/a.trace", true},
		{1000, "/etc/cron.d/x", false},
		{1000, "/var/lib/testd/traces", false},
		{1000, "/var/lib/testd/traces/../state", false},
		{1000, "/var/lib/testd/traces2/a", false},
		{4242, "/tmp/a.trace", true}, // the daemon's own user
	} {
		err := mayName(ctl.Peer{UID: c.uid}, 4242, filepath.Clean(c.path), dir)
		if (err == nil) != c.ok {
			t.Errorf("uid %d, %s: %v, want allowed %v", c.uid, c.path, err, c.ok)
		}
	}
}
