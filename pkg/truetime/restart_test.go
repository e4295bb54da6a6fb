package truetime

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestZeroPageFollowsRestart: a reader opened a page of zeros (timed made
// the file and died before its header's store, or its Create failed after
// the truncate, e.g. at mmap). systemd empties /run/timed and the
// restarted timed makes a new file at the path and publishes. The reader
// follows it as it follows a dead daemon's page (TestReopenAfterRestart);
// it used to read the dead zeros, "not published yet", forever.
func TestZeroPageFollowsRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "truetime")
	if err := os.WriteFile(path, make([]byte, PageSize), 0o640); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var clk atomic.Int64
	r.now = clk.Load
	clk.Store(t0.UnixNano())
	if _, _, err := r.Now(); !errors.Is(err, ErrUnsynchronised) {
		t.Fatalf("zeros: %v", err)
	}
	followRestart(t, path, r, &clk)
}

// TestUnsyncPageFollowsRestart: timed killed while unsynchronised (its
// sources not answered yet), restarted with a new file at the path,
// synchronised: the reader of the old page follows it. It used to report
// "not synchronised" forever (the age was checked after the flags, so the
// page never went stale and was never reopened).
func TestUnsyncPageFollowsRestart(t *testing.T) {
	path, pub, r := filePage(t)
	var clk atomic.Int64
	r.now = clk.Load
	clk.Store(t0.UnixNano())
	pub.Publish(Publication{Flags: 0, Base: t0, StaleAfter: 10 * time.Second, Interval: time.Second})
	pub.m.unmap() // killed
	pub.closed = true
	followRestart(t, path, r, &clk)
}

// TestDeadPagesGoStale: a page whose timed died before heading it, or
// before its first publication, or while unsynchronised, and that no
// restarted timed replaced, is reported stale (timed is not running), not
// "unsynchronised" forever: docs/timed.md promises ErrStale after
// --truetime-stale-after.
func TestDeadPagesGoStale(t *testing.T) {
	dir := t.TempDir()
	made := t0 // each page's last word
	zeros := filepath.Join(dir, "zeros")
	if err := os.WriteFile(zeros, make([]byte, PageSize), 0o640); err != nil {
		t.Fatal(err)
	}
	headed := filepath.Join(dir, "headed")
	pub, err := Create(headed, -1)
	if err != nil {
		t.Fatal(err)
	}
	pub.m.unmap() // killed before its first publication
	pub.closed = true
	unsync := filepath.Join(dir, "unsync")
	pub2, err := Create(unsync, -1)
	if err != nil {
		t.Fatal(err)
	}
	pub2.Publish(Publication{Base: t0, StaleAfter: 10 * time.Second, Interval: time.Second})
	pub2.m.unmap() // killed while unsynchronised
	pub2.closed = true
	for _, path := range []string{zeros, headed, unsync} {
		if err := os.Chtimes(path, made, made); err != nil {
			t.Fatal(err)
		}
		r, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var clk atomic.Int64
		r.now = clk.Load
		clk.Store(t0.Add(5 * time.Second).UnixNano())
		if _, _, err := r.Now(); !errors.Is(err, ErrUnsynchronised) {
			t.Errorf("%s, 5 s after its last word: %v, want unsynchronised", filepath.Base(path), err)
		}
		clk.Store(t0.Add(11 * time.Second).UnixNano())
		if _, _, err := r.Now(); !errors.Is(err, ErrStale) {
			t.Errorf("%s, 11 s after its last word: %v, want stale", filepath.Base(path), err)
		}
	}
}

// followRestart: a restarted timed makes a new file at path and publishes
// a bound every second; r, whose clock is clk, reads it within a minute.
func followRestart(t *testing.T, path string, r *Reader, clk *atomic.Int64) {
	t.Helper()
	os.Remove(path)
	pub, err := Create(path, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	for i := 1; i <= 60; i++ {
		at := t0.Add(time.Duration(i) * time.Second)
		clk.Store(at.UnixNano())
		pub.Publish(synced(at, -time.Millisecond, time.Millisecond))
		if _, _, err = r.Now(); err == nil {
			return
		}
	}
	t.Fatalf("a minute after the restarted timed published its new page: %v", err)
}
