package node

import (
	"errors"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// TestSilentRefusalAfterClockStepBack (review-hunt): the refusedSince
// half of steppedBack's re-base. TestRefusalWindowAfterClockStepBack keeps
// member 2 talking, so it is admitted (unknownSince) and the cut ends with
// the refusal: it passes with refusedSince left unre-based. Here member 2
// is refused once and then falls silent (the review-twoway case withholds
// documents): node 1's core frames to it must flow again within the
// older-build window after the step, not the step's length later.
func TestSilentRefusalAfterClockStepBack(t *testing.T) {
	a, ra := newNode(t, 1, func(c *Config) {
		c.Keys = []wire.Key{testKey}
		c.Agreement = &Agreement{Algorithm: "bully"}
	})
	old, rold := newNode(t, 2, func(c *Config) { c.Keys = []wire.Key{testKey} })
	const step = 10 * time.Minute
	refused := false
	var firstReach time.Duration
	for i := range 200 {
		real := time.Duration(i) * 100 * time.Millisecond
		now := t0.Add(real)
		if i >= 10 {
			now = now.Add(-step)
		}
		a.Tick(now)
		ra.rd.Messages = append(ra.rd.Messages, core.Message{To: 2, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)})
		if out := a.Ready(); !out.Held && refused && i >= 10 && firstReach == 0 {
			for _, s := range out.Sends {
				if s.Kind == wire.KindHeartbeat && s.To == members[2] {
					firstReach = real
				}
			}
		}
		if refused {
			continue // member 2 silent from now on
		}
		rold.rd.Messages = []core.Message{{To: 1, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
		for _, s := range old.Ready().Sends {
			if s.To != members[1] {
				continue
			}
			if err := a.Receive(Inbound{From: members[2], Data: old.Finalize(s, t0.Add(real)), Time: now.Add(time.Millisecond)}); errors.Is(err, ErrConfigUnverified) {
				refused = true
			}
		}
	}
	if !refused {
		t.Fatal("member 2 never refused")
	}
	t.Logf("core frames to silent refused member 2 flow again at %v (clock stepped back %v at 1s)", firstReach, step)
	if firstReach == 0 || firstReach > time.Second+4*DefaultAnnounceInterval {
		t.Fatalf("core frames to member 2 withheld until %v (0: for all 20 s): the cut outlived the older-build window after the step", firstReach)
	}
}
