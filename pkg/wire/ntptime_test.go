package wire

import (
	"math"
	"testing"
	"time"
)

// eraBoundary is the first instant of NTP era 1.
var eraBoundary = time.Date(2036, 2, 7, 6, 28, 16, 0, time.UTC)

func TestNTPTimeKnownValues(t *testing.T) {
	cases := []struct {
		t    time.Time
		want NTPTime
	}{
		{time.Unix(0, 0), 2208988800 << 32},
		{time.Date(1900, 1, 1, 0, 0, 1, 0, time.UTC), 1 << 32},
		{time.Date(2026, 11, 22, 8, 0, 0, 500_000_000, time.UTC), 0xeead1f80_80000000},
		{time.Date(2026, 11, 22, 8, 0, 0, 250_000_000, time.UTC), 0xeead1f80_40000000},
		{eraBoundary.Add(time.Second), 1 << 32},                          // era 1, seconds 1
		{eraBoundary.Add(-time.Second), 0xffffffff_00000000},             // last second of era 0
		{time.Unix(0, 1), 2208988800<<32 | 4},                            // 1 ns = 4.29 units: 4
		{time.Unix(0, 999_999_999), 2208988800<<32 | 0xfffffffc},         // 0xfffffffb.b units: no carry
		{time.Unix(0, 999_999_999).Add(-1), 2208988800<<32 | 0xfffffff7}, // 999999998 ns
	}
	for _, c := range cases {
		if got := NTPTimeFromTime(c.t); got != c.want {
			t.Errorf("NTPTimeFromTime(%v) = %#x, want %#x", c.t, uint64(got), uint64(c.want))
		}
	}
	if NTPTimeFromTime(time.Time{}) != 0 || !NTPTime(0).Time().IsZero() || !NTPTime(0).IsZero() {
		t.Error("zero does not map to zero")
	}
}

// Every nanosecond maps to the nearest 2^-32 s, and back to itself.
func TestNTPTimeRounding(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, ns := range []int64{0, 1, 2, 3, 232, 233, 499_999_999, 500_000_000, 999_999_998, 999_999_999} {
		tm := base.Add(time.Duration(ns))
		q := NTPTimeFromTime(tm)
		exact := float64(ns) * (1 << 32) / 1e9
		frac := float64(q.Fraction())
		if q.Seconds() != NTPTimeFromTime(base).Seconds() {
			frac += 1 << 32 // carried
		}
		if math.Abs(frac-exact) > 0.5 {
			t.Errorf("%d ns: fraction %v, exact %v", ns, frac, exact)
		}
		if back := q.Time(); !back.Equal(tm) {
			t.Errorf("%d ns: round trip %v, want %v", ns, back, tm)
		}
	}
	// Round trip over a sweep of instants spanning both eras.
	for s := int64(-2_000_000_000); s < 4_000_000_000; s += 7_777_777 {
		tm := time.Unix(s, s%1_000_000_000*7%1_000_000_000)
		if s%1_000_000_000 < 0 {
			tm = time.Unix(s, 123)
		}
		if tm.Before(time.Date(1968, 1, 20, 3, 14, 9, 0, time.UTC)) || !tm.Before(time.Date(2104, 2, 26, 9, 42, 23, 0, time.UTC)) {
			continue
		}
		if back := NTPTimeFromTime(tm).Time(); !back.Equal(tm) {
			t.Fatalf("%v: round trip %v", tm, back)
		}
	}
}

func TestNTPTimeEra(t *testing.T) {
	for _, d := range []time.Duration{
		-100 * 365 * 24 * time.Hour / 2, -time.Hour, -time.Second, -time.Nanosecond,
		time.Nanosecond, time.Second, time.Hour, 50 * 365 * 24 * time.Hour,
	} {
		tm := eraBoundary.Add(d)
		got := NTPTimeFromTime(tm).Time()
		if !got.Equal(tm) {
			t.Errorf("boundary%+v: %v, want %v", d, got, tm)
		}
	}
	// Both ends of the pivot window.
	lo := time.Date(1968, 1, 20, 3, 14, 8, 0, time.UTC)
	hi := time.Date(2104, 2, 26, 9, 42, 24, 0, time.UTC)
	if got := NTPTimeFromTime(lo).Time(); !got.Equal(lo) {
		t.Errorf("low end: %v", got)
	}
	if got := NTPTimeFromTime(hi.Add(-time.Second)).Time(); !got.Equal(hi.Add(-time.Second)) {
		t.Errorf("high end: %v", got)
	}
	// One second past the high end wraps to the low end: the documented limit.
	if got := NTPTimeFromTime(hi).Time(); !got.Equal(lo) {
		t.Errorf("past the high end: %v, want %v", got, lo)
	}
}

