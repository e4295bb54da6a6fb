package maekawa_test

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/diagram"
	"github.com/synclab/synclab/internal/scenario"
	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/mutex"
	"github.com/synclab/synclab/pkg/mutex/maekawa"
	"github.com/synclab/synclab/pkg/wire"
)

// TestScenarios replays testdata/scenarios/*.txt on the simulator with a
// fixed delay on every link (the notes' interleavings, drawable): seed
// 004's Maekawa deadlock, shown to happen with the notes' algorithm and
// to be avoided with Sanders' inquire, relinquish and failed; and a
// majority-quorum example of the notes. Commands:
//
//	cluster N [majority M] [coordinators=1,2,3] [textbook] [forgetful|persist] [sets=1:1,2/2:2,3/...] [delay=D] [backoff=D]
//	acquire ID LOCK [shared]     a client of ID asks for LOCK
//	release ID LOCK              it gives LOCK back
//	crash ID / restart ID
//	run D                        advance virtual time; prints the vote frames
//	                             sent and the lock outcomes meanwhile
//	holders LOCK                 who holds LOCK now, with fences
//
// Every cluster records its traces, and each is drawn as the notes draw
// their examples (internal/diagram: a line per member, an arrow per
// frame); -scenario.svg DIR writes the SVGs there.
func TestScenarios(t *testing.T) {
	scenario.Files(t, func(t *testing.T, script string) string {
		var r *replay
		drawn := 0
		draw := func() {
			if r != nil {
				drawn++
				r.draw(fmt.Sprintf("%s-%d", filepath.Base(t.Name()), drawn))
			}
		}
		defer draw()
		lines, cmds := scenario.Commands(script)
		var out strings.Builder
		for i, line := range lines {
			out.WriteString(line + "\n")
			cmd := cmds[i]
			if cmd == nil {
				continue
			}
			a := scenario.Args{T: t, Line: line, F: cmd}
			switch cmd[0] {
			case "cluster":
				draw()
				r = newReplay(t, cmd[1:])
			case "acquire":
				mode := mutex.Exclusive
				if len(cmd) > 3 && cmd[3] == "shared" {
					mode = mutex.Shared
				}
				r.acquire(a.ID(1), cmd[2], mode)
			case "release":
				r.release(a.ID(1), cmd[2])
			case "crash":
				r.s.Crash(a.ID(1))
			case "restart":
				r.s.Restart(a.ID(1))
			case "run":
				r.s.Run(a.Duration(1))
			case "holders":
				r.holders(&out, cmd[1])
				continue
			default:
				t.Fatalf("unknown command %q", line)
			}
			r.flush(&out)
		}
		return out.String()
	})
}

var svgDir = flag.String("scenario.svg", "", "write each scenario's space-time diagram (SVG) into this directory")

type replay struct {
	t    *testing.T
	bufs map[uint32]*bytes.Buffer
	s    *sim.Sim
	kind wire.Kind
	log  []string
	seen int
	reqs map[string]mutex.RequestID // "id lock" -> request
}

func newReplay(t *testing.T, args []string) *replay {
	n, err := strconv.Atoi(args[0])
	if err != nil {
		t.Fatalf("cluster %v: %v", args, err)
	}
	delay := time.Millisecond
	cfg := maekawa.DefaultLANConfig()
	cfg.TraceFrames = true
	cfg.AttemptTimeout = 2 * time.Second // the scenarios show the protocol, not its timeouts
	cfg.BackoffBase, cfg.BackoffMax = 20*time.Millisecond, 20*time.Millisecond
	for i := 1; i < len(args); i++ {
		switch k, v, _ := strings.Cut(args[i], "="); k {
		case "majority":
			cfg.Quorum, _ = strconv.Atoi(args[i+1])
			cfg.Shared = true
			i++
		case "coordinators":
			cfg.Coordinators = scenario.Args{T: t, Line: args[i], F: []string{"", v}}.IDs(1)
		case "textbook":
			cfg.Textbook = true
		case "forgetful":
			cfg.Forgetful = true
		case "persist":
			cfg.PersistVotes = true
		case "backoff":
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("cluster: %v", err)
			}
			cfg.BackoffBase, cfg.BackoffMax = d, d
		case "delay":
			delay, _ = time.ParseDuration(v)
		case "sets":
			cfg.VotingSets = map[uint32][]uint32{}
			for _, s := range strings.Split(v, "/") {
				id, list, _ := strings.Cut(s, ":")
				sa := scenario.Args{T: t, Line: s, F: []string{"", id, list}}
				cfg.VotingSets[sa.ID(1)] = sa.IDs(2)
			}
		default:
			t.Fatalf("cluster: unknown option %q", args[i])
		}
	}
	r := &replay{t: t, reqs: map[string]mutex.RequestID{}, kind: wire.KindMaekawa,
		// From t0 the clock hint of a proposal reads milliseconds since
		// the start: the fences of the notes' examples stay small.
		s: sim.New(sim.Config{Seed: 1, Start: t0, DefaultLink: sim.LinkConfig{Delay: delay}})}
	if cfg.Quorum > 0 {
		r.kind = wire.KindQuorumLock
	}
	for i := 1; i <= n; i++ {
		cfg.Members = append(cfg.Members, uint32(i))
	}
	for _, id := range cfg.Members {
		r.s.AddNode(id, netip.AddrPort{}, func(env core.Env) core.Core {
			c := cfg
			c.ID, c.Persisted, c.Lamport, c.Rand = id, env.State, env.Lamport, env.Rand
			m, err := maekawa.New(c)
			if err != nil {
				t.Fatalf("member %d: %v", id, err)
			}
			return m
		}, clock.SimConfig{})
	}
	r.bufs = map[uint32]*bytes.Buffer{}
	if err := r.s.RecordTraces("mutexd", func(id uint32) (io.Writer, error) {
		r.bufs[id] = new(bytes.Buffer)
		return r.bufs[id], nil
	}, 0); err != nil {
		t.Fatal(err)
	}
	r.s.Start()
	return r
}

