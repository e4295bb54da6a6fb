package sim

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/trace"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// traceFiles writes a trace (format v1, internal/trace) per node. The
// vector timestamps are the simulator's ground truth, computed here from
// what it delivers: every recorded event ticks its node's entry, except
// the frames of one logical send (a broadcast over unicast, all stamped
// with the same Lamport time by the node), which share one stamp; a
// receive merges the stamp of the send it delivers. So the traces order
// events exactly as the simulated run's happened-before relation does,
// whether or not the nodes carry vectors on the wire.
type traceFiles struct {
	nodes  map[uint32]*nodeTrace
	stamps map[string]clock.Vector // frame ID -> its send's vector stamp
	err    error
}

type nodeTrace struct {
	w   *trace.Writer
	vec clock.Vector
	// lastSend is the Lamport stamp of the node's last event when it was a
	// send (0 otherwise): a send with the same stamp is the same logical
	// send's next frame.
	lastSend uint64
	// truth is the node's clock's exact error now, recorded with every
	// event when it is not 0 (the event's time is true time; its clock
	// reads it plus this): what lets a checker read the node's lease
	// expiries, taken on its own clock (internal/tracecheck).
	truth func() time.Duration
}

// RecordTraces makes every node write its trace from now on: open(id)
// gives the destination of node id's (the caller closes it after
// CloseTraces), daemon names the daemon in the headers, maxBytes bounds
// each file (0: trace.DefaultMaxBytes). Times are the simulator's true
// time (clock "true"), with the node's clock's exact error when it has
// one (true_offset_ns); hosts are named n1, n2... Cluster-wide simulator
// events (partition, heal) belong to no node and are not recorded; a
// node's own (crash, restart, pause, resume) are local events.
func (s *Sim) RecordTraces(daemon string, open func(id uint32) (io.Writer, error), maxBytes int64) error {
	if len(s.order) == 0 {
		return errors.New("sim: RecordTraces before any AddNode: the headers need the member list")
	}
	tf := &traceFiles{nodes: map[uint32]*nodeTrace{}, stamps: map[string]clock.Vector{}}
	for _, id := range s.order {
		dst, err := open(id)
		if err != nil {
			return fmt.Errorf("sim: trace of node %d: %w", id, err)
		}
		w, err := trace.NewWriter(dst, trace.Header{Daemon: daemon, ID: id, Host: fmt.Sprintf("n%d", id),
			Cluster: s.cfg.Cluster, Members: s.IDs(), Clock: trace.ClockTrue, Started: s.Now()}, maxBytes)
		if err != nil {
			return fmt.Errorf("sim: trace of node %d: %w", id, err)
		}
		clk := s.Clock(id)
		tf.nodes[id] = &nodeTrace{w: w, truth: clk.TrueOffset}
	}
	s.traces = tf
	return nil
}

