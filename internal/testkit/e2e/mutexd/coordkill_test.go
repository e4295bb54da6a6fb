package mutexd

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/ctl"
	"github.com/synclab/synclab/internal/testkit/e2e"
)

// TestMutexdCentralCoordinatorKilled: three real mutexd on loopback,
// central, a 9 s lease and 3 s beats (so that silence alone would take
// long: the election's leader timeout is 7.5 s, 4.5-7.5 s after the
// kill). The coordinator is SIGKILLed with the lock free and no member
// restarted within a lease; its kernel closes its sockets, the others'
// links to it say so (a hint), they probe it, and the successor grants
// well before silence alone could have told anyone: here under 4 s,
// where the run without the hint cannot go below 4.5 s. The survivors'
// status names the dead member's closed port.
func TestMutexdCentralCoordinatorKilled(t *testing.T) {
	c := newCluster(t, "mutexd", 3)
	for i := 1; i <= 3; i++ {
		c.Start(i, "--algorithm", "central", "--lease", "9s", "--heartbeat", "3s")
	}
	started := time.Now()
	status := func(i int) (map[string]any, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		var st map[string]any
		err := ctl.NewClient(c.Control(i), "mutexd").Get(ctx, "/v1/status", &st)
		return st, err
	}
	// The members answer the coordinator's quiet beats for a Hold (the
	// lease and half a beat, 10.5 s) and two beats more: a successor may
	// then take every member's word for the leases out (none) instead of
	// waiting a Hold itself. That is the case measured; the wait in the
	// other cases is not what the hint changes.
	time.Sleep(time.Until(started.Add(21 * time.Second)))
	coord := 0
	c.Eventually("a coordinator ready to grant", 30*time.Second, func() bool {
		for i := 1; i <= 3; i++ {
			if st, err := status(i); err == nil && e2e.Field(st, "node", "core", "detail", "coordinates") == true &&
				e2e.Field(st, "node", "core", "detail", "ready") == true {
				coord = i
				return true
			}
		}
		return false
	})
	other := 1 + coord%3

	c.Procs[coord].Process.Kill()
	killed := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var g mutexGrant
	if err := ctl.NewClient(c.Control(other), "mutexd").Post(ctx, "/v1/locks/x/acquire", map[string]any{"client": "after the kill"}, &g); err != nil {
		t.Fatalf("acquire at member %d after the coordinator's kill: %v", other, err)
	}
	took := time.Since(killed)
	t.Logf("coordinator %d SIGKILLed; member %d granted %v later (fence %d)", coord, other, took.Round(time.Millisecond), g.Fence)
	if took >= 4*time.Second {
		t.Errorf("granted %v after the coordinator's SIGKILL: want under 4 s (its closed port as a hint; silence alone takes 4.5-7.5 s here)", took)
	}
	out, err := exec.Command(filepath.Join(e2e.BinDir(), "mutexd"), "status", "--control", c.Control(other)).CombinedOutput()
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	if want := fmt.Sprintf("member %d: port closed at", coord); !strings.Contains(string(out), want) {
		t.Errorf("status of member %d does not say %q:\n%s", other, want, out)
	}
}
