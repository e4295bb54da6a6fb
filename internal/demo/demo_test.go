package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemoShort runs the demo's short form, as the README's first command
// runs the long one, and checks its summary: the Berkeley clocks within
// 1 ms of each other (and the NTP client of its server), the shared
// counter exact under the lock, one leader after the failover, the chart
// written.
func TestDemoShort(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo runs for about 30 s (skipped with -short)")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "../../cmd/timed", "../../cmd/mutexd", "../../cmd/electd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	chart := filepath.Join(t.TempDir(), "clocks.svg")
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sum, err := run(ctx, options{short: true, bin: bin, plot: chart, out: &out})
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !sum.ok() {
		t.Fatalf("summary: %+v", sum)
	}
	if sum.Unlocked >= hosts*sum.Increments {
		// Not a failure of synclab, but the demo would not show what it
		// means to: say so.
		t.Logf("the unlocked run lost no update this time (%d of %d)", sum.Unlocked, hosts*sum.Increments)
	}
	svg, err := os.ReadFile(chart)
	if err != nil || !strings.Contains(string(svg), "<polyline") {
		t.Fatalf("chart: %v", err)
	}
	if _, err := os.Stat(strings.TrimSuffix(chart, ".svg") + ".tsv"); err != nil {
		t.Fatalf("samples: %v", err)
	}
	for _, want := range []string{"summary", "mutexd", "electd", "timed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
