package scenario

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Rewrite is the test binary's -rewrite flag: rewrite the expected output
// of testdata/scenarios (and any other golden file of a package that
// imports this one) instead of comparing.
var Rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/scenarios and the golden files")

// Files runs every testdata/scenarios/*.txt of the test's package through
// run, as one subtest each.
func Files(t *testing.T, run func(t *testing.T, script string) string) {
	t.Helper()
	for _, file := range Paths(t) {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got := run(t, string(want))
			if *Rewrite {
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

// Paths lists the test's package's testdata/scenarios/*.txt; none is a
// failure.
func Paths(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	return files
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

// Args reads the arguments of one script command; a missing or malformed
// one fails the test, naming the line.
type Args struct {
	T    testing.TB
	Line string
	F    []string // the command's fields, the command itself first
}

func (a Args) field(i int) string {
	a.T.Helper()
	if len(a.F) <= i {
		a.T.Fatalf("%q: missing argument %d", a.Line, i)
	}
	return a.F[i]
}

// Uint is argument i as an unsigned number.
func (a Args) Uint(i int) uint64 {
	a.T.Helper()
	v, err := strconv.ParseUint(a.field(i), 10, 64)
	if err != nil {
		a.T.Fatalf("%q: %v", a.Line, err)
	}
	return v
}

// ID is argument i as a member ID.
func (a Args) ID(i int) uint32 {
	a.T.Helper()
	v, err := strconv.ParseUint(a.field(i), 10, 32)
	if err != nil {
		a.T.Fatalf("%q: %v", a.Line, err)
	}
	return uint32(v)
}

// Duration is argument i as a duration ("250ms").
func (a Args) Duration(i int) time.Duration {
	a.T.Helper()
	d, err := time.ParseDuration(a.field(i))
	if err != nil {
		a.T.Fatalf("%q: %v", a.Line, err)
	}
	return d
}

// IDs is argument i as a comma-separated list of 32-bit numbers (bully's
// priorities), nil when the command has no argument i.
func (a Args) IDs(i int) []uint32 {
	a.T.Helper()
	if len(a.F) <= i {
		return nil
	}
	var vs []uint32
	for _, p := range strings.Split(a.F[i], ",") {
		v, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			a.T.Fatalf("%q: bad list %q: %v", a.Line, a.F[i], err)
		}
		vs = append(vs, uint32(v))
	}
	return vs
}
