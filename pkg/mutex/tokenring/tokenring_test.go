package tokenring_test

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/liveness"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/tokenring"
	"github.com/synclab/synclab/pkg/wire"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newCore(t *testing.T, id uint32, members ...uint32) *tokenring.Core {
	t.Helper()
	cfg := tokenring.DefaultLANConfig()
	cfg.ID, cfg.Members = id, members
	c, err := tokenring.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func events(rd core.Ready, name string) []core.Event {
	var out []core.Event
	for _, e := range rd.Events {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// TestAloneGrantsAtOnce: a ring of one creates its token, grants, and passes
// nothing to anyone; fences grow with each grant.
func TestAloneGrantsAtOnce(t *testing.T) {
	c := newCore(t, 1, 1)
	c.Tick(t0)
	c.Ready()
	c.Advance(true) // the driver wrote it: outcomes wait for that (mutexcount.Hold)
	var fences []uint64
	for i := range 3 {
		now := t0.Add(time.Duration(i) * time.Second)
		id, err := c.Acquire(now, mutex.Request{Lock: "counter", Client: "test"})
		if err != nil {
			t.Fatal(err)
		}
		c.Tick(now.Add(600 * time.Millisecond)) // loss timeout: locate, prepare, create
		rd := c.Ready()
		c.Advance(true)
		out := c.Outcomes()
		// The grant's event is reported when its client has it: the
		// first's with the Ready after the write of its generation, not
		// before; the others' (no new promise) with their own Ready.
		after := c.Ready()
		if len(out) != 1 || len(events(rd, mutex.EventGranted))+len(events(after, mutex.EventGranted)) != 1 || i == 0 && len(events(rd, mutex.EventGranted)) != 0 {
			t.Fatalf("grant %d: outcomes %+v, events %v before the write, %v after", i, out, rd.Events, after.Events)
		}
		g, ok := out[0].(mutex.Granted)
		if !ok || g.ID != id || g.Lock != "counter" || g.Lease != 3*time.Second || g.Fence>>40 != uint64(tokenring.GenerationRound(g.Epoch)) {
			t.Fatalf("grant %d: %+v, want request %d granted on its generation", i, out[0], id)
		}
		for _, m := range rd.Messages {
			if m.Kind == wire.KindToken {
				t.Fatalf("a ring of one sent its token: %+v", m)
			}
		}
		fences = append(fences, g.Fence)
		if err := c.Release(now.Add(700*time.Millisecond), id); err != nil {
			t.Fatal(err)
		}
		if out := c.Outcomes(); len(out) != 1 || out[0] != (mutex.Released{ID: id, Lock: "counter", Fence: g.Fence}) {
			t.Fatalf("release %d: outcomes %+v", i, out)
		}
	}
	if !(fences[0] < fences[1] && fences[1] < fences[2]) {
		t.Fatalf("fences %v", fences)
	}
}

// TestRequestErrors: bad names and leases, unknown requests and renewals
// of a waiting request are refused with their errors.
func TestRequestErrors(t *testing.T) {
	c := newCore(t, 1, 1, 2, 3)
	c.Tick(t0)
	for _, name := range []string{"", "a b", "x\x00"} {
		if _, err := c.Acquire(t0, mutex.Request{Lock: name}); !errors.Is(err, mutex.ErrBadLockName) {
			t.Errorf("name %q: %v", name, err)
		}
	}
	for _, lease := range []time.Duration{time.Millisecond, time.Hour} {
		if _, err := c.Acquire(t0, mutex.Request{Lock: "a", Lease: lease}); !errors.Is(err, mutex.ErrBadLease) {
			t.Errorf("lease %v: %v", lease, err)
		}
	}
	if err := c.Release(t0, 99); !errors.Is(err, mutex.ErrUnknownRequest) {
		t.Errorf("release of nothing: %v", err)
	}
	id, err := c.Acquire(t0, mutex.Request{Lock: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Renew(t0, id, 0); !errors.Is(err, mutex.ErrNotHolder) {
		t.Errorf("renewal of a waiting request: %v", err)
	}
	if err := c.Release(t0, id); err != nil {
		t.Errorf("cancel: %v", err)
	}
	if st := c.Report(); len(st.Locks) != 1 || len(st.Locks[0].Queue) != 0 {
		t.Errorf("after cancel: %+v", st.Locks)
	}
}

// TestBadFrames: undecodable payloads are refused and counted, never a
// panic.
func TestBadFrames(t *testing.T) {
	c := newCore(t, 1, 1, 2)
	c.Tick(t0)
	for _, k := range []wire.Kind{wire.KindToken, wire.KindTokenAck, wire.KindRingProbe, wire.KindRingProbeReply, wire.KindHeartbeat} {
		if err := c.Step(core.Message{From: 2, Kind: k, Payload: []byte{1, 2, 3}, Time: t0}); err == nil {
			t.Errorf("%v: garbage accepted", k)
		}
	}
	if err := c.Step(core.Message{From: 2, Kind: wire.KindElection, Time: t0}); !errors.Is(err, core.ErrUnexpectedKind) {
		t.Errorf("election frame: %v", err)
	}
	if n := c.Report().Counters["rejected_payload_truncated"]; n != 5 {
		t.Errorf("counters %v", c.Report().Counters)
	}
}

// TestStateSurvivesRestart: the promised generations come back from
// Ready.State, and corrupt state is refused with ErrState.
func TestStateSurvivesRestart(t *testing.T) {
	cfg := tokenring.DefaultLANConfig()
	cfg.ID, cfg.Members = 1, []uint32{1}
	c, _ := tokenring.New(cfg)
	c.Tick(t0)
	c.Acquire(t0, mutex.Request{Lock: "counter"})
	c.Tick(t0.Add(time.Second))
	rd := c.Ready()
	if rd.State == nil {
		t.Fatal("a new generation was not persisted")
	}
	cfg.Persisted = rd.State
	again, err := tokenring.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p, q := c.Report().Locks[0].Detail.(tokenring.LockDetail).Promised, again.Report().Locks[0].Detail.(tokenring.LockDetail).Promised; p != q || p == 0 {
		t.Fatalf("promised %#x, restored %#x", p, q)
	}
	for i := range rd.State {
		bad := append([]byte(nil), rd.State...)
		bad[i] ^= 0x40
		cfg.Persisted = bad
		if _, err := tokenring.New(cfg); !errors.Is(err, tokenring.ErrState) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
}

// TestIdleRingIsQuiet: with nobody asking, a five-member ring sends only
// heartbeats, one per member per second.
func TestIdleRingIsQuiet(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1})
	ids := []uint32{1, 2, 3, 4, 5}
	addMembers(t, s, ids)
	// One lock taken and released, then idle.
	s.Run(100 * time.Millisecond)
	var id mutex.RequestID
	s.Do(3, func(c core.Core) {
		id, _ = c.(*tokenring.Core).Acquire(s.Clock(3).Now(), mutex.Request{Lock: "counter"})
	})
	if !s.RunUntil(func() bool { return len(s.EventsNamed(mutex.EventGranted)) == 1 }, 5*time.Second) {
		t.Fatalf("not granted\n%s", s.Log())
	}
	s.Do(3, func(c core.Core) { c.(*tokenring.Core).Release(s.Clock(3).Now(), id) })
	s.Run(time.Second)
	s.ResetCounts()
	s.Run(10 * time.Second)
	var other uint64
	for k := wire.Kind(1); k <= wire.KindRingProbeReply; k++ {
		if k != wire.KindHeartbeat {
			other += s.Sent(k)
		}
	}
	if hb := s.Sent(wire.KindHeartbeat); other != 0 || hb > 5*4*11 {
		t.Fatalf("idle 10 s: %d heartbeats, %d other frames", hb, other)
	}
	// The token stayed where it was used: taking the lock there again
	// costs no message before the grant but the majority check.
	s.ResetCounts()
	s.Do(3, func(c core.Core) { c.(*tokenring.Core).Acquire(s.Clock(3).Now(), mutex.Request{Lock: "counter"}) })
	if n := len(s.EventsNamed(mutex.EventGranted)); n != 1 {
		s.RunUntil(func() bool { return len(s.EventsNamed(mutex.EventGranted)) == 2 }, time.Second)
	}
	if s.Sent(wire.KindToken) != 0 {
		t.Errorf("re-acquiring where the token rests moved it: %d token frames", s.Sent(wire.KindToken))
	}
}

// addMembers adds a ring of ids to s, each a tokenring core with the LAN
// defaults on an exact clock, restoring what it persisted.
func addMembers(t *testing.T, s *sim.Sim, ids []uint32) { addMembersTrusting(t, s, ids, false) }

// addMembersTrusting adds ids with the LAN defaults, TrustSenders as
// trust (a keyed cluster: no vouching).
func addMembersTrusting(t *testing.T, s *sim.Sim, ids []uint32, trust bool) {
	t.Helper()
	for _, id := range ids {
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			disk := env.State
			cfg := tokenring.DefaultLANConfig()
			cfg.ID, cfg.Members, cfg.Persisted, cfg.TrustSenders = id, ids, disk, trust
			c, err := tokenring.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, clock.SimConfig{})
	}
}

// TestMemberDownAndUp: the ring's failure detection (pkg/liveness's
// Detector): a member silent for DeadAfter from the core's first Tick is
// down, and up again (and no longer skipped) as soon as it is heard; a
// member heard at least once is down DeadAfter after it was last heard. A
// Tick far past the deadline (this member's own loop stalled) gives the
// others half of DeadAfter more, to be heard from frames that waited unread.
func TestMemberDownAndUp(t *testing.T) {
	c := newCore(t, 1, 1, 2, 3)
	dead := c.Config().DeadAfter
	hb, _ := wire.Heartbeat{Interval: 1000, Alive: 3}.AppendBinary(nil)
	beat := func(from uint32, at time.Time) {
		t.Helper()
		if err := c.Step(core.Message{From: from, Kind: wire.KindHeartbeat, Payload: hb, Time: at}); err != nil {
			t.Fatal(err)
		}
	}
	named := func(name string) []uint32 {
		var ids []uint32
		for _, e := range events(c.Ready(), name) {
			ids = append(ids, e.Args[1].(uint32))
		}
		return ids
	}
	c.Tick(t0)
	beat(2, t0.Add(dead/2))
	if d := c.Deadline(); d.After(t0.Add(dead)) {
		t.Fatalf("deadline %v, want member 3's silence at %v", d.Sub(t0), dead)
	}
	c.Tick(t0.Add(dead - time.Millisecond))
	if got := named(liveness.EventMemberDown); got != nil {
		t.Fatalf("down before DeadAfter: %v", got)
	}
	c.Tick(t0.Add(dead))
	if got := named(liveness.EventMemberDown); len(got) != 1 || got[0] != 3 {
		t.Fatalf("down at DeadAfter: %v, want [3]", got)
	}
	if st := c.Report().Members; st[2].State != mutex.MemberDown || st[1].State != mutex.MemberAlive {
		t.Fatalf("members %+v", st)
	}
	beat(3, t0.Add(dead+time.Millisecond))
	if got := named(liveness.EventMemberUp); len(got) != 1 || got[0] != 3 {
		t.Fatalf("up when heard: %v, want [3]", got)
	}
	// Member 2 was last heard at dead/2; this member's loop stalls until
	// long after that silence passed DeadAfter.
	stall := t0.Add(10 * dead)
	c.Tick(stall)
	if got := named(liveness.EventMemberDown); got != nil {
		t.Fatalf("down right after our own stall: %v", got)
	}
	c.Tick(stall.Add(dead / 2))
	if got := named(liveness.EventMemberDown); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("down half DeadAfter after the stall: %v, want [2 3]", got)
	}
}

// TestTimeoutsValidatedOnce: the ring's protocol timeouts go through
// liveness.CheckTimeout, the one validation of every core's timeouts.
func TestTimeoutsValidatedOnce(t *testing.T) {
	cfg := tokenring.DefaultLANConfig()
	cfg.ID, cfg.Members = 1, []uint32{1, 2}
	cfg.DeadAfter = 500 * time.Microsecond
	if _, err := tokenring.New(cfg); !errors.Is(err, liveness.ErrTimeoutRange) || !errors.Is(err, tokenring.ErrConfig) {
		t.Fatalf("sub-millisecond DeadAfter: %v", err)
	}
}

type failingPayload struct{}

func (failingPayload) AppendBinary([]byte) ([]byte, error) {
	return nil, errors.New("field out of range")
}

// TestOwnEncodingBugIsCounted: a payload of our own that fails to encode is
// a bug the core survives: no frame, a core_bug event, a "bug_" counter.
func TestOwnEncodingBugIsCounted(t *testing.T) {
	c := newCore(t, 1, 1, 2)
	c.Tick(t0)
	c.Ready()
	c.SendForTest(2, wire.KindToken, failingPayload{})
	rd := c.Ready()
	if len(rd.Messages) != 0 || len(events(rd, core.EventBug)) != 1 {
		t.Fatalf("messages %v, events %v", rd.Messages, rd.Events)
	}
	if n := c.Report().Counters["bug_encode_"+wire.KindToken.String()]; n != 1 {
		t.Fatalf("counters %v", c.Report().Counters)
	}
}
