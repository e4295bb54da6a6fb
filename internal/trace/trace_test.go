package trace

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

var t0 = time.Date(2026, 11, 25, 15, 0, 0, 123456789, time.UTC)

func header() Header {
	return Header{Daemon: "electd", ID: 2, Host: "h2", Cluster: "synclab", Members: []uint32{1, 2, 3}, Clock: ClockSystem, Started: t0}
}

func payload(t *testing.T, p interface{ AppendBinary([]byte) ([]byte, error) }) []byte {
	t.Helper()
	b, err := p.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRoundTrip records one event of each type through the Recorder and
// reads them back as the format says they must look.
func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	l, err := NewLog(&buf, header(), 0)
	if err != nil {
		t.Fatal(err)
	}
	coord := &wire.Frame{Header: wire.Header{Kind: wire.KindCoordinator, Sender: 2, Receiver: 0, Term: 4294967298, Seq: 4294967301, Lamport: 7},
		Payload: payload(t, wire.Coordinator{Priority: 3, Flags: wire.CoordinatorReassert})}
	vc := clock.VectorOf(map[uint32]uint64{1: 3, 2: 4})
	l.Send(coord, vc, t0.Add(time.Millisecond))
	vc.Set(3, 2)
	l.Recv(coord, 9, vc, t0.Add(2*time.Millisecond))
	l.Local(core.Event{Name: "elected", Msg: "elected leader", Args: []any{"leader", uint32(3), "term", uint64(8589934595), "took", 5 * time.Millisecond}}, 10, vc, t0.Add(3*time.Millisecond))
	l.Drop(&wire.Frame{Header: wire.Header{Kind: wire.KindToken, Sender: 9, Seq: 123}}, "bad_mac", 10, t0.Add(4*time.Millisecond))
	l.Drop(nil, "truncated_header", 10, t0.Add(5*time.Millisecond))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if want := `{"t":"2026-11-25T15:00:00.124456789Z","lamport":7,"vc":{"1":3,"2":4},"ev":"send","kind":"coordinator","frame":"2:4294967301","from":2,"to":0,"term":4294967298,"fields":{"flags":1,"priority":3}}`; lines[1] != want {
		t.Errorf("send line\n got %s\nwant %s", lines[1], want)
	}
	f, err := Read(&buf, "h2.trace")
	if err != nil {
		t.Fatal(err)
	}
	h := header()
	h.Version = Version
	if !reflect.DeepEqual(f.Header, h) {
		t.Errorf("header %+v, want %+v", f.Header, h)
	}
	if len(f.Events) != 5 || f.Partial || f.Dropped != 0 {
		t.Fatalf("%d events, partial %v, dropped %d", len(f.Events), f.Partial, f.Dropped)
	}
	s, r, loc, d, d2 := f.Events[0], f.Events[1], f.Events[2], f.Events[3], f.Events[4]
	if s.Ev != EvSend || s.Frame != "2:4294967301" || s.To != 0 || s.From != 2 || s.Lamport != 7 || !reflect.DeepEqual(s.VC, VC{1: 3, 2: 4}) {
		t.Errorf("send %+v", s)
	}
	if r.Ev != EvRecv || r.Frame != s.Frame || r.To != 2 || r.Lamport != 9 || r.VC[3] != 2 || r.Fields["priority"] != "3" && r.Fields["priority"].(interface{ String() string }).String() != "3" {
		t.Errorf("recv %+v", r)
	}
	if loc.Name != "elected" || loc.Args["took"] != "5ms" || loc.Args["term"].(interface{ String() string }).String() != "8589934595" {
		t.Errorf("local %+v", loc)
	}
	if d.Reason != "bad_mac" || d.Kind != "token" || d.Frame != "9:123" || d2.Frame != "" || d2.Reason != "truncated_header" {
		t.Errorf("drops %+v %+v", d, d2)
	}
}

