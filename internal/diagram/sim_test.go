package diagram

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/testkit/docdiagram"
	scripts "github.com/synclab/synclab/internal/testkit/scenario"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/wire"
)

var scenarioOut = flag.String("diagram.out", "", "write the traces, SVG, HTML and ShiViz log of every bully scenario into this directory")

// bullySim builds a simulated bully cluster of n members (priorities, if
// any, in ID order) that records its traces into buffers.
func bullySim(t testing.TB, seed int64, n int, prio []uint32, link sim.LinkConfig) (*sim.Sim, map[uint32]*bytes.Buffer) {
	t.Helper()
	return bullySimWith(t, seed, n, prio, link, nil)
}

// bullySimWith is bullySim with each member's configuration changed by
// mutate (nil: none).
func bullySimWith(t testing.TB, seed int64, n int, prio []uint32, link sim.LinkConfig, mutate func(*bully.Config)) (*sim.Sim, map[uint32]*bytes.Buffer) {
	t.Helper()
	s := sim.New(sim.Config{Seed: seed, DefaultLink: link})
	var members []bully.Member
	for id := uint32(1); id <= uint32(n); id++ {
		m := bully.Member{ID: id}
		if int(id) <= len(prio) {
			m.Priority = prio[id-1]
		}
		members = append(members, m)
	}
	rnd := rand.New(rand.NewPCG(uint64(seed), 18))
	for _, m := range members {
		id := m.ID
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			cfg := bully.DefaultLANConfig()
			cfg.Members = members
			if mutate != nil {
				mutate(&cfg)
			}
			env.Rand = s.NewRand()
			b, err := bully.New(env, cfg)
			if err != nil {
				t.Fatalf("node %d: %v", id, err)
			}
			return b
		}, clock.SimConfig{Offset: time.Duration(rnd.IntN(2000)-1000) * time.Microsecond, DriftPPM: float64(rnd.IntN(200) - 100)})
	}
	bufs := map[uint32]*bytes.Buffer{}
	if err := s.RecordTraces("electd", func(id uint32) (io.Writer, error) {
		bufs[id] = new(bytes.Buffer)
		return bufs[id], nil
	}, 0); err != nil {
		t.Fatal(err)
	}
	return s, bufs
}

