package testkit

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/synclab/synclab"

// programs are the main packages synclab ships or runs for its users.
var programs = []string{"./cmd/...", "./internal/demo"}

// goList runs go list in the repository with args and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

// TestRuntimeAndTestKitApart checks the line internal/testkit draws: no
// program depends on a test-only package, and every package of internal/
// outside testkit is part of a program (else it belongs in testkit).
func TestRuntimeAndTestKitApart(t *testing.T) {
	deps := map[string]bool{}
	for _, p := range goList(t, append([]string{"-deps"}, programs...)...) {
		deps[p] = true
	}
	for p := range deps {
		if strings.HasPrefix(p, module+"/internal/testkit") {
			t.Errorf("%s is test-only (internal/testkit) but a program depends on it: move it out of testkit", p)
		}
	}
	for _, p := range goList(t, "./internal/...") {
		if strings.HasPrefix(p, module+"/internal/testkit") {
			continue
		}
		if !deps[p] {
			t.Errorf("%s is under internal/ but no program (%s) depends on it: move it under internal/testkit", p, strings.Join(programs, " "))
		}
	}
}
