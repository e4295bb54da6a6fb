package liveness

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestFillDurations: a zero field takes its default (or stays zero without
// one), a set field is kept, and a negative one is refused by name and
// value, leaving the fields after it untouched.
func TestFillDurations(t *testing.T) {
	for _, tc := range []struct {
		name    string
		a, b    time.Duration
		wantA   time.Duration
		wantB   time.Duration
		wantErr string
	}{
		{"zero takes the default", 0, 0, time.Second, 0, ""},
		{"set is kept", 5 * time.Millisecond, 7, 5 * time.Millisecond, 7, ""},
		{"negative first", -time.Millisecond, 0, -time.Millisecond, 0, "A -1ms is negative"},
		{"negative second", 0, -1, time.Second, -1, "B -1ns is negative"},
	} {
		a, b := tc.a, tc.b
		err := FillDurations(
			Duration{Name: "A", Value: &a, Default: time.Second},
			Duration{Name: "B", Value: &b}, // no default: the caller derives it
		)
		if got := errString(err); got != tc.wantErr {
			t.Errorf("%s: error %q, want %q", tc.name, got, tc.wantErr)
		}
		if a != tc.wantA || b != tc.wantB {
			t.Errorf("%s: fields %v, %v, want %v, %v", tc.name, a, b, tc.wantA, tc.wantB)
		}
	}
}

// TestCheckTimers: the first timer out of liveness's range is named, with
// its value and the range, and the error wraps ErrTimeoutRange.
func TestCheckTimers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		a, b    time.Duration
		wantErr string // a substring; "" wants no error
	}{
		{"both in range", MinTimeout, MaxTimeout, ""},
		{"zero", 0, time.Second, "A 0s"},
		{"below the minimum", time.Second, MinTimeout - 1, "B 999.999µs"},
		{"above the maximum", MaxTimeout + 1, time.Second, "A " + (MaxTimeout + 1).String()},
		{"first one named", -1, -1, "A -1ns"},
	} {
		a, b := tc.a, tc.b
		err := CheckTimers(Duration{Name: "A", Value: &a}, Duration{Name: "B", Value: &b})
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrTimeoutRange) || !strings.Contains(err.Error(), tc.wantErr) ||
			!strings.Contains(err.Error(), MaxTimeout.String()) {
			t.Errorf("%s: %v, want ErrTimeoutRange naming %q and the range", tc.name, err, tc.wantErr)
		}
	}
}

// TestFillTimers: a zero timer takes its default, and every timer is then
// checked like CheckTimers, a negative one too.
func TestFillTimers(t *testing.T) {
	a, b := time.Duration(0), -time.Second
	err := FillTimers(Duration{Name: "A", Value: &a, Default: time.Second}, Duration{Name: "B", Value: &b, Default: time.Second})
	if a != time.Second || b != -time.Second || !errors.Is(err, ErrTimeoutRange) || !strings.Contains(err.Error(), "B -1s") {
		t.Errorf("A %v, B %v, %v: want A 1s, B -1s refused by name", a, b, err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
