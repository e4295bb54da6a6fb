package bully_test

import (
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/wire"
)

// followLeader3 is member 2 of 1..3 at the fast-failover settings,
// following 3 from t0, with the events of that drained.
func followLeader3(t *testing.T, t0 time.Time) (*bully.Core, uint64) {
	t.Helper()
	b := probeNode(t, 2, t0)
	term := uint64(3)<<32 | 3
	claim := frame(t, 3, wire.KindCoordinator, term, wire.Coordinator{})
	claim.Time = t0
	if err := b.Step(claim); err != nil {
		t.Fatal(err)
	}
	b.Ready()
	return b, term
}

// tickAt ticks b at each offset from t0, asking for its Deadline after
// each as a driver does, and returns the probes it sent.
func tickAt(b *bully.Core, t0 time.Time, offsets ...time.Duration) (probes int) {
	for _, d := range offsets {
		b.Tick(t0.Add(d))
		for _, m := range b.Ready().Messages {
			if m.Kind == wire.KindLeaderProbe {
				probes++
			}
		}
		b.Deadline()
	}
	return probes
}

func everyMs(from, to time.Duration) (out []time.Duration) {
	for d := from; d <= to; d += time.Millisecond {
		out = append(out, d)
	}
	return out
}

// timeoutEvent returns the fields of the leader_timeout event b reported.
func timeoutEvent(t *testing.T, b *bully.Core) map[string]any {
	t.Helper()
	for _, e := range b.Ready().Events {
		if e.Name == bully.EventLeaderTimeout {
			f := map[string]any{}
			for i := 0; i+1 < len(e.Args); i += 2 {
				f[e.Args[i].(string)] = e.Args[i+1]
			}
			return f
		}
	}
	t.Fatal("no leader_timeout event")
	return nil
}

// TestTimeoutCauseLeaderSilent: a leader that goes silent while the
// follower's loop runs on time is timed out 240 ms after its last frame
// with every probe due sent (nine) and none answered: the verdict is the
// leader's (down, stalled, or every frame lost), and status and the event
// say so.
func TestTimeoutCauseLeaderSilent(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b, _ := followLeader3(t, t0)
	if n := tickAt(b, t0, everyMs(time.Millisecond, 239*time.Millisecond)...); n != 9 {
		t.Fatalf("%d probes, want 9", n)
	}
	b.Tick(t0.Add(240 * time.Millisecond))
	f := timeoutEvent(t, b)
	c := b.Detail().LastTimeout
	if c == nil {
		t.Fatal("no last_timeout after the leader timed out")
	}
	want := bully.TimeoutCause{Leader: 3, At: t0.Add(240 * time.Millisecond), Silent: 240 * time.Millisecond,
		Timeout: 240 * time.Millisecond, Probes: 9, ProbesDue: 9, Verdict: bully.VerdictLeaderSilent}
	if *c != want {
		t.Errorf("cause %+v\nwant  %+v", *c, want)
	}
	if f["verdict"] != bully.VerdictLeaderSilent || f["probes"] != uint64(9) || f["silent_ms"] != 240.0 {
		t.Errorf("event %v", f)
	}
	if b.Report().LeaderTimeouts != 1 {
		t.Errorf("leader timeouts %d", b.Report().LeaderTimeouts)
	}
}

// TestTimeoutCauseFollowerLate: the follower's own loop stops from 205
// to 238 ms in the leader's silence: one probe went on time (204 ms), one
// at the late Tick, none in between; the Tick at the timeout (240 ms) is
// on time, so it gives up then, with two probes asked of the nine due:
// the verdict is the follower's (the leader's frames may have waited
// unread in its socket). A stop across the timeout instead (a Tick at 262
// ms) is rechecked: one more probe, as long again listening; still
// unanswered, the leader was silent.
func TestTimeoutCauseFollowerLate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b, _ := followLeader3(t, t0)
	ticks := append(everyMs(time.Millisecond, 205*time.Millisecond), 238*time.Millisecond, 240*time.Millisecond)
	if n := tickAt(b, t0, ticks...); n != 2 {
		t.Fatalf("%d probes, want 2 (204 and 238 ms)", n)
	}
	c := b.Detail().LastTimeout
	if c == nil {
		t.Fatal("no last_timeout")
	}
	if c.Verdict != bully.VerdictFollowerLate || c.Probes != 2 || c.ProbesDue != 9 || c.TickLate != 30*time.Millisecond || c.Rechecked || c.Stall != 0 {
		t.Errorf("cause %+v", *c)
	}

	b, _ = followLeader3(t, t0)
	ticks = append(everyMs(time.Millisecond, 210*time.Millisecond), everyMs(262*time.Millisecond, 312*time.Millisecond)...)
	if n := tickAt(b, t0, ticks...); n != 3 {
		t.Fatalf("%d probes, want 3 (204 and 208 ms, and one at the late Tick)", n)
	}
	c = b.Detail().LastTimeout
	if c == nil {
		t.Fatal("no last_timeout after the recheck")
	}
	if c.Verdict != bully.VerdictLeaderSilent || !c.Rechecked || c.Probes != 3 || c.TickLate != 50*time.Millisecond {
		t.Errorf("cause after a recheck %+v", *c)
	}
}

