package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestUnavailable runs a test that cannot run in a child process, with and
// without CI=true: a skip that says why, or a failure that says why.
func TestUnavailable(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		return
	}
	for _, tc := range []struct {
		ci   string
		want string // in the child's verbose output
		fail bool
	}{
		{"", "--- SKIP: TestChildUnavailable", false},
		{"false", "--- SKIP: TestChildUnavailable", false},
		{"true", "--- FAIL: TestChildUnavailable", true},
	} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestChildUnavailable$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", "CI="+tc.ci)
		out, err := cmd.CombinedOutput()
		if (err != nil) != tc.fail || !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "no frobnicator here") {
			t.Errorf("CI=%q: err %v, want failure %v and %q with the reason; output:\n%s", tc.ci, err, tc.fail, tc.want, out)
		}
	}
}

func TestChildUnavailable(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") != "1" {
		t.Skip("run by TestUnavailable in a child process")
	}
	Unavailable(t, "no frobnicator here")
	t.Error("Unavailable returned")
}

func TestRequireTool(t *testing.T) {
	if p := RequireTool(t, "coreutils", "no-such-tool-synclab", "sh"); !strings.HasSuffix(p, "/sh") {
		t.Errorf("RequireTool found %q, want the second name, sh", p)
	}
}
