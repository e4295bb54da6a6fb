package node

import (
	"testing"
	"time"
)

// scheduler is a recorder that says when it next needs Tick.
type scheduler struct {
	recorder
	deadline time.Time
}

func (s *scheduler) Deadline() time.Time { return s.deadline }

func TestNextTick(t *testing.T) {
	n, _ := newNode(t, 1, nil)
	if _, ok := n.NextTick(t0); ok || n.Scheduled() {
		t.Fatal("a core without Deadline got a deadline")
	}
	s := &scheduler{}
	n, err := New(Config{ID: 1, Members: members, Cluster: "lab", Incarnation: 1}, s)
	if err != nil {
		t.Fatal(err)
	}
	s.deadline = t0.Add(time.Hour)
	if _, ok := n.NextTick(t0); ok {
		t.Fatal("a deadline before the first Tick: the driver ticks first at its own phase")
	}
	n.Tick(t0)
	for _, tc := range []struct {
		name     string
		now      time.Time
		deadline time.Time
		want     time.Time
	}{
		{"nothing scheduled: housekeeping", t0, time.Time{}, t0.Add(MaxSleep)},
		{"far: at most MaxSleep", t0, t0.Add(time.Hour), t0.Add(MaxSleep)},
		{"the deadline", t0, t0.Add(300 * time.Millisecond), t0.Add(300 * time.Millisecond)},
		{"due since a step: at once", t0.Add(5 * time.Millisecond), t0.Add(time.Millisecond), t0.Add(5 * time.Millisecond)},
		{"not after the last Tick: stale", t0.Add(time.Millisecond), t0, t0.Add(StaleRetry)},
	} {
		s.deadline = tc.deadline
		got, ok := n.NextTick(tc.now)
		if !ok || !got.Equal(tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.name, got.Sub(t0), ok, tc.want.Sub(t0))
		}
	}
	if got := n.Status().StaleDeadlines; got != 1 {
		t.Errorf("stale deadlines counted %d, want 1", got)
	}
}