// CloseTraces ends every node's trace (flushes, and brings a truncated
// count up to date) and stops recording. It returns the first write error
// any trace met.
func (s *Sim) CloseTraces() error {
	tf := s.traces
	if tf == nil {
		return nil
	}
	s.traces = nil
	err := tf.err
	for _, id := range s.order {
		if cerr := tf.nodes[id].w.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// TraceVector returns node id's vector clock as its trace records it.
func (s *Sim) TraceVector(id uint32) clock.Vector {
	if s.traces == nil {
		return clock.Vector{}
	}
	return s.traces.nodes[id].vec.Clone()
}

func (tf *traceFiles) write(nt *nodeTrace, e *trace.Event) {
	if off := nt.truth(); off != 0 {
		ns := int64(off)
		e.TrueOffset = &ns
	}
	if err := nt.w.Write(e); err != nil && tf.err == nil {
		tf.err = err
	}
}

// lamport is node n's Lamport clock now.
func lamportOf(n *simNode) uint64 {
	if n.node == nil {
		return 0
	}
	return n.node.Status().Lamport
}

func (s *Sim) traceSend(n *simNode, snd node.Send) {
	if s.traces == nil || snd.Datagram {
		return
	}
	var f wire.Frame
	if f.UnmarshalBinary(snd.Data) != nil {
		return
	}
	nt := s.traces.nodes[n.id]
	if nt.lastSend == 0 || nt.lastSend != f.Lamport {
		nt.vec.Tick(n.id)
	}
	nt.lastSend = f.Lamport
	id := trace.FrameID(f.Sender, f.Seq)
	s.traces.stamps[id] = nt.vec.Clone()
	s.traces.write(nt, &trace.Event{T: s.Now(), Lamport: f.Lamport, VC: trace.VCOf(nt.vec), Ev: trace.EvSend,
		Kind: f.Kind.String(), Frame: id, From: f.Sender, To: f.Receiver, Term: f.Term, Fields: trace.Fields(f.Kind, f.Payload)})
}

// traceRecv records the delivery of p to n, as the node records it in a
// daemon: a receive, or a drop with the reason the node counted (the
// counter that rose from dropped, the counters before); a frame the core
// refused is a receive (the node merged its stamps) and then its drop.
func (s *Sim) traceRecv(n *simNode, p *packet, err error, dropped map[string]uint64) {
	if s.traces == nil || p.datagram {
		return
	}
	nt := s.traces.nodes[n.id]
	nt.lastSend = 0
	var f wire.Frame
	decoded := f.UnmarshalBinary(p.data) == nil
	e := trace.Event{T: s.Now(), Lamport: lamportOf(n)}
	if decoded {
		e.Kind, e.Frame, e.From, e.Term = f.Kind.String(), trace.FrameID(f.Sender, f.Seq), f.Sender, f.Term
	}
	reason := ""
	if err != nil {
		reason = dropReason(err)
		if n.node != nil {
			for r, c := range n.node.Status().Dropped {
				if c > dropped[r] {
					reason = r
				}
			}
		}
	}
	if err == nil || strings.HasPrefix(reason, "rejected_") {
		nt.vec.Receive(n.id, s.traces.stamps[e.Frame])
		rcv := e
		rcv.VC, rcv.Ev, rcv.To, rcv.Fields = trace.VCOf(nt.vec), trace.EvRecv, n.id, trace.Fields(f.Kind, f.Payload)
		s.traces.write(nt, &rcv)
		if err == nil {
			return
		}
	}
	// A refused frame is an event of the receiver, but it learns nothing
	// from it (a frame the core refused was merged with its receive).
	nt.vec.Tick(n.id)
	e.VC, e.Ev, e.Reason, e.Msg = trace.VCOf(nt.vec), trace.EvDrop, reason, err.Error()
	s.traces.write(nt, &e)
}

// dropReason names a refusal as the node counts it where it can tell.
func dropReason(err error) string {
	if r := wire.Reason(err); r != "other" {
		return r
	}
	return "rejected"
}

// traceEvents records the core's events of out before its frames: the
// core reported them while deciding what to send. Their Lamport time is the
// clock's before the node stamped this output's frames.
func (s *Sim) traceEvents(n *simNode, out node.Output) {
	if s.traces == nil || len(out.Events) == 0 {
		return
	}
	lamport := lamportOf(n)
	for _, snd := range out.Sends {
		var f wire.Frame
		if !snd.Datagram && f.UnmarshalBinary(snd.Data) == nil && f.Lamport != 0 {
			lamport = min(lamport, f.Lamport-1)
		}
	}
	for _, e := range out.Events {
		s.traceLocal(n, e, lamport)
	}
}

func (s *Sim) traceLocal(n *simNode, ce core.Event, lamport uint64) {
	nt := s.traces.nodes[n.id]
	nt.lastSend = 0
	nt.vec.Tick(n.id)
	s.traces.write(nt, &trace.Event{T: s.Now(), Lamport: lamport, VC: trace.VCOf(nt.vec), Ev: trace.EvLocal,
		Name: ce.Name, Msg: ce.Msg, Args: trace.Args(ce.Args)})
}

func (s *Sim) traceSimEvent(id uint32, ce core.Event) {
	if s.traces == nil || id == 0 {
		return
	}
	n := s.nodes[id]
	s.traceLocal(n, ce, lamportOf(n))
}
