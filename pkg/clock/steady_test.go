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
func TestSteadyTracksRealTime(t *testing.T) {
	s := NewSteady()
	if d := s.Now().Sub(time.Now()).Abs(); d > 10*time.Millisecond {
		t.Fatalf("starts %v from the wall clock", d)
	}
	a, m := s.Now(), time.Now()
	time.Sleep(50 * time.Millisecond)
	got, want := s.Now().Sub(a), time.Since(m)
	if diff := (got - want).Abs(); diff > want/10+time.Millisecond {
		t.Fatalf("steady interval %v, monotonic %v", got, want)
	}
	if r1, r2 := SteadyNow(), SteadyNow(); r2 < r1 {
		t.Fatalf("the raw clock went back: %v then %v", r1, r2)
	}
}
