package node

import (
	"errors"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// TestStaleFrameKeepsWithholding (review-twoway): an older build (member
// 2) admitted unchecked restarts; its new incarnation's first frame is
// refused, so node 1 withholds its core's frames from it. A frame of its
// previous incarnation, still in flight (delayed, reordered), then arrives
// and is admitted: it must not end the cut of the new incarnation, still
// refused (it did: the one-way cut back for up to a heartbeat).
func TestStaleFrameKeepsWithholding(t *testing.T) {
	a, ra, old, rold, now := olderAdmitted(t)
	step := func() { now = now.Add(100 * time.Millisecond) }
	// A last frame of incarnation 1, delayed on the way.
	rold.rd.Messages = []core.Message{{To: 1, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
	var stale []byte
	for _, s := range old.Ready().Sends {
		stale = old.Finalize(s, now)
	}
	// Member 2 restarts as incarnation 2 (an older build still).
	old2, rold2 := newNode(t, 2, func(c *Config) { c.Keys = []wire.Key{testKey}; c.Incarnation = 2 })
	step()
	rold2.rd.Messages = []core.Message{{To: 1, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
	for _, err := range deliver(t, old2, a, now) {
		if !errors.Is(err, ErrConfigUnverified) {
			t.Fatalf("new incarnation's frame: %v", err)
		}
	}
	if !a.withholds(2) {
		t.Fatal("not withheld after the new incarnation's refused frame")
	}
	step()
	err := a.Receive(Inbound{From: members[2], Data: stale, Time: now})
	if err != nil {
		t.Fatalf("stale frame of incarnation 1 refused: %v", err)
	}
	a.Tick(now)
	ra.rd.Messages = []core.Message{{To: 2, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
	sent := 0
	for _, s := range a.Ready().Sends {
		if s.Kind == wire.KindHeartbeat && s.To == members[2] {
			sent++
		}
	}
	if sent > 0 {
		t.Fatalf("node 1 sends its core's frames to member 2 again (withholds=%v) while member 2's incarnation 2 is still refused: a stale frame of incarnation 1 ended the cut", a.withholds(2))
	}
}

// TestWithholdingEndsAfterWindow: an older build's restarted run sends
// one frame, refused (not announced), and falls silent: node 1 withholds
// its core's frames from it for the window after which it would admit the
// run unchecked, then sends them again (review-twoway: the cut lasted for
// good, and a ring never resent a refused election frame).
func TestWithholdingEndsAfterWindow(t *testing.T) {
	a, ra, _, _, now := olderAdmitted(t)
	// Member 2 restarts (incarnation 2), sends one frame and falls silent.
	old2, rold2 := newNode(t, 2, func(c *Config) { c.Keys = []wire.Key{testKey}; c.Incarnation = 2 })
	rold2.rd.Messages = []core.Message{{To: 1, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
	for _, err := range deliver(t, old2, a, now) {
		if !errors.Is(err, ErrConfigUnverified) {
			t.Fatalf("the restarted run's unannounced frame: %v", err)
		}
	}
	t0 := now
	sentTo2 := func() int {
		a.Tick(now)
		ra.rd.Messages = []core.Message{{To: 2, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
		sent := 0
		for _, s := range a.Ready().Sends {
			if s.Kind == wire.KindHeartbeat && s.To == members[2] {
				sent++
			}
		}
		return sent
	}
	window := 3 * a.agree.cfg.Interval
	for now.Sub(t0) < window-100*time.Millisecond {
		now = now.Add(100 * time.Millisecond)
		if n := sentTo2(); n != 0 {
			t.Fatalf("%v after member 2's refused frame: node 1 sent it its core's frames (withholding ends after %v)", now.Sub(t0), window)
		}
	}
	now = t0.Add(window + 10*time.Millisecond) // the refused frame arrived a millisecond after t0
	if n := sentTo2(); n != 1 {
		t.Fatalf("%v after member 2's refused frame, silent since: node 1 still withholds its core's frames from it (%d sent)", now.Sub(t0), n)
	}
}

// olderAdmitted runs node 1 (agreement on) beside member 2, an older
// build (none), for 5 s, until 2 is admitted unchecked; it returns both
// nodes, their recorders, and the time reached.
func olderAdmitted(t *testing.T) (a *Node, ra *recorder, old *Node, rold *recorder, now time.Time) {
	t.Helper()
	a, ra = newNode(t, 1, func(c *Config) {
		c.Keys = []wire.Key{testKey}
		c.Agreement = &Agreement{Algorithm: "bully"}
	})
	old, rold = newNode(t, 2, func(c *Config) { c.Keys = []wire.Key{testKey} })
	now = t0
	for range 50 {
		a.Tick(now)
		rold.rd.Messages = []core.Message{{To: 1, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
		deliver(t, old, a, now)
		a.Ready()
		now = now.Add(100 * time.Millisecond)
	}
	if a.withholds(2) {
		t.Fatal("member 2 withheld after 5 s")
	}
	return a, ra, old, rold, now
}