// TestRecheckHearsQueuedHeartbeat: the follower's loop stops from 212 to
// 292 ms (80 ms: under the detector's stall rule, which measures from the
// leader's expiry at 240 ms, only 52 ms late) while the leader's
// heartbeat, sent at 230 ms, waits in its socket. The loop's timer runs
// before the reader: the Tick at 292 ms finds the leader timed out. The
// follower does not act on it: it probes and listens as long again (80
// ms: time it did not run is not time it listened), the reader steps the
// heartbeat meanwhile, and no election starts. Without
// the recheck the Tick at 292 ms started one.
func TestRecheckHearsQueuedHeartbeat(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b, term := followLeader3(t, t0)
	tickAt(b, t0, everyMs(time.Millisecond, 210*time.Millisecond)...)
	b.Tick(t0.Add(292 * time.Millisecond))
	rd := b.Ready()
	if l, _, _ := b.Leader(); l != 3 || b.Role() != bully.RoleFollower {
		t.Fatalf("gave up on the leader at the late Tick: leader %d role %v", l, b.Role())
	}
	if len(rd.Messages) != 1 || rd.Messages[0].Kind != wire.KindLeaderProbe || rd.Messages[0].To != 3 {
		t.Errorf("at the late Tick sent %+v, want one probe to the leader", rd.Messages)
	}
	if dl := b.Deadline(); !dl.Equal(t0.Add(372 * time.Millisecond)) {
		t.Errorf("deadline %v, want the recheck at 372ms (as long after the late Tick as it was late)", dl.Sub(t0))
	}
	hb := frame(t, 3, wire.KindLeaderHeartbeat, term, wire.LeaderHeartbeat{})
	hb.Time = t0.Add(230 * time.Millisecond) // its arrival stamp, in the socket since
	if err := b.Step(hb); err != nil {
		t.Fatal(err)
	}
	tickAt(b, t0, everyMs(293*time.Millisecond, 400*time.Millisecond)...)
	if l, _, _ := b.Leader(); l != 3 || b.Report().LeaderTimeouts != 0 || b.Report().ElectionsStarted != 1 {
		t.Errorf("leader %d, timeouts %d, elections %d (the startup one): the queued heartbeat did not count",
			l, b.Report().LeaderTimeouts, b.Report().ElectionsStarted)
	}
	// Then silence: heard at 292 ms, the heartbeat 30 ms late (the
	// timeout 240 + 2 x 30 ms), a Tick on time at the timeout gives up
	// without a recheck.
	tickAt(b, t0, everyMs(401*time.Millisecond, 600*time.Millisecond)...)
	if c := b.Detail().LastTimeout; c == nil || c.Rechecked || !c.At.Equal(t0.Add(592*time.Millisecond)) || c.Verdict != bully.VerdictLeaderSilent {
		t.Errorf("cause %+v, want a timeout at 592ms without recheck", c)
	}
}

// TestProbesWaitForUsualLateness: a leader whose heartbeats all come 30
// ms late (a loaded host) is probed for the first of them only: the
// follower starts probing the lateness it learnt after the expected
// heartbeat, so the busy leader is not asked for an answer at every
// heartbeat. Without that, each heartbeat drew about seven probes (4 to
// 30 ms late). When a heartbeat really is missing, the probes still come,
// before the grown timeout.
func TestProbesWaitForUsualLateness(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b, term := followLeader3(t, t0)
	const late = 30 * time.Millisecond
	at, probes := time.Duration(0), 0
	for i := range 20 {
		next := at + 200*time.Millisecond + late
		probes += tickAt(b, t0, everyMs(at+time.Millisecond, next-time.Millisecond)...)
		m := frame(t, 3, wire.KindLeaderHeartbeat, term, wire.LeaderHeartbeat{})
		m.Time = t0.Add(next)
		if err := b.Step(m); err != nil {
			t.Fatal(err)
		}
		b.Ready()
		if i == 0 && probes != 7 {
			t.Fatalf("%d probes for the first late heartbeat, want 7 (4..28 ms late)", probes)
		}
		at = next - late // the leader's schedule
		at += late       // ... as the follower hears it
	}
	if probes != 7 {
		t.Errorf("%d probes over 20 heartbeats 30 ms late, want the first one's 7 only", probes)
	}
	// The next is missing: probes from 234 ms after the last (200 + 30 +
	// 4) until the timeout, 240 + 2 x 30 ms.
	n := tickAt(b, t0, everyMs(at+time.Millisecond, at+300*time.Millisecond)...)
	if n != 17 {
		t.Errorf("%d probes for a missing heartbeat, want 17 (234..298 ms)", n)
	}
	if c := b.Detail().LastTimeout; c == nil || c.Timeout != 300*time.Millisecond || c.Extra != 60*time.Millisecond || c.ProbesDue != 17 || c.Verdict != bully.VerdictLeaderSilent {
		t.Errorf("cause %+v", c)
	}
}

