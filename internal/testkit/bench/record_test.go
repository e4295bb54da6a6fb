package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRecord runs `scripts/bench.sh --record=DIR` with the one benchmark
// that needs neither root nor a lab (pv, on the simulator, small), and
// checks the dated result file: what ran, where, when, at what load, from
// which commit, and the output itself. A run that fails records nothing.
func TestRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("runs scripts/bench.sh pv (a test build of pkg/mutex/maekawa): skipped with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not in PATH: bench.sh needs it")
	}
	script, err := filepath.Abs("../../../scripts/bench.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("bash", script, "--record="+dir, "pv", "--acquisitions", "20", "--n", "3", "--m", "2")
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench.sh --record pv: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	if len(files) != 1 || !regexp.MustCompile(`/\d{4}-\d\d-\d\d-\d{4}-pv\.md$`).MatchString(files[0]) {
		t.Fatalf("recorded %q, want one DIR/YYYY-MM-DD-HHMM-pv.md\n%s", files, out)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	rec := string(b)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^# pv, \d{4}-\d\d-\d\d \d\d:\d\d UTC$`),
		regexp.MustCompile("(?m)^- command: `scripts/bench.sh pv --acquisitions 20 --n 3 --m 2`$"),
		regexp.MustCompile(`(?m)^- machine: Linux .*, \d+ CPUs.*GiB$`),
		regexp.MustCompile(`(?m)^- commit: ([0-9a-f]{12}|unknown)`),
		regexp.MustCompile(`(?m)^- load average \(1, 5, 15 min\) at the start: [0-9.]+ [0-9.]+ [0-9.]+$`),
		regexp.MustCompile(`(?m)^- load average at the end: [0-9.]+ [0-9.]+ [0-9.]+$`),
		regexp.MustCompile("(?s)\n```\n.*P_v experiment.*forgotten, vote at once.*\n```\n$"),
	} {
		if !want.MatchString(rec) {
			t.Errorf("the record lacks %v:\n%s", want, rec)
		}
	}
	if !strings.Contains(string(out), "recorded in "+files[0]) {
		t.Errorf("bench.sh does not say where it recorded:\n%s", out)
	}

	// A run that fails (here at its arguments) leaves no record.
	fail := exec.Command("bash", script, "--record="+dir, "pv", "--n", "x")
	if out, err := fail.CombinedOutput(); err == nil || !strings.Contains(string(out), "not recorded") {
		t.Errorf("a failed run: %v\n%s", err, out)
	}
	if again, _ := filepath.Glob(filepath.Join(dir, "*.md")); len(again) != 1 {
		t.Errorf("a failed run was recorded: %q", again)
	}
}
