package central

import (
	"strings"
	"testing"
	"time"
)

// TestWithholdingAfterRecovery: a write carrying a promise fails at +100
// ms (its frames withheld), the next one saves it at +150 ms (frames leave
// from then on), then a write without a promise (the election's
// Change(false)) fails at +300 ms, which withholds nothing. A renewal
// unanswered since +0 must not be blamed on writes that "keep every frame
// home", the link cleared (a review: it was, naming the 300 ms failure).
func TestWithholdingAfterRecovery(t *testing.T) {
	t0 := time.Unix(0, 0)
	var w writeHealth
	write := func(at time.Duration, promise, saved bool) {
		w.handed, w.promise = true, promise
		w.advance(t0.Add(at), saved)
	}
	write(100*time.Millisecond, true, false)
	write(150*time.Millisecond, true, true)
	write(300*time.Millisecond, false, false)
	msg := w.withholding(t0.Add(400*time.Millisecond), t0)
	if strings.Contains(msg, "have not left") || strings.Contains(msg, "the link is not to blame") || !strings.Contains(msg, "may have left only since") {
		t.Errorf("frames leave since the promise was saved at 150ms, yet the warning says: %s", msg)
	}
	write(500*time.Millisecond, true, false)
	if msg := w.withholding(t0.Add(600*time.Millisecond), t0); !strings.Contains(msg, "have not left") {
		t.Errorf("a promise unsaved since 500ms keeps every frame home, yet the warning says: %s", msg)
	}
}
