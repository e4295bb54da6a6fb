package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"testing"
	"time"
)

// releaseProbe drives releaseLater with a resident set the test sets and
// records the releases. A release brings the set back to low; under a
// steady load (loaded) it is back at rss from the next reading on.
type releaseProbe struct {
	mu       sync.Mutex
	low, rss int64
	loaded   bool
	released bool // since the last reading
	releases []time.Time
	checks   int
}

func (p *releaseProbe) read() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checks++
	if p.released {
		p.released = false
		return p.low, nil
	}
	return p.rss, nil
}

func (p *releaseProbe) release() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releases = append(p.releases, time.Now())
	p.released = true
	if !p.loaded {
		p.rss = p.low
	}
	return errors.New("madvise refused") // not fatal
}

func (p *releaseProbe) set(rss int64) {
	p.mu.Lock()
	p.rss = rss
	p.mu.Unlock()
}

func (p *releaseProbe) counts() (releases, checks int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.releases), p.checks
}

// TestReleaseLater: the pages are released once the daemon has settled
// (never before), then only when the resident set grew by the threshold
// since the last release: an idle daemon whose set stays put is only
// read, never released; no more releases once the daemon stops; a
// release that fails is not fatal.
func TestReleaseLater(t *testing.T) {
	p := releasePacing{settled: 30 * time.Millisecond, check: 5 * time.Millisecond, growth: 1 << 20, longest: 40 * time.Millisecond}
	probe := &releaseProbe{low: 6 << 20, rss: 6 << 20}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t0 := time.Now()
	go func() {
		defer close(done)
		releaseLater(ctx, probe.release, probe.read, p, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	eventually(t, "the first release", func() bool { n, _ := probe.counts(); return n == 1 })
	probe.mu.Lock()
	if el := probe.releases[0].Sub(t0); el < p.settled {
		t.Errorf("first release %v after the start, before it settled (%v)", el, p.settled)
	}
	probe.mu.Unlock()

	// Idle: the set does not grow (nor by less than the threshold).
	probe.set(6<<20 + 512<<10)
	_, c0 := probe.counts()
	eventually(t, "ten checks of an idle set", func() bool { _, c := probe.counts(); return c >= c0+10 })
	if n, _ := probe.counts(); n != 1 {
		t.Fatalf("%d releases of a set that grew by 512 KiB (threshold 1 MiB), want only the first", n)
	}

	// A burst: the set grows by the threshold; released at the next check.
	probe.set(7<<20 + 512<<10)
	eventually(t, "a release after the set grew by 1.5 MiB", func() bool { n, _ := probe.counts(); return n == 2 })

	cancel()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatal("releaseLater did not end with its context")
	}
	after, _ := probe.counts()
	time.Sleep(5 * p.longest)
	if n, _ := probe.counts(); n != after {
		t.Error("released after the context ended")
	}
}

// TestReleaseGovernorBacksOff: under a steady load (the set is back above
// the threshold at every check after a release) the waits between checks
// double up to the longest; a check that finds the set unchanged brings
// them back to the check interval; an unreadable set releases nothing.
func TestReleaseGovernorBacksOff(t *testing.T) {
	const mb = 1 << 20
	p := releasePacing{settled: 10 * time.Second, check: 10 * time.Second, growth: mb, longest: 5 * time.Minute}
	g := releaseGovernor{p: p}
	if !g.due(12*mb, true) {
		t.Fatal("the first check after the start did not release")
	}
	g.released(6*mb, true)
	var waits []time.Duration
	for range 7 {
		if !g.due(10*mb, true) {
			t.Fatalf("a set 4 MB above the last release's was not released (waits so far %v)", waits)
		}
		g.released(6*mb, true)
		waits = append(waits, g.wait)
	}
	want := []time.Duration{20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	if !slices.Equal(waits, want) {
		t.Errorf("waits under a steady load %v, want %v", waits, want)
	}
	if g.due(6*mb+mb-1, true) || g.wait != p.check {
		t.Errorf("a set grown by less than the threshold: released, or waits %v (want %v)", g.wait, p.check)
	}
	if !g.due(7*mb, true) || g.wait != p.check {
		t.Errorf("a burst after a quiet check: not released, or waits %v (want %v)", g.wait, p.check)
	}
	g.released(6*mb, true)
	if g.due(0, false) || g.wait != p.check {
		t.Errorf("an unreadable set: released, or waits %v (want %v)", g.wait, p.check)
	}
}

// TestApplyGCPercent: a daemon's process runs its collector at
// GCPercent (50), not Go's 100 that let a polled member hold 2-3 MB of
// garbage; an administrator's GOGC is kept as the runtime read it.
func TestApplyGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer gcPercent.Store(gcPercent.Load())

	none := func(string) (string, bool) { return "", false }
	if p, env := ApplyGCPercent(none); p != GCPercent || env {
		t.Errorf("without GOGC: %d (from the environment %v), want %d", p, env, GCPercent)
	}
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("the collector's target is %d after ApplyGCPercent, want 50", got)
	}
	if m := memoryStatus(); m.GCPercent != 50 {
		t.Errorf("status says GOGC %d, want 50", m.GCPercent)
	}

	debug.SetGCPercent(80) // as the runtime would have read GOGC=80
	set := func(k string) (string, bool) { return "80", k == "GOGC" }
	if p, env := ApplyGCPercent(set); p != 80 || !env {
		t.Errorf("with GOGC=80: %d (from the environment %v), want 80 from it", p, env)
	}
	if got := debug.SetGCPercent(80); got != 80 {
		t.Errorf("the collector's target is %d with GOGC=80, want it kept", got)
	}
}

// TestParseResident reads the resident set's three figures, in bytes.
func TestParseResident(t *testing.T) {
	status := []byte("Name:\telectd\nVmHWM:\t   12716 kB\nVmRSS:\t    5972 kB\nRssAnon:\t    2528 kB\nRssFile:\t    3444 kB\nRssShmem:\t       0 kB\nThreads:\t7\n")
	want := resident{total: 5972 << 10, anon: 2528 << 10, file: 3444 << 10}
	if got := parseResident(status); got != want {
		t.Errorf("parseResident = %+v, want %+v", got, want)
	}
	if got := parseResident([]byte("VmRSS:\tlots kB\nThreads:\t7\n")); got != (resident{}) {
		t.Errorf("unreadable lines gave %+v, want zeros", got)
	}
}
