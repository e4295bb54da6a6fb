package core

import (
	"testing"
	"time"
)

func TestEarliest(t *testing.T) {
	base := time.Unix(1000, 0)
	for _, tc := range []struct {
		in   []time.Time
		want time.Time
	}{
		{nil, time.Time{}},
		{[]time.Time{{}, {}}, time.Time{}},
		{[]time.Time{{}, base.Add(2), base.Add(1)}, base.Add(1)},
		{[]time.Time{base.Add(3), {}}, base.Add(3)},
	} {
		if got := Earliest(tc.in...); !got.Equal(tc.want) {
			t.Errorf("Earliest(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
