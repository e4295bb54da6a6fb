package daemon

import (
	"testing"
	"time"
)

// TestFDTimer: the loop's timerfd fires once per arming, no earlier than
// armed; Reset drops a firing not yet received (as time.Timer does, so the
// loop never ticks for a deadline it has moved); Stop ends it for good.
func TestFDTimer(t *testing.T) {
	tm, err := newFDTimer(20 * time.Millisecond)
	if err != nil {
		t.Fatalf("timerfd: %v", err)
	}
	defer tm.Stop()
	t0 := time.Now()
	select {
	case <-tm.Chan():
		if el := time.Since(t0); el < 20*time.Millisecond {
			t.Errorf("fired after %v, armed for 20 ms", el)
		}
	case <-time.After(hangGuard):
		t.Fatal("never fired")
	}
	select {
	case <-tm.Chan():
		t.Fatal("fired twice for one arming")
	case <-time.After(50 * time.Millisecond):
	}

	// At once for d <= 0 (a zero it_value would disarm the timerfd).
	tm.Reset(0)
	select {
	case <-tm.Chan():
	case <-time.After(hangGuard):
		t.Fatal("Reset(0) never fired")
	}

	// A firing delivered but not received is dropped by Reset.
	tm.Reset(time.Nanosecond)
	deadline := time.Now().Add(hangGuard)
	for len(tm.c) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("Reset(1ns) never fired")
		}
		time.Sleep(time.Millisecond)
	}
	if tm.Reset(time.Hour) {
		t.Error("Reset reported an armed timer after it fired")
	}
	select {
	case <-tm.Chan():
		t.Fatal("a firing from before Reset was received after it")
	case <-time.After(50 * time.Millisecond):
	}

	if !tm.Stop() {
		t.Error("Stop of a timer armed for an hour reported it not armed")
	}
	if tm.Stop() || tm.Reset(time.Nanosecond) {
		t.Error("a stopped timer reported armed")
	}
	select {
	case <-tm.Chan():
		t.Fatal("a stopped timer fired")
	case <-time.After(50 * time.Millisecond):
	}
}
