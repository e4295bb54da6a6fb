package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/core"
)

// TestFailedStartDoesNotMarkTheDirectory: an unmarked state directory
// (electd's, from before the mark) given by mistake to mutexd: mutexd's
// core refuses electd's core.state and the start fails; the directory must
// not be marked as mutexd's by that start, or electd, given its own
// directory back, would be refused it (found by review).
func TestFailedStartDoesNotMarkTheDirectory(t *testing.T) {
	dir := t.TempDir()
	net := transport.NewMemNetwork()
	cfg := testConfig(t, net, dir, 1, 1)
	if err := os.MkdirAll(cfg.StateDir, 0o750); err != nil {
		t.Fatal(err)
	}
	// electd's state from before the upgrade: no "daemon" file.
	if err := os.WriteFile(filepath.Join(cfg.StateDir, CoreStateFile), []byte("electd's state"), 0o600); err != nil {
		t.Fatal(err)
	}
	wrong := cfg
	wrong.Name = "mutexd"
	_, err := New(wrong, func(core.Env) (core.Core, error) {
		return nil, core.ErrState // mutexd cannot read electd's core.state
	})
	if err == nil {
		t.Fatal("mutexd started on electd's state")
	}
	// mutexd's refusal tells the administrator to remove a damaged file:
	// in an unmarked directory it must say the file may be another
	// daemon's (a review: following the advice deleted electd's term).
	if !strings.Contains(err.Error(), "may be another daemon's") {
		t.Errorf("mutexd's refusal of an unmarked directory's state does not say it may be another daemon's: %v", err)
	}
	right := cfg
	right.Name = "electd"
	d, err := New(right, func(core.Env) (core.Core, error) { return &counter{}, nil })
	if err != nil {
		t.Fatalf("electd refused its own directory after mutexd's failed start: %v", err)
	}
	_ = d
}
