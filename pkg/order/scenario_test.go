package order

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/diagram"
	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/testkit/docdiagram"
	"github.com/synclab/synclab/internal/testkit/scenario"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/internal/tracecheck"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/order/rsm"
)

var diagramOut = flag.String("order.traces", "", "write every scenario's traces (n1.trace, ...) into DIR/<scenario>/ for the diagram tool")

// TestScenarios replays testdata/scenarios: the notes' examples (logical time) on the
// simulator with fixed per-link delays (no jitter, no loss), so that the
// notes' interleavings happen exactly; -order.traces=DIR records them to
// be drawn. Regenerate after a deliberate change with -rewrite.
//
// Commands:
//
//	cluster N [sequencer|lamport]   N members, 1 ms links; waits for a sequencer
//	link A B DELAY                  the delay from A to B
//	cut A B                         A's frames to B are lost (until heal)
//	heal                            every cut link passes again
//	crash ID                        ID crashes (SIGKILL), for good
//	send ID ORDER TEXT...           ID multicasts TEXT (fifo, causal or total)
//	run DURATION                    run, printing every delivery
//	pending ID                      what ID holds back, and why
//	log ID                          ID's deliveries so far, in order
//	accounts                        each replica's account: the state machine on
//	                                the total order, and the same commands applied
//	                                in FIFO delivery order
func TestScenarios(t *testing.T) {
	scenario.Files(t, func(t *testing.T, script string) string {
		var out bytes.Buffer
		var s *sim.Sim
		var logs map[uint32][]Delivery
		var fifoAcct map[uint32]*rsm.Machine
		var bufs map[uint32]*bytes.Buffer
		lines, cmds := scenario.Commands(script)
		for i, line := range lines {
			out.WriteString(line + "\n")
			f := cmds[i]
			if f == nil {
				continue
			}
			a := scenario.Args{T: t, Line: line, F: f}
			if f[0] != "cluster" && s == nil {
				t.Fatalf("%q before cluster", line)
			}
			switch f[0] {
			case "cluster":
				cfg := DefaultLANConfig()
				if len(f) > 2 {
					var err error
					if cfg.Total, err = ParseTotal(f[2]); err != nil {
						t.Fatal(err)
					}
				}
				cfg.Machine = func() StateMachine { return rsm.New() }
				s = sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: time.Millisecond}})
				logs, fifoAcct, bufs = map[uint32][]Delivery{}, map[uint32]*rsm.Machine{}, map[uint32]*bytes.Buffer{}
				for id := uint32(1); id <= uint32(a.Uint(1)); id++ {
					fifoAcct[id] = rsm.New()
				}
				addMembers(t, s, int(a.Uint(1)), cfg)
				if err := s.RecordTraces("orderd", func(id uint32) (io.Writer, error) {
					bufs[id] = new(bytes.Buffer)
					return bufs[id], nil
				}, 0); err != nil {
					t.Fatal(err)
				}
				s.OnReady(func(r sim.Ready) {
					for _, d := range r.Core.(*Core).Deliveries() {
						logs[r.Node] = append(logs[r.Node], d)
						if d.Order == FIFO {
							fifoAcct[r.Node].Apply(d.Message)
						}
						fmt.Fprintf(&out, "%8v n%d delivers %s\n", s.Elapsed().Round(100*time.Microsecond), r.Node, describe(d))
					}
				})
				s.Run(time.Second)
				fmt.Fprintf(&out, "sequencer: %s\n", sequencerOf(s))
			case "link":
				s.SetLink(a.ID(1), a.ID(2), sim.LinkConfig{Delay: a.Duration(3)})
			case "cut":
				s.Cut(a.ID(1), a.ID(2))
			case "heal":
				s.Heal()
			case "crash":
				s.Crash(a.ID(1))
			case "send":
				o, err := ParseOrder(f[2])
				if err != nil {
					t.Fatal(err)
				}
				text := strings.Join(f[3:], " ")
				if err := s.Do(a.ID(1), func(c core.Core) {
					if err := c.(*Core).Multicast(s.Clock(a.ID(1)).Now(), o, []byte(text)); err != nil {
						t.Fatalf("%q: %v", line, err)
					}
				}); err != nil {
					t.Fatal(err)
				}
			case "run":
				s.Run(a.Duration(1))
			case "pending":
				for _, p := range s.Core(a.ID(1)).(*Core).Report().Pending {
					fmt.Fprintf(&out, "n%d holds %s message %d of %d: waiting for %s\n", a.ID(1), p.Order, p.Seq, p.Sender, p.Waiting)
				}
			case "log":
				var texts []string
				for _, d := range logs[a.ID(1)] {
					texts = append(texts, fmt.Sprintf("%q", d.Message))
				}
				fmt.Fprintf(&out, "n%d: %s\n", a.ID(1), strings.Join(texts, " "))
			case "accounts":
				for _, id := range s.IDs() {
					m := s.Core(id).(*Core).Machine().(*rsm.Machine)
					fmt.Fprintf(&out, "n%d: total order %s, fifo order %s\n", id, rsm.Format(m.Cents), rsm.Format(fifoAcct[id].Cents))
				}
			default:
				t.Fatalf("unknown command %q", line)
			}
		}
		if s != nil {
			// The traces end here (-order.traces writes them after).
			files, err := diagram.SimFiles(s, bufs)
			if err != nil {
				t.Fatal(err)
			}
			// Every run's traces are checked as `orderd trace check`
			// checks them: a violated promise fails the scenario.
			if err := tracecheck.CheckRun(files); err != nil {
				t.Errorf("trace check: %v", err)
			}
			if filepath.Base(t.Name()) == "causal" {
				docsDiagram(t, files)
			}
		}
		if *diagramOut != "" && s != nil {
			dir := filepath.Join(*diagramOut, filepath.Base(t.Name()))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for id, b := range bufs {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("n%d.trace", id)), b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		return out.String()
	})
}