// draw closes the cluster's traces and draws them: a line per member, an
// arrow per delivered frame.
func (r *replay) draw(name string) {
	r.t.Helper()
	if err := r.s.CloseTraces(); err != nil {
		r.t.Fatal(err)
	}
	var files []*trace.File
	for _, id := range r.s.IDs() {
		f, err := trace.Read(bytes.NewReader(r.bufs[id].Bytes()), fmt.Sprintf("n%d.trace", id))
		if err != nil {
			r.t.Fatal(err)
		}
		files = append(files, f)
	}
	d, err := diagram.Build(files)
	if err != nil {
		r.t.Fatal(err)
	}
	if len(d.Procs) != len(r.s.IDs()) {
		r.t.Errorf("%s: %d lines for %d members", name, len(d.Procs), len(r.s.IDs()))
	}
	if *svgDir == "" {
		return
	}
	var b bytes.Buffer
	if err := d.WriteSVG(&b, diagram.Options{}); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*svgDir, name+".svg"), b.Bytes(), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func frameText(e sim.Event) string {
	op := arg(e, "op").(string)
	s := fmt.Sprintf("%s %v", op, arg(e, "lock"))
	switch op {
	case "request":
		s += fmt.Sprintf(" (t=%d)", arg(e, "stamp"))
	case "locked", "commit", "commit_ok":
		s += fmt.Sprintf(" fence=%d", arg(e, "fence"))
	case "release":
		if f := arg(e, "fence").(uint64); f != 0 {
			s += fmt.Sprintf(" fence=%d", f)
		}
	}
	return s
}

func (r *replay) acquire(id uint32, lock string, mode mutex.Mode) {
	r.s.Do(id, func(c core.Core) {
		req, err := c.(*maekawa.Core).Acquire(r.s.Clock(id).Now(), mutex.Request{Lock: lock, Mode: mode, Client: "script"})
		if err != nil {
			r.t.Fatalf("acquire %d %s: %v", id, lock, err)
		}
		r.reqs[fmt.Sprint(id, " ", lock)] = req
	})
}

func (r *replay) release(id uint32, lock string) {
	r.s.Do(id, func(c core.Core) {
		if err := c.(*maekawa.Core).Release(r.s.Clock(id).Now(), r.reqs[fmt.Sprint(id, " ", lock)]); err != nil {
			r.t.Fatalf("release %d %s: %v", id, lock, err)
		}
	})
}

// flush prints the frames and outcomes since the last command.
func (r *replay) flush(out *strings.Builder) {
	evs := r.s.Events()
	for _, e := range evs[r.seen:] {
		switch e.Name {
		case maekawa.EventFrame:
			r.log = append(r.log, fmt.Sprintf("%8v %d->%d %s", e.At, e.Node, arg(e, "to"), frameText(e)))
		case mutex.EventGranted, mutex.EventReleased, mutex.EventLost, "sim.crash", "sim.restart":
			r.log = append(r.log, fmt.Sprintf("%8v %d: %s", e.At, e.Node, strings.TrimPrefix(eventText(e), "sim.")))
		}
	}
	r.seen = len(evs)
	for _, l := range r.log {
		out.WriteString(l + "\n")
	}
	r.log = nil
}

func eventText(e sim.Event) string {
	s := e.Name
	if v, ok := e.Arg("lock"); ok {
		s += fmt.Sprintf(" %v", v)
	}
	if v, ok := e.Arg("fence"); ok {
		s += fmt.Sprintf(" fence=%v", v)
	}
	if v, ok := e.Arg("mode"); ok && v != "exclusive" {
		s += fmt.Sprintf(" %v", v)
	}
	if v, ok := e.Arg("reason"); ok {
		s += fmt.Sprintf(" (%v)", v)
	}
	return s
}

func (r *replay) holders(out *strings.Builder, lock string) {
	var hs []string
	for _, id := range r.s.IDs() {
		if !r.s.Running(id) {
			continue
		}
		st := r.s.Core(id).(*maekawa.Core).Report()
		for _, l := range st.Locks {
			if l.Name != lock {
				continue
			}
			for _, h := range l.Holders {
				hs = append(hs, fmt.Sprintf("%d (fence %d, %v)", id, h.Fence, h.Mode))
			}
		}
	}
	if len(hs) == 0 {
		hs = []string{"none"}
	}
	fmt.Fprintf(out, "%s: %s\n", lock, strings.Join(hs, ", "))
}

func arg(e sim.Event, k string) any {
	v, _ := e.Arg(k)
	return v
}
