package truetime

import (
	"testing"
	"time"
)

// publishedPage creates a page in a temporary directory with a bound
// published now, and a Reader of it.
func publishedPage(tb testing.TB) *Reader {
	_, pub, r := filePage(tb)
	now := time.Now()
	p := synced(now, -time.Millisecond, time.Millisecond)
	p.StaleAfter = time.Hour
	pub.Publish(p)
	return r
}

// TestNowZeroAlloc: a read allocates nothing.
func TestNowZeroAlloc(t *testing.T) {
	r := publishedPage(t)
	if n := testing.AllocsPerRun(1000, func() {
		if _, _, err := r.Now(); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Now allocates %v times per call", n)
	}
}

// BenchmarkNow is a read of the bound: a clock_gettime through the vDSO
// (time.Now) and the page's atomic loads. Compare BenchmarkTimeNow and
// BenchmarkClockGettime (clock_test.go).
func BenchmarkNow(b *testing.B) {
	r := publishedPage(b)
	for b.Loop() {
		if _, _, err := r.Now(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNowParallel: readers on every P at once (the page is read-only
// for them: no cache line bounces while the daemon does not write).
func BenchmarkNowParallel(b *testing.B) {
	r := publishedPage(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := r.Now(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkTimeNow is Go's clock read: clock_gettime(CLOCK_REALTIME) and
// CLOCK_MONOTONIC through the vDSO.
func BenchmarkTimeNow(b *testing.B) {
	var t time.Time
	for b.Loop() {
		t = time.Now()
	}
	_ = t
}