func TestNTPTimeNear(t *testing.T) {
	for _, c := range []struct{ tm, pivot time.Time }{
		{eraBoundary.Add(-time.Minute), eraBoundary.Add(time.Hour)},
		{eraBoundary.Add(time.Minute), eraBoundary.Add(-time.Hour)},
		{time.Date(2150, 3, 4, 5, 6, 7, 8, time.UTC), time.Date(2149, 1, 1, 0, 0, 0, 0, time.UTC)}, // era 2
		{time.Date(1950, 3, 4, 5, 6, 7, 8, time.UTC), time.Date(1949, 1, 1, 0, 0, 0, 0, time.UTC)}, // era 0, below Time's window
		{time.Date(1880, 3, 4, 5, 6, 7, 8, time.UTC), time.Date(1890, 1, 1, 0, 0, 0, 0, time.UTC)}, // era -1
		{time.Date(2026, 11, 22, 8, 0, 0, 1, time.UTC), time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)},
	} {
		if got := NTPTimeFromTime(c.tm).TimeNear(c.pivot); !got.Equal(c.tm) {
			t.Errorf("TimeNear(%v) of %v = %v", c.pivot, c.tm, got)
		}
	}
	if !NTPTime(0).TimeNear(eraBoundary).IsZero() {
		t.Error("0 is not unset")
	}
}

func TestNTPTimeSubAdd(t *testing.T) {
	a := NTPTimeFromTime(eraBoundary.Add(-300 * time.Millisecond))
	b := NTPTimeFromTime(eraBoundary.Add(700 * time.Millisecond))
	if b < a == false {
		t.Fatal("test setup: the pair should straddle the wrap")
	}
	if d := b.Sub(a); d != time.Second {
		t.Errorf("across the era: %v", d)
	}
	if d := a.Sub(b); d != -time.Second {
		t.Errorf("across the era, negative: %v", d)
	}
	for _, d := range []time.Duration{0, 1, -1, 125 * time.Microsecond, -3 * time.Hour, 68 * 365 * 24 * time.Hour, -68 * 365 * 24 * time.Hour} {
		if got := a.Add(d).Sub(a); got != d {
			t.Errorf("Add(%v).Sub = %v", d, got)
		}
		if got := a.Add(d).Time(); !got.Equal(a.Time().Add(d)) && d < time.Hour && d > -time.Hour {
			t.Errorf("Add(%v).Time = %v", d, got)
		}
	}
	if got := NTPTime(1<<32 | 1<<31).Sub(1 << 32); got != 500*time.Millisecond {
		t.Errorf("half second: %v", got)
	}
}

func TestNTPShort(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want NTPShort
	}{
		{0, 0},
		{-time.Second, 0},
		{time.Second, 1 << 16},
		{62500 * time.Microsecond, 0x1000},
		{15258 * time.Nanosecond, 1},             // 2^-16 s = 15258.8 ns
		{15259 * time.Nanosecond, 2},             // just over one unit: up, never down
		{time.Nanosecond, 1},                     // a bound is never said as 0
		{7629 * time.Nanosecond, 1},              // under half a unit: still up
		{time.Second - time.Nanosecond, 1 << 16}, // carries
		{65535*time.Second + 999_990_000, 0xffffffff},
		{70000 * time.Second, 0xffffffff}, // saturates
	}
	for _, c := range cases {
		if got := NTPShortFromDuration(c.d); got != c.want {
			t.Errorf("NTPShortFromDuration(%v) = %#x, want %#x", c.d, uint32(got), uint32(c.want))
		}
	}
	if d := NTPShort(0x1000).Duration(); d != 62500*time.Microsecond {
		t.Errorf("0x1000 = %v", d)
	}
	if d := NTPShort(1).Duration(); d != 15259*time.Nanosecond {
		t.Errorf("1 unit = %v", d)
	}
	for d := time.Duration(0); d < 3*time.Second; d += 1234567 {
		back := NTPShortFromDuration(d).Duration()
		if diff := back - d; diff > 15259 || diff < 0 {
			t.Fatalf("%v -> %v", d, back)
		}
	}
}