// TestLostHeartbeatsDoNotRaiseTimeout: every third heartbeat is lost and
// made good by the answer to the follower's first probe (flagged
// wire.HeartbeatAnswer). The answer stands for the lost heartbeat, on
// time: the timeout stays at 240 ms. Counted as a heartbeat that came
// late, each loss taught the probe's wait (4 ms and the margin already
// learnt) and the timeout climbed by 8 ms at every loss, toward its cap.
func TestLostHeartbeatsDoNotRaiseTimeout(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b, term := followLeader3(t, t0)
	at := time.Duration(0)
	for i := range 45 {
		at += 200 * time.Millisecond
		if i%3 != 2 {
			tickAt(b, t0, everyMs(at-199*time.Millisecond, at-time.Millisecond)...)
			hb := frame(t, 3, wire.KindLeaderHeartbeat, term, wire.LeaderHeartbeat{})
			hb.Time = t0.Add(at)
			if err := b.Step(hb); err != nil {
				t.Fatal(err)
			}
			b.Ready()
			continue
		}
		// Lost: the follower probes; the leader answers 300 us later.
		var probedAt time.Duration
		for d := at - 199*time.Millisecond; probedAt == 0; d += time.Millisecond {
			if d > at+40*time.Millisecond {
				t.Fatalf("heartbeat %d: no probe by %v", i, d)
			}
			if tickAt(b, t0, d) > 0 {
				probedAt = d
			}
		}
		ans := frame(t, 3, wire.KindLeaderHeartbeat, term, wire.LeaderHeartbeat{Flags: wire.HeartbeatAnswer})
		ans.Time = t0.Add(probedAt + 300*time.Microsecond)
		if err := b.Step(ans); err != nil {
			t.Fatal(err)
		}
		b.Ready()
		if probedAt != at+4*time.Millisecond {
			t.Errorf("heartbeat %d lost: probed %v after it was due, want 4ms", i, probedAt-at)
		}
	}
	if d := b.Detail(); d.LeaderTimeoutNow != 240*time.Millisecond || d.ProbesSent != 15 {
		t.Errorf("after 15 lost heartbeats answered: timeout now %v (want 240ms), probes %d (want 15)", d.LeaderTimeoutNow, d.ProbesSent)
	}
	if r := b.Report(); r.LeaderTimeouts != 0 || r.Leader != 3 {
		t.Errorf("leader %d, timeouts %d", r.Leader, r.LeaderTimeouts)
	}
}

// TestAnswerBeforeLateHeartbeat: a leader whose heartbeats all come 30
// ms late, its answers to the follower's probes arriving before them (its
// heartbeat timer late, its answer prompt). The follower learns the
// lateness from the heartbeat that follows the answer, which the answer
// stood for: the timeout grows to 240 + 2 x 30 ms and probing stops
// waiting for heartbeats that are on their usual time. An answer that
// always came first hid the lateness for good: the timeout stayed 240 ms
// and the follower probed at every heartbeat.
func TestAnswerBeforeLateHeartbeat(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b, term := followLeader3(t, t0)
	at := time.Duration(0)
	probes := 0
	for range 20 {
		at += 200 * time.Millisecond
		due := at + 30*time.Millisecond
		for d := at - 199*time.Millisecond; d < due; d += time.Millisecond {
			if tickAt(b, t0, d) > 0 {
				probes++
				ans := frame(t, 3, wire.KindLeaderHeartbeat, term, wire.LeaderHeartbeat{Flags: wire.HeartbeatAnswer})
				ans.Time = t0.Add(d + 300*time.Microsecond)
				if err := b.Step(ans); err != nil {
					t.Fatal(err)
				}
				b.Ready()
			}
		}
		hb := frame(t, 3, wire.KindLeaderHeartbeat, term, wire.LeaderHeartbeat{})
		hb.Time = t0.Add(due)
		if err := b.Step(hb); err != nil {
			t.Fatal(err)
		}
		b.Ready()
		at = due // the next expected 200 ms after this one, and 30 ms late again
	}
	if d := b.Detail(); d.LeaderTimeoutNow < 290*time.Millisecond || probes > 3 {
		t.Errorf("a leader 30 ms late, answers first: timeout now %v (want 300ms), %d probes (want the first few only)", d.LeaderTimeoutNow, probes)
	}
}
