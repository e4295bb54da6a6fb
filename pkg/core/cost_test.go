package core

import "testing"

func TestCostRange(t *testing.T) {
	for _, tc := range []struct {
		c    Cost
		n    int
		want string
	}{
		{Cost{Messages: func(n int) (float64, float64) { return float64(2 * (n - 1)), float64(2 * (n - 1)) }}, 5, "8"},
		{Cost{Messages: func(n int) (float64, float64) { return 1, -1 }}, 5, "1-unbounded"},
		{Cost{Messages: func(n int) (float64, float64) { return float64(n - 2), float64(n * n) }}, 16, "14-256"},
		{Cost{}, 3, "?"},
	} {
		if got := tc.c.Range(tc.n); got != tc.want {
			t.Errorf("%s at %d: %q, want %q", tc.c.Text, tc.n, got, tc.want)
		}
	}
}
