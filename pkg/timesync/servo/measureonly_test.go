package servo

import (
	"math"
	"testing"
	"time"
)

// TestMeasureOnlyOpenLoop: with MeasureOnly the servo commands nothing and
// models the clock nobody corrects: measurements of a clock 30 ms behind
// and drifting at +20 ppm give no adjustment, no correction, nothing
// pending or slewed; the offset acted on and predicted is the clock's
// (30 ms minus what the drift took since), the frequency the correction it
// would make (-20 ppm), and the bound holds the untouched clock's truth.
func TestMeasureOnlyOpenLoop(t *testing.T) {
	s, err := New(Config{MeasureOnly: true, StepThreshold: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	const drift = 20.0 // ppm: the clock gains, its offset (reference minus local) falls
	truth := func(local time.Time) time.Duration {
		return 30*time.Millisecond - time.Duration(drift*1e-6*float64(local.Sub(start)))
	}
	for k := range 20 {
		at := start.Add(time.Duration(k) * time.Second)
		now := at.Add(10 * time.Millisecond)
		res, err := s.Update(now, Measurement{Time: at, Offset: truth(at), RootDistance: 50 * time.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Adjustments) != 0 || res.Correction != 0 || res.Action != ActionNone {
			t.Fatalf("update %d: adjustments %v, correction %v, action %v: want none", k, res.Adjustments, res.Correction, res.Action)
		}
		if d := res.Offset - truth(now); d.Abs() > time.Microsecond {
			t.Fatalf("update %d: offset acted on %v, want the clock's %v", k, res.Offset, truth(now))
		}
		later := now.Add(500 * time.Millisecond)
		if p, sl := s.Pending(later), s.Slewed(at, later); p != 0 || sl != 0 {
			t.Fatalf("update %d: pending %v, slewed %v: want 0", k, p, sl)
		}
		if off, _ := s.Offset(later); k > 2 && (off-truth(later)).Abs() > time.Microsecond {
			t.Fatalf("update %d: predicted %v half a second later, want %v", k, off, truth(later))
		}
		lo, hi := s.Bound(later)
		if ref := later.Add(truth(later)); ref.Before(lo) || ref.After(hi) {
			t.Fatalf("update %d: true time %v outside [%v, %v]", k, ref, lo, hi)
		}
	}
	if f := s.Frequency(); math.Abs(f+drift) > 0.01 {
		t.Errorf("frequency %.4f ppm, want the correction it would make, %.1f", f, -drift)
	}
	if st := s.State(); st.Updates != 20 || (st.LastOffset-truth(st.LastUpdate.Add(10*time.Millisecond))).Abs() > time.Microsecond {
		t.Errorf("state %+v", st)
	}
}