// docsDiagram draws the docs' ordering diagram (internal/testkit/docdiagram)
// from the causal scenario: from m_A's multicast for 100 ms, so the causal
// hold-back and then the FIFO-only run that delivers m_C2 before m_A2 at p3.
func docsDiagram(t *testing.T, files []*trace.File) {
	t.Helper()
	var start, first time.Time
	for _, f := range files {
		for _, e := range f.Events {
			if start.IsZero() || e.T.Before(start) {
				start = e.T
			}
			if e.Ev == trace.EvSend && e.Kind == "order_record" && (first.IsZero() || e.T.Before(first)) {
				first = e.T
			}
		}
	}
	from := first.Sub(start)
	d, err := diagram.Build(diagram.Window(files, from, from+100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var svg bytes.Buffer
	if err := d.WriteSVG(&svg, diagram.Options{}); err != nil {
		t.Fatal(err)
	}
	docdiagram.Check(t, "order-causal", svg.Bytes())
}

func describe(d Delivery) string {
	s := fmt.Sprintf("%s %q from n%d", d.Order, d.Message, d.Sender)
	switch {
	case d.Vector != nil:
		s += fmt.Sprintf(" t=%v", d.Vector)
	case d.Lamport != 0:
		s += fmt.Sprintf(" stamp=%d", d.Lamport)
	case d.Order == TotalOrder:
		s += fmt.Sprintf(" number=%d", d.Seq)
	}
	if d.Result != "" {
		s += " -> " + d.Result
	}
	if d.Error != "" {
		s += " -> refused: " + d.Error
	}
	return s
}

func sequencerOf(s *sim.Sim) string {
	c := s.Core(1).(*Core)
	if c.cfg.Total != Sequencer {
		return "none (lamport)"
	}
	lead, _, ok := c.Election().Leader()
	if !ok {
		return "none yet"
	}
	return fmt.Sprintf("n%d", lead)
}
