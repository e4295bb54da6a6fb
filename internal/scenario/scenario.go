package scenario

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/scenarios")

// Files runs every testdata/scenarios/*.txt of the test's package through
// run, as one subtest each.
func Files(t *testing.T, run func(t *testing.T, script string) string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got := run(t, string(want))
			if *rewrite {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != string(want) {
				t.Errorf("%s differs (rerun with -rewrite and read the diff):\n%s", file, Diff(string(want), got))
			}
		})
	}
}

// Commands splits script into its lines: comments (returned with cmd
// nil) and commands (their fields); old output is dropped.
func Commands(script string) (lines []string, cmds [][]string) {
	for _, line := range strings.Split(script, "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
			lines, cmds = append(lines, line), append(cmds, nil)
		case strings.HasPrefix(line, "> "):
			lines, cmds = append(lines, line), append(cmds, strings.Fields(strings.TrimPrefix(line, "> ")))
		}
	}
	return lines, cmds
}

// Diff shows the first differing lines of two texts.
func Diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			lo := max(0, i-3)
			return fmt.Sprintf("line %d:\n  want: %q\n  got:  %q\ncontext (got):\n%s", i+1, wl, gl,
				strings.Join(g[lo:min(len(g), i+4)], "\n"))
		}
	}
	return "(identical?)"
}
