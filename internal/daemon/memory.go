package daemon

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"
)

// GCPercent is the collector's target (GOGC) a daemon runs with unless the
// environment sets GOGC: the heap may grow by half its live size between
// collections, not by all of it. Go's smallest heap goal scales with it
// too (4 MB at GOGC=100, 2 MB at 50), and a daemon's live heap is 1-1.5 MB:
// at 100 a member polled through its control socket, or one of 64, held 2
// to 3 MB of garbage between collections, at 50 about half of it (measured
// in docs/benchmarks/2026-12-06-rss.md). The paths that run at a rate (the
// NTP server's replies, a frame's receive) allocate nothing or little, so
// the collections this adds are few; the benchmark A/B's the CPU.
const GCPercent = 50

// gcPercent is the target in force, as ApplyGCPercent found or set it
// (0 before: status then says nothing about it).
var gcPercent atomic.Int32

// ApplyGCPercent sets the collector's target to GCPercent for the whole
// process, unless lookup (os.LookupEnv) finds GOGC set: an administrator's
// GOGC (the runtime has read it) is kept. It returns the target in force
// and whether it is the environment's. A daemon's main calls it once,
// before Run.
func ApplyGCPercent(lookup func(string) (string, bool)) (percent int, fromEnv bool) {
	if _, set := lookup("GOGC"); set {
		percent = debug.SetGCPercent(100) // read the runtime's, then put it back
		debug.SetGCPercent(percent)
		gcPercent.Store(int32(percent))
		return percent, true
	}
	debug.SetGCPercent(GCPercent)
	gcPercent.Store(GCPercent)
	return GCPercent, false
}

// MemoryStatus is what the process holds, in status: the resident set
// split as the kernel counts it (anonymous: heap, stacks, the runtime's
// own; file: the executable's pages in use, shared with the page cache),
// the Go heap and stacks in use, goroutines, the collector's target, and
// how often the executable's pages were released (releaseLater).
type MemoryStatus struct {
	RSSBytes        int64  `json:"rss_bytes"`
	RSSAnonBytes    int64  `json:"rss_anon_bytes"`
	RSSFileBytes    int64  `json:"rss_file_bytes"`
	HeapInuseBytes  uint64 `json:"heap_inuse_bytes"`
	StackInuseBytes uint64 `json:"stack_inuse_bytes"`
	Goroutines      int    `json:"goroutines"`
	// GCPercent is the collector's target (0: not set by the daemon's
	// main, e.g. a test's daemon).
	GCPercent int `json:"gc_percent,omitempty"`
	// PageReleases counts the releases of the executable's pages since
	// the start (releasePages), the one at the end of start-up included.
	PageReleases uint64 `json:"page_releases"`
	// Error is why /proc/self/status could not be read (the resident
	// figures are then 0).
	Error string `json:"error,omitempty"`
}

// pageReleases counts releasePages calls that succeeded.
var pageReleases atomic.Uint64

// memoryStatus reads the process's memory. runtime.ReadMemStats stops the
// world for a few microseconds: it runs on a status call, never on a
// timer.
func memoryStatus() MemoryStatus {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st := MemoryStatus{
		HeapInuseBytes:  ms.HeapInuse,
		StackInuseBytes: ms.StackInuse,
		Goroutines:      runtime.NumGoroutine(),
		GCPercent:       int(gcPercent.Load()),
		PageReleases:    pageReleases.Load(),
	}
	r, err := readResident()
	if err != nil {
		st.Error = err.Error()
		return st
	}
	st.RSSBytes, st.RSSAnonBytes, st.RSSFileBytes = r.total, r.anon, r.file
	return st
}

// resident is the resident set in bytes, from /proc/self/status.
type resident struct{ total, anon, file int64 }

// readResident reads VmRSS, RssAnon and RssFile of /proc/self/status.
func readResident() (resident, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return resident{}, err
	}
	return parseResident(b), nil
}

// parseResident reads the three lines it knows of a /proc/PID/status
// ("VmRSS:  7344 kB"); a line missing or unreadable leaves its figure 0.
func parseResident(status []byte) resident {
	var r resident
	for line := range bytes.Lines(status) {
		f := bytes.Fields(line)
		if len(f) != 3 || string(f[2]) != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(string(f[1]), 10, 64)
		if err != nil || kb < 0 {
			continue
		}
		switch string(f[0]) {
		case "VmRSS:":
			r.total = kb << 10
		case "RssAnon:":
			r.anon = kb << 10
		case "RssFile:":
			r.file = kb << 10
		}
	}
	return r
}

// releasePacing paces releaseLater.
type releasePacing struct {
	// settled: the first release after the one at the end of start-up.
	settled time.Duration
	// check: how often the resident set is read after it.
	check time.Duration
	// growth: how much the resident set must have grown since the last
	// release for the next one.
	growth int64
	// longest: the longest wait between checks, after releases that the
	// next check found undone (the pages are in use: see releaseLater),
	// and between two releases.
	longest time.Duration
	// shortest: the shortest time between two releases for growth (a
	// leader whose every collection brings 2.6 MB back would otherwise
	// pay for a release at each).
	shortest time.Duration
}

// releaseAfter is the daemons' pacing: a first release 10 s after the
// start, then one at the first check (every 10 s) that finds the resident
// set 1 MiB or more above the working set and a minute or more after the
// last release, and one every 5 minutes in any case (the pace before,
// whatever the set did).
var releaseAfter = releasePacing{
	settled:  10 * time.Second,
	check:    10 * time.Second,
	growth:   1 << 20,
	longest:  5 * time.Minute,
	shortest: time.Minute,
}

