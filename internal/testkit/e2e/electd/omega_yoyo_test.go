package electd

import (
	"syscall"
	"testing"
	"time"
)

// TestElectdOmegaAndYoYo runs four real electd processes on loopback with
// --algorithm omega, then yoyo on the path 1-2-3-4 (each member talks to
// its neighbours only): both elect 1, fail over to 2 after SIGKILL of 1,
// and when 1 comes back Ω keeps 2 (1's incarnation is now 2: it crashed
// more often) while Yo-Yo elects 1 again (the smallest ID). omega runs
// electd's defaults for it, asks included.
func TestElectdOmegaAndYoYo(t *testing.T) {
	for _, tc := range []struct {
		algo   string
		flags  []string
		rejoin uint32
	}{
		{"omega", nil, 2},
		{"yoyo", []string{"--topology", "1-2,2-3,3-4"}, 1},
	} {
		t.Run(tc.algo, func(t *testing.T) {
			const n = 4
			c := newCluster(t, "electd", n)
			for i := 1; i <= n; i++ {
				c.Extra[i] = append([]string{"--algorithm", tc.algo}, tc.flags...)
				c.Start(i)
			}
			c.Eventually("all agree on 1", 5*time.Second, func() bool { l, _ := c.agreed(1, 2, 3, 4); return l == 1 })
			c.Procs[1].Process.Signal(syscall.SIGKILL)
			c.Procs[1].Wait()
			took := c.Eventually("the survivors agree on 2", 5*time.Second, func() bool { l, _ := c.agreed(2, 3, 4); return l == 2 })
			t.Logf("%s: failover after SIGKILL in %v", tc.algo, took.Round(time.Millisecond))
			c.Start(1)
			c.Eventually("all agree after 1 returns", 5*time.Second, func() bool { l, _ := c.agreed(1, 2, 3, 4); return l == tc.rejoin })
			full, err := c.Status(3)
			if err != nil {
				t.Fatal(err)
			}
			st, _ := full["node"].(map[string]any)["core"].(map[string]any)
			if st["algorithm"] != tc.algo {
				t.Fatalf("status of member 3: %v", full)
			}
			t.Logf("member 3: %v", st["phase"])
			if tc.algo == "omega" {
				// electd's defaults for omega (omega.Probed): 200 ms
				// heartbeats, asks every 10 ms, a window grown by 50 ms
				// at the failover.
				d, _ := st["detail"].(map[string]any)
				if d["heartbeat_ns"] != 2e8 || d["ask_ns"] != 1e7 || d["step_ns"] != 5e7 {
					t.Errorf("member 3's omega timings: heartbeat %v, ask %v, step %v; want 200ms, 10ms, 50ms", d["heartbeat_ns"], d["ask_ns"], d["step_ns"])
				}
			}
			if tc.algo == "yoyo" {
				d, _ := st["detail"].(map[string]any)
				if nb, _ := d["neighbours"].([]any); len(nb) != 2 {
					t.Errorf("member 3 of the path has neighbours %v", d["neighbours"])
				}
			}
		})
	}
}
