package ntp

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func ms(n float64) time.Duration   { return time.Duration(n * float64(time.Millisecond)) }
func us(n float64) time.Duration   { return time.Duration(n * float64(time.Microsecond)) }
func at(d time.Duration) time.Time { return t0.Add(d) }

func TestOffsetDelayGolden(t *testing.T) {
	for _, tc := range []struct {
		name           string
		t1, t2, t3, t4 time.Time
		offset, delay  time.Duration
	}{
		// Server 100 ms ahead, symmetric 25 ms legs, 1 ms hold:
		// t2 = 0+25+100, t3 = t2+1, t4 = 0+25+1+25 = 51.
		{"symmetric", at(0), at(ms(125)), at(ms(126)), at(ms(51)), ms(100), ms(50)},
		// Asymmetric: 30 ms out, 20 ms back: the offset is off by
		// (30-20)/2 = 5 ms, the delay is still exact.
		// t2 = 30+100 = 130, t3 = 131, t4 = 30+1+20 = 51.
		{"asymmetric", at(0), at(ms(130)), at(ms(131)), at(ms(51)), ms(105), ms(50)},
		// Server behind by 2 s.
		// t2 = 10-2000, t3 = t2+5, t4 = 10+5+10 = 25.
		{"behind", at(0), at(ms(-1990)), at(ms(-1985)), at(ms(25)), ms(-2000), ms(20)},
		// Odd nanoseconds: (1+0)/2 truncates to 0, (1+1)/2 = 1.
		{"half-ns", at(0), at(1), at(1), at(1), 0, 1},
		{"one-ns", at(0), at(1), at(1), at(0), 1, 0},
		// A remote clock that answers "before" it received.
		{"remote-backwards", at(0), at(ms(10)), at(ms(5)), at(ms(1)), ms(7), ms(6)},
		// A hold time longer than the round trip: negative delay is
		// returned as is (MakeSample floors it); 12.5 ms truncates.
		{"negative-delay", at(0), at(ms(10)), at(ms(20)), at(ms(5)), ms(12.5), ms(-5)},
	} {
		off, del := OffsetDelay(tc.t1, tc.t2, tc.t3, tc.t4)
		if off != tc.offset || del != tc.delay {
			t.Errorf("%s: got offset %v delay %v, want %v %v", tc.name, off, del, tc.offset, tc.delay)
		}
	}
}

func TestOffsetDelayNoOverflow(t *testing.T) {
	// A zero (year 1) origin against 2026 timestamps saturates Sub; the
	// sum of the two saturated halves must not wrap around to a
	// negative offset.
	off, del := OffsetDelay(time.Time{}, t0, t0, t0)
	if off <= 0 {
		t.Errorf("offset %v: wrapped (want a large positive value)", off)
	}
	if del <= 0 {
		t.Errorf("delay %v: wrapped", del)
	}
	off, _ = OffsetDelay(t0, time.Time{}, time.Time{}, t0)
	if off >= 0 {
		t.Errorf("offset %v: want a large negative value", off)
	}
	if got := subSat(math.MinInt64, 1); got != math.MinInt64 {
		t.Errorf("subSat(min, 1) = %v", got)
	}
	if got := addSat(math.MaxInt64, 1); got != math.MaxInt64 {
		t.Errorf("addSat(max, 1) = %v", got)
	}
	if got := halfSum(math.MaxInt64, math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("halfSum(max, max) = %v", got)
	}
}

func TestMakeSample(t *testing.T) {
	// The "symmetric" exchange above with local precision 1 µs and a
	// remote precision of 2^-20 s (953 ns): dispersion = 1000 + 953 +
	// 15 ppm × 51 ms (765 ns) = 2718 ns.
	s := MakeSample(at(0), at(ms(125)), at(ms(126)), at(ms(51)), us(1), Precision(-20))
	want := Sample{Offset: ms(100), Delay: ms(50), Dispersion: 2718, Time: at(ms(51)), Sent: at(0)}
	if s != want {
		t.Errorf("got %+v, want %+v", s, want)
	}
	// Delay below the precision is floored at it.
	s = MakeSample(at(0), at(10), at(12), at(1), us(1), 1)
	if s.Delay != us(1) {
		t.Errorf("delay %v, want the 1µs floor", s.Delay)
	}
}

func TestPrecision(t *testing.T) {
	for exp, want := range map[int8]time.Duration{
		0: time.Second, 1: 2 * time.Second, -1: 500 * time.Millisecond,
		-10: 976562, -20: 953, -29: 1, -30: 1, -128: 1,
	} {
		if got := Precision(exp); got != want {
			t.Errorf("Precision(%d) = %v, want %v", exp, got, want)
		}
	}
	if Precision(100) <= 0 {
		t.Error("Precision(100) overflowed")
	}
}

func TestRootDistance(t *testing.T) {
	e := Estimate{Delay: ms(2), Dispersion: us(100), Jitter: us(50), Time: at(-time.Second), Updated: at(0)}
	// (10 ms + 2 ms)/2 + 1 ms + 100 µs + 15 ppm × 10 s (150 µs) + 50 µs
	got := RootDistance(ms(10), ms(1), e, at(10*time.Second))
	if want := ms(6) + ms(1) + us(100) + us(150) + us(50); got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}
