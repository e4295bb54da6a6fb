package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/core"
)

// lazyCounter writes its count only once told to (as orderd's delivery
// records wait for the next write): WriteDeferred.
type lazyCounter struct {
	counter
	due bool
}

func (c *lazyCounter) bump()          { c.n++ }
func (c *lazyCounter) WriteDeferred() { c.due = true; c.Change(false) }
func (c *lazyCounter) Ready() core.Ready {
	if !c.due {
		return core.Ready{}
	}
	return c.counter.Ready()
}

// A core's changes that wait for a later write are written when the
// daemon stops cleanly (SIGTERM): a clean restart repeats nothing.
func TestCleanStopWritesDeferredChanges(t *testing.T) {
	net := transport.NewMemNetwork()
	dir := shortDir(t)
	cfg := testConfig(t, net, dir, 1, 2)
	d, err := New(cfg, func(core.Env) (core.Core, error) { return &lazyCounter{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	eventually(t, "control socket", func() bool {
		_, err := os.Stat(cfg.ControlPath)
		return err == nil
	})
	for range 3 {
		if err := d.Do(ctx, func(n *node.Node) { n.Core().(*lazyCounter).bump() }); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(cfg.StateDir, coreStateFile)
	if b, _ := os.ReadFile(file); len(b) != 0 {
		t.Fatalf("written before the stop: %q", b)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("daemon did not stop")
	}
	if b, _ := os.ReadFile(file); string(b) != fmt.Sprintf("n=%d", 3) {
		t.Errorf("state after a clean stop %q, want n=3", b)
	}
}
