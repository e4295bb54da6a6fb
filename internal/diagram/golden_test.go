package diagram

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	scripts "github.com/synclab/synclab/internal/testkit/scenario"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/clock"
)

// notes reads testdata/p*.trace: three processes exchanging tokens as in
// the notes' figures, with every case a drawing must handle: a multicast
// frame, a logical send fanned out to two members, frames nobody received,
// a frame whose sender is not traced, a refused frame, a header field and
// an event field this version does not know, a killed writer's partial
// last line (p1) and a truncated file (p3).
func notes(t *testing.T) *Diagram {
	t.Helper()
	d, err := Build(notesFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// notesFiles reads testdata/p*.trace.
func notesFiles(t *testing.T) []*trace.File {
	t.Helper()
	paths, _ := filepath.Glob("testdata/p*.trace")
	files, err := trace.ReadFiles(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *scripts.Rewrite { // the one -rewrite flag of this test binary
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -rewrite to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the drawing (rerun with -rewrite and look at both)", path)
	}
}

// TestGoldenSVG draws the notes' example with Lamport and with vector
// labels; the output must be byte for byte the reviewed one, and the same
// at every run.
func TestGoldenSVG(t *testing.T) {
	d := notes(t)
	checkOracle(t, d)
	if d.Procs[0].Partial != 1 || d.Procs[2].Dropped != 42 {
		t.Errorf("p1 partial %d, p3 dropped %d", d.Procs[0].Partial, d.Procs[2].Dropped)
	}
	var lost, unsent, dropped, fan int
	for _, m := range d.Messages {
		switch {
		case m.Recv < 0:
			lost++
		case m.Send < 0:
			unsent++
		case m.Dropped:
			dropped++
		}
	}
	for _, g := range d.Groups {
		if len(g.Events) > 1 {
			fan++
		}
	}
	if lost != 2 || unsent != 1 || dropped != 0 || fan != 1 {
		t.Errorf("lost %d, unsent %d, dropped %d, fan-outs %d; want 2, 1, 0, 1", lost, unsent, dropped, fan)
	}
	for _, vec := range []bool{false, true} {
		var a, b bytes.Buffer
		if err := d.WriteSVG(&a, Options{Vector: vec}); err != nil {
			t.Fatal(err)
		}
		if err := notes(t).WriteSVG(&b, Options{Vector: vec}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatal("two drawings of the same traces differ")
		}
		name := "notes-lamport.svg"
		if vec {
			name = "notes-vector.svg"
		}
		golden(t, name, a.Bytes())
		beats := 0
		for _, m := range d.Messages {
			if IsHeartbeat(m.Kind) {
				beats++
			}
		}
		if n := strings.Count(a.String(), `<line class="msg"`); n != len(d.Messages)-beats || beats == 0 {
			t.Errorf("%d arrows for %d messages, %d of them heartbeats (folded)", n, len(d.Messages), beats)
		}
		var all bytes.Buffer
		if err := d.WriteSVG(&all, Options{Vector: vec, Heartbeats: true}); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(all.String(), `<line class="msg"`); n != len(d.Messages) {
			t.Errorf("with the heartbeats: %d arrows for %d messages", n, len(d.Messages))
		}
	}
}

// TestShiViz parses the ShiViz output back with ShiViz's default
// expression (Go's regexp reads its named groups) and checks what ShiViz
// checks: every host's own clock counts its events one by one, clocks never
// go back, and every entry for another host is a point that host reached.
func TestShiViz(t *testing.T) {
	for _, d := range []*Diagram{notes(t), scenario(t, "failover")} {
		var b bytes.Buffer
		if err := d.WriteShiViz(&b); err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(ShiVizRegex)
		matches := re.FindAllStringSubmatch(b.String(), -1)
		if len(matches) != len(d.Groups) {
			t.Fatalf("ShiViz's expression finds %d events, the diagram has %d points", len(matches), len(d.Groups))
		}
		own := map[string]uint64{}
		var clocks []map[string]uint64
		var hosts []string
		for _, m := range matches {
			host, clk := m[re.SubexpIndex("host")], m[re.SubexpIndex("clock")]
			var vc map[string]uint64
			if err := jsonUnmarshal(clk, &vc); err != nil {
				t.Fatalf("clock %q: %v", clk, err)
			}
			if vc[host] != own[host]+1 {
				t.Fatalf("%s's own clock goes %d -> %d", host, own[host], vc[host])
			}
			own[host] = vc[host]
			clocks, hosts = append(clocks, vc), append(hosts, host)
		}
		for i, vc := range clocks {
			for h, n := range vc {
				if n > own[h] {
					t.Fatalf("event %d of %s knows %d events of %s, which has %d", i, hosts[i], n, h, own[h])
				}
			}
		}
	}
}

func scenario(t *testing.T, name string) *Diagram {
	t.Helper()
	script, err := os.ReadFile(filepath.Join("../../pkg/elect/bully/testdata/scenarios", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	s, bufs := replayBully(t, string(script))
	d, err := Build(readBack(t, s, bufs))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestBuildRefuses: traces that cannot be one run are refused with the
// reason, not drawn wrong.
func TestBuildRefuses(t *testing.T) {
	hdr := func(id uint32) trace.Header {
		return trace.Header{Version: 1, ID: id, Host: "h", Members: []uint32{1, 2}}
	}
	send := func(frame string) trace.Event {
		return trace.Event{Ev: trace.EvSend, Frame: frame, Kind: "token", To: 2}
	}
	recv := func(frame string) trace.Event {
		return trace.Event{Ev: trace.EvRecv, Frame: frame, Kind: "token", To: 1}
	}
	for _, tc := range []struct {
		name  string
		files []*trace.File
		err   string
	}{
		{"none", nil, "no trace files"},
		{"frame sent twice", []*trace.File{{Header: hdr(1), Events: []trace.Event{send("1:1"), send("1:1")}}}, "sent twice"},
		{"cycle", []*trace.File{
			{Header: hdr(1), Events: []trace.Event{recv("2:1"), send("1:1")}},
			{Header: hdr(2), Events: []trace.Event{recv("1:1"), send("2:1")}},
		}, "cycle"},
	} {
		if _, err := Build(tc.files); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.err)
		}
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// TestWindow keeps one phase of a run: only events inside the window, and
// the arrows cut by its edges become stubs.
func TestWindow(t *testing.T) {
	d, err := Build(Window(notesFiles(t), 15*time.Millisecond, 45*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 25, 15, 0, 0, 6_000_000, time.UTC) // the first event
	stubs := 0
	for _, e := range d.Events {
		if at := e.T.Sub(start); at < 15*time.Millisecond || at > 45*time.Millisecond {
			t.Errorf("event at +%v kept", at)
		}
	}
	for _, m := range d.Messages {
		if m.Send < 0 || m.Recv < 0 {
			stubs++
		}
	}
	if len(d.Events) != 7 || stubs != 4 {
		t.Errorf("%d events, %d stubs; want 7, 4", len(d.Events), stubs)
	}
}

// TestTwoDaemons: timed's and electd's member 1 on one machine are two
// lines, and a frame ID one of them uses says nothing about the other's.
func TestTwoDaemons(t *testing.T) {
	files := notesFiles(t)
	one, err := Build(files)
	if err != nil {
		t.Fatal(err)
	}
	both := files
	for _, f := range files {
		c := *f
		c.Header.Daemon = "electd"
		both = append(both, &c)
	}
	d, err := Build(both)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Procs) != 2*len(one.Procs) || len(d.Messages) != 2*len(one.Messages) {
		t.Fatalf("%d lines and %d arrows, want %d and %d", len(d.Procs), len(d.Messages), 2*len(one.Procs), 2*len(one.Messages))
	}
	for _, m := range d.Messages {
		if m.Send >= 0 && m.Recv >= 0 && d.Procs[d.Events[m.Send].Proc].Daemon != d.Procs[d.Events[m.Recv].Proc].Daemon {
			t.Errorf("frame %s matched across daemons", m.Frame)
		}
	}
	names := d.hostNames()
	if names[0] != "p1-electd" || names[3] != "p1-mutexd" {
		t.Errorf("ShiViz hosts %v", names)
	}
	// Nothing passes between the two clusters: each event of one is
	// concurrent with each event of the other.
	for a := range d.Events {
		for b := range d.Events {
			if d.Events[a].Proc < len(one.Procs) != (d.Events[b].Proc < len(one.Procs)) && d.Relation(a, b) != clock.Concurrent {
				t.Fatalf("%s and %s related across daemons", d.describe(a), d.describe(b))
			}
		}
	}
}

// TestLabels: a line is labelled with the lab's name of its host when the
// caller gives one, else its trace's host when that tells the members of
// its cluster apart, else "member N"; with its daemon when the diagram
// holds several.
func TestLabels(t *testing.T) {
	d := notes(t)
	if got := []string{d.label(0), d.label(1), d.label(2)}; strings.Join(got, ",") != "p1,p2,p3" {
		t.Errorf("hosts p1-p3: labels %q", got)
	}
	d.HostNames = map[uint32]string{2: "pc2"}
	if got := []string{d.label(0), d.label(1)}; strings.Join(got, ",") != "p1,pc2" {
		t.Errorf("member 2 named pc2: labels %q", got)
	}
	// Five daemons of a lab on one machine: every trace says "vm".
	var files []*trace.File
	for _, f := range notesFiles(t) {
		c := *f
		c.Header.Host = "vm"
		files = append(files, &c)
	}
	one, err := Build(files)
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{one.label(0), one.label(2)}; strings.Join(got, ",") != "member 1,member 3" {
		t.Errorf("one machine: labels %q", got)
	}
	one.HostNames = map[uint32]string{1: "lab pc 1"}
	if got := one.hostNames(); got[0] != "lab_pc_1" || got[1] != "vm-2" {
		t.Errorf("one machine, member 1 named: ShiViz hosts %q", got)
	}
	one.HostNames = nil
	var svg bytes.Buffer
	if err := one.WriteSVG(&svg, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg.String(), ">member 3</text>") || strings.Contains(svg.String(), ">3 vm<") {
		t.Error("the SVG does not label the lines with the members")
	}
	both := append(notesFiles(t), files...)
	for _, f := range both[3:] {
		f.Header.Daemon = "electd"
	}
	two, err := Build(both)
	if err != nil {
		t.Fatal(err)
	}
	if got := two.label(0); got != "member 1 electd" {
		t.Errorf("two daemons: label %q", got)
	}
}

// TestFromFirstEvent: an act's diagram starts at its first protocol event;
// the heartbeats before it are left out, those after kept.
func TestFromFirstEvent(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	hb := func(n int, ev, frame string) trace.Event {
		return trace.Event{T: ms(n), Ev: ev, Kind: "leader_heartbeat", Frame: frame}
	}
	files := []*trace.File{
		{Header: trace.Header{Version: 1, ID: 1, Daemon: "electd"}, Events: []trace.Event{
			hb(0, trace.EvSend, "1:1"), hb(100, trace.EvSend, "1:2"),
			{T: ms(150), Ev: trace.EvSend, Kind: "election", Frame: "1:3", To: 2},
			hb(200, trace.EvSend, "1:4")}},
		{Header: trace.Header{Version: 1, ID: 2, Daemon: "electd"}, Events: []trace.Event{
			hb(1, trace.EvRecv, "1:1"), hb(101, trace.EvRecv, "1:2"),
			{T: ms(151), Ev: trace.EvRecv, Kind: "election", Frame: "1:3"}, hb(201, trace.EvRecv, "1:4")}},
	}
	cut := FromFirstEvent(files)
	if len(cut[0].Events) != 2 || len(cut[1].Events) != 2 || cut[0].Events[0].Kind != "election" {
		t.Fatalf("kept %v and %v", cut[0].Events, cut[1].Events)
	}
	if len(files[0].Events) != 4 {
		t.Error("the input was changed")
	}
	d, err := Build(cut)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Start.Equal(ms(150)) || d.FoldCols != 2 || d.Cols != 3 {
		t.Errorf("start %v, %d columns folded, %d unfolded; want +150ms, 2, 3", d.Start.Sub(t0), d.FoldCols, d.Cols)
	}
	// From the first frame of a kind: the first heartbeat is the first
	// event; the election is the third of member 1.
	if cut := FromFirstKind(files, "leader_heartbeat"); len(cut[0].Events) != 4 {
		t.Errorf("from the first heartbeat: kept %d of 4", len(cut[0].Events))
	}
	if cut := FromFirstKind(files, "election"); len(cut[0].Events) != 2 || cut[0].Events[0].Kind != "election" {
		t.Errorf("from the first election: kept %v", cut[0].Events)
	}
	if cut := FromFirstKind(files, "coordinator"); len(cut[0].Events) != 4 {
		t.Error("no coordinator frame: the traces are not kept whole")
	}
}

// TestArrowsByOperation: frames whose fields name an operation (a ring
// probe's want or check, a vote's request or grant) are arrows of their
// own, each with its colour and legend line, so that a token ring's
// request (its want) is told from its majority check.
func TestArrowsByOperation(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	ev := func(ms int, ev, frame, op string, to uint32) trace.Event {
		return trace.Event{T: t0.Add(time.Duration(ms) * time.Millisecond), Ev: ev, Kind: "ring_probe", Frame: frame, To: to,
			Fields: map[string]any{"op": op, "name": "handoff"}}
	}
	d, err := Build([]*trace.File{
		{Header: trace.Header{Version: 1, ID: 1, Host: "a", Daemon: "mutexd"}, Events: []trace.Event{
			ev(0, trace.EvSend, "1:1", "want", 2), ev(5, trace.EvSend, "1:2", "check", 2)}},
		{Header: trace.Header{Version: 1, ID: 2, Host: "b", Daemon: "mutexd"}, Events: []trace.Event{
			ev(1, trace.EvRecv, "1:1", "want", 0), ev(6, trace.EvRecv, "1:2", "check", 0)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d.Messages[0].Op != "want" || d.Messages[1].Op != "check" || len(d.Kinds) != 1 {
		t.Fatalf("messages %+v, kinds %v", d.Messages, d.Kinds)
	}
	var b bytes.Buffer
	if err := d.WriteSVG(&b, Options{}); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, want := range []string{">ring_probe check</text>", ">ring_probe want</text>", `data-kind="ring_probe" data-op="want"`, `data-kind="ring_probe" data-op="check"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
	if d.kindColor("ring_probe want") == d.kindColor("ring_probe check") {
		t.Error("want and check drawn in one colour")
	}
	b.Reset()
	if err := d.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `{"name":"ring_probe want","color":"`) {
		t.Error("the page's kinds are not by operation")
	}
}

// TestLongLabelWrapped: a line's label too long for the margin (an NTP
// peer's address) is drawn on two lines, its whole text in the line's
// title; a short one stays one line.
func TestLongLabelWrapped(t *testing.T) {
	if _, _, long := wrapLabel("member 12"); long {
		t.Error("member 12 wrapped")
	}
	first, rest, long := wrapLabel("ntp 192.0.2.123:12345")
	if !long || first != "ntp" || rest != "192.0.2.123:12345" {
		t.Errorf("wrapLabel: %q %q %v", first, rest, long)
	}
}
