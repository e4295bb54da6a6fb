package bench

import (
	"testing"
	"time"
)

func TestSpread(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		offs []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{5 * ms}, 0},
		{[]time.Duration{-2 * ms, 3 * ms, ms}, 5 * ms},
		{[]time.Duration{-2 * ms, -3 * ms}, ms},
	} {
		if got := Spread(tc.offs); got != tc.want {
			t.Errorf("Spread(%v) = %v, want %v", tc.offs, got, tc.want)
		}
	}
}

func TestSettledAt(t *testing.T) {
	s := time.Second
	series := func(vals ...int) []Point {
		var ps []Point
		for i, v := range vals {
			// -1: a sample that failed.
			ps = append(ps, Point{At: time.Duration(i) * s, Value: time.Duration(v) * time.Millisecond, OK: v >= 0})
		}
		return ps
	}
	for _, tc := range []struct {
		name   string
		series []Point
		at     time.Duration
		ok     bool
	}{
		{"settles at 2 s", series(9, 5, 0, 0, 0, 0), 2 * s, true},
		{"a dip does not count", series(0, 0, 9, 0, 0, 0, 0), 3 * s, true},
		{"a failed sample breaks the run", series(0, 0, -1, 0, 0, 0, 0), 3 * s, true},
		{"ends before the hold is over", series(9, 9, 0, 0), 0, false},
		{"never below", series(9, 9, 9, 9), 0, false},
		{"empty", nil, 0, false},
	} {
		at, ok := SettledAt(tc.series, time.Millisecond, 3*s)
		if at != tc.at || ok != tc.ok {
			t.Errorf("%s: %v, %v; want %v, %v", tc.name, at, ok, tc.at, tc.ok)
		}
	}
}

func TestPerRound(t *testing.T) {
	before := map[int]map[string]uint64{
		1: {"clock_poll": 10, "leader_heartbeat": 200},
		2: {"clock_reading": 10},
		3: {"clock_reading": 7},
	}
	after := map[int]map[string]uint64{
		1: {"clock_poll": 20, "leader_heartbeat": 400, "clock_adjust": 20},
		2: {"clock_reading": 20, "clock_adjust_ack": 10},
		3: {"clock_reading": 17},
		4: {"clock_reading": 99}, // restarted in between: not counted
	}
	got := PerRound(before, after, 10)
	want := map[string]float64{"clock_poll": 1, "leader_heartbeat": 20, "clock_adjust": 2, "clock_reading": 2, "clock_adjust_ack": 1}
	if len(got) != len(want) {
		t.Fatalf("PerRound = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v per round, want %v", k, got[k], v)
		}
	}
	if len(PerRound(before, after, 0)) != 0 {
		t.Error("no rounds: want nothing")
	}
}
