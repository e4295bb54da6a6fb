package order

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
)

// TestEraAfterRebuild: a core rebuilt in a running process from a disk
// whose write of the old core's era failed reads the same state back, and
// would number its first submission as the old core numbered one it never
// sent: orderd's send handler still waiting for that ID took the new
// message's delivery for its own and answered sent for a message
// delivered nowhere (review-order4's TestRevSIDReusedAfterUnsavedEra).
// EraAfter, which orderd's core factory calls on every core after the
// first, moves the rebuilt core past the old one's era.
func TestEraAfterRebuild(t *testing.T) {
	env := func() core.Env {
		return core.Env{ID: 1, Members: []uint32{1, 2, 3}, Now: time.Unix(1e9, 0), Rand: rand.New(rand.NewPCG(1, 1)), Lamport: new(clock.Lamport)}
	}
	cfg := DefaultLANConfig()
	cfg.Total = Sequencer
	first := func(c *Core) uint64 {
		t.Helper()
		if err := c.Multicast(time.Unix(1e9, 0), TotalOrder, []byte("m")); err != nil {
			t.Fatal(err)
		}
		return c.Submission()
	}
	old, err := New(env(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	oldSID := first(old)
	// Its era's write failed: the disk holds nothing of it.
	same, err := New(env(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sid := first(same); sid != oldSID {
		t.Fatalf("the test proves nothing: a core read back from the same state numbered %#x, the old one %#x", sid, oldSID)
	}
	rebuilt, err := New(env(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rebuilt.EraAfter(old.Era()); err != nil {
		t.Fatal(err)
	}
	if sid := first(rebuilt); sidEra(sid) <= sidEra(oldSID) {
		t.Fatalf("rebuilt core's first submission %#x in era %d, not after the old core's %#x", sid, sidEra(sid), oldSID)
	}
	// A core whose disk is ahead keeps its own era.
	ahead, err := New(env(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := ahead.Era()
	if err := ahead.EraAfter(before - 1); err != nil || ahead.Era() != before {
		t.Fatalf("EraAfter(%d) on era %d: era %d, %v", before-1, before, ahead.Era(), err)
	}
}
