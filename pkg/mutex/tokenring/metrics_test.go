package tokenring_test

import (
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
