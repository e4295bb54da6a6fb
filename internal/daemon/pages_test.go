package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
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
	p := releasePacing{settled: 30 * time.Millisecond, check: 5 * time.Millisecond, growth: 1 << 20, longest: time.Hour}
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
	time.Sleep(10 * p.check)
	if n, _ := probe.counts(); n != after {
		t.Error("released after the context ended")
	}
}

// TestReleaseGovernorBacksOff: the set a release is measured against is
// the smallest the check after a release read (the working set mapped
// back), so an idle daemon is released once and then only read, until
// the longest wait (5 minutes) passes; under a steady load (the set grows
// back past the threshold at the first check that may release) the waits
// between checks double up to the longest; a check that finds the set
// below the threshold brings them back to the check interval; an
// unreadable set releases nothing.
func TestReleaseGovernorBacksOff(t *testing.T) {
	const mb = 1 << 20
	p := releasePacing{settled: 10 * time.Second, check: 10 * time.Second, growth: mb, longest: 5 * time.Minute}
	// (shortest 0: the releases for growth as often as the checks allow;
	// TestReleaseGovernorSpacesReleases has the gap.)
	g := releaseGovernor{p: p, wait: p.settled}
	if !g.due(12*mb, true) || g.wait != p.check {
		t.Fatalf("the first check after the start: not released, or waits %v", g.wait)
	}
	// Idle: the working set comes back (1.5 MiB above what the release
	// left) and stays: read as the floor, released again only after 5
	// minutes (29 checks, then the 30th).
	for i := range 29 {
		if g.due(7*mb+mb/2, true) {
			t.Fatalf("check %d of an idle set released it", i+1)
		}
	}
	if !g.due(7*mb+mb/2, true) {
		t.Fatal("an idle set was not released 5 minutes after the last release")
	}
	var waits []time.Duration
	g.due(7*mb+mb/2, true) // reads the floor
	for range 7 {
		if !g.due(12*mb, true) {
			t.Fatalf("a set 4.5 MB above the floor was not released (waits so far %v)", waits)
		}
		waits = append(waits, g.wait)
		if g.due(12*mb, true) {
			t.Fatal("the check after a release released again: it reads the floor")
		}
	}
	want := []time.Duration{20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	if !slices.Equal(waits, want) {
		t.Errorf("waits under a steady load %v, want %v", waits, want)
	}
	g = releaseGovernor{p: p, wait: p.settled}
	g.due(12*mb, true)
	g.due(6*mb, true) // the floor
	if g.due(6*mb+mb-1, true) || g.wait != p.check {
		t.Errorf("a set grown by less than the threshold: released, or waits %v (want %v)", g.wait, p.check)
	}
	if !g.due(8*mb, true) || g.wait != p.check {
		t.Errorf("a burst after a quiet check: not released, or waits %v (want %v)", g.wait, p.check)
	}
	if g.due(7*mb, true) || g.due(0, false) || g.wait != p.check {
		t.Errorf("the floor's check or an unreadable set released, or waits %v (want %v)", g.wait, p.check)
	}
	// A burst on when the floor was read: a higher reading does not
	// raise the floor.
	if !g.due(8*mb, true) {
		t.Error("a set 2 MB above the first floor was not released after a higher reading")
	}
}

// TestReleaseGovernorSpacesReleases: releases for growth are at least
// the shortest gap apart, however often the set grows back (a leader's
// collections).
func TestReleaseGovernorSpacesReleases(t *testing.T) {
	const mb = 1 << 20
	p := releasePacing{settled: 10 * time.Second, check: 10 * time.Second, growth: mb, longest: 5 * time.Minute, shortest: time.Minute}
	g := releaseGovernor{p: p, wait: p.settled}
	var at []time.Duration
	var clock time.Duration
	for range 60 { // 10 minutes of checks, the set grown back at each
		clock += g.wait
		if g.due(10*mb, true) {
			at = append(at, clock)
		}
		if g.measure {
			clock += g.wait
			g.due(6*mb, true) // the check after a release reads the floor
		}
	}
	for i := 1; i < len(at); i++ {
		if gap := at[i] - at[i-1]; gap < p.shortest {
			t.Fatalf("releases at %v: %v apart, want at least %v", at, gap, p.shortest)
		}
	}
	if len(at) < 4 {
		t.Errorf("releases at %v: a set that keeps growing back is still released, a minute apart or more", at)
	}
}

// TestParseStatm reads the resident field of /proc/PID/statm, in bytes.
func TestParseStatm(t *testing.T) {
	got, err := parseStatm([]byte("4525 1645 990 729 0 1017 0\n"))
	if want := int64(1645 * os.Getpagesize()); err != nil || got != want {
		t.Errorf("parseStatm = %d, %v; want %d", got, err, want)
	}
	for _, bad := range []string{"", "4525", "4525 x 990", "4525  1645"} {
		if _, err := parseStatm([]byte(bad)); err == nil {
			t.Errorf("parseStatm(%q): no error", bad)
		}
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

// TestReleaseGovernorBacksOffAtTheDaemonsPace: under a steady load (the
// set grown back at every check but the one that reads the floor), the
// daemons' own pacing spaces the releases for growth further and further
// apart, up to releaseAfter.longest: not one every releaseAfter.shortest
// for ever.
func TestReleaseGovernorBacksOffAtTheDaemonsPace(t *testing.T) {
	const mb = 1 << 20
	p := releaseAfter
	g := releaseGovernor{p: p, wait: p.settled}
	var at []time.Duration
	var clock time.Duration
	for clock < time.Hour {
		clock += g.wait
		if g.due(12*mb, true) {
			at = append(at, clock)
			clock += g.wait
			g.due(7*mb, true) // the check after a release reads the floor
		}
	}
	var gaps []time.Duration
	for i := 1; i < len(at); i++ {
		gaps = append(gaps, at[i]-at[i-1])
	}
	for i := 1; i < len(gaps); i++ {
		if gaps[i] < gaps[i-1] || gaps[i] < p.shortest {
			t.Fatalf("releases %v apart under a steady load: want each gap at least %v and none shorter than the one before", gaps, p.shortest)
		}
	}
	if last := gaps[len(gaps)-1]; last < p.longest {
		t.Errorf("releases %v apart under a steady load: want them %v apart in the end", gaps, p.longest)
	}
}
