package scenario_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/diagram"
	"github.com/synclab/synclab/internal/testkit/scenario"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// TestTracerNotesRun traces a hand-driven run of three members by hand
// and checks every stamp against the rules (a logical send ticks once
// however many frames it fans out to, a receive merges then ticks, a local
// event ticks the vector), the frame ids that pair each receive with its
// send, the format round trip, and the drawing: a line per member, an
// arrow per delivered frame (a lost frame has none), the layout in the
// vectors' order.
func TestTracerNotesRun(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	tr := scenario.NewTracer("mutexd", []uint32{3, 1, 2}, t0)
	hb, _ := wire.Heartbeat{Interval: 1000, Alive: 3}.AppendBinary(nil)
	probe, _ := wire.RingProbe{Op: wire.ProbeWant, Name: "x"}.AppendBinary(nil)

	// 1 broadcasts a want: one logical send, two frames.
	fs := tr.Send(ms(1), 1, []uint32{2, 3}, wire.KindRingProbe, probe)
	tr.Recv(ms(2), fs[0])                                                                 // 2 gets it
	tr.Local(ms(2), 2, core.Event{Name: "lock_granted", Args: []any{"fence", uint64(7)}}) // 2 does something
	back := tr.Send(ms(3), 2, []uint32{1}, wire.KindHeartbeat, hb)                        // and answers 1
	tr.Recv(ms(4), back[0])
	tr.Recv(ms(5), fs[1]) // 3 gets the want last
	lost := tr.Send(ms(6), 3, []uint32{1}, wire.KindHeartbeat, hb)
	_ = lost // never delivered

	files, err := tr.Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 || files[0].Header.ID != 1 || files[2].Header.ID != 3 || files[0].Header.Clock != trace.ClockTrue {
		t.Fatalf("files %+v", files)
	}
	type stamp struct {
		ev, frame string
		lamport   uint64
		vc        string
	}
	want := map[uint32][]stamp{
		1: {{"send", "1:1", 1, "(1,0,0)"}, {"send", "1:2", 1, "(1,0,0)"}, {"recv", "2:1", 4, "(2,3,0)"}},
		2: {{"recv", "1:1", 2, "(1,1,0)"}, {"local", "", 2, "(1,2,0)"}, {"send", "2:1", 3, "(1,3,0)"}},
		3: {{"recv", "1:2", 2, "(1,0,1)"}, {"send", "3:1", 3, "(1,0,2)"}},
	}
	for _, f := range files {
		got := f.Events
		if len(got) != len(want[f.Header.ID]) {
			t.Fatalf("member %d: %d events, want %d: %+v", f.Header.ID, len(got), len(want[f.Header.ID]), got)
		}
		for i, w := range want[f.Header.ID] {
			e := got[i]
			if e.Ev != w.ev || e.Frame != w.frame || e.Lamport != w.lamport || e.VC.String([]uint32{1, 2, 3}) != w.vc {
				t.Errorf("member %d event %d: %s %s lamport %d vc %s, want %+v", f.Header.ID, i, e.Ev, e.Frame, e.Lamport, e.VC.String([]uint32{1, 2, 3}), w)
			}
		}
	}
	if e := files[1].Events[1]; e.Name != "lock_granted" || e.Args["fence"] == nil {
		t.Errorf("local event %+v", e)
	}
	if e := files[0].Events[0]; e.Kind != "ring_probe" || e.Fields["op"] != "want" || e.To != 2 {
		t.Errorf("send %+v", e)
	}

	d, err := diagram.Build(files)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Procs) != 3 || d.Arrows() != 3 {
		t.Fatalf("%d lines and %d arrows, want 3 and 3 (the lost frame has none)", len(d.Procs), d.Arrows())
	}
	if err := d.CheckCausality(); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	if err := tr.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.trace"))
	back2, err := trace.ReadFiles(paths...)
	if err != nil || len(back2) != 3 {
		t.Fatalf("written traces: %v, %d files", err, len(back2))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "n2.trace")); len(b) == 0 {
		t.Fatal("n2.trace empty")
	}
}
