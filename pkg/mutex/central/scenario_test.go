package central_test

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
	"github.com/synclab/synclab/pkg/elect/bully"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/central"
	"github.com/synclab/synclab/pkg/wire"
)

var traceOut = flag.String("central.traces", "", "write each scenario's per-node traces and its space-time diagram (SVG) into this directory")

// TestScenarios replays the scripts in testdata/scenarios on internal/sim
// with fixed links (every frame takes exactly 1 ms, no loss, clocks
// exact), so a run is the notes' drawing: the same interleaving every
// time. Every run is traced and laid out by internal/diagram (the traces
// and an SVG of the run are written with -central.traces DIR). A script is a sequence of commands ("> cmd args"),
// each followed by what it caused; lines starting with # are comments.
// After a deliberate change of behaviour, regenerate the files with
//
//	go test ./pkg/mutex/central -run TestScenarios -rewrite
//
// and read the diff: it is the change, in protocol terms.
//
// Commands:
//
//	cluster N [P1,P2,...]  N members 1..N (bully priorities in ID order), lease 1s
//	run D                  let D (a Go duration) pass
//	acquire ID LOCK [shared]  a client of member ID asks for LOCK
//	release ID LOCK        that client releases (or withdraws) its request
//	renew ID LOCK          that client renews its grant
//	crash ID / restart ID  member ID stops (its disk survives) / starts again
//	isolate ID / heal      cut member ID off / restore every link
//	status                 each live member's view of each lock
//	counts                 frames delivered by kind since the last counts
//
// Each command prints what it caused, at the time it happened (ms since
// the start): elections won, coordinators taking over, their holds, and
// the clients' grants, renewals, releases and losses.
func TestScenarios(t *testing.T) { scenario.Files(t, runScenario) }

type scenarioRun struct {
	t    *testing.T
	s    *sim.Sim
	out  *strings.Builder
	seen int
	reqs map[string]mutex.RequestID // "ID/LOCK" -> the client's request
	bufs map[uint32]*bytes.Buffer
}

// printed are the events a script shows.
var printed = map[string]bool{
	elect.EventElected: true, central.EventCoordinating: true, central.EventReady: true,
	mutex.EventGranted: true, mutex.EventRenewed: true, mutex.EventReleased: true, mutex.EventLost: true,
	central.EventFencesExhausted: true, "sim.crash": true, "sim.restart": true,
}

func fenceShort(f uint64) string {
	s := central.FenceText(f)
	return s[strings.Index(s, "(")+1 : len(s)-1]
}

func (r *scenarioRun) flush() {
	evs := r.s.Events()
	for _, e := range evs[r.seen:] {
		if !printed[e.Name] {
			continue
		}
		fmt.Fprintf(r.out, "%6dms n%d %s", e.At.Milliseconds(), e.Node, e.Name)
		for _, k := range []string{"lock", "mode", "fence", "reason", "term", "waited"} {
			v, ok := e.Arg(k)
			if !ok {
				continue
			}
			switch k {
			case "fence":
				v = fenceShort(v.(uint64))
			case "term":
				v = fmt.Sprintf("%d/%d", bully.TermRound(v.(uint64)), bully.TermOwner(v.(uint64)))
			case "waited":
				v = v.(time.Duration).Round(time.Millisecond)
			}
			fmt.Fprintf(r.out, " %s=%v", k, v)
		}
		r.out.WriteString("\n")
	}
	r.seen = len(evs)
}

func (r *scenarioRun) core(id uint32) *central.Core { return r.s.Core(id).(*central.Core) }

// newCluster builds the simulated cluster: fixed 1 ms links, exact clocks.
func (r *scenarioRun) newCluster(n int, prio []uint32) {
	r.s = sim.New(sim.Config{Seed: 1, DefaultLink: sim.LinkConfig{Delay: time.Millisecond}})
	var members []bully.Member
	for id := uint32(1); id <= uint32(n); id++ {
		m := bully.Member{ID: id}
		if int(id) <= len(prio) {
			m.Priority = prio[id-1]
		}
		members = append(members, m)
	}
	for _, m := range members {
		id := m.ID
		r.s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			cfg := central.DefaultLANConfig()
			cfg.MaxLease = time.Second
			cfg.Election = func(env core.Env) (elect.Elector, error) {
				bc := bully.DefaultLANConfig()
				bc.Members = members
				return bully.New(env, bc)
			}
			c, err := central.New(env, cfg)
			if err != nil {
				r.t.Fatalf("node %d: %v", id, err)
			}
			return c
		}, clock.SimConfig{})
	}
	r.bufs = map[uint32]*bytes.Buffer{}
	if err := r.s.RecordTraces("mutexd", func(id uint32) (io.Writer, error) {
		r.bufs[id] = new(bytes.Buffer)
		return r.bufs[id], nil
	}, 0); err != nil {
		r.t.Fatal(err)
	}
	r.s.Start()
}

