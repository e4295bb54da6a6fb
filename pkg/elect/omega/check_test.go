package omega_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/omega"
)

// thirdFollowing1 is member 3 of {1, 2, 3} at cfg, following member 1 at
// the start of its second window, in which it heard 1 at heard (an offset
// into the window; a negative one: not at all). It returns the core and
// the window's start.
func thirdFollowing1(t *testing.T, cfg func(core.Env) omega.Config, heard time.Duration) (*omega.Core, time.Time) {
	t.Helper()
	c, start := following1(t, 3, cfg)
	if heard >= 0 {
		if err := c.Step(heartbeatFrom(t, 1, 1, start.Add(heard))); err != nil {
			t.Fatal(err)
		}
		c.Ready()
	}
	return c, start
}

// runUntil ticks c at its deadlines up to limit, counting the asks to
// member 1, until done says so; it returns the instant and the asks.
func runUntil(t *testing.T, c *omega.Core, from, limit time.Time, done func() bool) (time.Time, int) {
	t.Helper()
	now, asks := from, 0
	for !done() {
		if now = c.Deadline(); now.After(limit) {
			t.Fatalf("not done by %v (deadline %v)", limit, now)
		}
		c.Tick(now)
		asks += sentTo(c.Ready(), 1)
	}
	return now, asks
}

// TestClaimChecksOverdueLeader: member 3 heard its leader, 1, early in
// its window, then nothing for 290 ms; member 2 claims the lead (its
// heartbeat names itself: its own window lost 1). Member 3 asks 1 at once
// and, unanswered, follows 2 an ask span (Asks x Ask) after the claim,
// not at the end of its next window, up to two windows later: at 64
// members the latest of 63 followers' windows made the failover
// (docs/benchmarks/2026-12-06-omega64-failover.md). Answered, it keeps
// 1. A claim while 1 is heard on time changes nothing.
func TestClaimChecksOverdueLeader(t *testing.T) {
	span := omega.Asks * omega.Probed.Probe
	t.Run("unanswered", func(t *testing.T) {
		c, start := thirdFollowing1(t, probed, 10*time.Millisecond)
		claim := start.Add(300 * time.Millisecond)
		if err := c.Step(heartbeatFrom(t, 2, 2, claim)); err != nil {
			t.Fatal(err)
		}
		if d := c.Deadline(); !d.Equal(claim) {
			t.Fatalf("deadline %v after the claim, want an ask at once", d.Sub(claim))
		}
		at, asks := runUntil(t, c, claim, start.Add(2*c.Interval()), func() bool { l, _, _ := c.Leader(); return l == 2 })
		if at.Sub(claim) != span || asks != omega.Asks {
			t.Fatalf("member 3 followed 2 %v after the claim with %d asks to 1, want %v and %d", at.Sub(claim), asks, span, omega.Asks)
		}
		d := c.Report().Detail.(omega.Detail)
		if d.Checks != 1 || d.Probes != 0 || d.Interval != c.Interval() || c.Interval() != omega.Probed.LeaderTimeout {
			t.Errorf("checks %d, probes %d, window %v: want 1, 0 (2 was heard at once) and %v (1 crashed: no mistake)", d.Checks, d.Probes, c.Interval(), omega.Probed.LeaderTimeout)
		}
	})
	t.Run("at the window's end", func(t *testing.T) {
		// 1 heard early in the window, the claim as it ends: the window
		// would have kept 1 for one more, closing with it heard.
		c, start := thirdFollowing1(t, probed, 10*time.Millisecond)
		claim := start.Add(c.Interval())
		if err := c.Step(heartbeatFrom(t, 2, 2, claim)); err != nil {
			t.Fatal(err)
		}
		at, asks := runUntil(t, c, claim, start.Add(3*c.Interval()), func() bool { l, _, _ := c.Leader(); return l == 2 })
		if at.Sub(claim) != span || asks != omega.Asks {
			t.Fatalf("member 3 followed 2 %v after the claim with %d asks to 1, want %v and %d", at.Sub(claim), asks, span, omega.Asks)
		}
	})
	t.Run("answered", func(t *testing.T) {
		c, start := thirdFollowing1(t, probed, 10*time.Millisecond)
		claim := start.Add(300 * time.Millisecond)
		if err := c.Step(heartbeatFrom(t, 2, 2, claim)); err != nil {
			t.Fatal(err)
		}
		c.Tick(claim)
		if k := sentTo(c.Ready(), 1); k != 1 {
			t.Fatalf("%d asks at the claim, want 1", k)
		}
		if err := c.Step(heartbeatFrom(t, 1, 1, claim.Add(time.Millisecond))); err != nil { // the answer
			t.Fatal(err)
		}
		if d := c.Deadline(); !d.Equal(claim.Add(span)) {
			t.Fatalf("deadline %v after the claim, want the shortened window's end, %v", d.Sub(claim), span)
		}
		c.Tick(claim.Add(span))
		if l, _, _ := c.Leader(); l != 1 {
			t.Fatalf("member 3 trusts %d after 1 answered, want 1", l)
		}
		if d := c.Deadline(); !d.Equal(claim.Add(span + c.Interval() - span)) {
			t.Errorf("next deadline %v after the claim, want the next window's first ask", d.Sub(claim))
		}
		// The window had heard 1 before the claim: no window saved.
		if d := c.Report().Detail.(omega.Detail); d.Checks != 1 || d.Rescued != 0 || d.Asks != 1 {
			t.Errorf("checks %d, rescued %d, asks %d: want 1, 0, 1", d.Checks, d.Rescued, d.Asks)
		}
	})
	t.Run("on time", func(t *testing.T) {
		c, start := thirdFollowing1(t, probed, 200*time.Millisecond)
		before := c.Deadline()
		claim := start.Add(300 * time.Millisecond) // 1 heard 100 ms ago
		if err := c.Step(heartbeatFrom(t, 2, 2, claim)); err != nil {
			t.Fatal(err)
		}
		if d := c.Deadline(); !d.Equal(before) {
			t.Fatalf("a claim while the leader is on time moved the deadline by %v", d.Sub(before))
		}
		if d := c.Report().Detail.(omega.Detail); d.Checks != 0 {
			t.Errorf("checks %d, want 0", d.Checks)
		}
	})
}

