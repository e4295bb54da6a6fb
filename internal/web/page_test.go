package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/browser"
)

// TestPageInChromium: the page's script over the fake lab, in headless
// Chromium: the table (the silent member greyed), a chart per member
// (the offset with its bound; timed's source offset, or its bound alone),
// the diagram's frame drawn, the verdicts, the members' traces (one
// not answering); a leader change shown without
// reloading; no script error.
func TestPageInChromium(t *testing.T) {
	f := newFake(t)
	hs, _ := serve(t, f, true)
	eventually(t, "a drawing", func() bool { return getState(t, hs.URL).Trace.Diagram > 0 })
	b := browser.Launch(t)
	p := b.Open(t, hs.URL+"/", 1200, 900)
	ctx := context.Background()
	if _, err := p.WaitFor(ctx, `document.body.dataset.ready === "1" && document.querySelectorAll("#table tr.member").length === 3`, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	f.setLeader(3) // an event: the table asked again, a second sample for the charts
	if _, err := p.WaitFor(ctx, `document.querySelectorAll("figure.chart polyline").length >= 3`, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	var caps []string
	if err := p.Eval(`Array.prototype.map.call(document.querySelectorAll("figure.chart figcaption"), function (c) { return c.textContent; })`, &caps); err != nil {
		t.Fatal(err)
	}
	if len(caps) != 3 || !strings.Contains(caps[0], "error bound ± 7.0 µs") || !strings.Contains(caps[1], "no answer") ||
		!strings.Contains(caps[2], "1.5 µs ± 400 ns") || !strings.Contains(caps[2], "source -2.5 µs ± 9.0 µs") {
		t.Errorf("chart captions %q", caps)
	}
	// The verdicts come with each drawing of the trace, and one that
	// holds needs the events it speaks of in the window: on a loaded host
	// a later drawing than the charts' (read at once, at load 40: none).
	if _, err := p.WaitFor(ctx, `document.querySelectorAll('#table tr.member.silent[data-id="2"]').length === 1 && document.querySelectorAll("#vtable tr.verdict.holds").length > 0`, 20*time.Second); err != nil {
		var silent, verdicts int
		p.Eval(`document.querySelectorAll('#table tr.member.silent[data-id="2"]').length`, &silent)
		p.Eval(`document.querySelectorAll("#vtable tr.verdict.holds").length`, &verdicts)
		t.Errorf("silent rows %d, verdicts that hold %d: %v", silent, verdicts, err)
	}
	if _, err := p.WaitFor(ctx, `(function(){var d=document.getElementById("diagram").contentDocument;return !!(d&&d.body&&d.body.dataset.ready==="1");})()`, 20*time.Second); err != nil {
		t.Fatalf("the diagram's frame: %v", err)
	}
	// Every member's trace: member 3's window drawn, member 2 said not
	// to answer traces.
	if _, err := p.WaitFor(ctx, `(function(){var b=document.querySelector('#tracemembers li.bad[data-member="2"]'),o=document.querySelector('#tracemembers li.ok[data-member="3"]');return !!b&&!!o&&b.textContent.indexOf("NOT ANSWERING TRACES")>=0;})()`, 10*time.Second); err != nil {
		t.Errorf("the members' trace lines: %v", err)
	}
	f.setLeader(1)
	if _, err := p.WaitFor(ctx, `document.querySelector('#table tr.member[data-id="1"]').cells[2].textContent === "1"`, 5*time.Second); err != nil {
		t.Errorf("the leader change: %v", err)
	}
	p.CheckNoScriptError(t)
}
