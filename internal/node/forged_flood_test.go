package node

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// TestForgedIncarnationFloodWithholds measures what a keyless forger
// gets by sending node 2, after every frame of member 1's, a core frame
// in member 1's name that names a new incarnation: node 2 refuses it
// (config_unverified) and withholds its core's frames from member 1 until
// member 1's next frame, which ends the refusal. Stream frames so withheld
// are lost with the link up, as every withheld frame (docs/security.md,
// "Configuration agreement and forged frames"): the forger keeps node 2's
// core frames from the real member 1, a one-way cut, for as long as it
// keeps sending, and no longer (the cores time it as any cut). With a key
// the forged frames fail authentication and nothing is withheld
// (TestKeyedForgedFrameWithholdsNothing).
func TestForgedIncarnationFloodWithholds(t *testing.T) {
	l := newAgreeLAN(t, insecure(1), insecure(2), insecure(3))
	l.run(2 * time.Second)
	inc := uint32(7)
	step := func(forge bool) {
		for _, id := range slices.Sorted(maps.Keys(l.nodes)) {
			n := l.nodes[id]
			n.Tick(l.now)
			for _, other := range n.others {
				l.cores[id].rd.Messages = append(l.cores[id].rd.Messages, core.Message{To: other, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)})
			}
			l.flush(n)
			if forge && id == 1 {
				// Right after member 1's frames, before node 2 sends.
				l.forgeCore(1, 2, inc)
				inc++
			}
		}
		l.now = l.now.Add(l.step)
	}
	before, heard := l.heartbeatsTo(2, 1), l.heartbeatsTo(1, 2)
	for range 50 {
		step(true)
	}
	got, from1 := l.heartbeatsTo(2, 1)-before, l.heartbeatsTo(1, 2)-heard
	t.Logf("5 s, a forged frame after each of member 1's: member 1 got %d of node 2's 50 heartbeats, node 2 got %d of member 1's; node 2 dropped %v", got, from1, l.nodes[2].Status().Dropped)
	if got != 0 || from1 < 45 {
		t.Errorf("member 1 got %d of node 2's heartbeats (want none: withheld), node 2 got %d of member 1's (want all)", got, from1)
	}
	before = l.heartbeatsTo(2, 1)
	for range 20 {
		step(false)
	}
	if got := l.heartbeatsTo(2, 1) - before; got < 19 {
		t.Errorf("forger stopped: member 1 got %d of node 2's 20 heartbeats, want them all after member 1's next frame", got)
	}
}
