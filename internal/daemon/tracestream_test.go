package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/internal/transport"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
)

// streamer is the liveness core that, when asked (want), also sends its
// next heartbeat to member 2 over the TCP link, as a stream frame of term
// streamTerm (which tells it apart in the traces; liveness reads no term).
type streamer struct {
	core.Core
	want bool
}

const streamTerm = 77

func (s *streamer) Ready() core.Ready {
	rd := s.Core.Ready()
	if s.want && len(rd.Messages) > 0 {
		m := rd.Messages[0]
		m.To, m.Stream, m.Term = 2, true, streamTerm
		rd.Messages = append(rd.Messages, m)
		s.want = false
	}
	return rd
}

// TestStreamSendTracedInLoopOrder: a daemon records a stream frame's send
// when it queues it, in the order of its other events, though its link's
// writer writes it later: here member 2 is off the network when the frame
// is queued, so the writer cannot connect while the loop sends its
// heartbeats; once 2 is back, the frame is written and delivered. A
// second stream frame, refused by the full queue, is never traced. The
// sender's trace lists its events with its own vector entry rising line
// by line (the frames of one fan-out share a vector), the stream send
// before the heartbeats sent while it waited, and 2's trace has its
// delivery, after it.
func TestStreamSendTracedInLoopOrder(t *testing.T) {
	network := transport.NewMemNetwork()
	dir := shortDir(t)
	var ds []*Daemon
	var cancels []context.CancelFunc
	var dones []chan error
	for id := uint32(1); id <= 2; id++ {
		cfg := testConfig(t, network, dir, id, 2)
		cfg.TraceFile = filepath.Join(dir, fmt.Sprintf("h%d.trace", id))
		cfg.Stream.MaxAge = hangGuard // the frame waits for 2, however loaded the host
		cfg.Stream.QueueLen = 1       // a second stream frame while it waits is refused
		live := livenessFactory(id, 2)
		d, err := New(cfg, func(env core.Env) (core.Core, error) {
			c, err := live(env)
			return &streamer{Core: c}, err
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		ds, cancels, dones = append(ds, d), append(cancels, cancel), append(dones, done)
	}
	for _, d := range ds {
		eventually(t, "both members alive", func() bool {
			st, err := statusOf(d.Config().ControlPath)
			return err == nil && aliveCount(st) == 2
		})
	}
	heartbeats := func() uint64 { return status(t, ds[0].Config().ControlPath).Node.FramesOut["heartbeat"] }
	network.SetDown(addr(2), true)
	if err := ds[0].Do(context.Background(), func(n *node.Node) { n.Core().(*streamer).want = true }); err != nil {
		t.Fatal(err)
	}
	// The frame is queued (with the core's next heartbeat), and its
	// writer cannot connect: the loop sends heartbeats meanwhile.
	eventually(t, "the stream frame queued", func() bool {
		for _, l := range status(t, ds[0].Config().ControlPath).Transport.Links {
			if l.Peer == addr(2) && l.Queued == 1 {
				return true
			}
		}
		return false
	})
	// A second stream frame, while the first waits, is refused (the
	// queue holds one): it was never sent, so no trace has it.
	if err := ds[0].Do(context.Background(), func(n *node.Node) { n.Core().(*streamer).want = true }); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the second stream frame refused", func() bool {
		return status(t, ds[0].Config().ControlPath).Transport.QueueDrops == 1
	})
	queued := heartbeats()
	eventually(t, "heartbeats sent while the stream frame waits", func() bool { return heartbeats() >= queued+3 })
	if st := status(t, ds[0].Config().ControlPath); st.Transport.Stream.PacketsOut != 0 {
		t.Fatalf("the stream frame left while its peer was down: %+v", st.Transport.Stream)
	}
	network.SetDown(addr(2), false)
	var readErr error
	eventually(t, "the stream frame's receive in 2's trace", func() bool {
		// Flushed every traceFlushEvery: until the first flush the file
		// is empty, or ends inside a line; read it again then.
		f, err := trace.ReadFile(ds[1].Config().TraceFile)
		if err != nil {
			if readErr == nil {
				t.Logf("2's trace not readable yet (read again): %v", err)
			}
			readErr = err
			return false
		}
		for _, e := range f.Events {
			if e.Ev == trace.EvRecv && e.Term == streamTerm {
				return true
			}
		}
		return false
	})
	for i := range ds {
		cancels[i]()
		if err := <-dones[i]; err != nil {
			t.Fatal(err)
		}
	}

	var files []*trace.File
	for i := range ds {
		f, err := trace.ReadFile(ds[i].Config().TraceFile)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	var prev trace.VC
	var stream *trace.Event
	later := 0 // events after the stream send
	for i, e := range files[0].Events {
		if e.Ev == trace.EvDrop || e.Ev == trace.EvLocal && len(e.VC) == 0 {
			continue // no event of the vector clock
		}
		if e.VC[1] <= prev[1] && !(e.Ev == trace.EvSend && clock.Compare(e.VC.Vector(), prev.Vector()) == clock.Equal) {
			t.Errorf("h1 line %d: %s %s %s: vector %v does not follow %v", e.Line, e.Ev, e.Kind, e.Frame, e.VC, prev)
		}
		prev = e.VC
		switch {
		case e.Ev == trace.EvSend && e.Term == streamTerm:
			if stream != nil {
				t.Errorf("h1 line %d: the stream frame sent again (%s, then %s)", e.Line, stream.Frame, e.Frame)
			}
			stream = &files[0].Events[i]
		case stream != nil && e.Ev == trace.EvSend:
			later++
		}
	}
	if stream == nil {
		t.Fatal("h1's trace has no send of the stream frame")
	}
	if later < 3 {
		t.Errorf("%d sends traced after the stream frame's, want the 3 or more of while it waited", later)
	}
	delivered := 0
	for _, e := range files[1].Events {
		if e.Ev != trace.EvRecv || e.Frame != stream.Frame {
			continue
		}
		delivered++
		if e.Lamport <= stream.Lamport || clock.Compare(stream.VC.Vector(), e.VC.Vector()) != clock.Before || !e.T.After(stream.T) {
			t.Errorf("h2 received %s at %v with Lamport %d, vector %v: not after its send's %v, %d, %v",
				e.Frame, e.T, e.Lamport, e.VC, stream.T, stream.Lamport, stream.VC)
		}
	}
	if delivered != 1 {
		t.Errorf("h2 received the stream frame %s %d times, want once", stream.Frame, delivered)
	}
}
