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
	s := dom("")
	if n := strings.Count(s, `<g class="proc"`); n != len(d.Procs) {
		t.Errorf("%d process lines in the DOM, want %d", n, len(d.Procs))
	}
	if n := strings.Count(s, `<line class="msg"`); n != len(d.Messages) {
		t.Errorf("%d arrows in the DOM, want %d", n, len(d.Messages))
	}
	if n := strings.Count(s, `<g class="ev"`); n != len(d.Groups) {
		t.Errorf("%d event points in the DOM, want %d", n, len(d.Groups))
	}

	// The cone of a point in the middle of the run.
	sel := len(d.Groups) / 2
	s = dom(fmt.Sprintf("#select=%d", sel))
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
	s = dom("#hideproc=1&hidekind=" + hiddenKind)
	if n := strings.Count(s, `<g class="proc"`); n != len(d.Procs)-1 {
		t.Errorf("with process 1 hidden: %d lines, want %d", n, len(d.Procs)-1)
	}
	if strings.Contains(s, `data-id="1"`) || strings.Contains(s, `data-kind="`+hiddenKind+`"`) {
		t.Errorf("process 1 or kind %s still drawn when filtered out", hiddenKind)
	}

	// A checker's counterexample (internal/tracecheck): the highlighted
	// events' points marked, its verdict in the info line.
	d.Highlight = map[int]bool{d.Groups[1].Events[0]: true, d.Groups[len(d.Groups)-1].Events[0]: true}
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
