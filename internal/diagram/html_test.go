package diagram

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/testenv"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/clock"
)

// TestHTMLSelfContained: the page loads nothing from the network: no
// address in it but the SVG namespace name (an identifier, never fetched),
// no src or href attribute.
func TestHTMLSelfContained(t *testing.T) {
	var b bytes.Buffer
	if err := scenario(t, "failover").WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := strings.ReplaceAll(b.String(), `"http://www.w3.org/2000/svg"`, "")
	if m := regexp.MustCompile(`(?i)(https?:|ftp:|//[a-z0-9.-]+\.[a-z]{2,}/|\bsrc\s*=|\bhref\s*=|@import|url\((?:["']?)(?:https?|//))`).FindString(page); m != "" {
		t.Errorf("the page refers to something outside itself: %q", m)
	}
}

// TestHTMLInChromium opens the page in headless Chromium (Debian's
// chromium; scripts/install-test-deps.sh installs it as root) and reads the
// DOM the script built: one line per process, one arrow per message, no
// script error; then with a point selected (#select=G) every other point
// carries the class of its relation to it (past, future, concurrent) as
// the diagram computes it; and with a process and a kind filtered out,
// their lines and arrows are gone.
func TestHTMLInChromium(t *testing.T) {
	browser := testenv.RequireTool(t, "chromium", "chromium", "chromium-browser", "google-chrome")
	d := scenario(t, "failover")
	dir := t.TempDir()
	path := filepath.Join(dir, "failover.html")
	var b bytes.Buffer
	if err := d.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := func(fragment string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
			"--user-data-dir="+filepath.Join(dir, "profile"), "--dump-dom", "file://"+path+fragment)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", browser, err, stderr.String())
		}
		s := string(out)
		if strings.Contains(s, "data-error=") {
			t.Fatalf("the page's script failed: %s", regexp.MustCompile(`data-error="[^"]*"`).FindString(s))
		}
		if !strings.Contains(s, `data-ready="1"`) {
			t.Fatalf("the page's script did not finish drawing")
		}
		return s
	}
	// The default view: heartbeats folded away, a time axis and a legend,
	// no label on an arrowhead.
	s := dom("")
	beats, beatPoints := 0, 0
	for _, m := range d.Messages {
		if IsHeartbeat(m.Kind) {
			beats++
		}
	}
	for _, g := range d.Groups {
		if g.Heartbeat {
			beatPoints++
		}
	}
	if beats == 0 {
		t.Fatal("the failover has no heartbeats to fold")
	}
	if n := strings.Count(s, `<g class="proc"`); n != len(d.Procs) {
		t.Errorf("%d process lines in the DOM, want %d", n, len(d.Procs))
	}
	if n := strings.Count(s, `<line class="msg"`); n != len(d.Messages)-beats {
		t.Errorf("heartbeats folded: %d arrows in the DOM, want %d", n, len(d.Messages)-beats)
	}
	if n := strings.Count(s, `<g class="ev`); n != len(d.Groups)-beatPoints {
		t.Errorf("heartbeats folded: %d event points in the DOM, want %d", n, len(d.Groups)-beatPoints)
	}
	checkAxisLegend(t, s, d, false)
	checkLabelBoxes(t, s)

	// With the heartbeats shown: every arrow and point.
	s = dom("#heartbeats=1")
	if n := strings.Count(s, `<line class="msg"`); n != len(d.Messages) {
		t.Errorf("%d arrows in the DOM, want %d", n, len(d.Messages))
	}
	if n := strings.Count(s, `<g class="ev`); n != len(d.Groups) {
		t.Errorf("%d event points in the DOM, want %d", n, len(d.Groups))
	}
	checkAxisLegend(t, s, d, true)
	checkLabelBoxes(t, s)
	checkLabelBoxes(t, dom("#heartbeats=1&label=vector"))
	checkLabelBoxes(t, dom("#xaxis=real"))

	// The cone of a point in the middle of the run.
	sel := len(d.Groups) / 2
	s = dom(fmt.Sprintf("#heartbeats=1&select=%d", sel))
	re := regexp.MustCompile(`<g class="ev ?([a-z]*)" data-ev="[a-z]+" data-group="(\d+)"`)
	seen := 0
	counts := map[string]int{}
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		g, _ := strconv.Atoi(m[2])
		want := "selected"
		if g != sel {
			switch d.Relation(d.Groups[g].Events[0], d.Groups[sel].Events[0]) {
			case clock.Before:
				want = "past"
			case clock.After:
				want = "future"
			default:
				want = "conc"
			}
		}
		if m[1] != want {
			t.Errorf("point %d is marked %q, want %q", g, m[1], want)
		}
		counts[want]++
		seen++
	}
	if seen != len(d.Groups) || counts["past"] == 0 || counts["future"] == 0 {
		t.Errorf("cone of point %d: %d points read, %v", sel, seen, counts)
	}

	// Filters.
	hiddenKind := d.Kinds[0]
	s = dom("#heartbeats=1&hideproc=1&hidekind=" + hiddenKind)
	if n := strings.Count(s, `<g class="proc"`); n != len(d.Procs)-1 {
		t.Errorf("with process 1 hidden: %d lines, want %d", n, len(d.Procs)-1)
	}
	if strings.Contains(s, `data-id="1"`) || strings.Contains(s, `data-kind="`+hiddenKind+`"`) {
		t.Errorf("process 1 or kind %s still drawn when filtered out", hiddenKind)
	}

	// A checker's counterexample (internal/tracecheck): the highlighted
	// events' points marked, its verdict in the info line.
	// Two points the default view draws (heartbeats are folded away).
	var drawn []int
	for _, g := range d.Groups {
		if !g.Heartbeat {
			drawn = append(drawn, g.Events[0])
		}
	}
	d.Highlight = map[int]bool{drawn[1]: true, drawn[len(drawn)-1]: true}
	d.Note = "exclusive: VIOLATED <two holders>"
	b.Reset()
	if err := d.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s = dom("")
	if n := strings.Count(s, `<g class="ev offending"`); n != 2 {
		t.Errorf("%d points marked offending, want 2", n)
	}
	if !strings.Contains(s, `<div id="info">exclusive: VIOLATED &lt;two holders&gt;</div>`) {
		t.Errorf("the info line does not show the note")
	}
}

