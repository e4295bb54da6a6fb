package servo

import (
	"errors"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/clock"
)

// The stages of Update, each alone.

func TestCheckStage(t *testing.T) {
	s := mustNew(t, Config{})
	good := Measurement{Time: sec(1), Offset: ms(1), RootDistance: ms(1)}
	for name, tc := range map[string]struct {
		now  time.Time
		m    Measurement
		want error
	}{
		"good":            {sec(2), good, nil},
		"no time":         {sec(2), Measurement{}, ErrBadMeasurement},
		"negative dist":   {sec(2), Measurement{Time: sec(1), RootDistance: -1}, ErrBadMeasurement},
		"from the future": {sec(0), good, ErrFutureMeasurement},
	} {
		if err := s.check(tc.now, tc.m); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if _, err := s.Update(sec(2), good); err != nil {
		t.Fatal(err)
	}
	if err := s.check(sec(3), good); !errors.Is(err, ErrOutOfOrder) {
		t.Errorf("the same measurement again: %v, want ErrOutOfOrder", err)
	}
}

func TestObserveStageKeepsTheWindow(t *testing.T) {
	s := mustNew(t, Config{FrequencyWindow: 4})
	s.epoch = sec(0)
	for i := range 10 {
		s.observe(Measurement{Time: sec(float64(i)), Offset: ms(float64(i)), RootDistance: ms(1)})
	}
	if len(s.points) != 4 || s.points[0].x != 6 || s.points[3].y != -float64(ms(9)) {
		t.Errorf("points %+v, want the last 4, y = -offset", s.points)
	}
}

func TestProjectStage(t *testing.T) {
	s := mustNew(t, Config{})
	// A clock drifting +10 ppm, not corrected: in 100 s it gains 1 ms more.
	got := s.project(sec(100), sec(0), estimation{theta: float64(ms(-5)), drift: 10, ok: true})
	if want := float64(ms(-5) - ms(1)); got != want {
		t.Errorf("projected %v, want %v", got, want)
	}
	if got := s.project(sec(100), sec(0), estimation{theta: 7}); got != 7 {
		t.Errorf("without a known drift: %v, want the estimate itself", got)
	}
}

func TestCommandStage(t *testing.T) {
	s := mustNew(t, Config{StepThreshold: ms(100), StepLimit: 1})
	res, actual, _ := s.command(sec(1), float64(time.Second))
	if res.Action != ActionStep || res.Correction != time.Second || actual != 0 {
		t.Errorf("1 s in the makestep window: %+v, actual %v", res, actual)
	}
	s.updates = 1 // past the window: slew
	res, _, pending := s.command(sec(2), float64(time.Second))
	if res.Action != ActionSlew || time.Duration(pending) != time.Second || res.Adjustments[0].Kind != clock.AdjustSlew {
		t.Errorf("past the window: %+v, pending %v", res, pending)
	}
}
