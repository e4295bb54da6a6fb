package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// binDir holds the binaries under test (BinDir).
var binDir string

// Main is the TestMain of every test package under internal/testkit/e2e: it builds
// the named daemons (cmd/NAME) into a temporary directory, runs the tests
// and removes the directory. With SYNCLAB_E2E_BIN=DIR the binaries in DIR
// are tested instead, unbuilt: an installed build, or an older one to show
// what a test guards against.
//
//	func TestMain(m *testing.M) { e2e.Main(m, "electd") }
func Main(m *testing.M, daemons ...string) {
	// The daemons started here never read this machine's own lab file
	// (/etc/synclab/lab.toml): a test that wants one names it.
	os.Setenv("SYNCLAB_LAB_FILE", "")
	if dir := os.Getenv("SYNCLAB_E2E_BIN"); dir != "" {
		binDir = dir
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "synclab-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	args := []string{"build", "-o", dir + "/"}
	for _, d := range daemons {
		args = append(args, "github.com/synclab/synclab/cmd/"+d)
	}
	build := exec.Command("go", args...)
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the binaries:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// BinDir is the directory that holds the binaries under test (see Main).
func BinDir() string { return binDir }
