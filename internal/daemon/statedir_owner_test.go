package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStateDirBelongsToOneDaemon: the lock keeps two daemons out of one
// --state-dir at once, not one after the other; a mutexd given the
// directory electd had used read electd's core.state as a damaged file of
// its own and told the operator to remove it. The directory now says
// whose it is, and another daemon is refused by name.
func TestStateDirBelongsToOneDaemon(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(t.TempDir(), "old")
	if err := os.MkdirAll(old, 0o750); err != nil {
		t.Fatal(err)
	}
	// A directory from before the mark: some core's state, no owner.
	if err := os.WriteFile(filepath.Join(old, CoreStateFile), []byte("state"), 0o640); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir, daemon, want string // want "": claimed
	}{
		{dir, "electd", ""},
		{dir, "electd", ""}, // its own again: a restart
		{dir, "mutexd", "state directory " + dir + " holds electd's state, not mutexd's (its file \"daemon\" says so): give each daemon its own --state-dir (the default is /var/lib/mutexd)"},
		{old, "orderd", ""},
		{old, "timed", "holds orderd's state, not timed's"},
	} {
		st, err := openStateDir(tc.dir)
		if err != nil {
			t.Fatal(err)
		}
		mark, err := st.claim(tc.daemon)
		if err == nil {
			err = mark()
		}
		st.close()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s in %s: %v, want %q", tc.daemon, tc.dir, err, tc.want)
		}
	}
}
