package app

import (
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/epoch"
)

// TestPersistLine: status's Persist row counts the writes and names the
// slowest; slow writes are flagged with their count, the last one's time
// and what to look at; failing writes with their file, cause and
// consequence, whether or not any write succeeded before; a daemon that
// wrote nothing and fails nothing has no row.
func TestPersistLine(t *testing.T) {
	if got := persistLine(daemon.PersistStatus{}); got != "" {
		t.Errorf("no writes: %q", got)
	}
	fast := &daemon.PersistWrite{TotalUs: 450, SyncUs: 400}
	if got := persistLine(daemon.PersistStatus{Writes: 3, Last: fast, Slowest: fast}); !strings.HasPrefix(got, "3 writes, the slowest 450") || strings.Contains(got, "SLOW") {
		t.Errorf("fast writes: %q", got)
	}
	slow := &daemon.PersistWrite{At: time.Date(2026, 12, 6, 22, 1, 2, 0, time.UTC), TotalUs: 140000, SyncUs: 137000}
	got := persistLine(daemon.PersistStatus{Writes: 9, Slow: 2, Last: fast, Slowest: slow, LastSlow: slow})
	for _, want := range []string{"9 writes", "SLOW: 2 over 100", "22:01:02", "--state-dir"} {
		if !strings.Contains(got, want) {
			t.Errorf("slow writes: %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "LEADER CHANGES") {
		t.Errorf("slow writes without a new term after them: %q", got)
	}
	term := &daemon.SlowTerm{At: time.Date(2026, 12, 6, 22, 1, 3, 0, time.UTC), Event: "sequencer", Term: epoch.Make(6, 3), WriteMs: 1501, AfterMs: 1200}
	got = persistLine(daemon.PersistStatus{Writes: 9, Slow: 2, Last: fast, Slowest: slow, LastSlow: slow, SlowTerms: 4, LastSlowTerm: term})
	for _, want := range []string{"LEADER CHANGES AFTER SLOW WRITES: 4 new terms", "term 6 by 3 (sequencer) at 22:01:03", "after a write of 1.5", "caused by the disk", "heartbeat"} {
		if !strings.Contains(got, want) {
			t.Errorf("leader changes after slow writes: %q lacks %q", got, want)
		}
	}
	failing := &daemon.PersistFailure{Since: time.Date(2026, 12, 6, 22, 3, 4, 0, time.UTC), File: "/var/lib/electd/core.state",
		Err: "rename /var/lib/electd/core.state.tmp /var/lib/electd/core.state: read-only file system", Failed: 12}
	for _, st := range []daemon.PersistStatus{{Failing: failing}, {Writes: 3, Last: fast, Slowest: fast, Failing: failing}} {
		got := persistLine(st)
		for _, want := range []string{"FAILING since 22:03:04", "12 failed writes", "/var/lib/electd/core.state: rename", "read-only file system", "no term", "--state-dir"} {
			if !strings.Contains(got, want) {
				t.Errorf("failing writes after %d: %q lacks %q", st.Writes, got, want)
			}
		}
	}
}
