package node

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// traced starts recording n to a buffer.
func traced(t *testing.T, n *Node) (*trace.Log, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	lg, err := trace.NewLog(&buf, trace.Header{Daemon: "testd", ID: n.ID(), Cluster: "lab", Members: []uint32{1, 2, 3},
		Clock: trace.ClockSim, Started: t0}, 0)
	if err != nil {
		t.Fatal(err)
	}
	n.SetRecorder(lg, func() time.Time { return t0 })
	return lg, &buf
}

func readTrace(t *testing.T, lg *trace.Log, buf *bytes.Buffer) []trace.Event {
	t.Helper()
	if err := lg.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := trace.Read(bytes.NewReader(buf.Bytes()), "buf")
	if err != nil {
		t.Fatal(err)
	}
	return f.Events
}

// TestRecording: a node records its sends at their transmit time with the
// send's stamps, its receives after the merge, its core's events before
// the sends they led to, and what it refuses with the reason status
// counts; vectors are on while it records, off after.
func TestRecording(t *testing.T) {
	a, ra := newNode(t, 1, nil)
	b, rb := newNode(t, 2, nil)
	la, bufA := traced(t, a)
	lb, bufB := traced(t, b)
	if !a.Vectors() || !b.Vectors() {
		t.Fatal("recording nodes do not stamp vectors")
	}
	ra.rd.Events = []core.Event{{Name: "elected", Msg: "elected leader", Args: []any{"leader", uint32(1), "term", uint64(4)}}}
	ra.rd.Messages = []core.Message{{To: 2, Kind: wire.KindHeartbeat, Term: 4, Payload: make([]byte, 8)}}
	sent := t0.Add(5 * time.Millisecond)
	if errs := deliver(t, a, b, sent); len(errs) != 1 || errs[0] != nil {
		t.Fatalf("deliver: %v", errs)
	}
	// Garbage, and a frame the core refuses.
	b.Receive(Inbound{From: members[1], Data: []byte("not a frame"), Time: sent.Add(2 * time.Millisecond)})
	rb.stepErr = errors.New("no")
	ra.rd.Messages = []core.Message{{To: 2, Kind: wire.KindHeartbeat, Term: 4, Payload: make([]byte, 8)}}
	deliver(t, a, b, sent.Add(3*time.Millisecond))

	ea, eb := readTrace(t, la, bufA), readTrace(t, lb, bufB)
	if len(ea) != 3 || ea[0].Ev != trace.EvLocal || ea[1].Ev != trace.EvSend || ea[2].Ev != trace.EvSend {
		t.Fatalf("a's trace: %+v, want local, send, send", ea)
	}
	local, send := ea[0], ea[1]
	if local.Name != "elected" || fmt.Sprint(local.Args["term"]) != "4" || !local.T.Equal(t0) || local.Lamport >= send.Lamport || local.VC[1] != 1 {
		t.Errorf("local event %+v: want elected, term 4, before the send", local)
	}
	if !send.T.Equal(sent) || send.Kind != "heartbeat" || send.From != 1 || send.To != 2 || send.Term != 4 || send.VC[1] != 2 || send.Lamport != 1 {
		t.Errorf("send %+v: want heartbeat 1->2 term 4 at %v, lamport 1, vc {1:2}", send, sent)
	}
	if len(eb) != 4 {
		t.Fatalf("b's trace has %d events, want recv, drop, recv, drop: %+v", len(eb), eb)
	}
	recv := eb[0]
	if recv.Ev != trace.EvRecv || recv.Frame != send.Frame || recv.To != 2 || recv.Lamport != 2 || recv.VC[1] != 2 || recv.VC[2] != 1 ||
		!recv.T.Equal(sent.Add(time.Millisecond)) {
		t.Errorf("receive %+v: want frame %s, lamport 2, vc {1:2, 2:1} at the inbound time", recv, send.Frame)
	}
	if eb[1].Ev != trace.EvDrop || eb[1].Reason == "" || eb[1].Reason != firstKey(b.Status().Dropped, "rejected_heartbeat") {
		t.Errorf("garbage recorded as %q, status counts %v", eb[1].Reason, b.Status().Dropped)
	}
	if eb[2].Ev != trace.EvRecv || eb[3].Ev != trace.EvDrop || eb[3].Reason != "rejected_heartbeat" || eb[3].Frame != eb[2].Frame {
		t.Errorf("a frame the core rejects: %+v then %+v, want its receive then its drop", eb[2], eb[3])
	}

	// Stopped: vectors off again, and a frame encoded while recording but
	// finalized after the stop is sent, not recorded.
	ra.rd.Messages = []core.Message{{To: 2, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
	late := a.Ready().Sends
	a.SetRecorder(nil, nil)
	if a.Vectors() || a.Recording() {
		t.Error("vectors still on after recording stopped")
	}
	if len(a.Finalize(late[0], sent)) == 0 {
		t.Error("late frame not finalized")
	}
	ra.rd.Messages = []core.Message{{To: 2, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
	if fs := decodeSends(t, a.Ready().Sends); fs[0].Vector != nil {
		t.Error("a frame sent after recording stopped carries a vector")
	}
	if n := len(ea); n != 3 {
		t.Errorf("%d events", n)
	}
}

// TestRecordingKeepsVectorUsersVectors: stopping a trace leaves a core
// that uses vectors with them.
func TestRecordingKeepsVectorUsersVectors(t *testing.T) {
	n, err := New(Config{ID: 1, Members: members, Cluster: "lab", Incarnation: 1}, &vectorCore{})
	if err != nil {
		t.Fatal(err)
	}
	traced(t, n)
	n.SetRecorder(nil, nil)
	if !n.Vectors() {
		t.Error("a VectorUser's vectors went off with the trace")
	}
}

func firstKey(m map[string]uint64, except string) string {
	for k := range m {
		if k != except {
			return k
		}
	}
	return ""
}

// roundTrip is the node's per-frame work on both ends: a core's message
// encoded, finalized (sealed), received and stepped.
func roundTrip(a, b *Node, ra *recorder, msg []core.Message, now time.Time) {
	ra.rd.Messages = msg
	for _, s := range a.Ready().Sends {
		if s.To == members[2] {
			b.Receive(Inbound{From: members[1], Data: a.Finalize(s, now), Time: now})
		}
	}
}

// sink is a core that keeps nothing (the recorder test core appends).
type sink struct{ recorder }

func (*sink) Step(core.Message) error { return nil }

// benchPair is a sender and a receiver, with keys or without.
func benchPair(tb testing.TB, keyed bool) (a, b *Node, ra *recorder) {
	var keys []wire.Key
	if keyed {
		keys = []wire.Key{testKey}
	}
	ra = &recorder{}
	a, err := New(Config{ID: 1, Members: members, Cluster: "lab", Incarnation: 1, Keys: keys}, ra)
	if err != nil {
		tb.Fatal(err)
	}
	b, err = New(Config{ID: 2, Members: members, Cluster: "lab", Incarnation: 1, Keys: keys}, &sink{})
	if err != nil {
		tb.Fatal(err)
	}
	return a, b, ra
}

// TestTracingOffAllocatesNothing: with no recorder, the tracing hooks add
// no allocation to the node's send and receive path: a frame costs what
// it cost before tracing existed (the send's buffers), and a receive
// nothing at all.
func TestTracingOffAllocatesNothing(t *testing.T) {
	a, b, ra := benchPair(t, false)
	msg := []core.Message{{To: 2, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
	now := t0
	roundTrip(a, b, ra, msg, now) // first contact: the peer's state
	ra.rd.Messages = msg
	s := a.Ready().Sends[0]
	var data [][]byte
	for range 200 {
		now = now.Add(time.Millisecond)
		ra.rd.Messages = msg
		data = append(data, a.Finalize(a.Ready().Sends[0], now))
	}
	i := 0
	recv := testing.AllocsPerRun(100, func() {
		if err := b.Receive(Inbound{From: members[1], Data: data[i], Time: now}); err != nil {
			t.Fatal(err)
		}
		i++
	})
	if recv != 0 {
		t.Errorf("a receive with tracing off allocates %v times, want 0", recv)
	}
	fin := testing.AllocsPerRun(100, func() { a.Finalize(s, now) })
	if fin != 1 {
		t.Errorf("finalizing a frame with tracing off allocates %v times, want 1 (its bytes)", fin)
	}
}

// BenchmarkFrame is one frame's way through the node on both ends
// (encode, finalize and seal, receive and step), with tracing off, and
// on: both nodes recording to a file (io.Discard behind the trace's
// buffer), vectors on the wire.
func BenchmarkFrame(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "tracing=off"
		if on {
			name = "tracing=on"
		}
		b.Run(name, func(b *testing.B) {
			x, y, rx := benchPair(b, true)
			if on {
				for _, n := range []*Node{x, y} {
					lg, err := trace.NewLog(io.Discard, trace.Header{Daemon: "testd", ID: n.ID(), Cluster: "lab", Members: []uint32{1, 2, 3}, Clock: trace.ClockSystem, Started: t0}, 1<<62)
					if err != nil {
						b.Fatal(err)
					}
					n.SetRecorder(lg, nil)
				}
			}
			msg := []core.Message{{To: 2, Kind: wire.KindHeartbeat, Term: 3, Payload: make([]byte, 8)}}
			now := t0
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(time.Microsecond)
				roundTrip(x, y, rx, msg, now)
			}
		})
	}
}

// TestStreamSendTracedWhenQueued: a stream frame's send is recorded when
// the driver queues it (StreamQueued), in the order of the node's events,
// not when its link's writer finalizes it later on its own goroutine: here
// the writer is held back while the loop receives a frame and sends a
// datagram, then writes. The trace read back lists the node's events with
// its own vector entry rising line by line, the stream send first, at its
// queue time, and the receiver's delivery pairs with it (one frame ID,
// after its vector); the frame still carries the transmit time of its
// write. Finalizing it records nothing more, and a frame the driver never
// queued (its link's queue full) is no send in the trace.
func TestStreamSendTracedWhenQueued(t *testing.T) {
	a, ra := newNode(t, 1, nil)
	b, rb := newNode(t, 2, nil)
	c, rc := newNode(t, 3, nil)
	la, bufA := traced(t, a)
	lb, bufB := traced(t, b)
	traced(t, c)
	queued, written := t0.Add(time.Millisecond), t0.Add(40*time.Millisecond)

	// The loop: the core's stream frame to 2, queued on its link.
	ra.rd.Messages = []core.Message{{To: 2, Kind: wire.KindLeaderWatch, Payload: []byte{0, 0, 0, 1}, Stream: true}}
	sends := a.Ready().Sends
	if len(sends) != 1 || !sends[0].Stream {
		t.Fatalf("sends %+v, want one stream frame", sends)
	}
	watch := sends[0]
	a.StreamQueued(watch, queued)
	// While its writer is held back, the loop goes on: a frame from 3
	// is received, and a datagram sent to 3.
	rc.rd.Messages = []core.Message{{To: 1, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
	if errs := deliver(t, c, a, t0.Add(5*time.Millisecond)); len(errs) != 1 || errs[0] != nil {
		t.Fatalf("3 to 1: %v", errs)
	}
	// A stream frame encoded but never queued (the daemon calls
	// StreamQueued only once its link took it: a full queue refuses it,
	// TestStreamSendTracedInLoopOrder in internal/daemon): encoding alone
	// records nothing, and its vector tick is a gap.
	ra.rd.Messages = []core.Message{{To: 3, Kind: wire.KindLeaderWatch, Payload: []byte{0, 0, 0, 1}, Stream: true}}
	if refused := a.Ready().Sends; len(refused) != 1 || !refused[0].Stream {
		t.Fatalf("sends %+v, want one stream frame", refused)
	}
	ra.rd.Messages = []core.Message{{To: 3, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)}}
	hb := a.Ready().Sends
	a.StreamQueued(hb[0], queued) // a datagram: recorded by Finalize alone
	if err := c.Receive(Inbound{From: members[1], Data: a.Finalize(hb[0], t0.Add(10*time.Millisecond)), Time: t0.Add(11 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	// The writer, at last.
	if err := b.Receive(Inbound{From: members[1], Data: a.Finalize(watch, written), Time: written.Add(time.Millisecond), Stream: true}); err != nil {
		t.Fatal(err)
	}
	if len(rb.steps) != 1 || !rb.steps[0].Sent.Round(time.Microsecond).Equal(written) {
		t.Errorf("the receiver's core got %+v, want the watch with its write's transmit time %v", rb.steps, written)
	}

	ea, eb := readTrace(t, la, bufA), readTrace(t, lb, bufB)
	var prev trace.VC
	var lines []string
	for _, e := range ea {
		lines = append(lines, fmt.Sprintf("%s %s %s %v", e.Ev, e.Kind, e.Frame, e.VC))
		if e.VC[1] <= prev[1] {
			t.Errorf("%s %s %s: vector %v does not follow %v", e.Ev, e.Kind, e.Frame, e.VC, prev)
		}
		prev = e.VC
	}
	want := []string{trace.EvSend + " leader_watch", trace.EvRecv + " heartbeat", trace.EvSend + " heartbeat"}
	if len(ea) != len(want) {
		t.Fatalf("1's trace:\n\t%s\nwant %v", strings.Join(lines, "\n\t"), want)
	}
	for i, w := range want {
		if got := ea[i].Ev + " " + ea[i].Kind; got != w {
			t.Errorf("1's event %d is %s, want %s", i, got, w)
		}
	}
	send := ea[0]
	if !send.T.Equal(queued) || send.To != 2 || send.Lamport != 1 {
		t.Errorf("the watch's send %+v: want it to 2 at its queue time %v, Lamport 1", send, queued)
	}
	if len(eb) != 1 || eb[0].Ev != trace.EvRecv || eb[0].Frame != send.Frame || clock.Compare(send.VC.Vector(), eb[0].VC.Vector()) != clock.Before || eb[0].Lamport <= send.Lamport {
		t.Errorf("2's trace %+v: want the receive of %s after its send %v", eb, send.Frame, send.VC)
	}
}
