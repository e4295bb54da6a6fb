package scenario

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// TracesDir is the test binary's -scenario.traces flag: write the trace set
// of every traced scenario script there (see Traced).
var TracesDir = flag.String("scenario.traces", "", "write each traced scenario script's protocol trace (format v1, one file per member) into `DIR`/<test>/, for `X trace draw`")

// Tracer records a hand-driven test network as synclab traces (format v1,
// internal/trace): for every member its sends, receives and local events,
// with the frame ids that match a receive to its send, Lamport times and
// ground-truth vector clocks kept as internal/node keeps them (a send ticks
// the sender's clocks once however many frames it fans out to; a receive
// merges then ticks; a local event ticks the vector). internal/diagram
// draws the result (`X trace draw`), and its layout is checked against the
// vectors. Times are the network's own (the header says clock "true").
//
// A runner calls Send when a member's message leaves (before it decides
// which copies the network loses), Recv when a copy is handed to the
// receiving core, and Local for each of a core's events (before the sends
// of the same Ready, as a daemon records them). Not safe for concurrent use:
// a hand-driven network is driven by one goroutine.
type Tracer struct {
	daemon  string
	members []uint32
	start   time.Time
	procs   map[uint32]*tracedProc
}

type tracedProc struct {
	lamport clock.Lamport
	vc      clock.Vector
	seq     uint64 // frames sent: the frame ids' sequence
	events  []trace.Event
}

// Frame is one copy of a traced send, to hand to Recv when it is delivered
// (a copy never delivered is a frame lost: an arrow to nowhere).
type Frame struct {
	From, To uint32
	Kind     wire.Kind
	ID       string // the trace's frame id, "SENDER:SEQ"
	lamport  uint64
	vc       clock.Vector
	payload  []byte
}

// NewTracer starts the traces of a network of members running daemon's
// cores (the headers' daemon: mutexd, electd...), whose clock reads start
// at the beginning.
func NewTracer(daemon string, members []uint32, start time.Time) *Tracer {
	t := &Tracer{daemon: daemon, members: slices.Sorted(slices.Values(members)), start: start, procs: map[uint32]*tracedProc{}}
	for _, id := range t.members {
		t.procs[id] = &tracedProc{}
	}
	return t
}

// Traced is NewTracer for the scenario script run by test tb: with
// -scenario.traces DIR, the traces are written to DIR/<test name>/n<ID>.trace
// when the test ends (draw them with `mutexd trace draw DIR/<test>/*.trace
// -o run.svg`); a script that starts a second network gets <test name>-2,
// and so on. Without the flag the tracer records all the same, so that a
// test can check its traces (Files).
func Traced(tb testing.TB, daemon string, members []uint32, start time.Time) *Tracer {
	tb.Helper()
	t := NewTracer(daemon, members, start)
	if dir := *TracesDir; dir != "" {
		name := testDir(tb.Name())
		tracedMu.Lock()
		if tracedNames[name]++; tracedNames[name] > 1 {
			name = fmt.Sprintf("%s-%d", name, tracedNames[name])
		}
		tracedMu.Unlock()
		tb.Cleanup(func() {
			out := filepath.Join(dir, name)
			if err := t.WriteDir(out); err != nil {
				tb.Errorf("scenario traces: %v", err)
				return
			}
			tb.Logf("traces in %s (draw: mutexd trace draw %s -o %s.svg)", out, filepath.Join(out, "*.trace"), out)
		})
	}
	return t
}

// tracedNames counts the tracers of each test, for their directories.
var (
	tracedMu    sync.Mutex
	tracedNames = map[string]int{}
)

// testDir turns a test's name (TestScenarios/handoff) into a directory
// name (TestScenarios-handoff).
func testDir(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '/' || r == '\\' || r == ' ' || r == ':':
			return '-'
		}
		return r
	}, name)
}

func (t *Tracer) proc(id uint32) *tracedProc {
	p, ok := t.procs[id]
	if !ok {
		panic(fmt.Sprintf("scenario: tracer: member %d is not in %v", id, t.members)) // a bug in the runner
	}
	return p
}

// Send records member from sending a message of kind with payload to each
// of to (one logical send: one Lamport stamp and one vector tick, a frame
// per receiver) at time at, and returns the frames, in the order of to.
func (t *Tracer) Send(at time.Time, from uint32, to []uint32, kind wire.Kind, payload []byte) []Frame {
	p := t.proc(from)
	lamport := p.lamport.Send()
	p.vc.Tick(from)
	fields := trace.Fields(kind, payload)
	frames := make([]Frame, 0, len(to))
	for _, dst := range to {
		t.proc(dst)
		p.seq++
		f := Frame{From: from, To: dst, Kind: kind, ID: trace.FrameID(from, p.seq), lamport: lamport, vc: p.vc.Clone(), payload: payload}
		p.events = append(p.events, trace.Event{T: at, Lamport: lamport, VC: trace.VCOf(f.vc), Ev: trace.EvSend,
			Kind: kind.String(), Frame: f.ID, From: from, To: dst, Fields: fields})
		frames = append(frames, f)
	}
	return frames
}

// Recv records the delivery of f to its receiver at time at.
func (t *Tracer) Recv(at time.Time, f Frame) {
	p := t.proc(f.To)
	lamport := p.lamport.Receive(f.lamport)
	p.vc.Receive(f.To, f.vc)
	p.events = append(p.events, trace.Event{T: at, Lamport: lamport, VC: trace.VCOf(p.vc), Ev: trace.EvRecv,
		Kind: f.Kind.String(), Frame: f.ID, From: f.From, To: f.To, Fields: trace.Fields(f.Kind, f.payload)})
}

// Local records member id's core reporting e at time at.
func (t *Tracer) Local(at time.Time, id uint32, e core.Event) {
	p := t.proc(id)
	p.vc.Tick(id)
	p.events = append(p.events, trace.Event{T: at, Lamport: p.lamport.Now(), VC: trace.VCOf(p.vc), Ev: trace.EvLocal,
		Name: e.Name, Msg: e.Msg, Args: trace.Args(e.Args)})
}

// Encode writes member id's trace: the header and its events, in the order
// they were recorded.
func (t *Tracer) Encode(id uint32) ([]byte, error) {
	p := t.proc(id)
	var b bytes.Buffer
	w, err := trace.NewWriter(&b, trace.Header{Daemon: t.daemon, ID: id, Host: fmt.Sprintf("n%d", id), Cluster: "scenario",
		Members: t.members, Clock: trace.ClockTrue, Started: t.start}, 1<<40)
	if err != nil {
		return nil, err
	}
	for i := range p.events {
		if err := w.Write(&p.events[i]); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Files returns every member's trace as a reader sees it (written in the
// format and read back), for internal/diagram's Build.
func (t *Tracer) Files() ([]*trace.File, error) {
	var out []*trace.File
	for _, id := range t.members {
		b, err := t.Encode(id)
		if err != nil {
			return nil, err
		}
		f, err := trace.Read(bytes.NewReader(b), fmt.Sprintf("n%d.trace", id))
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// WriteDir writes every member's trace to dir/n<ID>.trace, replacing what
// an earlier run left there.
func (t *Tracer) WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "n*.trace"))
	for _, f := range old {
		os.Remove(f)
	}
	for _, id := range t.members {
		b, err := t.Encode(id)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("n%d.trace", id)), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
