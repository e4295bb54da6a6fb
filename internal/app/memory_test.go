package app

import (
	"testing"

	"github.com/synclab/synclab/internal/daemon"
)

// TestMemoryLine: status's Memory row says the resident set and its two
// parts, the heap, the stacks, the goroutines, the collector's target and
// the releases; nothing from a daemon that does not report it; the cause
// when the set could not be read.
func TestMemoryLine(t *testing.T) {
	m := daemon.MemoryStatus{RSSBytes: 6_400_000, RSSAnonBytes: 2_650_000, RSSFileBytes: 3_750_000,
		HeapInuseBytes: 1_900_000, StackInuseBytes: 491_520, Goroutines: 11, GCPercent: 50, PageReleases: 2}
	want := "6.4 MB resident (2.6 MB anonymous, 3.8 MB of the executable), heap 1.9 MB, stacks 0.5 MB, 11 goroutines, GOGC 50, executable's pages released 2 times"
	if got := memoryLine(m); got != want {
		t.Errorf("memoryLine:\n got %s\nwant %s", got, want)
	}
	if got := memoryLine(daemon.MemoryStatus{}); got != "" {
		t.Errorf("an older daemon's status (no memory) gave %q, want no line", got)
	}
	m = daemon.MemoryStatus{Error: "open /proc/self/status: no such file", HeapInuseBytes: 1e6, Goroutines: 1, PageReleases: 1}
	want = "resident set unreadable (open /proc/self/status: no such file), heap 1.0 MB, stacks 0.0 MB, 1 goroutine, executable's pages released 1 time"
	if got := memoryLine(m); got != want {
		t.Errorf("memoryLine:\n got %s\nwant %s", got, want)
	}
}
