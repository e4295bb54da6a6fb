// Package mutexscript replays mutual-exclusion scenario scripts
// (internal/testkit/scenario) on the simulator (internal/sim) with fixed per-link
// delays and exact clocks, so that a script reproduces one interleaving of
// the notes, the same on every run, and its trace can be drawn
// (internal/diagram). It is the twin of internal/testkit/electscript; every lock
// core uses it for its testdata/scenarios: central, ricartagrawala and
// lamport, maekawa and majority on the simulator, the token ring on its
// own network (Setup.Net: members ticked only at their deadlines, a frame
// of a kind dropped, a member paused with its frames waiting). It exists
// for tests only.
//
// Commands (each prints what it caused, at its true time, as the
// algorithm's Setup.Event writes it):
//
//	cluster ARGS...             the members and their cores, as the algorithm's
//	                            Setup.New reads ARGS; a script may start a new
//	                            cluster (the last one is drawn first)
//	run D                       advance the simulation by D
//	acquire ID LOCK [shared]    a client of member ID asks for LOCK
//	release ID LOCK|REQ         that client releases (or withdraws) its request
//	                            for LOCK, or request number REQ
//	renew ID LOCK|REQ           that client renews its grant (the lease it has)
//	crash ID | restart ID       stop a member (its disk survives) / start it again
//	isolate ID                  cut every link to and from ID (the simulator)
//	cut A B                     cut the link between A and B, both ways (idem)
//	heal                        restore every link (idem)
//	counts                      frames delivered by kind since the last counts
//	                            (Setup.Kinds), where any was
//
// and the algorithm's own (Setup.Commands: a status, a Lamport clock
// moved). Every run records the members' traces (as `mutexd --trace`
// writes them) and draws them: a run that cannot be drawn fails. With
// -mutexscript.out DIR the traces and drawings (SVG, HTML) are written to
// DIR.
package mutexscript

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/diagram"
	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/testkit/docdiagram"
	"github.com/synclab/synclab/internal/testkit/scenario"
	"github.com/synclab/synclab/internal/tracecheck"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/wire"
)

// Out is the -mutexscript.out flag: where to write each script's traces
// and drawings.
var Out = flag.String("mutexscript.out", "", "write the traces, SVG and HTML of every mutex scenario script into this `DIR`")

// Cluster is what a cluster command starts.
type Cluster struct {
	Members []uint32
	// New is member id's core.
	New func(id uint32, env core.Env) (mutex.Algorithm, error)
	// Delay is every link's delay (0: 1ms).
	Delay time.Duration
	// Start is the simulation's start (zero: the simulator's default).
	Start time.Time
}

// Net is a cluster a script drives: the simulator's (Setup.New) or an
// algorithm's own network (Setup.Net).
type Net interface {
	// Elapsed is the time since the start.
	Elapsed() time.Duration
	// Run lets d pass.
	Run(d time.Duration)
	// Do calls f with member id's core and its clock's reading, then
	// hands what the core wants done to the network.
	Do(id uint32, f func(c mutex.Algorithm, now time.Time)) error
	// Crash stops member id (its disk survives); Restart starts it again.
	Crash(id uint32)
	Restart(id uint32)
	// Delivered is the frames of kind k delivered since ResetCounts.
	Delivered(k wire.Kind) uint64
	ResetCounts()
	// Draw lays out the run's traces (a run that cannot be drawn fails t)
	// and, with dir set, writes them and the drawing there under name.
	Draw(t testing.TB, dir, name string)
}

// Setup is what a script needs of one algorithm.
type Setup struct {
	// New reads the cluster command (a.F[0] is "cluster") and returns the
	// cluster to run on the simulator.
	New func(r *Script, a scenario.Args) Cluster
	// Net, instead of New, reads the cluster command and returns the
	// algorithm's own network, which prints what happens itself.
	Net func(r *Script, a scenario.Args) Net
	// Event is the line an event of a simulated run prints, or false to
	// leave it out.
	Event func(r *Script, e sim.Event) (string, bool)
	// Prefix begins a line the harness prints for member id at d since the
	// start: a request taken, an operator call refused.
	Prefix func(d time.Duration, id uint32) string
	// ShowRequests prints every request an acquire takes (scripts that
	// release by number).
	ShowRequests bool
	// Kinds: the kinds counts reports, in this order; Name shortens a
	// kind's name there (nil: as it is).
	Kinds []wire.Kind
	Name  func(wire.Kind) string
	// Commands are the algorithm's own commands (they may replace one of
	// the above, counts); the events before one are printed first.
	Commands map[string]func(r *Script, a scenario.Args)
	// OnSend sees every frame sent (sim.OnSend), for an algorithm that
	// prints or counts them.
	OnSend func(r *Script, f sim.SentFrame)
	// Docs names the docs' diagrams scripts draw: script (its file's
	// name, without .txt) -> NAME of docs/diagrams/NAME.svg, the drawing
	// of its first cluster's run, kept current (internal/testkit/docdiagram).
	Docs map[string]string
}

