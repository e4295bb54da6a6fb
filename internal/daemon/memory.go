package daemon

import (
	"bytes"
	"context"
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
	// next check found undone (the pages are in use: see releaseLater).
	longest time.Duration
}

// releaseAfter is the daemons' pacing: a first release 10 s after the
// start, then one at the first check (every 10 s) that finds the resident
// set 1 MiB or more above what the last release left, at least a minute
// apart under a steady load.
var releaseAfter = releasePacing{
	settled: 10 * time.Second,
	check:   10 * time.Second,
	growth:  1 << 20,
	longest: time.Minute,
}

// releaseLater releases the executable's pages again (release:
// releasePages) once the daemon has settled, p.settled after its start,
// and from then on whenever the resident set (rss: VmRSS) has grown by
// p.growth or more since the last release, checked every p.check, until
// ctx ends. The first seconds of a member are start-up too: the
// configuration agreement, the first contact with each peer, an election,
// the first collections bring code and tables in that an idle member never
// runs again (1.8 MB of electd's 5.5 MB of resident executable, measured
// in docs/benchmarks/2026-12-06-idle.md); at 64 members start-up lasts
// longer than p.settled. Later, a burst of control calls (a benchmark or a
// monitor polling status), a failover, a burst of load do the same: the
// code of the control API's HTTP and JSON alone was 5 MB of a polled
// member's resident set (docs/benchmarks/2026-12-06-rss.md), and the
// collection releasePages starts with gives back the heap the burst grew.
// What stays resident is what the daemon uses.
//
// A release costs a collection and the faults that map the working set
// back (3.5-6 ms of the test binary: BenchmarkReleasePages). Under a steady load the pages come back at once; when a
// check finds the set grown again right after a release, the next check
// waits twice as long (up to p.longest), and a check that finds it
// unchanged brings the wait back to p.check: a steady load pays for a
// release a minute, an idle daemon for none (a read of /proc/self/status
// every p.check), and the pages a burst brought in are gone within a
// minute and p.check of its end.
func releaseLater(ctx context.Context, release func() error, rss func() (int64, error), p releasePacing, log *slog.Logger) {
	g := releaseGovernor{p: p}
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
			after, err := rss()
			g.released(after, err == nil)
		}
		t.Reset(g.wait)
	}
}

// releaseGovernor is releaseLater's decisions, apart from its clock and
// the process: whether a check releases, and how long until the next.
type releaseGovernor struct {
	p            releasePacing
	base         int64         // the resident set after the last release
	wait         time.Duration // until the next check
	releasedLast bool          // the last check released
	started      bool          // the first release is done
}

// due says whether the check that read now (ok: it could) releases, and
// sets the wait after a check that does not.
func (g *releaseGovernor) due(now int64, ok bool) bool {
	switch {
	case !g.started:
		g.wait = g.p.check
	case ok && now-g.base >= g.p.growth:
		if g.releasedLast {
			g.wait = min(2*g.wait, g.p.longest) // the last one was undone at once
		} else {
			g.wait = g.p.check
		}
	default:
		g.wait, g.releasedLast = g.p.check, false
		return false
	}
	return true
}

// released records a release and the resident set after it.
func (g *releaseGovernor) released(after int64, ok bool) {
	if ok {
		g.base = after
	}
	g.releasedLast, g.started = true, true
}

// residentTotal is releaseLater's reading: VmRSS.
func residentTotal() (int64, error) {
	r, err := readResident()
	return r.total, err
}
