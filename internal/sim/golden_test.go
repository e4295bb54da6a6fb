package sim_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/wire"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files in testdata/ instead of comparing")

// TestGoldenScenario pins a readable run: three liveness members on a
// lossy LAN, a crash, a restart, a one-way cut and a partition. Any change
// to the simulator's model (random draws, ordering, timing), to the framing
// layer's acceptance or to the detector's verdicts shows up as a diff of
// this log; when the change is intended, regenerate it with
//
//	go test ./internal/sim/ -run TestGoldenScenario -rewrite
func TestGoldenScenario(t *testing.T) {
	s := sim.New(sim.Config{Seed: 42, DefaultLink: sim.LinkConfig{
		Delay: time.Millisecond, Jitter: 500 * time.Microsecond, Loss: 0.05}})
	livenessCluster(t, s, 3, func(id uint32) clock.SimConfig {
		return clock.SimConfig{Offset: time.Duration(id) * 10 * time.Millisecond, DriftPPM: 40 * float64(id)}
	})
	// The simulator logs its own actions among the cores' events.
	s.Run(time.Second)
	s.Crash(3)
	s.Run(time.Second)
	s.Restart(3)
	s.Run(time.Second)
	s.Cut(1, 2)
	s.Run(time.Second)
	s.Heal()
	s.Run(500 * time.Millisecond)
	s.Partition([]uint32{1}, []uint32{2, 3})
	s.Run(time.Second)
	s.Heal()
	s.Run(time.Second)
	var b strings.Builder
	b.WriteString(s.Log())
	fmt.Fprintf(&b, "# heartbeats sent %d, delivered %d\n", s.Sent(wire.KindHeartbeat), s.Delivered(wire.KindHeartbeat))
	for _, id := range s.IDs() {
		c := s.Counters(id)
		fmt.Fprintf(&b, "# node %d: ticks %d sent %d lost %d cut %d delivered %d missed %d\n",
			id, c.Ticks, c.Sent, c.Lost, c.Cut, c.Delivered, c.Missed)
	}
	golden(t, "liveness_scenario.golden", b.String())
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *rewrite {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with -rewrite)", err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("%s differs at line %d:\n got: %s\nwant: %s\n(rerun with -rewrite if the change is intended)", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s: %d lines, want %d (rerun with -rewrite if the change is intended)", path, len(gl), len(wl))
	}
}