func runScenario(t *testing.T, script string) string {
	r := &scenarioRun{t: t, out: &strings.Builder{}, reqs: map[string]mutex.RequestID{}}
	lines, cmds := scenario.Commands(script)
	for i, line := range lines {
		r.out.WriteString(line + "\n")
		f := cmds[i]
		if f == nil {
			continue
		}
		a := scenario.Args{T: t, Line: line, F: f}
		if f[0] != "cluster" && r.s == nil {
			t.Fatalf("%q before cluster", line)
		}
		do := func(id uint32, fn func(c *central.Core, now time.Time) error) {
			if err := r.s.Do(id, func(c core.Core) {
				if err := fn(c.(*central.Core), r.s.Clock(id).Now()); err != nil {
					fmt.Fprintf(r.out, "%6dms n%d error: %v\n", r.s.Elapsed().Milliseconds(), id, err)
				}
			}); err != nil {
				fmt.Fprintf(r.out, "error: %v\n", err)
			}
		}
		switch f[0] {
		case "cluster":
			r.newCluster(int(a.Uint(1)), a.IDs(2))
		case "run":
			r.s.Run(a.Duration(1))
		case "acquire":
			id, lock := a.ID(1), f[2]
			mode := mutex.Exclusive
			if len(f) > 3 && f[3] == "shared" {
				mode = mutex.Shared
			}
			do(id, func(c *central.Core, now time.Time) error {
				req, err := c.Acquire(now, mutex.Request{Lock: lock, Mode: mode})
				r.reqs[fmt.Sprintf("%d/%s", id, lock)] = req
				return err
			})
		case "release":
			id, lock := a.ID(1), f[2]
			do(id, func(c *central.Core, now time.Time) error {
				return c.Release(now, r.reqs[fmt.Sprintf("%d/%s", id, lock)])
			})
		case "renew":
			id, lock := a.ID(1), f[2]
			do(id, func(c *central.Core, now time.Time) error {
				return c.Renew(now, r.reqs[fmt.Sprintf("%d/%s", id, lock)], 0)
			})
		case "crash":
			r.s.Crash(a.ID(1))
		case "restart":
			r.s.Restart(a.ID(1))
		case "isolate":
			r.s.Isolate(a.ID(1))
		case "heal":
			r.s.Heal()
		case "status":
			r.flush()
			r.status()
		case "counts":
			r.flush()
			var parts []string
			for _, k := range wire.Kinds() {
				if n := r.s.Delivered(k); n > 0 && central.Handles(k) {
					parts = append(parts, fmt.Sprintf("%s=%d", strings.TrimPrefix(k.String(), "central_"), n))
				}
			}
			r.out.WriteString(strings.Join(parts, " ") + "\n")
			r.s.ResetCounts()
		default:
			t.Fatalf("unknown command %q", line)
		}
		r.flush()
		r.out.WriteString("\n")
	}
	r.draw()
	return r.out.String()
}

// status prints, per live member, whom it follows and each lock: its own
// holders and waiting requests, and the coordinator's queue.
func (r *scenarioRun) status() {
	for _, id := range r.s.IDs() {
		if !r.s.Running(id) {
			continue
		}
		st := r.core(id).Report()
		d := st.Detail.(central.Detail)
		role := fmt.Sprintf("follows n%d", d.Coordinator)
		if d.Coordinates {
			role = fmt.Sprintf("coordinates (ready=%v joined=%d)", d.Ready, d.Joined)
		}
		fmt.Fprintf(r.out, "n%d %s term=%d/%d\n", id, role, bully.TermRound(d.Term), bully.TermOwner(d.Term))
		for _, ls := range st.Locks {
			var hs, qs []string
			for _, h := range ls.Holders {
				hs = append(hs, fmt.Sprintf("#%d(%s,%s)", h.ID, h.Mode, fenceShort(h.Fence)))
			}
			for _, q := range ls.Queue {
				qs = append(qs, fmt.Sprintf("#%d(%s)", q.ID, q.Mode))
			}
			line := fmt.Sprintf("  %s held=%v waiting=%v", ls.Name, hs, qs)
			if ld, ok := ls.Detail.(central.LockDetail); ok {
				line += fmt.Sprintf(" queue: holders=%v waiting=%v", ld.Holders, ld.Waiting)
			}
			r.out.WriteString(line + "\n")
		}
	}
}

// draw lays the run out as a space-time diagram (internal/diagram), and
// with -central.traces writes the traces and the SVG.
func (r *scenarioRun) draw() {
	t := r.t
	r.s.CloseTraces()
	name := strings.ReplaceAll(t.Name(), "/", "_")
	var files []*trace.File
	for _, id := range r.s.IDs() {
		f, err := trace.Read(bytes.NewReader(r.bufs[id].Bytes()), fmt.Sprintf("n%d", id))
		if err != nil {
			t.Fatalf("trace of n%d: %v", id, err)
		}
		files = append(files, f)
		if *traceOut != "" {
			if err := os.WriteFile(filepath.Join(*traceOut, fmt.Sprintf("%s.n%d.trace", name, id)), r.bufs[id].Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	d, err := diagram.Build(files)
	if err != nil {
		t.Fatalf("the run cannot be drawn: %v", err)
	}
	if *traceOut != "" {
		var svg bytes.Buffer
		if err := d.WriteSVG(&svg, diagram.Options{}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*traceOut, name+".svg"), svg.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
