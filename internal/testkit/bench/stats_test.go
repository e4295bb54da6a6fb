package bench

import (
	"fmt"
	"testing"
	"time"
)

func ms(v ...int) []time.Duration {
	d := make([]time.Duration, len(v))
	for i, x := range v {
		d[i] = time.Duration(x) * time.Millisecond
	}
	return d
}

func TestPercentileNearestRank(t *testing.T) {
	sorted := ms(10, 20, 30, 40, 50, 60, 70, 80, 90, 100)
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{
		{1, 10 * time.Millisecond},   // rank ceil(0.1) = 1
		{10, 10 * time.Millisecond},  // rank 1 exactly
		{11, 20 * time.Millisecond},  // rank ceil(1.1) = 2
		{50, 50 * time.Millisecond},  // rank 5
		{51, 60 * time.Millisecond},  // rank ceil(5.1) = 6
		{90, 90 * time.Millisecond},  // rank 9
		{99, 100 * time.Millisecond}, // rank ceil(9.9) = 10: the maximum
		{100, 100 * time.Millisecond},
	} {
		if got := Percentile(sorted, tc.p); got != tc.want {
			t.Errorf("Percentile(p%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func TestPercentileP99NeedsHundredSamples(t *testing.T) {
	// 200 samples 1..200 ms: p99 is rank 198, below the maximum.
	var s []time.Duration
	for i := 1; i <= 200; i++ {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	if got := Percentile(s, 99); got != 198*time.Millisecond {
		t.Errorf("p99 of 1..200 ms = %v, want 198ms", got)
	}
}

func TestPercentilePanicsOnBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    []time.Duration
		p    float64
	}{
		{"empty", nil, 50},
		{"p0", ms(1), 0},
		{"p101", ms(1), 101},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Percentile(%v, %v) did not panic", tc.s, tc.p)
				}
			}()
			Percentile(tc.s, tc.p)
		})
	}
}

func TestSummarize(t *testing.T) {
	in := ms(300, 100, 200, 400)
	s := Summarize(in)
	want := Summary{N: 4, Min: 100 * time.Millisecond, P50: 200 * time.Millisecond, P99: 400 * time.Millisecond,
		Max: 400 * time.Millisecond, Mean: 250 * time.Millisecond}
	if s != want {
		t.Errorf("Summarize = %+v, want %+v", s, want)
	}
	if in[0] != 300*time.Millisecond {
		t.Error("Summarize sorted its argument in place")
	}
	if z := Summarize(nil); z.N != 0 || z.String() != "no samples" {
		t.Errorf("Summarize(nil) = %+v %q", z, z)
	}
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Millis(512345 * time.Microsecond), "512.3 ms"},
		{Millis(0), "0.0 ms"},
		{MB(14_700_000), "14.7 MB"},
		{Rate(2400*30, 30*time.Second), "2400 B/s"},
		{Rate(1, 0), "-"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func ExampleSummarize() {
	s := Summarize([]time.Duration{
		383 * time.Millisecond, 429 * time.Millisecond, 401 * time.Millisecond, 415 * time.Millisecond,
	})
	fmt.Println(s)
	// Output: p50 401.0 ms  p99 429.0 ms  max 429.0 ms (n=4)
}
