package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/labnet"
)

// TestDemoShort runs the demo's short form on loopback hosts, as the
// README's first command runs the long one without root, and checks its
// summary: the Berkeley clocks within 1 ms of each other (and the NTP
// client of its server), the shared counter exact under the lock, one
// leader after the failover, the chart and the acts' diagrams written.
func TestDemoShort(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo runs for about 30 s (skipped with -short)")
	}
	runShort(t, false)
}

// TestLabDemoShort is the same on network-namespace hosts, the form the
// demo takes as root; its namespaces must be gone afterwards. Only its own
// are checked: another demo (a second worktree, an operator) may build and
// remove its lab on this machine meanwhile.
func TestLabDemoShort(t *testing.T) {
	labnet.Require(t)
	if testing.Short() {
		t.Skip("the demo runs for about 30 s (skipped with -short)")
	}
	sum := runShort(t, true)
	if sum.Lab == "" {
		t.Fatal("the demo did not say which namespace lab it built")
	}
	if left := namespaces(t, sum.Lab+"-"); left != "" {
		t.Errorf("the demo's network namespaces are still there:\n%s", left)
	}
}

// namespaces lists the machine's network namespaces whose names start
// with prefix.
func namespaces(t *testing.T, prefix string) string {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	var found []string
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, prefix) {
			found = append(found, strings.TrimSpace(line))
		}
	}
	return strings.Join(found, "\n")
}

func runShort(t *testing.T, netns bool) summary {
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "../../cmd/timed", "../../cmd/mutexd", "../../cmd/electd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	chart := filepath.Join(t.TempDir(), "clocks.svg")
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	diagrams := t.TempDir()
	sum, err := run(ctx, options{short: true, netns: netns, bin: bin, plot: chart, diagrams: diagrams, out: &out})
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !sum.ok() {
		t.Fatalf("summary: %+v", sum)
	}
	if strings.Contains(out.String(), "\033") {
		t.Errorf("escape codes in output that is no terminal")
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
	// A diagram of each act, drawn from traces every host recorded.
	if len(sum.Diagrams) != 6 {
		t.Errorf("diagrams written: %q, want the SVG and HTML of three acts", sum.Diagrams)
	}
	story := map[string][]string{
		"berkeley-round": {`data-kind="clock_poll"`, `data-kind="clock_reading"`, `data-kind="clock_adjust"`, "heartbeats folded away"},
		"lock-handoff":   {`data-kind="ring_probe" data-op="want"`, `data-kind="token"`, ">lock_granted<", ">lock_released<"},
		"bully-failover": {`data-kind="coordinator"`, ">leader_elected<", "heartbeats folded away"},
	}
	for _, act := range []string{"berkeley-round", "lock-handoff", "bully-failover"} {
		svg, err := os.ReadFile(filepath.Join(diagrams, act+".svg"))
		if err != nil {
			t.Errorf("%s: %v", act, err)
			continue
		}
		// The Berkeley act may also hold host 1's NTP traffic with the
		// sixth machine, its NTP client (about one exchange a second,
		// the round drawn 900 ms), which gets a line drawn from the
		// requests host 1 received. It is one round: an adjustment to
		// each member but the master.
		want := hosts
		if act == "berkeley-round" {
			if strings.Contains(string(svg), "<title>ntp ") {
				want++
			}
			if n := strings.Count(string(svg), `data-kind="clock_adjust" `); n != hosts-1 {
				t.Errorf("%s: %d adjustments drawn, want one round's %d", act, n, hosts-1)
			}
		}
		if procs, arrows := strings.Count(string(svg), `<g class="proc"`), strings.Count(string(svg), `<line class="msg"`); procs != want || arrows == 0 {
			t.Errorf("%s.svg: %d process lines (want %d), %d arrows", act, procs, want, arrows)
		}
		// The story first: the hosts' names on the lines, the heartbeats
		// folded away, the act's own steps drawn.
		for _, want := range append([]string{">h1</text>", ">h5</text>"}, story[act]...) {
			if !strings.Contains(string(svg), want) {
				t.Errorf("%s.svg lacks %q", act, want)
			}
		}
		for _, bad := range []string{" vm</text>", `data-kind="leader_heartbeat"`, `data-kind="heartbeat"`, `data-kind="config"`, "token_regenerated"} {
			if strings.Contains(string(svg), bad) {
				t.Errorf("%s.svg holds %q", act, bad)
			}
		}
		if _, err := os.Stat(filepath.Join(diagrams, act+".html")); err != nil {
			t.Error(err)
		}
		if !strings.Contains(out.String(), filepath.Join(diagrams, act+".svg")) {
			t.Errorf("the output does not say where %s.svg is", act)
		}
	}
	// Each act's traces checked: the lock's and the election's promises
	// kept (a violation fails the demo).
	for act, want := range map[string]string{"lock-handoff": "exclusive: holds", "bully-failover": "one-leader-per-term: holds"} {
		if !slices.Contains(sum.Verdicts[act], want) || !strings.Contains(out.String(), "checked "+act+"'s traces: ") {
			t.Errorf("%s: verdicts %q, want %q printed", act, sum.Verdicts[act], want)
		}
	}
	for _, want := range []string{"summary", "mutexd", "electd", "timed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	return sum
}

// TestHeadingsPlainUnlessTerminal: headings are bold on a terminal only;
// redirected output got "\033[1m" in it.
func TestHeadingsPlainUnlessTerminal(t *testing.T) {
	for _, bold := range []bool{false, true} {
		var out bytes.Buffer
		l := &lab{o: options{out: &out, bold: bold}}
		l.say("act %d", 1)
		if want := map[bool]string{false: "\n== act 1\n", true: "\n\033[1m== act 1\033[0m\n"}[bold]; out.String() != want {
			t.Errorf("bold %v: %q, want %q", bold, out.String(), want)
		}
	}
}
