package mutexd

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/testkit/e2e"
)

// TestMutexdTokenAskVectors: with --algorithm tokenask on loopback, the
// vector a client passes on travels through the API and the CLI: a grant
// carries its request's vector (MUTEXD_VECTOR of `mutexd lock`'s command),
// `mutexd vector` prints the member's latest, `mutexd lock --after`
// takes one, and a vector that is not one, or names a non-member, is
// refused with what is wrong before anything is queued.
func TestMutexdTokenAskVectors(t *testing.T) {
	c := newCluster(t, "mutexd", 3)
	for i := 1; i <= 3; i++ {
		c.Start(i, "--lease", "1s", "--algorithm", "tokenask")
	}
	for i := 1; i <= 3; i++ {
		c.Eventually(fmt.Sprintf("host %d up", i), 5*time.Second, func() bool { _, err := c.Status(i); return err == nil })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl1, cl2 := ctl.NewClient(c.Control(1), "mutexd"), ctl.NewClient(c.Control(2), "mutexd")
	defer cl1.Close()
	defer cl2.Close()
	var v struct {
		Vector string `json:"vector"`
	}
	if err := cl1.Get(ctx, "/v1/vector", &v); err != nil || v.Vector != "" {
		t.Fatalf("vector before any request: %q, %v", v.Vector, err)
	}
	var g struct {
		Request string `json:"request"`
		Vector  string `json:"vector"`
	}
	if err := cl1.Post(ctx, "/v1/locks/db/acquire", map[string]any{}, &g); err != nil {
		t.Fatal(err)
	}
	// Member 1's request 1 of its core's run (central's incarnation, not
	// the handle's, which is the daemon's).
	if !regexp.MustCompile(`^1:[1-9][0-9]*\.1$`).MatchString(g.Vector) {
		t.Errorf("grant's vector %q, want 1:INC.1", g.Vector)
	}
	if err := cl1.Get(ctx, "/v1/vector", &v); err != nil || v.Vector != g.Vector {
		t.Errorf("member 1's vector %q (%v), want its latest request's %q", v.Vector, err, g.Vector)
	}
	if err := cl1.Post(ctx, "/v1/locks/db/release", map[string]any{"request": g.Request}, nil); err != nil {
		t.Fatal(err)
	}
	for after, why := range map[string]string{"1:1": "MEMBER:INCARNATION.SEQ", "9:1.1": "not one of", "1:1.1,1:1.2": "twice"} {
		err := cl2.Post(ctx, "/v1/locks/db/acquire", map[string]any{"after": after, "timeout_ms": 300}, nil)
		if ctlStatus(err) != http.StatusBadRequest || !strings.Contains(err.Error(), why) {
			t.Errorf("after %q: %v, want 400 saying %q", after, err, why)
		}
	}

	// The CLI: member 1's vector, printed by `mutexd vector`, handed to a
	// client of member 2; its command's MUTEXD_VECTOR names both.
	bin := filepath.Join(e2e.BinDir(), "mutexd")
	out, err := exec.Command(bin, "vector", "--control", c.Control(1)).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != g.Vector {
		t.Fatalf("mutexd vector: %q, %v; want %q", out, err, g.Vector)
	}
	file := filepath.Join(t.TempDir(), "env")
	lock := exec.Command(bin, "lock", "db", "--control", c.Control(2), "--after", strings.TrimSpace(string(out)), "--timeout", "10s",
		"--", "sh", "-c", `echo "$MUTEXD_VECTOR" > `+file)
	if out, err := lock.CombinedOutput(); err != nil {
		t.Fatalf("mutexd lock --after: %v: %s", err, out)
	}
	got, _ := os.ReadFile(file)
	if s := strings.TrimSpace(string(got)); !strings.HasPrefix(s, g.Vector+",2:") {
		t.Errorf("MUTEXD_VECTOR %q: want member 1's %s and member 2's own request", s, g.Vector)
	}
	// mutexd status says the member's vector.
	out, err = exec.Command(bin, "status", "--control", c.Control(1)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Causal   : latest request's vector "+g.Vector) {
		t.Errorf("mutexd status at member 1: %v:\n%s\nwant its vector %s", err, out, g.Vector)
	}
	out, err = exec.Command(bin, "lock", "db", "--control", c.Control(2), "--after", "2:0.1", "--", "true").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "bad vector timestamp") {
		t.Errorf("mutexd lock --after 2:0.1: %v: %s, want the refusal", err, out)
	}
}
