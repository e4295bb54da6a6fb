package clock

import (
	"errors"
	"time"
)

// Steady is a read-only clock for measuring durations that must hold in
// real time whatever anyone does to the system clock: mutexd's leases.
//
// The system clock (CLOCK_REALTIME) is stepped by administrators and
// slewed by timed at up to 83,333 ppm, and on Linux CLOCK_MONOTONIC, which
// Go's timers and time.Since use, is slewed by the same adjtimex calls (the
// tick length moves both). A lease measured on either could last 8% longer
// in real time than the member granting it believes, far beyond the
// 1000 ppm a lease protocol can pad for. Steady counts the oscillator
// itself (CLOCK_MONOTONIC_RAW, never adjusted; a good crystal is within
// 100 ppm of true), anchored at the wall time it was created, so its
// readings look like wall times but its intervals are raw.
//
// Elsewhere than Linux it falls back to Go's monotonic clock.
type Steady struct {
	wall     time.Time     // CLOCK_REALTIME when created
	raw      time.Duration // the raw clock then
	readRaw  func() time.Duration
	readWall func() time.Time
}

var _ Clock = (*Steady)(nil)

// NewSteady returns a Steady clock anchored at the current wall time.
func NewSteady() *Steady {
	s := &Steady{readRaw: rawNow, readWall: func() time.Time { return time.Now().Round(0) }}
	s.wall, s.raw = s.readWall(), s.readRaw()
	return s
}

// Now reads the clock: the anchor plus the raw time elapsed since.
func (s *Steady) Now() time.Time {
	return s.wall.Add(s.readRaw() - s.raw)
}

// FromKernel converts a CLOCK_REALTIME stamp (a packet's receive time) to
// this clock: as long before Now as it is before the wall clock's now.
func (s *Steady) FromKernel(t time.Time) time.Time {
	return s.Now().Add(t.Sub(s.readWall()))
}

// ErrSteady is returned by every writing method: a Steady clock measures,
// it is never corrected.
var ErrSteady = errors.New("clock: the steady clock cannot be adjusted")

func (*Steady) Slew(time.Duration) error                         { return ErrSteady }
func (*Steady) Step(time.Duration) error                         { return ErrSteady }
func (*Steady) SetFrequency(float64) error                       { return ErrSteady }
func (*Steady) SetSync(bool, time.Duration, time.Duration) error { return ErrSteady }

// State reports nothing to discipline: a steady clock is never corrected.
func (*Steady) State() (State, error) { return State{}, nil }

// SteadyNow reads the raw clock (an arbitrary origin; only differences
// mean anything): for programs that keep their own deadlines (mutexd lock)
// on the time scale of the daemon's leases.
func SteadyNow() time.Duration { return rawNow() }
