package main

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const script = "../../scripts/demo.sh"

// fakeGo puts a `go` on a PATH of its own that only records that it ran,
// so a test can tell whether the script built anything.
func fakeGo(t *testing.T) (path, mark string) {
	t.Helper()
	dir := t.TempDir()
	mark = filepath.Join(dir, "go-ran")
	stub := "#!/bin/sh\necho \"$@\" >> " + mark + "\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	// The script needs bash's companions (dirname, sed, mktemp), not Go.
	return dir + string(os.PathListSeparator) + "/usr/bin:/bin", mark
}

func runScript(t *testing.T, path string, args ...string) (string, int) {
	t.Helper()
	abs, err := filepath.Abs(script)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{abs}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+path)
	cmd.Dir = t.TempDir() // outputs would land where it is run
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// TestScriptHelpBuildsNothing: -h answers at once with the usage, and a
// mistyped flag is refused before the build, not after it.
func TestScriptHelpBuildsNothing(t *testing.T) {
	path, mark := fakeGo(t)
	for _, h := range []string{"-h", "--help"} {
		out, code := runScript(t, path, "-short", h)
		if code != 0 || !strings.Contains(out, "scripts/demo.sh [-short]") || !strings.Contains(out, "synclab-demo/") {
			t.Errorf("demo.sh %s: exit %d, want 0 and the usage:\n%s", h, code, out)
		}
	}
	for _, bad := range [][]string{{"-shrot"}, {"-hosts"}, {"extra"}, {"-plot=x", "--diagrms", "d"}} {
		out, code := runScript(t, path, bad...)
		if code != 2 || !strings.Contains(out, "see demo.sh -h") {
			t.Errorf("demo.sh %q: exit %d, want 2 and a pointer to -h:\n%s", bad, code, out)
		}
	}
	if b, err := os.ReadFile(mark); err == nil {
		t.Errorf("the script ran go for help or a bad argument: %s", b)
	}
	// A good command line does get to the build, and says what it costs.
	out, code := runScript(t, path, "-short", "-hosts=loopback", "-plot", "c.svg", "--diagrams", "d")
	if _, err := os.Stat(mark); err != nil || code == 0 {
		t.Errorf("demo.sh with good arguments: exit %d, go ran: %v\n%s", code, err == nil, out)
	}
	if !strings.Contains(out, BuildNote) || !strings.Contains(out, "go build -v") {
		t.Errorf("the script does not say what the first build costs:\n%s", out)
	}
}

// TestScriptFlagsAreTheDemos: the flags the script accepts are the
// demo's, but for the two it passes itself.
func TestScriptFlagsAreTheDemos(t *testing.T) {
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	list := func(name string) []string {
		m := regexp.MustCompile(`(?m)^` + name + `=\(([^)]*)\)$`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("demo.sh has no %s=(...) line", name)
		}
		return slices.Sorted(slices.Values(strings.Fields(string(m[1]))))
	}
	var o options
	var hosts string
	var bools, values []string
	flags(&o, &hosts).VisitAll(func(f *flag.Flag) {
		if f.Name == "bin" || f.Name == "repo" {
			return // demo.sh passes them itself
		}
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
			bools = append(bools, f.Name)
		} else {
			values = append(values, f.Name)
		}
	})
	slices.Sort(bools)
	slices.Sort(values)
	if got := list("bool_flags"); !slices.Equal(got, bools) {
		t.Errorf("demo.sh bool_flags %q, the demo's %q", got, bools)
	}
	if got := list("value_flags"); !slices.Equal(got, values) {
		t.Errorf("demo.sh value_flags %q, the demo's %q", got, values)
	}
	for _, f := range append(bools, values...) {
		if !strings.Contains(string(b), "#   -"+f) {
			t.Errorf("demo.sh's usage does not explain -%s", f)
		}
	}
}

// TestOutputsIgnored: what the demo leaves in a checkout, wherever in it
// it was run, is not something git offers to commit.
func TestOutputsIgnored(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("git", "-C", root, "rev-parse", "--git-dir").Run(); err != nil {
		t.Skip("not a git checkout: nothing to ignore")
	}
	var o options
	var hosts string
	fs := flags(&o, &hosts)
	for _, dir := range []string{".", "scripts", "internal/demo"} {
		for _, p := range []string{fs.Lookup("plot").DefValue, "synclab-demo/clocks.tsv", filepath.Join(fs.Lookup("diagrams").DefValue, "traces", "bully-failover-h1.trace")} {
			rel := filepath.Join(dir, p)
			if err := exec.Command("git", "-C", root, "check-ignore", "-q", "--no-index", rel).Run(); err != nil {
				t.Errorf("%s is not ignored by git: the demo run in %s leaves it to commit", rel, dir)
			}
		}
	}
}