// checkAxisLegend: the page drew a time axis with ticks and a legend
// naming every kind it shows (and only those), and says what it folded.
func checkAxisLegend(t *testing.T, s string, d *Diagram, heartbeats bool) {
	t.Helper()
	axis := regexp.MustCompile(`<g class="axis">.*?</g>`).FindString(s)
	if ticks := regexp.MustCompile(`>\+[\d.]+m?s<`).FindAllString(axis, -1); len(ticks) < 2 || !strings.Contains(axis, "real time") {
		t.Errorf("heartbeats %v: no time axis with ticks under the lines: %q", heartbeats, axis)
	}
	legend := regexp.MustCompile(`<g class="legend">.*?</g>`).FindString(s)
	for _, k := range d.Kinds {
		shown := strings.Contains(legend, ">"+k+"<")
		if want := heartbeats || !IsHeartbeat(k); shown != want {
			t.Errorf("heartbeats %v: kind %s in the legend: %v, want %v", heartbeats, k, shown, want)
		}
	}
	if folded := strings.Contains(legend, "heartbeats folded away"); folded == heartbeats {
		t.Errorf("heartbeats %v: the legend says it folded heartbeats: %v", heartbeats, folded)
	}
}

// checkLabelBoxes reads the boxes the browser measured for every time
// label and event name (data-box) and the arrows' ends, and fails on a
// label covering an arrowhead.
func checkLabelBoxes(t *testing.T, s string) {
	t.Helper()
	var heads []poly
	for _, m := range regexp.MustCompile(`<line class="msg"[^>]* x1="([-\d.e]+)" y1="([-\d.e]+)" x2="([-\d.e]+)" y2="([-\d.e]+)"`).FindAllStringSubmatch(s, -1) {
		heads = append(heads, headPoly(num(t, m[1]), num(t, m[2]), num(t, m[3]), num(t, m[4])))
	}
	labels := regexp.MustCompile(`<text class="(?:label|name)"[^>]*data-box="([^"]+)"[^>]*>([^<]*)<`).FindAllStringSubmatch(s, -1)
	if len(labels) == 0 || len(heads) == 0 {
		t.Fatalf("%d labels with boxes and %d arrows read from the page", len(labels), len(heads))
	}
	for _, m := range labels {
		var box poly
		for _, c := range strings.Fields(m[1]) {
			x, y, _ := strings.Cut(c, ",")
			box = append(box, pt{num(t, x), num(t, y)})
		}
		for _, h := range heads {
			if overlap(box, h) {
				t.Errorf("label %q (box %s) covers an arrowhead %v", m[2], m[1], h)
				break
			}
		}
	}
}

// TestHTMLWithoutMessages: a run of local events alone (no message, so no
// kind) gives lists, never null, to the page's script, which walks each
// (`X web` draws such windows: a host's trace with only its own events).
func TestHTMLWithoutMessages(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := &trace.File{Name: "a", Header: trace.Header{Daemon: "mutexd", ID: 1, Cluster: "lab", Members: []uint32{1}}}
	for i := range 3 {
		f.Events = append(f.Events, trace.Event{Ev: trace.EvLocal, Name: "lock_granted", T: t0.Add(time.Duration(i) * time.Millisecond), Lamport: uint64(i + 1)})
	}
	d, err := Build([]*trace.File{f})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := d.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	for _, list := range []string{"kinds", "procs", "groups", "events", "msgs"} {
		if !strings.Contains(b.String(), `"`+list+`":[`) {
			t.Errorf("the page's %q is not a list: %.400s", list, b.String()[strings.Index(b.String(), `id="data"`):])
		}
	}
}