// TestClockSample: with SetClock every event carries the clock's bound
// and true offset, read back as written; a clock claiming no bound and a
// real one write neither; the line numbers are the file's.
func TestClockSample(t *testing.T) {
	var buf bytes.Buffer
	l, err := NewLog(&buf, header(), 0)
	if err != nil {
		t.Fatal(err)
	}
	off := -3 * time.Millisecond
	samples := []ClockSample{{MaxError: 1500 * time.Microsecond, TrueOffset: &off}, {}}
	n := 0
	l.SetClock(func() ClockSample { n++; return samples[n-1] })
	l.Local(core.Event{Name: "a"}, 1, clock.Vector{}, t0)
	l.Local(core.Event{Name: "b"}, 2, clock.Vector{}, t0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if want := `"max_error_ns":1500000,"true_offset_ns":-3000000,"ev":"local"`; !strings.Contains(buf.String(), want) {
		t.Errorf("trace lacks %s:\n%s", want, buf.String())
	}
	f, err := Read(&buf, "h2.trace")
	if err != nil {
		t.Fatal(err)
	}
	a, b := f.Events[0], f.Events[1]
	if a.MaxError != 1500000 || a.TrueOffset == nil || *a.TrueOffset != -3000000 || b.MaxError != 0 || b.TrueOffset != nil {
		t.Errorf("read back %+v %+v", a, b)
	}
	if a.Line != 2 || b.Line != 3 {
		t.Errorf("lines %d, %d, want 2, 3", a.Line, b.Line)
	}
}

// TestBound fills a small file: it never exceeds its bound, ends with the
// truncated line, and its count (fixed in place at Close on a file) is
// every event that did not fit.
func TestBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.trace")
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 4096
	w, err := NewWriter(file, header(), limit)
	if err != nil {
		t.Fatal(err)
	}
	written := 0
	for i := range 200 {
		e := Event{T: t0.Add(time.Duration(i)), Lamport: uint64(i + 1), Ev: EvLocal, Name: "tick", Msg: "a local event"}
		if err := w.Write(&e); err != nil {
			t.Fatal(err)
		}
		if w.Dropped() == 0 {
			written++
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	file.Close()
	st, _ := os.Stat(path)
	if st.Size() > limit {
		t.Errorf("file is %d bytes, bound %d", st.Size(), limit)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Events) != written || f.Dropped != uint64(200-written) || written == 0 || written == 200 {
		t.Errorf("read %d events (wrote %d), dropped %d, want %d", len(f.Events), written, f.Dropped, 200-written)
	}
	// A writer that cannot rewrite its destination leaves the count of the
	// first drop: at least one event was left out.
	var buf bytes.Buffer
	w, _ = NewWriter(&buf, header(), 1024)
	for range 100 {
		w.Write(&Event{T: t0, Ev: EvLocal, Name: "x"})
	}
	w.Close()
	if f, err := Read(&buf, "buf"); err != nil || f.Dropped != 1 {
		t.Errorf("unrewritable destination: %v, dropped %d", err, f.Dropped)
	}
	if _, err := NewWriter(&buf, header(), 100); err == nil {
		t.Error("a bound smaller than the header was accepted")
	}
}

// TestReaderRefusesAndTolerates: other versions and non-traces are refused
// with a clear error; unknown fields are skipped; a killed writer's partial
// last line is ignored; a broken line in the middle is an error.
func TestReaderRefusesAndTolerates(t *testing.T) {
	hdr := `{"synclab_trace":1,"daemon":"electd","id":2,"host":"h2","cluster":"c","members":[1,2],"clock":"system","started":"2026-11-25T15:00:00Z","future":"x"}` + "\n"
	ev := `{"t":"2026-11-25T15:00:00.2Z","lamport":3,"ev":"local","name":"elected","new_field":{"a":1}}` + "\n"
	for _, tc := range []struct {
		name, text string
		err        string
		events     int
		partial    bool
	}{
		{"v2", `{"synclab_trace":2,"id":1}` + "\n", "unsupported trace format version 2 (this synclab reads version 1)", 0, false},
		{"not a trace", `{"hello":1}` + "\n", "not a synclab trace", 0, false},
		{"garbage", "\x00\x01binary\n", "not a synclab trace", 0, false},
		{"empty", "", "empty file", 0, false},
		{"unknown fields", hdr + ev + ev, "", 2, false},
		{"no final newline", hdr + ev + strings.TrimSuffix(ev, "\n"), "", 2, false},
		{"partial last line", hdr + ev + ev[:30], "", 1, true},
		{"broken middle line", hdr + ev[:30] + "\n" + ev, "line 2", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Read(strings.NewReader(tc.text), "x.trace")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				if tc.name == "v2" && !errors.Is(err, ErrVersion) {
					t.Errorf("%v is not ErrVersion", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Events) != tc.events || f.Partial != tc.partial {
				t.Errorf("%d events partial %v, want %d %v", len(f.Events), f.Partial, tc.events, tc.partial)
			}
		})
	}
}

func TestFieldsAndSnake(t *testing.T) {
	for in, want := range map[string]string{"HoldMS": "hold_ms", "RootDelay": "root_delay", "T1": "t1", "Priority": "priority"} {
		if got := snake(in); got != want {
			t.Errorf("snake(%q) = %q, want %q", in, got, want)
		}
	}
	b := payload(t, wire.Election{Priority: 4, Reason: wire.ElectionReason(1)})
	f := Fields(wire.KindElection, b)
	if f["priority"] != uint64(4) || f["reason"] != wire.ElectionReason(1).String() {
		t.Errorf("election fields %v", f)
	}
	if f := Fields(wire.KindElection, []byte{1}); f["undecoded"] == nil {
		t.Errorf("a short payload decoded: %v", f)
	}
	tok := payload(t, wire.Token{Name: "lab", Generation: 1 << 60, Wants: []uint32{2, 3}})
	if f := Fields(wire.KindToken, tok); f["name"] != "lab" || f["generation"] != uint64(1<<60) || len(f["wants"].([]any)) != 2 {
		t.Errorf("token fields %v", f)
	}
}

// BenchmarkRecorder is what tracing on costs per event (a send with its
// fields decoded, into a buffered file); tracing off is a nil check in the
// node and costs nothing to measure here.
func BenchmarkRecorder(b *testing.B) {
	file, err := os.Create(filepath.Join(b.TempDir(), "b.trace"))
	if err != nil {
		b.Fatal(err)
	}
	defer file.Close()
	l, _ := NewLog(file, header(), 1<<40)
	p, _ := wire.Coordinator{Priority: 3}.AppendBinary(nil)
	f := &wire.Frame{Header: wire.Header{Kind: wire.KindCoordinator, Sender: 2, Term: 5, Seq: 99, Lamport: 7}, Payload: p}
	vc := clock.VectorOf(map[uint32]uint64{1: 3, 2: 4, 3: 9})
	b.ReportAllocs()
	for b.Loop() {
		l.Send(f, vc, t0)
	}
	l.Close()
}
