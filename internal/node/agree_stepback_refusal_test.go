package node

import (
	"errors"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// TestRefusalWindowAfterClockStepBack (hunt): node 1 refuses member 2, an
// older build that announces nothing, and withholds its core's frames from
// it (withholds) until the older-build window (3 announce intervals) has
// passed since the refusal began; then member 2 is admitted unchecked and
// the cut ends. Node 1's clock is stepped back 10 minutes while it
// refuses (a Berkeley master, date -s): steppedBack re-bases the times
// agreement compares with now, but not when the refusal began
// (refusedSince, unknownSince), so the refusal and the cut lasted the
// step's 10 minutes more. Member 2 is admitted within the window of the
// step, and sent to again.
func TestRefusalWindowAfterClockStepBack(t *testing.T) {
	a, ra, old, rold := olderBuildPair(t)
	const step = 10 * time.Minute
	var refusedAt, admittedAt time.Duration
	reached := 0
	for i := range 200 {
		real := time.Duration(i) * 100 * time.Millisecond
		now := t0.Add(real) // node 1's clock
		if i >= 10 {
			now = now.Add(-step)
		}
		a.Tick(now)
		ra.rd.Messages = append(ra.rd.Messages, core.Message{To: 2, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)})
		if out := a.Ready(); !out.Held && admittedAt > 0 {
			for _, s := range out.Sends {
				if s.Kind == wire.KindHeartbeat && s.To == members[2] {
					reached++
				}
			}
		}
		rold.rd.Messages = []core.Message{{To: 1, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
		for _, s := range old.Ready().Sends {
			if s.To != members[1] {
				continue
			}
			err := a.Receive(Inbound{From: members[2], Data: old.Finalize(s, t0.Add(real)), Time: now.Add(time.Millisecond)})
			switch {
			case errors.Is(err, ErrConfigUnverified):
				if refusedAt == 0 {
					refusedAt = real
				}
			case err == nil && refusedAt > 0 && admittedAt == 0:
				admittedAt = real
			}
		}
	}
	if refusedAt == 0 || refusedAt >= time.Second {
		t.Fatalf("member 2 refused first at %v: the test no longer reaches the refusal before the step", refusedAt)
	}
	t.Logf("refused from %v, clock stepped back %v at 1s, admitted at %v, %d core frames to it after", refusedAt, step, admittedAt, reached)
	if admittedAt == 0 || admittedAt > time.Second+4*DefaultAnnounceInterval {
		t.Fatalf("member 2 admitted at %v (0: not in 20 s), want within the older-build window (3 x %v) after the step at 1s", admittedAt, DefaultAnnounceInterval)
	}
	if reached == 0 {
		t.Fatal("no core frame reached member 2 after its admission: still withheld")
	}
}

// TestSilentRefusalAfterClockStepBack (review-hunt): the refusedSince
// half of steppedBack's re-base. TestRefusalWindowAfterClockStepBack keeps
// member 2 talking, so it is admitted (unknownSince) and the cut ends with
// the refusal: it passes with refusedSince left unre-based. Here member 2
// is refused once and then falls silent (the review-twoway case withholds
// documents): node 1's core frames to it must flow again within the
// older-build window after the step, not the step's length later.
func TestSilentRefusalAfterClockStepBack(t *testing.T) {
	a, ra, old, rold := olderBuildPair(t)
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

// olderBuildPair is node 1 of this build (configuration agreement, a key)
// and member 2 of an older build (the key, no agreement), with their
// recorders.
func olderBuildPair(t *testing.T) (a *Node, ra *recorder, old *Node, rold *recorder) {
	t.Helper()
	a, ra = newNode(t, 1, func(c *Config) {
		c.Keys = []wire.Key{testKey}
		c.Agreement = &Agreement{Algorithm: "bully"}
	})
	old, rold = newNode(t, 2, func(c *Config) { c.Keys = []wire.Key{testKey} })
	return a, ra, old, rold
}