// Script is one script's run.
type Script struct {
	T   *testing.T
	N   Net      // the current cluster
	S   *sim.Sim // the current cluster, when it is the simulator's
	Out *strings.Builder

	setup Setup
	seen  int
	reqs  map[string]mutex.RequestID // "ID/LOCK" -> its latest request
	drawn int
	// expect are the properties the current cluster's run is made to
	// violate (`expect-violation P`): `trace check` must find those, and
	// no other.
	expect []string
}

// Core is member id's core on the simulator.
func (r *Script) Core(id uint32) mutex.Algorithm { return r.S.Core(id).(mutex.Algorithm) }

// Printf writes to the script's output.
func (r *Script) Printf(format string, args ...any) { fmt.Fprintf(r.Out, format, args...) }

// Flush prints the events since the last flush, as Setup.Event writes
// them.
func (r *Script) Flush() {
	if r.S == nil {
		return
	}
	evs := r.S.Events()
	for _, e := range evs[r.seen:] {
		if line, ok := r.setup.Event(r, e); ok {
			r.Out.WriteString(line + "\n")
		}
	}
	r.seen = len(evs)
}

// Run executes script and returns it with every command's output
// regenerated; a script is deterministic.
func Run(t *testing.T, script string, setup Setup) string {
	t.Helper()
	r := &Script{T: t, Out: &strings.Builder{}, setup: setup}
	lines, cmds := scenario.Commands(script)
	for i, line := range lines {
		r.Out.WriteString(line + "\n")
		f := cmds[i]
		if f == nil {
			continue
		}
		a := scenario.Args{T: t, Line: line, F: f}
		if f[0] != "cluster" && r.N == nil {
			t.Fatalf("%q before cluster", line)
		}
		if own, ok := setup.Commands[f[0]]; ok {
			r.Flush()
			own(r, a)
		} else {
			r.command(a)
		}
		r.Flush()
		r.Out.WriteString("\n")
	}
	r.draw()
	return r.Out.String()
}

func (r *Script) command(a scenario.Args) {
	f := a.F
	switch f[0] {
	case "cluster":
		r.draw()
		r.start(a)
	case "run":
		r.N.Run(a.Duration(1))
	case "acquire":
		id, lock := a.ID(1), a.F[2]
		mode := mutex.Exclusive
		if len(f) > 3 && f[3] == "shared" {
			mode = mutex.Shared
		}
		r.Acquire(id, mutex.Request{Lock: lock, Mode: mode, Client: "script"})
	case "release":
		id, req := a.ID(1), r.request(a)
		r.do(id, "release", func(c mutex.Algorithm, now time.Time) error { return c.Release(now, req) })
	case "renew":
		id, req := a.ID(1), r.request(a)
		r.do(id, "renew", func(c mutex.Algorithm, now time.Time) error { return c.Renew(now, req, 0) })
	case "expect-violation":
		r.expect = append(r.expect, f[1:]...)
	case "crash":
		r.N.Crash(a.ID(1))
	case "restart":
		r.N.Restart(a.ID(1))
	case "isolate", "cut", "heal":
		if r.S == nil {
			r.T.Fatalf("%q: only on the simulator", a.Line)
		}
		switch f[0] {
		case "isolate":
			r.S.Isolate(a.ID(1))
		case "cut":
			r.S.Cut(a.ID(1), a.ID(2))
			r.S.Cut(a.ID(2), a.ID(1))
		default:
			r.S.Heal()
		}
	case "counts":
		var parts []string
		for _, k := range r.setup.Kinds {
			if n := r.N.Delivered(k); n > 0 {
				name := k.String()
				if r.setup.Name != nil {
					name = r.setup.Name(k)
				}
				parts = append(parts, fmt.Sprintf("%s=%d", name, n))
			}
		}
		r.Out.WriteString(strings.Join(parts, " ") + "\n")
		r.N.ResetCounts()
	default:
		r.T.Fatalf("unknown command %q", a.Line)
	}
}

