package timed

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/testkit/e2e"
)

// TestTimedCristianConverges: a timed on a simulated clock 100 ms off (either
// way) and drifting follows a timed server with Cristian's algorithm (--mode
// cristian): within 1 ms of true time in 10 s, the reported error bound
// always containing the true offset once synchronised, and the status
// showing the source's best round trip and accuracy. `timed query --proto
// cristian` then measures the server from outside.
func TestTimedCristianConverges(t *testing.T) {
	for _, start := range []time.Duration{100 * time.Millisecond, -100 * time.Millisecond} {
		t.Run(start.String(), func(t *testing.T) {
			srv := newCluster(t, "timed", 2)
			addr := serveTimed(t, srv, 1, 0, "--stratum", "8")
			srv.Start(2, "--clock", "sim", "--sim-offset", start.String(), "--sim-drift", "-20",
				"--mode", "cristian", "--server", addr.String())
			began := time.Now()
			var converged time.Duration
			var last map[string]any
			for time.Since(began) < 12*time.Second {
				time.Sleep(100 * time.Millisecond)
				st, err := srv.Status(2)
				if err != nil {
					continue
				}
				trueOff := time.Duration(st["true_offset_ns"].(float64))
				cl := st["node"].(map[string]any)["core"].(map[string]any)["client"].(map[string]any)
				last = cl
				if cl["synchronized"] == true {
					bound := time.Duration(cl["error_bound_ns"].(float64))
					if trueOff > bound || -trueOff > bound {
						t.Fatalf("true offset %v outside the reported bound ±%v", trueOff, bound)
					}
				}
				if converged == 0 && trueOff.Abs() < time.Millisecond {
					converged = time.Since(began)
				}
				if converged != 0 && time.Since(began) > converged+2*time.Second {
					t.Logf("from %v: within 1 ms after %v; true offset %v two seconds later", start, converged.Round(10*time.Millisecond), trueOff)
					break
				}
			}
			if converged == 0 || converged > 10*time.Second {
				t.Fatalf("not within 1 ms of true time in 10 s (converged after %v); client status %v", converged, last)
			}
			src := last["sources"].([]any)[0].(map[string]any)
			if src["mode"] != "cristian" || src["cristian_rtt_ns"] == nil || src["cristian_rounds"].(float64) < 1 || last["stratum"].(float64) != 9 {
				t.Errorf("source %v, stratum %v", src, last["stratum"])
			}

			// The server counted the requests; `timed query --proto cristian`
			// measures it (its clock is true: the local clock is too).
			out, err := exec.Command(filepath.Join(e2e.BinDir(), "timed"), "query", "--proto", "cristian", "-n", "4", "--json", "--cluster-key-file", srv.Key, addr.String()).CombinedOutput()
			if err != nil {
				t.Fatalf("timed query --proto cristian: %v\n%s", err, out)
			}
			var q map[string]any
			if err := json.Unmarshal(out, &q); err != nil {
				t.Fatalf("query output: %v\n%s", err, out)
			}
			off, bound := time.Duration(q["offset_ns"].(float64)), time.Duration(q["error_bound_ns"].(float64))
			if off.Abs() > bound+time.Millisecond || q["stratum"].(float64) != 8 || q["delay_ns"].(float64) <= 0 {
				t.Errorf("query %s", out)
			}
		})
	}
}
