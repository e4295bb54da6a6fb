package tokenring_test

import (
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/tokenring"
)

// TestMetrics: a lock taken at one member and then at another shows up in
// both members' metrics as grants, a handoff and a held lock, and every
// sample follows the conventions.
func TestMetrics(t *testing.T) {
	s := sim.New(sim.Config{Seed: 3})
	ids := []uint32{1, 2, 3}
	addMembers(t, s, ids)
	s.Run(100 * time.Millisecond)
	ring := func(id uint32) *tokenring.Core { return s.Core(id).(*tokenring.Core) }
	granted := func(n int) {
		t.Helper()
		if !s.RunUntil(func() bool { return len(s.EventsNamed(mutex.EventGranted)) == n }, 5*time.Second) {
			t.Fatalf("grant %d did not come\n%s", n, s.Log())
		}
	}
	var first mutex.RequestID
	s.Do(1, func(c core.Core) { first, _ = c.(*tokenring.Core).Acquire(s.Clock(1).Now(), mutex.Request{Lock: "db"}) })
	granted(1)
	s.Do(1, func(c core.Core) { c.(*tokenring.Core).Release(s.Clock(1).Now(), first) })
	s.Do(2, func(c core.Core) { c.(*tokenring.Core).Acquire(s.Clock(2).Now(), mutex.Request{Lock: "db"}) })
	granted(2)

	for _, w := range []struct {
		id    uint32
		name  string
		label []core.Label
		want  float64
	}{
		{1, "synclab_mutex_grants_total", nil, 1},
		{1, "synclab_mutex_regenerations_total", nil, 1},
		{1, "synclab_mutex_tokens_passed_total", nil, 1},
		{1, "synclab_mutex_locks_held", nil, 0},
		{1, "synclab_mutex_members_alive", nil, 3},
		{1, "synclab_mutex_losses_total", []core.Label{{Name: "reason", Value: "expired"}}, 0},
		{2, "synclab_mutex_grants_total", nil, 1},
		{2, "synclab_mutex_tokens_received_total", nil, 1},
		{2, "synclab_mutex_locks_held", nil, 1},
		{2, "synclab_mutex_tokens_here", nil, 1},
		{2, "synclab_mutex_queue_length", nil, 0},
		{2, "synclab_mutex_member_alive", []core.Label{{Name: "member", Value: "3"}}, 1},
	} {
		var m core.MetricSet
		ring(w.id).Metrics(&m)
		if err := m.Err(); err != nil {
			t.Fatal(err)
		}
		if got, ok := m.Value(w.name, w.label...); !ok || got != w.want {
			t.Errorf("member %d: %s%v = %v (present %v), want %v", w.id, w.name, w.label, got, ok, w.want)
		}
	}
	var m core.MetricSet
	ring(2).Metrics(&m)
	fence, _ := m.Value("synclab_mutex_fence", core.Label{Name: "lock", Value: "db"})
	if want := ring(2).Report().Locks[0].Fence; fence != float64(want) || want == 0 {
		t.Errorf("fence metric %v, status %d", fence, want)
	}
}

// TestMetricsSkippedForAMissedHeartbeat: a successor that missed a
// heartbeat, not down and never handed a token, is passed by and counted
// in synclab_mutex_members_skipped, whose help (and the member state
// mutex.MemberSkipped) says so: it said "failed to acknowledge a token"
// alone, and an administrator looking for a failed handoff found none.
func TestMetricsSkippedForAMissedHeartbeat(t *testing.T) {
	s := sim.New(sim.Config{Seed: 5})
	ids := []uint32{1, 2, 3}
	addMembers(t, s, ids)
	s.Run(100 * time.Millisecond)
	var first mutex.RequestID
	s.Do(1, func(c core.Core) { first, _ = c.(*tokenring.Core).Acquire(s.Clock(1).Now(), mutex.Request{Lock: "db"}) })
	if !s.RunUntil(func() bool { return len(s.EventsNamed(mutex.EventGranted)) == 1 }, 5*time.Second) {
		t.Fatalf("no grant at member 1\n%s", s.Log())
	}
	s.Do(1, func(c core.Core) { c.(*tokenring.Core).Release(s.Clock(1).Now(), first) })
	s.Crash(2)
	s.Run(tokenring.DefaultLANConfig().HeartbeatInterval * 2) // a heartbeat missed, far from down
	s.Do(3, func(c core.Core) { c.(*tokenring.Core).Acquire(s.Clock(3).Now(), mutex.Request{Lock: "db"}) })
	if !s.RunUntil(func() bool { return len(s.EventsNamed(mutex.EventGranted)) == 2 }, 5*time.Second) {
		t.Fatalf("no grant at member 3\n%s", s.Log())
	}
	var quiet bool
	for _, e := range s.EventsNamed(tokenring.EventMemberSkipped) {
		quiet = quiet || strings.Contains(e.Msg, "a heartbeat missed")
	}
	var m core.MetricSet
	s.Core(1).(*tokenring.Core).Metrics(&m)
	if got, _ := m.Value("synclab_mutex_members_skipped"); got != 1 || !quiet {
		t.Fatalf("members_skipped %v, a skip for a missed heartbeat said %v: want 1, true\n%s", got, quiet, s.Log())
	}
	for _, f := range m.Families() {
		if f.Name == "synclab_mutex_members_skipped" && !strings.Contains(f.Help, "heartbeat") {
			t.Errorf("synclab_mutex_members_skipped counts a member that missed a heartbeat, but its help says only: %q", f.Help)
		}
	}
}
