package e2e

import (
	"testing"
	"time"
)

// TestTimedClientConverges: a timed on a simulated clock 100 ms off (either
// way) and drifting follows a timed NTP server on a true clock. Ground truth
// is the simulated clock's exact error (true_offset_ns): within 1 ms in 10 s
// (the target), and the reported error bound always contains it
// once synchronised.
func TestTimedClientConverges(t *testing.T) {
	for _, start := range []time.Duration{100 * time.Millisecond, -100 * time.Millisecond} {
		t.Run(start.String(), func(t *testing.T) {
			srv := newCluster(t, "timed", 2)
			addr := serveTimed(t, srv, 1, 0, "--stratum", "8")
			srv.start(2, "--clock", "sim", "--sim-offset", start.String(), "--sim-drift", "25", "--server", addr.String())
			began := time.Now()
			var converged time.Duration
			for time.Since(began) < 12*time.Second {
				time.Sleep(100 * time.Millisecond)
				st, err := srv.status(2)
				if err != nil {
					continue
				}
				trueOff := time.Duration(st["true_offset_ns"].(float64))
				cl := st["node"].(map[string]any)["core"].(map[string]any)["client"].(map[string]any)
				if cl["synchronized"] == true {
					bound := time.Duration(cl["error_bound_ns"].(float64))
					if trueOff > bound || -trueOff > bound {
						t.Fatalf("true offset %v outside the reported bound ±%v", trueOff, bound)
					}
				}
				if converged == 0 && trueOff < time.Millisecond && -trueOff < time.Millisecond {
					converged = time.Since(began)
				}
				if converged != 0 && time.Since(began) > converged+2*time.Second {
					break
				}
			}
			if converged == 0 || converged > 10*time.Second {
				t.Fatalf("not within 1 ms of true time in 10 s (converged after %v)", converged)
			}
			t.Logf("from %v: within 1 ms of true time after %v", start, converged.Round(10*time.Millisecond))
			// The client follows the server, one stratum below it.
			st, _ := srv.status(2)
			cl := st["node"].(map[string]any)["core"].(map[string]any)["client"].(map[string]any)
			if cl["stratum"].(float64) != 9 || cl["sys_peer"] != addr.String() {
				t.Errorf("client stratum %v, sys peer %v; want 9 and %v", cl["stratum"], cl["sys_peer"], addr)
			}
		})
	}
}
