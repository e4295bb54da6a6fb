package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synclab/synclab/internal/tracecheck"
)

// checkTraces writes two mutexd hosts' traces on the simulator's true
// time: member 2 is granted x at 100 ms while member 1 holds it (fence 1,
// released at 200 ms) when overlap is true, at 300 ms otherwise.
func checkTraces(t *testing.T, overlap bool) (string, string) {
	t.Helper()
	dir := t.TempDir()
	second := "00:00:00.3"
	if overlap {
		second = "00:00:00.1"
	}
	hdr := func(id string) string {
		return `{"synclab_trace":1,"daemon":"mutexd","id":` + id + `,"host":"h` + id + `","cluster":"lab","members":[1,2],"clock":"true","started":"2026-03-01T00:00:00Z"}` + "\n"
	}
	grant := func(at, fence string) string {
		return `{"t":"2026-03-01T` + at + `Z","ev":"local","name":"lock_granted","args":{"request":1,"lock":"x","fence":` + fence + `,"mode":"exclusive","lease":"1s","expires":"2026-03-01T00:00:05Z"}}` + "\n"
	}
	release := func(at, fence string) string {
		return `{"t":"2026-03-01T` + at + `Z","ev":"local","name":"lock_released","args":{"request":1,"lock":"x","fence":` + fence + `}}` + "\n"
	}
	h1, h2 := filepath.Join(dir, "h1.trace"), filepath.Join(dir, "h2.trace")
	if err := os.WriteFile(h1, []byte(hdr("1")+grant("00:00:00", "1")+release("00:00:00.2", "1")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h2, []byte(hdr("2")+grant(second, "2")+release("00:00:00.4", "2")), 0o644); err != nil {
		t.Fatal(err)
	}
	return h1, h2
}

func TestTraceCheck(t *testing.T) {
	h1, h2 := checkTraces(t, false)
	out, stderr, code := runApp(t, "trace", "check", h1, h2)
	if code != 0 || strings.Count(out, ": HOLDS\n") != 3 {
		t.Errorf("a run that keeps its promises: exit %d\n%s%s", code, out, stderr)
	}

	h1, h2 = checkTraces(t, true)
	page := filepath.Join(t.TempDir(), "why.html")
	out, stderr, code = runApp(t, "trace", "check", h1, h2, "--json", "--draw", page)
	if code != tracecheck.ExitViolated {
		t.Errorf("an overlap: exit %d, want %d\n%s", code, tracecheck.ExitViolated, stderr)
	}
	var rep tracecheck.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if len(rep.Results) != 3 || rep.Results[0].Property != "exclusive" || rep.Results[0].Verdict != tracecheck.Violated || len(rep.Results[0].Events) == 0 {
		t.Errorf("--json: %+v", rep.Results)
	}
	html, err := os.ReadFile(page)
	if err != nil || !strings.Contains(string(html), `"hl":true`) {
		t.Errorf("--draw: %v, highlighted: %v", err, strings.Contains(string(html), `"hl":true`))
	}

	// With the clock bound flag before the files, and an unknown bound.
	out, _, code = runApp(t, "trace", "check", "--clock-bound", "1ms", h1, h2)
	if code != tracecheck.ExitViolated || !strings.Contains(out, "0 (the simulator's true time)") {
		t.Errorf("--clock-bound first: exit %d\n%s", code, out)
	}

	bad := filepath.Join(t.TempDir(), "bad.trace")
	os.WriteFile(bad, []byte("not a trace\n"), 0o644)
	if _, stderr, code := runApp(t, "trace", "check", h1, bad); code != tracecheck.ExitUnreadable || !strings.Contains(stderr, "not a synclab trace") {
		t.Errorf("an unreadable file: exit %d, %s", code, stderr)
	}
	if _, _, code := runApp(t, "trace", "check", h1, filepath.Join(t.TempDir(), "missing.trace")); code != tracecheck.ExitUnreadable {
		t.Errorf("a missing file: exit %d", code)
	}
	for _, args := range [][]string{{}, {h1, "--clock-bound", "soon"}, {h1, "--draw", "out.svg"}, {h1, "--nope"}} {
		if _, _, code := runApp(t, append([]string{"trace", "check"}, args...)...); code != 2 {
			t.Errorf("trace check %v: exit %d, want 2", args, code)
		}
	}
}
