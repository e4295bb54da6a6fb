package clock

import (
	"errors"
	"testing"
	"time"
)

// TestSteadyIgnoresWallClockChanges: stepping or slewing the wall clock
// moves neither Steady's readings nor its intervals; only the raw clock
// does. Packet stamps on the wall clock are converted by their distance
// from the wall clock's now.
func TestSteadyIgnoresWallClockChanges(t *testing.T) {
	wall := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	raw := 1000 * time.Second
	s := &Steady{readRaw: func() time.Duration { return raw }, readWall: func() time.Time { return wall }}
	s.wall, s.raw = s.readWall(), s.readRaw()
	start := s.Now()
	if !start.Equal(wall) {
		t.Fatalf("anchored at %v, want %v", start, wall)
	}
	// An administrator steps the wall clock back an hour; timed slews it
	// 8% fast for a second. The oscillator counts 2 s meanwhile.
	wall = wall.Add(-time.Hour).Add(2*time.Second + 160*time.Millisecond)
	raw += 2 * time.Second
	if got := s.Now().Sub(start); got != 2*time.Second {
		t.Fatalf("interval %v, want the raw 2s", got)
	}
	// A packet stamped 3 ms ago on the wall clock arrived 3 ms ago here.
	if got := s.Now().Sub(s.FromKernel(wall.Add(-3 * time.Millisecond))); got != 3*time.Millisecond {
		t.Fatalf("FromKernel: %v ago, want 3ms", got)
	}
	for _, err := range []error{s.Slew(time.Second), s.Step(time.Second), s.SetFrequency(1), s.SetSync(true, 0, 0)} {
		if !errors.Is(err, ErrSteady) {
			t.Errorf("a write was not refused: %v", err)
		}
	}
}

// TestSteadyTracksRealTime: on this machine, a real Steady starts at the
// wall time and runs at the rate of the monotonic clock (to within what a
// slew could explain).
//
// Nothing here races the scheduler: every reading of the clock under test
// is bracketed by readings of the reference, so a goroutine descheduled
// between two readings (a loaded host) widens a bracket instead of failing
// a margin. The sleep only makes the interval long enough that a slew's 10%
// stands out against the microseconds of the readings themselves.
func TestSteadyTracksRealTime(t *testing.T) {
	w1 := time.Now().Round(0)
	s := NewSteady()
	w2 := time.Now().Round(0)
	if s.wall.Before(w1) || s.wall.After(w2) {
		t.Fatalf("anchored at %v, not between the wall readings %v and %v around NewSteady", s.wall, w1, w2)
	}
	m1 := time.Now()
	a := s.Now()
	m2 := time.Now()
	time.Sleep(50 * time.Millisecond)
	m3 := time.Now()
	b := s.Now()
	m4 := time.Now()
	// The steady interval b-a lies between the monotonic intervals m3-m2
	// (inside) and m4-m1 (outside), give or take the 10% a slew of the
	// monotonic clock could explain (and a microsecond of granularity).
	got, inner, outer := b.Sub(a), m3.Sub(m2), m4.Sub(m1)
	if got < inner*9/10-time.Microsecond || got > outer*11/10+time.Microsecond {
		t.Fatalf("steady interval %v, monotonic between %v and %v", got, inner, outer)
	}
	if r1, r2 := SteadyNow(), SteadyNow(); r2 < r1 {
		t.Fatalf("the raw clock went back: %v then %v", r1, r2)
	}
}
