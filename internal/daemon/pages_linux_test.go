package daemon

import (
	"bytes"
	"os"
	"strconv"
	"testing"

	"github.com/synclab/synclab/internal/transport"
)

// TestReleasePagesUnmapsTheExecutable: after releasePages the process
// holds fewer of its executable's pages (RssFile): what the test binary's
// start brought in and no longer runs is gone, and the process runs on
// (its pages come back from the page cache as used).
func TestReleasePagesUnmapsTheExecutable(t *testing.T) {
	before := rssFile(t)
	if err := releasePages(); err != nil {
		t.Fatal(err)
	}
	after := rssFile(t)
	t.Logf("RssFile %d kB before, %d kB after", before, after)
	if after >= before {
		t.Errorf("RssFile %d kB after releasing, %d kB before: nothing released", after, before)
	}
}

func rssFile(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range bytes.Lines(b) {
		if f := bytes.Fields(line); len(f) >= 2 && string(f[0]) == "RssFile:" {
			n, err := strconv.Atoi(string(f[1]))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// TestMemoryStatusReadsTheProcess: status's memory figures are the
// process's own, and a release is counted.
func TestMemoryStatusReadsTheProcess(t *testing.T) {
	before := memoryStatus()
	if before.Error != "" || before.RSSBytes <= 0 || before.RSSFileBytes <= 0 || before.RSSAnonBytes <= 0 ||
		before.RSSBytes < before.RSSFileBytes || before.HeapInuseBytes == 0 || before.Goroutines < 1 {
		t.Fatalf("memory status %+v: want the resident set, its parts, the heap and the goroutines", before)
	}
	if err := releasePages(); err != nil {
		t.Fatal(err)
	}
	if after := memoryStatus(); after.PageReleases != before.PageReleases+1 {
		t.Errorf("page releases %d after one more, %d before", after.PageReleases, before.PageReleases)
	}
}

// BenchmarkReleasePages is what one release costs the daemon: the
// collection, the scavenge and the unmapping (the faults that map the
// working set back come after, one per 64 KiB window used).
func BenchmarkReleasePages(b *testing.B) {
	for b.Loop() {
		if err := releasePages(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestStatusShowsMemory: GET /v1/status carries the process's memory, read
// off the loop, and the release at the end of start-up is counted.
func TestStatusShowsMemory(t *testing.T) {
	net := transport.NewMemNetwork()
	d, err := New(testConfig(t, net, shortDir(t), 1, 1), livenessFactory(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	start(t, d)
	m := status(t, d.Config().ControlPath).Memory
	if m.Error != "" || m.RSSBytes <= 0 || m.RSSAnonBytes <= 0 || m.RSSFileBytes <= 0 || m.HeapInuseBytes == 0 || m.Goroutines < 2 || m.PageReleases < 1 {
		t.Errorf("status memory %+v: want the resident set and its parts, the heap, the goroutines and the start-up's release", m)
	}
}