// TestProbesCountListening: Probes counts the windows after which this
// member listened for its leader's successor (Detail: "Probing: ... this
// member listens for its successor; Probes ... count them"), not a
// window that lost the leader but had heard the successor claim, which
// follows it at once. Without asks (the notes' windows), so that only the
// window decides.
func TestProbesCountListening(t *testing.T) {
	lan := func(core.Env) omega.Config { return omega.DefaultLANConfig() }
	t.Run("successor heard", func(t *testing.T) {
		c, start := thirdFollowing1(t, lan, -1)
		if err := c.Step(heartbeatFrom(t, 2, 2, start.Add(100*time.Millisecond))); err != nil {
			t.Fatal(err)
		}
		c.Tick(start.Add(c.Interval()))
		if l, _, _ := c.Leader(); l != 2 {
			t.Fatalf("member 3 trusts %d, want 2", l)
		}
		if d := c.Report().Detail.(omega.Detail); d.Probes != 0 {
			t.Errorf("probes %d after following the successor at once, want 0", d.Probes)
		}
	})
	t.Run("listening", func(t *testing.T) {
		c, start := thirdFollowing1(t, lan, -1)
		c.Tick(start.Add(c.Interval()))
		r := c.Report()
		if d := r.Detail.(omega.Detail); d.Probes != 1 || !d.Probing {
			t.Errorf("probes %d, probing %v after a silent window, want 1, true (%s)", d.Probes, d.Probing, r.Phase)
		}
	})
}
