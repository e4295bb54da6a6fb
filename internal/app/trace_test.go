package app

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/wire"
)

// TestTraceDraw runs `X trace draw` on two hosts' traces of one exchange
// (written by the Recorder, as a daemon will) in each format, flags before
// or after the files, and on the mistakes an operator makes.
func TestTraceDraw(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)
	frame := &wire.Frame{Header: wire.Header{Kind: wire.KindElection, Sender: 1, Receiver: 2, Term: 3, Seq: 77, Lamport: 1}}
	var paths []string
	for id := uint32(1); id <= 2; id++ {
		path := filepath.Join(dir, "h"+string(rune('0'+id))+".trace")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		l, err := trace.NewLog(f, trace.Header{Daemon: "electd", ID: id, Host: "h", Cluster: "lab", Members: []uint32{1, 2}, Clock: trace.ClockSystem, Started: t0}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if id == 1 {
			l.Send(frame, clock.VectorOf(map[uint32]uint64{1: 1}), t0)
		} else {
			l.Recv(frame, 2, clock.VectorOf(map[uint32]uint64{1: 1, 2: 1}), t0.Add(time.Millisecond))
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		paths = append(paths, path)
	}
	lab := filepath.Join(dir, "lab.toml")
	if err := os.WriteFile(lab, []byte("[[host]]\nid = 1\naddress = \"10.0.0.1\"\nname = \"pc1\"\n[[host]]\nid = 2\naddress = \"10.0.0.2\"\nname = \"pc2\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SYNCLAB_LAB_FILE", "")
	run := func(args ...string) (int, string) {
		var out, stderr bytes.Buffer
		a := testApp()
		a.Writer, a.ErrWriter = &out, &stderr
		code := Run(a, append([]string{"testd", "trace", "draw"}, args...), &stderr)
		return code, out.String() + stderr.String()
	}
	for _, tc := range []struct {
		args []string
		out  string
		want string
	}{
		{append(slices.Clone(paths), "-o", filepath.Join(dir, "d.svg")), "d.svg", `<line class="msg" data-kind="election" data-frame="1:77"`},
		{append([]string{"-o", filepath.Join(dir, "d.html")}, paths...), "d.html", `<script type="application/json" id="data">`},
		{append(slices.Clone(paths), "--output="+filepath.Join(dir, "d.log"), "--format", "shiviz"), "d.log", "h-1 {\"h-1\":1}\nsend election to 2 frame 1:77"},
		{append(slices.Clone(paths), "--until", "500us", "--vector", "-o", filepath.Join(dir, "w.svg")), "w.svg", `labels: vector times`},
		// Both traces say host "h": the lines are the members, or the
		// names given (the lab file's, then --names over them).
		{append(slices.Clone(paths), "-o", filepath.Join(dir, "m.svg")), "m.svg", `font-weight="bold">member 2</text>`},
		{append(slices.Clone(paths), "--lab-file", lab, "-o", filepath.Join(dir, "l.svg")), "l.svg", `font-weight="bold">pc2</text>`},
		{append(slices.Clone(paths), "--lab-file", lab, "--names", "2=bench,", "-o", filepath.Join(dir, "n.svg")), "n.svg", `font-weight="bold">bench</text>`},
		{append(slices.Clone(paths), "--heartbeats", "--from-first-event", "-o", filepath.Join(dir, "h.html")), "h.html", `"heartbeats":true`},
		{append(slices.Clone(paths), "--from-kind", "election", "-o", filepath.Join(dir, "k.svg")), "k.svg", `data-kind="election"`},
	} {
		code, out := run(tc.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", tc.args, code, out)
		}
		b, err := os.ReadFile(filepath.Join(dir, tc.out))
		if err != nil || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s (%v) lacks %q", tc.out, err, tc.want)
		}
	}
	v2 := filepath.Join(dir, "v2.trace")
	os.WriteFile(v2, []byte(`{"synclab_trace":2,"id":1}`+"\n"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{paths[0]}, 2, "-o OUT.svg"},
		{[]string{"-o", filepath.Join(dir, "x.png"), paths[0]}, 2, "cannot tell the format"},
		{[]string{paths[0], "-o"}, 2, "needs a value"},
		{[]string{paths[0], "--bogus", "-o", "x.svg"}, 2, "unknown flag --bogus"},
		{[]string{"-o", filepath.Join(dir, "x.svg")}, 2, "name the trace files"},
		{[]string{paths[0], "--from", "2ms", "--until", "1ms", "-o", filepath.Join(dir, "x.svg")}, 2, "no time window"},
		{[]string{paths[0], "--from", "soon", "-o", filepath.Join(dir, "x.svg")}, 2, `--from "soon"`},
		{[]string{v2, "-o", filepath.Join(dir, "x.svg")}, 1, "unsupported trace format version 2"},
		{[]string{paths[0], "--names", "2", "-o", filepath.Join(dir, "x.svg")}, 2, `--names "2": want ID=NAME`},
		{[]string{paths[0], "--lab-file", filepath.Join(dir, "none.toml"), "-o", filepath.Join(dir, "x.svg")}, 1, "none.toml"},
	} {
		if code, out := run(tc.args...); code != tc.code || !strings.Contains(out, tc.msg) {
			t.Errorf("%v: exit %d, want %d saying %q:\n%s", tc.args, code, tc.code, tc.msg, out)
		}
	}
}
