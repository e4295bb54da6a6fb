package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// savedCounter is a counter built from its state file, as a restart (or
// a step back's rebuild) reads it.
func savedCounter(env core.Env) (core.Core, error) {
	c := &counter{}
	if env.State != nil {
		if _, err := fmt.Sscanf(string(env.State), "n=%d", &c.n); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// announcementOf returns a configuration announcement that member id,
// running with algorithm algo, sends to member 1: heard by member 1, whose
// algorithm differs, it makes member 1 step back when no other member is
// heard. Member id runs on a network of its own, member 1's address there
// a listener.
func announcementOf(t *testing.T, dir string, id uint32, algo string) transport.Packet {
	t.Helper()
	net := transport.NewMemNetwork()
	cfg := testConfig(t, net, dir, id, 3)
	cfg.ControlPath = filepath.Join(dir, fmt.Sprintf("other%d.sock", id))
	cfg.StateDir = filepath.Join(dir, fmt.Sprintf("other%d", id))
	cfg.Agreement = &node.Agreement{Algorithm: algo}
	ear, err := net.Open(transport.Config{Listen: addr(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ear.Close()
	d, err := New(cfg, livenessFactory(id, 3))
	if err != nil {
		t.Fatal(err)
	}
	start(t, d)
	deadline := time.After(hangGuard)
	for {
		select {
		case p := <-ear.Packets():
			var f wire.Frame
			if f.UnmarshalBinary(p.Data) == nil && f.Kind == wire.KindConfig {
				return p
			}
		case <-deadline:
			t.Fatalf("member %d sent no announcement", id)
		}
	}
}

// TestDoSavedSteppedBackInItsTurn: a frame taken in the same batch as a
// call (group commit), or the tick right after it, can make the node step
// back in the call's own turn of the loop; the core is then not drained
// (held back), nothing the call did is written, and the core is rebuilt
// from its disk without it. The call was not done, and DoActiveSaved says
// so (HeldError, Dropped: ErrWithdrawn). Before, it answered nil: orderd
// told its client "sent" for a message the rebuilt core never had, or,
// for a core that had not run yet and was kept, one that a later failed
// write could take back (core.Withdrawer).
func TestDoSavedSteppedBackInItsTurn(t *testing.T) {
	dir := shortDir(t)
	ann := announcementOf(t, dir, 3, "b")
	net := transport.NewMemNetwork()
	cfg := testConfig(t, net, dir, 1, 3)
	cfg.Agreement = &node.Agreement{Algorithm: "a", StartGrace: 50 * time.Millisecond}
	d, err := New(cfg, savedCounter)
	if err != nil {
		t.Fatal(err)
	}
	start(t, d)
	ctx := context.Background()
	bump := func(n *node.Node) { n.Core().(*counter).bump() }
	// Members 2 and 3 are never heard: member 1 runs alone once the
	// start's grace has passed.
	if err := d.DoActiveSaved(ctx, bump); err != nil {
		t.Fatalf("a call while the node runs: %v", err)
	}
	file := filepath.Join(cfg.StateDir, coreStateFile)
	if b, _ := os.ReadFile(file); string(b) != "n=1" {
		t.Fatalf("written %q, want n=1", b)
	}
	var inc0 uint32
	d.Do(ctx, func(nd *node.Node) { inc0 = nd.Incarnation() })
	err = d.DoActiveSaved(ctx, func(n *node.Node) {
		bump(n)
		// The next frame of the batch: member 3's announcement of
		// another configuration.
		d.receive(ann, false)
	})
	var held *HeldError
	if !errors.As(err, &held) || !held.Dropped || !errors.Is(err, ErrWithdrawn) || errors.Is(err, ErrNotSaved) {
		t.Fatalf("a call whose turn ended in a step back: DoActiveSaved = %v, want HeldError (dropped), ErrWithdrawn", err)
	}
	var n int
	var standing node.Standing
	var inc uint32
	d.Do(ctx, func(nd *node.Node) { n, standing, inc = nd.Core().(*counter).n, nd.Standing(), nd.Incarnation() })
	if standing != node.StandingSteppedBack || n != 1 || inc != inc0+1 {
		t.Fatalf("after the step back: standing %v, the core's count %d, incarnation %d; want stepped_back, 1 (rebuilt from n=1, without the call's bump), %d",
			standing, n, inc, inc0+1)
	}
	if b, _ := os.ReadFile(file); string(b) != "n=1" {
		t.Errorf("written %q, want n=1", b)
	}
	// While it stands back a call is refused before it acts.
	if err := d.DoActiveSaved(ctx, bump); err == nil || errors.As(err, &held) {
		t.Errorf("a call while stepped back: %v, want the stepped_back refusal", err)
	}
}
