package server

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/wire"
)

// TestLocalError: a local reference advertises Config.LocalError as its
// root dispersion (0: declared the reference, as chronyd's local). A
// group's time (Config.Group) is served at the local stratum only with a
// LocalError and while the member has a bound relative to the group,
// which is added; otherwise unsynchronised, and status says why. A
// LocalError clients would refuse is refused.
func TestLocalError(t *testing.T) {
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	sys := func(cfg Config, set func(*Server)) (SystemState, string) {
		t.Helper()
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if set != nil {
			set(s)
		}
		return s.System(now), s.LocalWhy()
	}
	if got, _ := sys(Config{LocalStratum: 8}, nil); got.Leap != wire.LeapNone || got.Stratum != 8 || got.RootDispersion != 0 {
		t.Errorf("local stratum: %+v", got)
	}
	if got, _ := sys(Config{LocalStratum: 8, LocalError: 50 * time.Millisecond}, nil); got.Stratum != 8 || got.RootDispersion != 50*time.Millisecond {
		t.Errorf("local stratum within 50 ms: %+v", got)
	}
	group := func(s *Server) { s.SetGroupError(300*time.Microsecond, true) }
	for _, tc := range []struct {
		name string
		cfg  Config
		set  func(*Server)
		why  string
	}{
		{"group, no local error", Config{LocalStratum: 8, Group: true}, group, "nobody's reference"},
		{"group, not synchronised to it", Config{LocalStratum: 8, Group: true, LocalError: 500 * time.Millisecond}, nil, "not synchronised to the group"},
		{"group, bound lost", Config{LocalStratum: 8, Group: true, LocalError: 500 * time.Millisecond}, func(s *Server) { group(s); s.SetGroupError(0, false) }, "not synchronised"},
	} {
		got, why := sys(tc.cfg, tc.set)
		if got.Leap != wire.LeapNotInSync || got.Stratum != wire.StratumUnsynchronized || !strings.Contains(why, tc.why) {
			t.Errorf("%s: %+v, why %q; want unsynchronised because %q", tc.name, got, why, tc.why)
		}
	}
	if got, why := sys(Config{LocalStratum: 8, Group: true, LocalError: 500 * time.Millisecond}, group); got.Stratum != 8 || got.RootDispersion != 500*time.Millisecond+300*time.Microsecond || why != "" {
		t.Errorf("group within 500 ms: %+v (%q), want stratum 8, root dispersion 500.3 ms", got, why)
	}
	for _, d := range []time.Duration{-time.Millisecond, MaxLocalError} {
		if _, err := New(Config{LocalStratum: 8, LocalError: d}); !errors.Is(err, ErrConfig) {
			t.Errorf("local error %v: %v, want ErrConfig", d, err)
		}
	}
}
