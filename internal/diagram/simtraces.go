package diagram

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/internal/trace"
)

// SimTraces is every member's trace of a run on internal/sim, as the
// daemon writes them with --trace, kept in memory to be drawn. The
// election and mutex script harnesses (internal/testkit/electscript,
// internal/testkit/mutexscript) record every run with it; a test of a run on the
// simulator can too.
type SimTraces struct {
	daemon string
	bufs   map[uint32]*bytes.Buffer
}

// RecordSim starts recording s's traces (before s.Start); daemon names
// the daemon in the traces' headers ("electd", "mutexd"). A member that
// restarts appends to its trace.
func RecordSim(t testing.TB, s *sim.Sim, daemon string) *SimTraces {
	t.Helper()
	r := &SimTraces{daemon: daemon, bufs: map[uint32]*bytes.Buffer{}}
	if err := s.RecordTraces(daemon, func(id uint32) (io.Writer, error) {
		if r.bufs[id] == nil {
			r.bufs[id] = new(bytes.Buffer)
		}
		return r.bufs[id], nil
	}, 0); err != nil {
		t.Fatal(err)
	}
	return r
}

// Files closes s's traces and reads them back, one per member (named
// n<ID>.trace), as `X trace check` and `X trace draw` would.
func (r *SimTraces) Files(t testing.TB, s *sim.Sim) []*trace.File {
	t.Helper()
	files, err := SimFiles(s, r.bufs)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// Draw closes s's traces and lays them out (Build): a run
// that cannot be drawn, or is drawn with another number of lines than
// members, fails the test. With dir set, each member's trace is written
// to dir/name-n<ID>.trace and the drawing to dir/name.svg and name.html.
func (r *SimTraces) Draw(t testing.TB, s *sim.Sim, dir, name string) *Diagram {
	t.Helper()
	d, err := Build(r.Files(t, s))
	if err != nil {
		t.Fatalf("drawing the run: %v", err)
	}
	if len(d.Procs) != len(s.IDs()) {
		t.Errorf("%s: %d lines for %d members", name, len(d.Procs), len(s.IDs()))
	}
	if dir == "" {
		return d
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, id := range s.IDs() {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-n%d.trace", name, id)), r.bufs[id].Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for ext, write := range map[string]func(io.Writer) error{
		".svg":  func(w io.Writer) error { return d.WriteSVG(w, Options{}) },
		".html": d.WriteHTML,
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+ext), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// SimFiles ends s's traces (Sim.CloseTraces) and reads them back from the
// buffers they were recorded into (member ID -> its trace), in s's member
// order, named n<ID>.trace.
func SimFiles(s *sim.Sim, bufs map[uint32]*bytes.Buffer) ([]*trace.File, error) {
	if err := s.CloseTraces(); err != nil {
		return nil, err
	}
	var files []*trace.File
	for _, id := range s.IDs() {
		if bufs[id] == nil {
			return nil, fmt.Errorf("member %d left no trace", id)
		}
		f, err := trace.Read(bytes.NewReader(bufs[id].Bytes()), fmt.Sprintf("n%d.trace", id))
		if err != nil {
			return nil, fmt.Errorf("member %d's trace: %w", id, err)
		}
		files = append(files, f)
	}
	return files, nil
}
