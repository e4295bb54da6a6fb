package ring_test

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/diagram"
	"github.com/synclab/synclab/internal/scenario"
	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/elect/ring"
	"github.com/synclab/synclab/pkg/wire"
)

var diagramOut = flag.String("ring.diagram.out", "", "write the traces, SVG and HTML of every ring scenario into this directory")

// TestScenarios replays the scripts in testdata/scenarios, the notes'
// examples, on internal/sim with a fixed delay on every link and no
// jitter or loss, so that the interleaving is the one the notes draw (all
// members that start together send before any message arrives), and
// compares what happens with the output recorded in the file. Regenerate
// after a deliberate change with
//
//	go test ./pkg/elect/ring -run TestScenarios -rewrite
//
// and read the diff. With -ring.diagram.out DIR each scenario is drawn
// (internal/diagram: one line per member, one arrow per frame).
//
// Commands:
//
//	cluster VARIANT R1,R2,... [textbook]  members on the logical ring in
//	                             this order (successor = next); they all
//	                             start now, so all of them suspect at once
//	run D                        advance the simulation by D
//	crash ID | restart ID        stop a member (its disk survives) / start it
//	resign ID                    the leader steps down
//	status                       every member's role, leader, term, phase
//	counts                       frames delivered (and sent) by kind since
//	                             the last counts
//
// Each command prints the leadership events it caused, with the virtual
// time, one per line.
func TestScenarios(t *testing.T) {
	scenario.Files(t, func(t *testing.T, script string) string {
		got, traces := runScenario(t, script)
		d, err := diagram.Build(traces)
		if err != nil {
			t.Fatalf("the scenario cannot be drawn: %v", err)
		}
		if *diagramOut != "" {
			writeDiagram(t, d, traces)
		}
		return got
	})
}

// scenarioConfig slows everything to the links' pace (100 ms a hop), so
// that the election runs undisturbed by heartbeats and timeouts.
func scenarioConfig(v ring.Variant, order []uint32, textbook bool) ring.Config {
	return ring.Config{
		Variant:         v,
		Ring:            order,
		Textbook:        textbook,
		Heartbeat:       time.Second,
		LeaderTimeout:   20 * time.Second,
		Stagger:         time.Second,
		HopTimeout:      500 * time.Millisecond,
		HopTries:        3,
		ElectionTimeout: time.Minute,
	}
}

const hopDelay = 100 * time.Millisecond

func variantNamed(t *testing.T, name string) ring.Variant {
	for v := ring.Naive; v <= ring.FredricksonLynch; v++ {
		if v.String() == name {
			return v
		}
	}
	t.Fatalf("unknown variant %q", name)
	return 0
}

func runScenario(t *testing.T, script string) (string, []*trace.File) {
	var out bytes.Buffer
	var s *sim.Sim
	bufs := map[uint32]*bytes.Buffer{}
	seen := 0
	lines, cmds := scenario.Commands(script)
	for i, line := range lines {
		out.WriteString(line + "\n")
		f := cmds[i]
		if f == nil {
			continue
		}
		args := scenario.Args{T: t, Line: line, F: f}
		if f[0] != "cluster" && s == nil {
			t.Fatalf("%q before cluster", line)
		}
		switch f[0] {
		case "cluster":
			v := variantNamed(t, f[1])
			order := args.IDs(2)
			textbook := len(f) > 3 && f[3] == "textbook"
			s = sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: hopDelay}})
			for _, id := range order {
				s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
					c, err := ring.New(env, scenarioConfig(v, order, textbook))
					if err != nil {
						t.Fatal(err)
					}
					return c
				}, clock.SimConfig{})
			}
			if err := s.RecordTraces("electd", func(id uint32) (io.Writer, error) {
				bufs[id] = new(bytes.Buffer)
				return bufs[id], nil
			}, 0); err != nil {
				t.Fatal(err)
			}
			s.Start()
		case "run":
			s.Run(args.Duration(1))
		case "crash":
			s.Crash(args.ID(1))
		case "restart":
			s.Restart(args.ID(1))
		case "resign":
			id := args.ID(1)
			if err := s.Do(id, func(c core.Core) {
				if err := c.(*ring.Core).Resign(s.Clock(id).Now()); err != nil {
					fmt.Fprintf(&out, "error: %v\n", err)
				}
			}); err != nil {
				t.Fatal(err)
			}
		case "status":
			for _, id := range s.IDs() {
				if !s.Up(id) {
					fmt.Fprintf(&out, "%d down\n", id)
					continue
				}
				v := s.Core(id).(*ring.Core).Report()
				fmt.Fprintf(&out, "%d %-9v leader=%d term=%#x (%s)\n", id, v.Role, v.Leader, v.Term, v.Phase)
			}
		case "counts":
			for _, k := range []wire.Kind{wire.KindRingElection, wire.KindRingCoordinator, wire.KindRingAck, wire.KindRingHeartbeat} {
				fmt.Fprintf(&out, "%s=%d", k, s.Delivered(k))
				if sent := s.Sent(k); sent != s.Delivered(k) {
					fmt.Fprintf(&out, " (sent %d)", sent)
				}
				out.WriteString(" ")
			}
			out.Truncate(out.Len() - 1)
			out.WriteString("\n")
			s.ResetCounts()
		default:
			t.Fatalf("unknown command %q", line)
		}
		events := s.Events()
		for _, e := range events[seen:] {
			if !elect.LeadershipEvent(e.Name) {
				continue
			}
			fmt.Fprintf(&out, "%v %d %s", e.At.Round(time.Millisecond), e.Node, e.Name)
			for i := 0; i+1 < len(e.Args); i += 2 {
				if v, ok := e.Args[i+1].(uint64); ok && e.Args[i] == "term" {
					fmt.Fprintf(&out, " term=%#x", v)
					continue
				}
				fmt.Fprintf(&out, " %v=%v", e.Args[i], e.Args[i+1])
			}
			out.WriteString("\n")
		}
		seen = len(events)
		out.WriteString("\n")
	}
	if s == nil {
		t.Fatal("no cluster in the script")
	}
	if err := s.CloseTraces(); err != nil {
		t.Fatal(err)
	}
	var traces []*trace.File
	for _, id := range s.IDs() {
		f, err := trace.Read(bytes.NewReader(bufs[id].Bytes()), fmt.Sprintf("n%d.trace", id))
		if err != nil {
			t.Fatal(err)
		}
		traces = append(traces, f)
	}
	return strings.TrimSuffix(out.String(), "\n") + "\n", traces
}

func writeDiagram(t *testing.T, d *diagram.Diagram, traces []*trace.File) {
	t.Helper()
	name := strings.ReplaceAll(strings.TrimPrefix(t.Name(), "TestScenarios/"), "/", "-")
	if err := os.MkdirAll(*diagramOut, 0o755); err != nil {
		t.Fatal(err)
	}
	for ext, write := range map[string]func(io.Writer) error{
		".svg":  func(w io.Writer) error { return d.WriteSVG(w, diagram.Options{}) },
		".html": d.WriteHTML,
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*diagramOut, name+ext), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_ = traces
}
