package mutex

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/liveness"
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
		err := FillDurations([]Duration{
			{Name: "A", Value: &a, Default: time.Second},
			{Name: "B", Value: &b}, // no default: the caller derives it
		})
		if got := errText(err); got != tc.wantErr {
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
		{"both in range", liveness.MinTimeout, liveness.MaxTimeout, ""},
		{"zero", 0, time.Second, "A 0s"},
		{"below the minimum", time.Second, liveness.MinTimeout - 1, "B 999.999µs"},
		{"above the maximum", liveness.MaxTimeout + 1, time.Second, "A " + (liveness.MaxTimeout + 1).String()},
		{"first one named", -1, -1, "A -1ns"},
	} {
		err := CheckTimers([]Timer{{Name: "A", Value: tc.a}, {Name: "B", Value: tc.b}})
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, liveness.ErrTimeoutRange) || !strings.Contains(err.Error(), tc.wantErr) ||
			!strings.Contains(err.Error(), liveness.MaxTimeout.String()) {
			t.Errorf("%s: %v, want ErrTimeoutRange naming %q and the range", tc.name, err, tc.wantErr)
		}
	}
}

// TestCheckBounds: each bound refused with the field, its value and the
// bound, one past each edge; the edges themselves pass.
func TestCheckBounds(t *testing.T) {
	ok := Bounds{MinLease: 100 * time.Millisecond, MaxLease: 3 * time.Second, MaxDriftPPM: 1000, MaxLocks: 4096, MaxQueue: 4096}
	for _, tc := range []struct {
		name    string
		edit    func(*Bounds)
		wantErr string
	}{
		{"defaults", func(*Bounds) {}, ""},
		{"zero drift", func(b *Bounds) { b.MaxDriftPPM = 0 }, ""},
		{"drift just below the limit", func(b *Bounds) { b.MaxDriftPPM = math.Nextafter(MaxDriftLimit, 0) }, ""},
		{"drift at the limit", func(b *Bounds) { b.MaxDriftPPM = MaxDriftLimit }, "MaxDriftPPM 100000: want 0 <= ppm < 100000"},
		{"negative drift", func(b *Bounds) { b.MaxDriftPPM = -1 }, "MaxDriftPPM -1: want 0 <= ppm < 100000"},
		{"NaN drift", func(b *Bounds) { b.MaxDriftPPM = math.NaN() }, "MaxDriftPPM NaN: want 0 <= ppm < 100000"},
		{"MinLease = MaxLease", func(b *Bounds) { b.MinLease = b.MaxLease }, ""},
		{"MinLease > MaxLease", func(b *Bounds) { b.MinLease = b.MaxLease + 1 }, "MinLease 3.000000001s exceeds MaxLease 3s"},
		{"MaxLease at the limit", func(b *Bounds) { b.MaxLease = MaxLeaseLimit }, ""},
		{"MaxLease above the limit", func(b *Bounds) { b.MaxLease = MaxLeaseLimit + 1 }, "MaxLease 1h0m0.000000001s: at most 1h0m0s"},
		{"MaxLease above the limit, with why", func(b *Bounds) { b.MaxLease, b.LongLease = 2*time.Hour, "a takeover waits it" },
			"MaxLease 2h0m0s: at most 1h0m0s (a takeover waits it)"},
		{"no locks", func(b *Bounds) { b.MaxLocks = 0 }, "MaxLocks 0 must be positive"},
		{"no locks, capped", func(b *Bounds) { b.MaxLocks, b.LocksCap = 0, 65535 }, "MaxLocks 0: want 1..65535"},
		{"locks at the cap", func(b *Bounds) { b.MaxLocks, b.LocksCap = 65535, 65535 }, ""},
		{"locks above the cap", func(b *Bounds) { b.MaxLocks, b.LocksCap = 65536, 65535 }, "MaxLocks 65536: want 1..65535"},
		{"locks uncapped", func(b *Bounds) { b.MaxLocks = 1 << 20 }, ""},
		{"no queue", func(b *Bounds) { b.MaxQueue = 0 }, "MaxQueue 0 must be positive"},
		{"negative queue", func(b *Bounds) { b.MaxQueue = -1 }, "MaxQueue -1 must be positive"},
	} {
		b := ok
		tc.edit(&b)
		if got := errText(CheckBounds(b)); got != tc.wantErr {
			t.Errorf("%s: error %q, want %q", tc.name, got, tc.wantErr)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestFillLimits(t *testing.T) {
	var ppm float64
	var locks, queue int
	FillLimits(&ppm, &locks, &queue)
	if ppm != DefaultMaxDriftPPM || locks != DefaultMaxLocks || queue != DefaultMaxQueue {
		t.Errorf("zeros filled to %v %v %v, want the defaults", ppm, locks, queue)
	}
	ppm, locks, queue = 50, 7, 9
	FillLimits(&ppm, &locks, &queue)
	if ppm != 50 || locks != 7 || queue != 9 {
		t.Errorf("set limits changed to %v %v %v", ppm, locks, queue)
	}
}
