package daemon

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/clock"
)

// TestAlertsRateLimited: a condition repeated every packet is one line
// per interval, the next one saying how many were not written; each
// condition and member counts apart.
func TestAlertsRateLimited(t *testing.T) {
	var buf bytes.Buffer
	a := newAlerts(slog.New(slog.NewTextHandler(&buf, nil)))
	t0 := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	for i := range 1000 {
		a.report(t0.Add(time.Duration(i)*time.Millisecond), slog.LevelWarn, "auth_failed", 3, 0, "frames from member 3's address fail authentication")
	}
	a.report(t0, slog.LevelWarn, "auth_failed", 2, 0, "frames from member 2's address fail authentication")
	if n := strings.Count(buf.String(), "level=WARN"); n != 2 {
		t.Fatalf("%d lines for 1001 occurrences of two conditions:\n%s", n, buf.String())
	}
	a.flush(t0.Add(5 * time.Second))
	if n := strings.Count(buf.String(), "level=WARN"); n != 2 {
		t.Fatalf("flushed before the interval:\n%s", buf.String())
	}
	a.flush(t0.Add(alertEvery))
	out := buf.String()
	if n := strings.Count(out, "level=WARN"); n != 3 || !strings.Contains(out, "repeated=999") || !strings.Contains(out, "member=3") {
		t.Fatalf("after the interval:\n%s", out)
	}
}

// TestAlertsFlushAllOnStop: a daemon that stops writes what its alerts
// held back, their interval passed or not.
func TestAlertsFlushAllOnStop(t *testing.T) {
	var buf bytes.Buffer
	a := newAlerts(slog.New(slog.NewTextHandler(&buf, nil)))
	t0 := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	for i := range 100 {
		a.report(t0.Add(time.Duration(i)*time.Millisecond), slog.LevelWarn, "auth_failed", 3, 0, "frames from member 3's address fail authentication")
	}
	a.flushAll(t0.Add(time.Second))
	if out := buf.String(); strings.Count(out, "level=WARN") != 2 || !strings.Contains(out, "repeated=99") {
		t.Fatalf("after flushAll a second in:\n%s", out)
	}
}

// TestCheckSyncWarns: a clock that should be synchronised and has not
// been for SyncWarnAfter is a WARN line (once per interval).
func TestCheckSyncWarns(t *testing.T) {
	var buf bytes.Buffer
	d := &Daemon{
		cfg:     Config{Name: "timed", SyncWarnAfter: time.Minute, Clock: clock.NewSim(clock.SimConfig{}, time.Now)},
		alerts:  newAlerts(slog.New(slog.NewTextHandler(&buf, nil))),
		started: time.Now().Add(-2 * time.Minute),
	}
	d.checkSync()
	d.checkSync()
	if n := strings.Count(buf.String(), "level=WARN"); n != 1 || !strings.Contains(buf.String(), "the clock has not been synchronised for 2m0s (since the daemon started)") {
		t.Fatalf("log:\n%s", buf.String())
	}
	d.started = time.Now()
	buf.Reset()
	d.alerts = newAlerts(slog.New(slog.NewTextHandler(&buf, nil)))
	d.checkSync()
	if buf.Len() != 0 {
		t.Fatalf("warned a minute early:\n%s", buf.String())
	}
}