// releaseLater releases the executable's pages again (release:
// releasePages) once the daemon has settled, p.settled after its start;
// from then on whenever the resident set (rss) has grown by p.growth or
// more past the working set the daemon mapped back after a release (the
// floor: releaseGovernor), checked every p.check; and p.longest after the
// last release in any case, until ctx ends. The first seconds of a member
// are start-up too: the configuration agreement, the first contact with
// each peer, an election, the first collections bring code and tables in
// that an idle member never runs again (1.8 MB of electd's 5.5 MB of
// resident executable, measured in docs/benchmarks/2026-12-06-idle.md).
// Later, a burst of control calls (a benchmark or a monitor polling
// status), a failover, a burst of load do the same: the code of the
// control API's HTTP and JSON alone was 5 MB of a polled member's resident
// set (docs/benchmarks/2026-12-06-rss.md), and the collection
// releasePages starts with gives back the heap the burst grew. What stays
// resident is what the daemon uses.
//
// A release costs a collection and the faults that map the working set
// back (3.5-6 ms of the test binary: BenchmarkReleasePages). Some pages
// come back at once under a steady load, and on a member that allocates
// steadily (a leader's heartbeats) every collection brings the
// collector's code and the function tables it reads back (2.6 MB of an
// electd leader's, every 20 s or so): when the first check that may
// release finds the set grown again, the next check waits twice as long
// (up to p.longest), and a check that finds it below the threshold brings
// the wait back to p.check; and releases for growth are p.shortest apart
// at least. So a burst's pages are gone within a minute of its end (10-20
// s when the last release was longer ago), a steady load costs a release
// every p.longest, a leader whose collections bring their pages back one
// every p.shortest at most (4-6 ms a minute: 0.01% of a core), and an idle
// daemon the one every p.longest it paid before and a read of
// /proc/self/statm every p.check.
func releaseLater(ctx context.Context, release func() error, rss func() (int64, error), p releasePacing, log *slog.Logger) {
	g := releaseGovernor{p: p, wait: p.settled}
	t := time.NewTimer(p.settled)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now, err := rss()
		if err != nil {
			log.Debug("reading the resident set", "err", err)
		}
		if g.due(now, err == nil) {
			if err := release(); err != nil {
				log.Debug("releasing pages", "err", err)
			}
		}
		t.Reset(g.wait)
	}
}

// releaseGovernor is releaseLater's decisions, apart from its clock and
// the process: whether a check releases, and how long until the next.
// The set a release is measured against is the smallest one a check read
// right after a release (the floor): by then the daemon has mapped back
// what it uses; read at once, the set would always have grown by that
// much at the next check. A check that finds the set grown past the
// floor by p.growth releases; so does one p.longest after the last
// release, whatever the set did (as the releases every 5 minutes did
// before: a burst that was on when the floor was read is then given back
// too).
type releaseGovernor struct {
	p     releasePacing
	floor int64         // the smallest set read right after a release; 0: none yet
	wait  time.Duration // until the next check
	since time.Duration // since the last release, in waits
	// measure: the next check reads the floor, it does not release.
	measure bool
	// quick: no check found the set below the threshold since the last
	// release, i.e. its pages came back at once.
	quick   bool
	started bool // the first release is done
}

// due says whether the check that read now (ok: it could) releases, and
// sets the wait until the next check.
func (g *releaseGovernor) due(now int64, ok bool) bool {
	g.since += g.wait
	release := false
	switch {
	case !g.started:
		g.started, g.wait, release = true, g.p.check, true
	case !ok:
		g.wait = g.p.check
	case g.measure:
		if g.floor == 0 || now < g.floor {
			g.floor = now
		}
		g.measure, g.quick = false, true
	case now-g.floor >= g.p.growth && g.since >= g.p.shortest:
		if g.quick {
			g.wait = min(2*g.wait, g.p.longest) // the last release was undone at once
		} else {
			g.wait = g.p.check
		}
		release = true
	case g.since >= g.p.longest:
		g.wait, release = g.p.check, true
	case now-g.floor >= g.p.growth:
		// Grown back, too soon after the last release for another: the
		// back-off holds (quick, and the wait it set), or a steady load
		// would be released every p.shortest for ever.
	default:
		g.wait, g.quick = g.p.check, false
	}
	if release {
		g.measure, g.since = true, 0
	}
	return release
}

// residentTotal is releaseLater's reading: the resident set in bytes, the
// second field of /proc/self/statm (pages), read with raw system calls
// into a buffer on the stack: a check that brought in the code of
// os.ReadFile and strconv would grow the set it measures.
func residentTotal() (int64, error) {
	var buf [128]byte
	n, err := readSmall("/proc/self/statm", buf[:])
	if err != nil {
		return 0, err
	}
	return parseStatm(buf[:n])
}

// parseStatm reads the resident pages of a /proc/PID/statm line ("size
// resident shared text lib data dt", in pages) as bytes.
func parseStatm(b []byte) (int64, error) {
	i := 0
	for i < len(b) && b[i] != ' ' { // size
		i++
	}
	i++
	var pages int64
	digits := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		pages = pages*10 + int64(b[i]-'0')
		digits++
	}
	if digits == 0 || digits > 15 {
		return 0, errStatm
	}
	return pages * int64(os.Getpagesize()), nil
}

var errStatm = errors.New("/proc/self/statm: no resident field")
