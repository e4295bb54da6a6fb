// Package electscript replays election scenario scripts (internal/testkit/scenario)
// on the simulator (internal/sim) with fixed per-link delays and exact
// clocks, so that a script reproduces one interleaving of the notes, the
// same on every run, and its trace can be drawn (internal/diagram). Every
// election that runs on the simulator uses it for its testdata/scenarios
// (the rings, majority, omega, yoyo; bully's scripts tick its synchronous
// test network instead); it exists for tests only.
//
// Commands (each prints the events it caused, at their true times):
//
//	cluster ARGS...          the members and their cores, as the algorithm's
//	                         Setup.New reads ARGS (Numbered: "cluster N ..."
//	                         for members 1..N)
//	delay A B D              the link between A and B takes D each way
//	                         (default Setup.Delay, 1ms if unset)
//	run D                    advance the simulation by D
//	crash ID | restart ID    stop a member (its disk survives) / start it again
//	pause ID | resume ID     SIGSTOP / SIGCONT
//	isolate ID               cut every link to and from ID
//	partition A,B C,D,...    cut every link between the two groups
//	heal                     restore every link
//	resign ID                the member's leader steps down (elect.Elector.Resign)
//	status                   every member's role, leader, term and phase
//	counts                   frames sent by kind since the last counts, and
//	                         how many arrived where fewer did
//
// Every run records the members' traces (as `electd --trace` writes them)
// and draws them (internal/diagram): a script that cannot be drawn fails.
// With -electscript.out DIR the traces and the drawing (SVG, HTML) of each
// script are written to DIR.
package electscript

import (
	"bytes"
	"flag"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/diagram"
	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/testkit/scenario"
	"github.com/synclab/synclab/internal/tracecheck"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect"
	"github.com/synclab/synclab/pkg/epoch"
	"github.com/synclab/synclab/pkg/wire"
)

// Out is the -electscript.out flag: where to write each script's traces
// and drawings.
var Out = flag.String("electscript.out", "", "write the traces, SVG and HTML of every election scenario script into this `DIR`")

// Setup is what a script needs of one algorithm.
type Setup struct {
	// New reads the cluster command (a.F[0] is "cluster") and returns the
	// members, in the order status lists them, and the constructor of
	// every member's core.
	New func(t testing.TB, a scenario.Args) (members []uint32, newCore func(env core.Env) (elect.Elector, error))
	// Kinds are the kinds counts reports, in order.
	Kinds []wire.Kind
	// Show picks the events printed (nil: every one).
	Show func(event string) bool
	// Delay is every link's delay unless a delay command says otherwise
	// (0: 1ms).
	Delay time.Duration
}

// Numbered is the cluster command's "N": members 1..N.
func Numbered(a scenario.Args) []uint32 {
	n := int(a.Uint(1))
	members := make([]uint32, n)
	for j := range members {
		members[j] = uint32(j + 1)
	}
	return members
}

// Run executes script and returns it with every command's output
// regenerated; a script is deterministic.
func Run(t *testing.T, script string, setup Setup) string {
	t.Helper()
	var out bytes.Buffer
	var s *sim.Sim
	var traces *diagram.SimTraces
	var expect []string // properties the run is made to violate (expect-violation)
	seen := 0
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
			if s != nil {
				t.Fatalf("%q: a second cluster", line)
			}
			members, newCore := setup.New(t, a)
			delay := setup.Delay
			if delay == 0 {
				delay = time.Millisecond
			}
			s = sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: delay}})
			for _, id := range members {
				s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
					el, err := newCore(env)
					if err != nil {
						t.Fatalf("%q: member %d: %v", line, id, err)
					}
					return el
				}, clock.SimConfig{})
			}
			traces = diagram.RecordSim(t, s, "electd")
			s.Start()
		case "delay":
			s.SetLinkBoth(a.ID(1), a.ID(2), sim.LinkConfig{Delay: a.Duration(3)})
		case "run":
			s.Run(a.Duration(1))
		case "crash":
			s.Crash(a.ID(1))
		case "restart":
			s.Restart(a.ID(1))
		case "pause":
			s.Pause(a.ID(1))
		case "resume":
			s.Resume(a.ID(1))
		case "isolate":
			s.Isolate(a.ID(1))
		case "partition":
			s.Partition(a.IDs(1), a.IDs(2))
		case "heal":
			s.Heal()
		case "expect-violation":
			// The run is made to violate these properties: `electd
			// trace check` must find them, and no other.
			expect = append(expect, f[1:]...)
		case "resign":
			id := a.ID(1)
			if err := s.Do(id, func(c core.Core) {
				if err := c.(elect.Elector).Resign(s.Clock(id).Now()); err != nil {
					fmt.Fprintf(&out, "error: %v\n", err)
				}
			}); err != nil {
				fmt.Fprintf(&out, "error: %v\n", err)
			}
		case "status":
			for _, id := range s.IDs() {
				if !s.Up(id) {
					fmt.Fprintf(&out, "%d down\n", id)
					continue
				}
				v := s.Core(id).(elect.Elector).Report()
				fmt.Fprintf(&out, "%d %-9v leader=%d term=%s phase=%q\n", id, v.Role, v.Leader, Term(v.Term), v.Phase)
			}
		case "counts":
			var parts []string
			for _, k := range setup.Kinds {
				p := fmt.Sprintf("%s=%d", k, s.Sent(k))
				if got := s.Delivered(k); got != s.Sent(k) {
					p += fmt.Sprintf(" (delivered %d)", got)
				}
				parts = append(parts, p)
			}
			out.WriteString(strings.Join(parts, " ") + "\n")
			s.ResetCounts()
		default:
			t.Fatalf("unknown command %q", line)
		}
		if s == nil {
			continue
		}
		evs := s.Events()
		for _, e := range evs[seen:] {
			if setup.Show != nil && !setup.Show(e.Name) {
				continue
			}
			fmt.Fprintf(&out, "%v %d %s", e.At.Round(time.Microsecond), e.Node, e.Name)
			for j := 0; j+1 < len(e.Args); j += 2 {
				v := e.Args[j+1]
				if k, _ := e.Args[j].(string); k == "term" {
					if tm, ok := v.(uint64); ok {
						v = Term(tm)
					}
				}
				fmt.Fprintf(&out, " %v=%v", e.Args[j], v)
			}
			out.WriteString("\n")
		}
		seen = len(evs)
		out.WriteString("\n")
	}
	if s != nil {
		traces.Draw(t, s, *Out, strings.ReplaceAll(t.Name(), "/", "-"))
		// Every run is checked as `electd trace check` would check it.
		if err := tracecheck.CheckRun(traces.Files(t, s), expect...); err != nil {
			t.Errorf("trace check: %v", err)
		}
	}
	return out.String()
}

// Term renders an owned term as round.owner ("3.2"), a small one as is.
func Term(t uint64) string {
	if t < 1<<32 {
		return fmt.Sprint(t)
	}
	return fmt.Sprintf("%d.%d", epoch.Round(t), epoch.Owner(t))
}
