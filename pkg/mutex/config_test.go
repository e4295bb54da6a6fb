package mutex

import (
	"math"
	"testing"
	"time"
)

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
