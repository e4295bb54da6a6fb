package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/testkit/labnet"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/wire"
)

var (
	mutexProfile        = flag.Bool("mutex.profile", false, "run BenchmarkMutexProfile: where one uncontended entry's time goes, step by step (scripts/bench.sh mutex-profile)")
	mutexProfileSamples = flag.Int("mutex.profile.samples", 200, "entries profiled per algorithm")
)

// BenchmarkMutexProfile takes one uncontended entry apart: -mutex.algorithm
// (default ricartagrawala,lamport) runs on h1..h5 with --trace, a client at
// h1 acquires and releases back to back, and the table gives, for each step
// of an entry, its median offset from the client's acquire call: the
// request's frames leaving h1 (first and last, on h1's clock as the frame
// is finalized), arriving at the peers (kernel receive stamps), the peers'
// answers leaving and arriving at h1, the grant (h1's loop), the acquire's
// answer at the client, the release's frames and the release's answer; and
// the frames per entry of each kind, heartbeats included. Every host reads
// the same clock (namespaces share CLOCK_REALTIME), so the offsets line up
// across hosts. Tracing costs a little per event: the table prints the
// entry's median with tracing beside the total it adds up to.
func BenchmarkMutexProfile(b *testing.B) {
	if !*mutexProfile {
		b.Skip("BenchmarkMutexProfile runs mutexd in a namespace lab: run it with scripts/bench.sh mutex-profile (or pass -mutex.profile)")
	}
	labnet.Require(b)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir := shortTempDir(b)
	algs := *mutexAlg
	if algs == "all" {
		algs = "ricartagrawala,lamport"
	}
	lab := benchLab(b, mutexHosts, *mutexPrefix)
	m := &mutexBench{
		electBench: &electBench{b: b, ctx: ctx, lab: lab, dir: dir},
		mutexd:     buildBinary(b, dir, *mutexBin, "mutexd"),
		rss:        map[string]int64{},
	}
	m.logf("lab %s up; load average %s", lab.Prefix(), loadAverage())
	b.ResetTimer()
	for _, alg := range strings.Split(algs, ",") {
		m.profile(alg, *mutexProfileSamples)
	}
	m.logf("load average at the end %s", loadAverage())
}

// entryTimes is one profiled entry as the client saw it.
type entryTimes struct{ start, acquired, released time.Time }

func (m *mutexBench) profile(alg string, n int) {
	m.b.Helper()
	traces := filepath.Join(m.dir, "traces-"+alg)
	if err := os.MkdirAll(traces, 0o755); err != nil {
		m.fatalf("%v", err)
	}
	saved := *mutexFlags
	defer func() { *mutexFlags = saved }()
	m.alg, m.hosts = alg, mutexHosts
	m.procs, m.clients = map[int]*labnet.Proc{}, map[int]*ctl.Client{}
	for i := 1; i <= mutexHosts; i++ {
		*mutexFlags = saved + " --trace " + filepath.Join(traces, fmt.Sprintf("h%d.jsonl", i))
		m.start(i)
	}
	m.waitUp()
	ctx := m.ctx
	for range 20 {
		rel, err := m.acquire(ctx, 1, "solo")
		if err == nil {
			err = rel()
		}
		if err != nil {
			m.fatalf("%s warm-up: %v", alg, err)
		}
	}
	// Every member hears every other within a heartbeat (1 s) of the
	// start, and the node persists each peer's epoch when it first hears
	// it: those writes are the start's, not an entry's.
	m.sleep(1500 * time.Millisecond)
	before := m.stateFiles(alg)
	entries := make([]entryTimes, 0, n)
	for range n {
		var e entryTimes
		e.start = time.Now()
		rel, err := m.acquire(ctx, 1, "solo")
		e.acquired = time.Now()
		if err == nil {
			err = rel()
		}
		e.released = time.Now()
		if err != nil {
			m.fatalf("%s: %v", alg, err)
		}
		entries = append(entries, e)
	}
	written := m.changedSince(alg, before)
	m.sleep(300 * time.Millisecond) // the release's own frames, the idle heartbeat
	for i, p := range m.procs {
		_ = p.Signal(syscall.SIGTERM)
		if _, err := p.Wait(5 * time.Second); err != nil {
			m.fatalf("stopping mutexd on h%d: %v", i, err)
		}
	}
	var files []*trace.File
	for i := 1; i <= mutexHosts; i++ {
		f, err := trace.ReadFile(filepath.Join(traces, fmt.Sprintf("h%d.jsonl", i)))
		if err != nil {
			m.fatalf("%v", err)
		}
		files = append(files, f)
	}
	printProfile(alg, entries, files)
	if len(written) == 0 {
		written = []string{"none"}
	}
	fmt.Printf("  state files written during the profiled entries (any host): %s\n", strings.Join(written, ", "))
}

// stateFiles is the modification time and size of every file in each
// host's state directory.
func (m *mutexBench) stateFiles(alg string) map[string]string {
	out := map[string]string{}
	for i := 1; i <= m.hosts; i++ {
		dir := filepath.Join(m.dir, fmt.Sprintf("%s-%d-m%d.state", alg, m.hosts, i))
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if st, err := os.Stat(filepath.Join(dir, e.Name())); err == nil {
				out[fmt.Sprintf("h%d %s", i, e.Name())] = fmt.Sprint(st.ModTime().UnixNano(), st.Size())
			}
		}
	}
	return out
}

