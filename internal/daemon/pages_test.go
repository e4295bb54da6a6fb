package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

// TestReleaseLater: the pages are released again once the daemon has
// settled, then at every interval, never before the first, and no more
// once the daemon stops; a release that fails is not fatal.
func TestReleaseLater(t *testing.T) {
	const settled, every = 30 * time.Millisecond, 10 * time.Millisecond
	var n atomic.Int32
	first := make(chan time.Time, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t0 := time.Now()
	go func() {
		defer close(done)
		releaseLater(ctx, func() error {
			if n.Add(1) == 1 {
				first <- time.Now()
			}
			return errors.New("madvise refused")
		}, settled, every, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	select {
	case at := <-first:
		if el := at.Sub(t0); el < settled {
			t.Errorf("first release %v after the start, before it settled (%v)", el, settled)
		}
	case <-time.After(hangGuard):
		t.Fatal("never released")
	}
	deadline := time.Now().Add(hangGuard)
	for n.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d releases, want them repeated every %v", n.Load(), every)
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatal("releaseLater did not end with its context")
	}
	after := n.Load()
	time.Sleep(5 * every)
	if n.Load() != after {
		t.Error("released after the context ended")
	}
}
