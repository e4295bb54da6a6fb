package leadcheck

import (
	"testing"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
)

// TestLedOnceFollowsReasserts: a reassert reports no elected, only the
// leader_elected of the leader's new term naming itself; a term led that
// way in two lives is caught, as is one above the disk's bound, while a
// member's leader_elected of another leader is not a claim.
func TestLedOnceFollowsReasserts(t *testing.T) {
	ev := func(node uint32, name string, args ...any) sim.Event {
		return sim.Event{Node: node, Event: core.Event{Name: name, Args: args}}
	}
	const term = uint64(0x300000005)
	restart := ev(5, restartEvent)
	reassert := ev(5, elect.EventLeaderElected, "leader", uint32(5), "term", term)
	follow := ev(4, elect.EventLeaderElected, "leader", uint32(5), "term", term)
	if err := LedOnce([]sim.Event{reassert, restart, ev(5, elect.EventElected, "leader", uint32(5), "term", term)}); err == nil {
		t.Error("a term reasserted, then led again after a restart, passed LedOnce")
	}
	if err := LedOnce([]sim.Event{follow, ev(4, restartEvent), follow, reassert}); err != nil {
		t.Errorf("following a leader across a restart: %v", err)
	}
	if got := Unsaved([]sim.Event{follow, reassert}, 5, 0, term-1); len(got) != 1 || got[0] != term {
		t.Errorf("Unsaved of a reassert above the bound: %#x", got)
	}
	if got := Unsaved([]sim.Event{follow}, 4, 0, 0); len(got) != 0 {
		t.Errorf("Unsaved took following a leader for a claim: %#x", got)
	}
}