// changedSince lists the state files changed since before.
func (m *mutexBench) changedSince(alg string, before map[string]string) []string {
	var out []string
	for k, v := range m.stateFiles(alg) {
		if before[k] != v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// printProfile prints the median offset of each step of an entry.
func printProfile(alg string, entries []entryTimes, files []*trace.File) {
	steps := map[string][]time.Duration{}
	frames := map[string]int{}
	add := func(step string, d time.Duration) { steps[step] = append(steps[step], d) }
	for k, e := range entries {
		end := e.released.Add(200 * time.Millisecond)
		if k+1 < len(entries) {
			end = entries[k+1].start
		}
		in := func(t time.Time) bool { return !t.Before(e.start) && t.Before(end) }
		// A release may leave after the client's answer, in the next
		// entry's time: its steps are read from this acquire's answer to
		// the next one's.
		relEnd := e.released.Add(200 * time.Millisecond)
		if k+1 < len(entries) {
			relEnd = entries[k+1].acquired
		}
		inRel := func(t time.Time) bool { return !t.Before(e.acquired) && t.Before(relEnd) }
		var reqOut, reqIn, ansOut, ansIn, relOut, relIn []time.Duration
		var granted, releasedAt time.Duration = -1, -1
		for h, f := range files {
			for _, ev := range f.Events {
				off := ev.T.Sub(e.start)
				if ev.Kind == "lamport_release" || ev.Kind == "lamport_requeue" {
					if inRel(ev.T) {
						if h == 0 && ev.Ev == trace.EvSend {
							relOut = append(relOut, off)
						} else if h != 0 && ev.Ev == trace.EvRecv && ev.From == 1 {
							relIn = append(relIn, off)
						}
					}
					if !in(ev.T) {
						continue
					}
				}
				if !in(ev.T) {
					continue
				}
				switch {
				case ev.Ev == trace.EvSend:
					frames[ev.Kind]++
				case ev.Ev == trace.EvLocal && h == 0 && ev.Name == "lock_granted" && granted < 0:
					granted = off
				case ev.Ev == trace.EvLocal && h == 0 && ev.Name == "lock_released" && releasedAt < 0:
					releasedAt = off
				}
				switch {
				case h == 0 && ev.Ev == trace.EvSend && isRequest(ev.Kind):
					reqOut = append(reqOut, off)
				case h != 0 && ev.Ev == trace.EvRecv && isRequest(ev.Kind) && ev.From == 1:
					reqIn = append(reqIn, off)
				case h != 0 && ev.Ev == trace.EvSend && (ev.Kind == "ra_reply" || ev.Kind == "lamport_ack") && ev.To == 1:
					ansOut = append(ansOut, off)
				case h == 0 && ev.Ev == trace.EvRecv && (ev.Kind == "ra_reply" || ev.Kind == "lamport_ack"):
					ansIn = append(ansIn, off)
				}
			}
		}
		span := func(name string, ds []time.Duration) {
			if len(ds) == 0 {
				return
			}
			add(name+", first", slices.Min(ds))
			add(name+", last", slices.Max(ds))
		}
		span("1 request leaves h1", reqOut)
		span("2 request received at a peer (kernel)", reqIn)
		span("3 answer leaves the peer", ansOut)
		span("4 answer received at h1 (kernel)", ansIn)
		if granted >= 0 {
			add("5 granted (h1's loop)", granted)
		}
		add("6 acquire answered (client)", e.acquired.Sub(e.start))
		if releasedAt >= 0 {
			add("7 released (h1's loop)", releasedAt)
		}
		span("8 release leaves h1", relOut)
		span("9 release received at a peer (kernel)", relIn)
		add("10 release answered (client)", e.released.Sub(e.start))
	}
	fmt.Printf("\n%s: one uncontended entry at h1, %d entries back to back, median offset from the acquire call (p90)\n", alg, len(entries))
	names := slices.Collect(func(yield func(string) bool) {
		for k := range steps {
			if !yield(k) {
				return
			}
		}
	})
	slices.SortFunc(names, func(a, b string) int {
		var x, y int
		fmt.Sscan(a, &x)
		fmt.Sscan(b, &y)
		if x != y {
			return x - y
		}
		return strings.Compare(a, b)
	})
	for _, k := range names {
		s := slices.Sorted(slices.Values(steps[k]))
		fmt.Printf("  %-46s %8.3f ms  (p90 %.3f, n=%d)\n", k, millis(Percentile(s, 50)), millis(Percentile(s, 90)), len(s))
	}
	kinds := slices.Sorted(func(yield func(string) bool) {
		for k := range frames {
			if !yield(k) {
				return
			}
		}
	})
	var parts []string
	var nFrames, nMessages int
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(frames[k])/float64(len(entries))))
		if k != "perm_heartbeat" {
			nFrames += frames[k]
			nMessages += frames[k] * messagesIn(k)
		}
	}
	fmt.Printf("  frames sent per entry, all hosts: %s\n", strings.Join(parts, ", "))
	fmt.Printf("  per entry, heartbeats apart: %.2f messages of the notes in %.2f frames (a lamport_requeue carries two: a release and the next request)\n",
		float64(nMessages)/float64(len(entries)), float64(nFrames)/float64(len(entries)))
}

// isRequest says whether a frame of kind k carries a request: a
// Ricart-Agrawala or Lamport request, or a requeue (Lamport's release and
// the next request in one frame).
func isRequest(k string) bool { return strings.HasSuffix(k, "_request") || k == "lamport_requeue" }

// messagesIn is how many messages of the notes a frame of the kind named
// name carries (wire.KindInfo.Messages: two in a lamport_requeue).
func messagesIn(name string) int {
	k, _ := wire.KindNamed(name)
	return k.Messages()
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
