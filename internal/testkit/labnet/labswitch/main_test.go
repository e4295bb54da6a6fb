package main

import (
	"errors"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/labnet/l2switch"
)

func TestApplyKV(t *testing.T) {
	l := l2switch.Link{Loss: 5, Down: true}
	if err := applyKV(&l, []string{"delay=2ms", "jitter=100us", "dup=1.5", "down=false"}); err != nil {
		t.Fatal(err)
	}
	want := l2switch.Link{Delay: 2 * time.Millisecond, Jitter: 100 * time.Microsecond, Loss: 5, Duplicate: 1.5}
	if l != want {
		t.Errorf("got %+v, want %+v (fields not named must be kept)", l, want)
	}
	for _, bad := range [][]string{{"delay"}, {"speed=1"}, {"loss=x"}, {"loss=101"}, {"delay=-1ms"}} {
		l := l2switch.Link{}
		if err := applyKV(&l, bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if err := applyKV(&l, []string{"loss=200"}); !errors.Is(err, l2switch.ErrBadLink) {
		t.Errorf("loss=200: %v, want ErrBadLink", err)
	}
}

func TestPair(t *testing.T) {
	if a, b, err := pair("h1", "3"); a != 1 || b != 3 || err != nil {
		t.Errorf("pair(h1, 3) = %d, %d, %v", a, b, err)
	}
	if _, _, err := pair("hx", "2"); err == nil {
		t.Error("pair(hx, 2): no error")
	}
}
