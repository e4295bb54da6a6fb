package e2e

import (
	"testing"

	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/clock"
)

// Sent is a send in a run's traces: the event and the index of its file.
type Sent struct {
	Event trace.Event
	File  int
}

// CheckTraceOrder checks what the traces of a run owe a space-time
// diagram, and fails t where they do not: each file lists its member's
// events in the order of its vector clock (its own entry rises line by
// line; the frames of one fan-out share their send's vector; a refused
// frame, a note outside the vector clock such as orderd's log writes,
// and a status_report's send have none), stream frames included, whose sends are recorded
// when they are queued on their link (node.StreamQueued); and every
// receive of a frame whose send is in the traces comes after that send in
// vector and Lamport time. It returns the sends by frame ID.
func CheckTraceOrder(t testing.TB, files []*trace.File) map[string]Sent {
	t.Helper()
	sends := map[string]Sent{}
	for i, f := range files {
		self := f.Header.ID
		var prev trace.VC
		for _, e := range f.Events {
			if e.Ev == trace.EvDrop || len(e.VC) == 0 {
				// No event of the vector clock: a refused frame, a note
				// such as orderd's log writes, a status_report's send
				// (`X status --cluster` asks outside the run's order).
				continue
			}
			if e.VC[self] <= prev[self] && !(e.Ev == trace.EvSend && e.Lamport != 0 && clock.Compare(e.VC.Vector(), prev.Vector()) == clock.Equal) {
				t.Errorf("%s line %d: %s %s %s: vector %v does not follow %v", f.Name, e.Line, e.Ev, e.Kind, e.Frame, e.VC, prev)
			}
			prev = e.VC
			if e.Ev == trace.EvSend {
				sends[e.Frame] = Sent{e, i}
			}
		}
	}
	for _, f := range files {
		for _, e := range f.Events {
			s, ok := sends[e.Frame]
			if e.Ev != trace.EvRecv || !ok {
				continue
			}
			if clock.Compare(s.Event.VC.Vector(), e.VC.Vector()) != clock.Before || e.Lamport <= s.Event.Lamport {
				t.Errorf("%s line %d: %s %s received with vector %v (Lamport %d), not after its send's %v (Lamport %d, %s line %d)",
					f.Name, e.Line, e.Kind, e.Frame, e.VC, e.Lamport, s.Event.VC, s.Event.Lamport, files[s.File].Name, s.Event.Line)
			}
		}
	}
	return sends
}
