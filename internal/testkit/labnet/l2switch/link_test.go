package l2switch

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestLinkValidate(t *testing.T) {
	good := []Link{
		{},
		{Delay: time.Millisecond, Jitter: time.Millisecond, Loss: 100, Duplicate: 0.5, Down: true},
		{Delay: MaxDelay, Jitter: MaxDelay},
	}
	for _, l := range good {
		if err := l.Validate(); err != nil {
			t.Errorf("%+v: %v", l, err)
		}
	}
	bad := []Link{
		{Delay: -1},
		{Jitter: -1},
		{Delay: MaxDelay + 1},
		{Loss: 100.5},
		{Loss: -1},
		{Duplicate: 101},
		{Loss: math.NaN()},
		{Duplicate: math.NaN()},
	}
	for _, l := range bad {
		if err := l.Validate(); !errors.Is(err, ErrBadLink) {
			t.Errorf("%+v: got %v, want ErrBadLink", l, err)
		}
	}
}
