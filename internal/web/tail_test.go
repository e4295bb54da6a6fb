package web

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/trace"
)

// TestTailReadsWhatIsNew: a file read while written gives each event once,
// with its line number in the file, a line cut short only once it is
// whole, and nothing for a file still empty; trim forgets the old events.
func TestTailReadsWhatIsNew(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var whole bytes.Buffer
	w, err := trace.NewWriter(&whole, trace.Header{Daemon: "electd", ID: 1, Cluster: "lab", Members: []uint32{1}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		w.Write(&trace.Event{Ev: trace.EvLocal, Name: "tick", T: t0.Add(time.Duration(i) * time.Second), Lamport: uint64(i + 1)})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	all := whole.Bytes()
	path := filepath.Join(t.TempDir(), "x.trace")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tl := &tail{path: path}
	if err := tl.read(); err != nil || tl.file != nil {
		t.Fatalf("empty file: %v, %+v", err, tl.file)
	}
	// Written in three pieces, the second ending mid-line.
	lines := bytes.SplitAfter(all, []byte{'\n'})
	first := bytes.Join(lines[:3], nil)      // header and 2 events
	second := bytes.Join(lines[3:5], nil)    // 2 events
	second = append(second, lines[5][:7]...) // and half a line
	rest := all[len(first)+len(second):]
	for _, piece := range [][]byte{first, second, rest} {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(piece)
		f.Close()
		if err := tl.read(); err != nil {
			t.Fatal(err)
		}
	}
	want, err := trace.Read(bytes.NewReader(all), path)
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.file.Events) != len(want.Events) {
		t.Fatalf("%d events read, want %d", len(tl.file.Events), len(want.Events))
	}
	for i, e := range tl.file.Events {
		if e.Line != want.Events[i].Line || e.Lamport != want.Events[i].Lamport {
			t.Errorf("event %d: line %d lamport %d, want line %d lamport %d", i, e.Line, e.Lamport, want.Events[i].Line, want.Events[i].Lamport)
		}
	}
	tl.trim(t0.Add(4 * time.Second))
	if len(tl.file.Events) != 2 || tl.file.Events[0].Lamport != 5 {
		t.Errorf("after trim: %+v", tl.file.Events)
	}
	// A file replaced by a shorter one is said, not misread.
	os.WriteFile(path, first[:10], 0o644)
	if err := tl.read(); err == nil {
		t.Error("a shrunk file read without an error")
	}
}

// TestLatestCaps: a window holding more than the cap keeps its latest
// events and says so.
func TestLatestCaps(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, b := &trace.File{Name: "a"}, &trace.File{Name: "b"}
	for i := range 10 {
		f := a
		if i%2 == 1 {
			f = b
		}
		f.Events = append(f.Events, trace.Event{Ev: trace.EvLocal, Name: "x", T: t0.Add(time.Duration(i) * time.Millisecond), Lamport: uint64(i)})
	}
	out, capped := latest([]*trace.File{a, b}, 4)
	if !capped || len(out[0].Events)+len(out[1].Events) != 4 || out[0].Events[0].Lamport != 6 || out[1].Events[0].Lamport != 7 {
		t.Errorf("capped %v: %+v %+v", capped, out[0].Events, out[1].Events)
	}
	if _, capped := latest([]*trace.File{a, b}, 10); capped {
		t.Error("capped at exactly the cap")
	}
	if len(a.Events) != 5 {
		t.Error("latest changed its input")
	}
}
