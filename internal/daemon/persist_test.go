package daemon

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSlowPersistWarns: a write of the core's state over SlowPersist is a
// WARN naming the file and its sync, once per interval however many
// follow; status counts every write, keeps the slowest and the last slow
// one; a fast write warns of nothing.
func TestSlowPersistWarns(t *testing.T) {
	var buf bytes.Buffer
	dir := t.TempDir()
	d := &Daemon{alerts: newAlerts(slog.New(slog.NewTextHandler(&buf, nil))), state: &stateDir{path: dir}}
	fast := writeTimes{wrote: 20 * time.Microsecond, synced: 400 * time.Microsecond}
	d.persisted(CoreStateFile, 13, true, fast, 450*time.Microsecond)
	if buf.Len() > 0 || d.persist.Slow != 0 || d.persist.Writes != 1 {
		t.Fatalf("a fast write: slow %d, writes %d, log:\n%s", d.persist.Slow, d.persist.Writes, buf.String())
	}
	slow := writeTimes{wrote: 30 * time.Microsecond, synced: 137 * time.Millisecond}
	for range 5 {
		d.persisted(CoreStateFile, 13, true, slow, 140*time.Millisecond)
	}
	out := buf.String()
	if n := strings.Count(out, "level=WARN"); n != 1 {
		t.Fatalf("%d WARN lines for 5 slow writes within the interval:\n%s", n, out)
	}
	for _, want := range []string{filepath.Join(dir, CoreStateFile), "took 140 ms", "137 ms of it syncing", "messages that depend on it", "--state-dir"} {
		if !strings.Contains(out, want) {
			t.Errorf("the warning lacks %q:\n%s", want, out)
		}
	}
	p := d.persist
	if p.Writes != 6 || p.Slow != 5 || p.Slowest.TotalUs != 140000 || p.LastSlow.SyncUs != 137000 || p.Last.Bytes != 13 || !p.Last.Promise {
		t.Fatalf("status: %+v (slowest %+v, last slow %+v)", p, *p.Slowest, *p.LastSlow)
	}
}

// TestStateWriteTimed: an atomic write of the core's state reports its
// write and its syncs (the trace's and status's figures are measured, not
// zero).
func TestStateWriteTimed(t *testing.T) {
	s := &stateDir{path: t.TempDir()}
	l := &coreLog{dir: s.path}
	if err := s.snapshot(l, []byte("term")); err != nil {
		t.Fatal(err)
	}
	if s.took.synced <= 0 || s.took.wrote <= 0 {
		t.Fatalf("state write timed as %+v", s.took)
	}
}
