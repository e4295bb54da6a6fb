package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synclab/synclab/pkg/elect/bully"
)

// TestDowngradeRefusalQuoted: each page that tells how to go back from
// bully's second state format quotes what a build from before it really
// says. Its decoder knew one length only, so it calls the newer file
// corrupt ("length 21, want 13"), which invites deleting it (orderd's log
// with it); the pages once quoted a version message no build ever
// printed. The lengths are the encoders' own.
func TestDowngradeRefusalQuoted(t *testing.T) {
	want := fmt.Sprintf("corrupt state: length %d, want %d", len(bully.EncodeReserved(2, 3)), len(bully.EncodeState(2)))
	for _, rel := range []string{"docs/electd.md", "docs/orderd.md", "docs/mutexd.md", "docs/timed.md"} {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		page := strings.Join(strings.Fields(string(b)), " ") // the lines as wrapped
		if !strings.Contains(page, want) {
			t.Errorf("%s does not quote an older build's refusal of the second state format (%q)", rel, want)
		}
		if strings.Contains(page, "version 2, want 1") {
			t.Errorf("%s quotes \"version 2, want 1\": no build says that", rel)
		}
		if !strings.Contains(page, "afbc605") {
			t.Errorf("%s does not name the first build that reads the second format (afbc605)", rel)
		}
	}
}
