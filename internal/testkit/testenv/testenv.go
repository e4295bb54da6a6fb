// Package testenv is what a test may count on where it runs, and what it
// does when it cannot run there.
//
// A test that needs something this machine may lack (root, a tool that
// scripts/install-test-deps.sh installs, a tmpfs mount, network
// namespaces) never passes without running: it skips and says why, or, in
// CI (CI=true in the environment, which .ci/run exports), it fails and says
// why, since CI runs as root after installing every dependency and must run
// every test. So a CI runner that is not root, or that lacks a tool, is a
// red build, never a green one that tested less.
//
//	func TestSpoofed(t *testing.T) {
//		testenv.RequireRoot(t, "spoofing a source address needs a raw socket")
//		...
//		if err := mount(); err != nil {
//			testenv.Unavailable(t, "cannot mount a tmpfs: %v", err)
//		}
//	}
//
// Tools that install-test-deps.sh does not install (systemd-analyze, the
// shells whose completion scripts are tried) are optional even in CI: their
// tests call t.Skip themselves.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// CI reports whether the tests run in CI (CI=true), where a test that cannot
// run fails instead of skipping.
func CI() bool { return os.Getenv("CI") == "true" }

// Unavailable ends a test that cannot run here: a skip with the reason, or
// a failure in CI.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatalf("cannot run: %s (CI=true: every test must run in CI; .ci/run runs scripts/test.sh as root)", reason)
	}
	t.Skipf("skipped: %s", reason)
}

// RequireRoot ends the test unless it runs as root (see Unavailable); why
// says what needs root.
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "not root: %s (run the tests as root, e.g. sudo -E scripts/test.sh)", why)
	}
}

// RequireTool returns the path of the first of names found on PATH, or ends
// the test (see Unavailable) naming the Debian package that provides it.
func RequireTool(t testing.TB, pkg string, names ...string) string {
	t.Helper()
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Unavailable(t, "%s not installed (Debian package %s; scripts/install-test-deps.sh installs it as root)", names[0], pkg)
	return ""
}