// readBack closes the traces and reads them as the diagram command does.
func readBack(t testing.TB, s *sim.Sim, bufs map[uint32]*bytes.Buffer) []*trace.File {
	t.Helper()
	files, err := SimFiles(s, bufs)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestLayoutOracle runs random bully clusters (loss, jitter, duplicates,
// a crash of the leader, a restart, a partition) and checks the drawing
// against the simulator's ground truth, the vector times its traces
// record: every pair of events the vectors order is ordered the same way
// by the diagram and drawn left to right; every pair they leave concurrent
// is concurrent in the diagram; every arrow points right and lands after
// its send in true time; and every frame the simulator sent and delivered
// is in the traces.
func TestLayoutOracle(t *testing.T) {
	sim.Seeds(t, 20, func(t *testing.T, seed int64) {
		link := sim.LinkConfig{Delay: 300 * time.Microsecond, Jitter: 3 * time.Millisecond, Loss: 0.05, Duplicate: 0.02}
		s, bufs := bullySim(t, seed, 5, nil, link)
		rnd := rand.New(rand.NewPCG(uint64(seed), 1))
		s.Run(time.Duration(300+rnd.IntN(300)) * time.Millisecond)
		s.Crash(5)
		s.Run(time.Duration(200+rnd.IntN(400)) * time.Millisecond)
		s.Partition([]uint32{1, 2}, []uint32{3, 4})
		s.Run(time.Duration(100+rnd.IntN(300)) * time.Millisecond)
		s.Heal()
		s.Restart(5)
		s.Run(400 * time.Millisecond)
		var sent, delivered uint64
		for _, k := range wire.Kinds() {
			sent += s.Sent(k)
			delivered += s.Delivered(k)
		}
		d, err := Build(readBack(t, s, bufs))
		if err != nil {
			t.Fatal(err)
		}
		checkOracle(t, d)
		var sends, recvs uint64
		for _, e := range d.Events {
			switch e.Ev {
			case trace.EvSend:
				sends++
			case trace.EvRecv:
				recvs++
			}
		}
		if sends != sent || recvs != delivered || len(d.Procs) != 5 {
			t.Errorf("traces hold %d sends, %d receives, %d processes; the simulator sent %d and delivered %d frames among 5", sends, recvs, len(d.Procs), sent, delivered)
		}
	})
}

func checkOracle(t *testing.T, d *Diagram) {
	t.Helper()
	if err := d.CheckCausality(); err != nil {
		t.Fatal(err)
	}
}

// TestScenarioDiagrams replays each of bully's scenario scripts
// (pkg/elect/bully/testdata/scenarios: the same commands, on the
// simulator instead of the synchronous test network) with traces on, and
// draws it: every member has its line, every delivered frame its arrow, the
// oracle holds. With -diagram.out DIR it writes each scenario's traces,
// SVG, HTML page and ShiViz log there (the README's example is failover).
func TestScenarioDiagrams(t *testing.T) {
	files, err := filepath.Glob("../../pkg/elect/bully/testdata/scenarios/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txt")
		t.Run(name, func(t *testing.T) {
			script, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s, bufs := replayBully(t, string(script))
			traces := readBack(t, s, bufs)
			d, err := Build(traces)
			if err != nil {
				t.Fatal(err)
			}
			checkOracle(t, d)
			if len(d.Procs) != len(s.IDs()) {
				t.Errorf("%d lines for %d members", len(d.Procs), len(s.IDs()))
			}
			var delivered uint64
			for _, k := range wire.Kinds() {
				delivered += s.Delivered(k)
			}
			if arrows := d.Arrows(); uint64(arrows) != delivered {
				t.Errorf("%d arrows for %d delivered frames", arrows, delivered)
			}
			if *scenarioOut != "" {
				writeAll(t, *scenarioOut, name, d, s, bufs)
			}
			if name == "failover" {
				// The docs' election diagram: the notes' worst case at
				// start-up (every member asks every one above it, is
				// answered, and 5 announces itself).
				startup, err := Build(Window(traces, 0, 110*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				var svg bytes.Buffer
				if err := startup.WriteSVG(&svg, Options{}); err != nil {
					t.Fatal(err)
				}
				docdiagram.Check(t, "election-bully", svg.Bytes())
			}
		})
	}
}

func writeAll(t *testing.T, dir, name string, d *Diagram, s *sim.Sim, bufs map[uint32]*bytes.Buffer) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, id := range s.IDs() {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-n%d.trace", name, id)), bufs[id].Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for ext, write := range map[string]func(io.Writer) error{
		".svg":    func(w io.Writer) error { return d.WriteSVG(w, Options{}) },
		".html":   d.WriteHTML,
		".shiviz": d.WriteShiViz,
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+ext), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// replayBully runs a bully scenario script on the simulator: `cluster N
// [priorities]`, `tick K` (K daemon ticks of 10 ms), `crash`, `restart`,
// `isolate`, `cut A B`, `heal`, `resign`; `status` and `counts` print
// nothing here. The run is the script's, timed by the simulator's links
// (LAN delays), so its events differ in detail from the synchronous
// network's expected output.
func replayBully(t *testing.T, script string) (*sim.Sim, map[uint32]*bytes.Buffer) {
	t.Helper()
	var s *sim.Sim
	var bufs map[uint32]*bytes.Buffer
	lines, cmds := scripts.Commands(script)
	for i, line := range lines {
		f := cmds[i]
		if f == nil {
			continue // a comment
		}
		arg := scripts.Args{T: t, Line: line, F: f}.ID
		if f[0] != "cluster" && s == nil {
			t.Fatalf("%q before cluster", line)
		}
		switch f[0] {
		case "cluster":
			prio := scripts.Args{T: t, Line: line, F: f}.IDs(2)
			s, bufs = bullySim(t, 1, int(arg(1)), prio, sim.LANLink())
			s.Start()
		case "tick":
			s.Run(time.Duration(arg(1)) * s.Config().TickInterval)
		case "crash":
			s.Crash(arg(1))
		case "restart":
			s.Restart(arg(1))
		case "isolate":
			s.Isolate(arg(1))
		case "cut":
			s.Cut(arg(1), arg(2))
			s.Cut(arg(2), arg(1))
		case "heal":
			s.Heal()
		case "resign":
			s.Do(arg(1), func(c core.Core) { c.(*bully.Core).Resign(s.Clock(arg(1)).Now()) })
		case "status", "counts":
		default:
			t.Fatalf("unknown command %q", line)
		}
	}
	if s == nil {
		t.Fatal("no cluster in the script")
	}
	return s, bufs
}
