package timed

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

// TestTimedNoAdjustReportsMeasuredOffset: `timed run --no-adjust` measures
// and reports only. Against a timed NTP server on loopback, a client whose
// simulated clock is 30 ms ahead reports, after five updates and from then
// on, the offset of its untouched clock (reference minus local: about -30
// ms) as its offset, its last update's offset and each source's offsets;
// the clock's true error stays 30 ms; it does not claim to be
// synchronised. (It used to report 0 and a few ms: offsets as if the slews
// it skipped had been made.)
func TestTimedNoAdjustReportsMeasuredOffset(t *testing.T) {
	c := newCluster(t, "timed", 2)
	ip := "127.0.0.35"
	addr := netip.MustParseAddrPort(fmt.Sprintf("%s:%d", ip, e2e.FreePort(t, ip)))
	c.StartAlone(1, "--clock", "sim", "--serve", addr.String(), "--stratum", "8")
	c.StartAlone(2, "--clock", "sim", "--sim-offset", "30ms", "--no-adjust", "--server", addr.String(),
		"--minpoll", "-3", "--maxpoll", "-3")
	near := func(what string, got, want time.Duration) {
		t.Helper()
		if d := got - want; d.Abs() > 2*time.Millisecond {
			t.Errorf("%s %v, want about %v", what, got, want)
		}
	}
	seen := 0
	c.Eventually("ten updates after the first five, each checked", 30*time.Second, func() bool {
		st, err := c.Status(2)
		if err != nil || e2e.Num(st, "node", "core", "client", "updates") < 5 {
			return false
		}
		seen++
		trueOff := time.Duration(e2e.Num(st, "true_offset_ns"))
		near("true_offset_ns (the clock must not move)", trueOff, 30*time.Millisecond)
		cl := e2e.Field(st, "node", "core", "client").(map[string]any)
		near("offset_ns", time.Duration(e2e.Num(cl, "offset_ns")), -trueOff)
		near("last_offset_ns", time.Duration(e2e.Num(cl, "last_offset_ns")), -trueOff)
		for _, s := range cl["sources"].([]any) {
			s := s.(map[string]any)
			near("source offset_ns", time.Duration(e2e.Num(s, "offset_ns")), -trueOff)
			near("source last_offset_ns", time.Duration(e2e.Num(s, "last_offset_ns")), -trueOff)
		}
		if cl["synchronized"] != false || cl["measure_only"] != true {
			t.Errorf("synchronized %v, measure_only %v: want false and true", cl["synchronized"], cl["measure_only"])
		}
		if t.Failed() {
			t.Fatalf("after %v updates: %v", cl["updates"], cl)
		}
		return seen >= 10
	})
}
