package app

import (
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/daemon"
)

// TestPersistLine: status's Persist row counts the writes and names the
// slowest; slow writes are flagged with their count, the last one's time
// and what to look at; a daemon that wrote nothing has no row.
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
}