// Acquire has a client of member id make request q, as the acquire
// command does (an algorithm's own command passes more of the request:
// the token-asking variant's vector); a later release or renew of
// q.Lock names it.
func (r *Script) Acquire(id uint32, q mutex.Request) {
	r.do(id, "acquire", func(c mutex.Algorithm, now time.Time) error {
		req, err := c.Acquire(now, q)
		if err == nil {
			r.reqs[fmt.Sprintf("%d/%s", id, q.Lock)] = req
			if r.setup.ShowRequests {
				r.Printf("%s request=%d lock=%s\n", r.setup.Prefix(r.N.Elapsed(), id), req, q.Lock)
			}
		}
		return err
	})
}

// request is argument 2 of a release or renew: the member's latest
// request for that lock, or a request number.
func (r *Script) request(a scenario.Args) mutex.RequestID {
	if req, ok := r.reqs[fmt.Sprintf("%d/%s", a.ID(1), a.F[2])]; ok {
		return req
	}
	n, err := strconv.ParseUint(a.F[2], 10, 64)
	if err != nil {
		r.T.Fatalf("%q: no request for lock %q at member %d", a.Line, a.F[2], a.ID(1))
	}
	return mutex.RequestID(n)
}

// do calls an operator call on member id's core; a refusal is printed.
func (r *Script) do(id uint32, what string, fn func(c mutex.Algorithm, now time.Time) error) {
	refused := func(err error) {
		r.Printf("%s %s: %v\n", r.setup.Prefix(r.N.Elapsed(), id), what, err)
	}
	if err := r.N.Do(id, func(c mutex.Algorithm, now time.Time) {
		if err := fn(c, now); err != nil {
			refused(err)
		}
	}); err != nil {
		refused(err)
	}
}

func (r *Script) start(a scenario.Args) {
	r.seen, r.reqs = 0, map[string]mutex.RequestID{}
	if r.setup.Net != nil {
		r.S, r.N = nil, r.setup.Net(r, a)
		return
	}
	r.S = NewSim(r.T, r.setup.New(r, a))
	r.N = &simNet{Sim: r.S, traces: diagram.RecordSim(r.T, r.S, "mutexd")}
	if r.setup.OnSend != nil {
		r.S.OnSend(func(f sim.SentFrame) { r.setup.OnSend(r, f) })
	}
	r.S.Start()
}

// simNet is the simulator as a script's Net.
type simNet struct {
	*sim.Sim
	traces *diagram.SimTraces
}

func (n *simNet) Do(id uint32, f func(c mutex.Algorithm, now time.Time)) error {
	return n.Sim.Do(id, func(c core.Core) { f(c.(mutex.Algorithm), n.Clock(id).Now()) })
}

func (n *simNet) Draw(t testing.TB, dir, name string) { n.traces.Draw(t, n.Sim, dir, name) }

// NewSim is cl on the simulator, not started: seed 1, every link's delay
// fixed, exact clocks. Tests that drive a scenario's cluster by hand
// start it themselves.
func NewSim(t testing.TB, cl Cluster) *sim.Sim {
	if cl.Delay == 0 {
		cl.Delay = time.Millisecond
	}
	s := sim.New(sim.Config{Seed: 1, Start: cl.Start, DefaultLink: sim.LinkConfig{Delay: cl.Delay}})
	for _, id := range cl.Members {
		s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			c, err := cl.New(id, env)
			if err != nil {
				t.Fatalf("member %d: %v", id, err)
			}
			return c
		}, clock.SimConfig{})
	}
	return s
}

// draw draws the current cluster's run, if any (a script's clusters are
// numbered from 1 in the files' names).
func (r *Script) draw() {
	if r.N == nil {
		return
	}
	r.drawn++
	name, dir, doc := fmt.Sprintf("%s-%d", strings.ReplaceAll(r.T.Name(), "/", "-"), r.drawn), *Out, ""
	if r.drawn == 1 {
		doc = r.setup.Docs[path.Base(r.T.Name())]
	}
	if doc != "" && dir == "" {
		dir = r.T.TempDir()
	}
	r.N.Draw(r.T, dir, name)
	if doc != "" {
		svg, err := os.ReadFile(filepath.Join(dir, name+".svg"))
		if err != nil {
			r.T.Fatal(err)
		}
		docdiagram.Check(r.T, doc, svg)
	}
	if sn, ok := r.N.(*simNet); ok {
		// Every run is checked as `mutexd trace check` would check it.
		if err := tracecheck.CheckRun(sn.traces.Files(r.T, sn.Sim), r.expect...); err != nil {
			r.T.Errorf("cluster %d: trace check: %v", r.drawn, err)
		}
	}
	r.expect = nil
}
