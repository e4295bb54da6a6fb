package e2e

import (
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/synclab/synclab/internal/tracecheck"
)

// TraceCheck runs `daemon trace check` on a run's trace files (args after
// them) and returns its output and exit status. A violated property, or
// traces the checker cannot read as one run, fail t: a lab test that
// records traces has its run checked this way.
func TraceCheck(t testing.TB, daemon string, paths []string, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command(filepath.Join(BinDir(), daemon), append(append([]string{"trace", "check"}, paths...), args...)...).CombinedOutput()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s trace check: %v", daemon, err)
	}
	if code != 0 && code != tracecheck.ExitUndecided {
		t.Errorf("%s trace check: exit %d\n%s", daemon, code, out)
	}
	return string(out), code
}
