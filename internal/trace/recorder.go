package trace

import (
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// Recorder is what internal/node calls while tracing is on. The node holds
// a Recorder field that is nil when tracing is off and tests it before
// anything else, so tracing off builds nothing:
//
//	if n.rec != nil {
//		n.rec.Recv(&f, n.lamport.Now(), n.vec, in.Time)
//	}
//
// Every method takes what the node has at that point and nothing it must
// compute for the trace; the Recorder copies what it keeps (f's payload and
// vc may be reused after the call returns). Implementations are safe for
// concurrent use: Send is called from Finalize, on whatever goroutine
// writes the datagram.
type Recorder interface {
	// Send: frame f (header as encoded: sender, seq, kind, receiver, term,
	// the Lamport stamp of its logical send; payload) leaves at local time
	// at: a datagram's transmit time patched into it; a stream frame's
	// when it was queued on its link, in the order of the node's other
	// events (the link's writer patches and writes it later, on its own
	// goroutine; node.StreamQueued). vc is the send's vector stamp (empty
	// without vectors).
	Send(f *wire.Frame, vc clock.Vector, at time.Time)
	// Recv: frame f was accepted at local time at (the kernel receive
	// stamp); lamport and vc are the node's clocks after merging its
	// stamps.
	Recv(f *wire.Frame, lamport uint64, vc clock.Vector, at time.Time)
	// Local: the core reported e; lamport and vc are the node's clocks
	// then.
	Local(e core.Event, lamport uint64, vc clock.Vector, at time.Time)
	// Drop: a packet refused before it reached the core, for reason (as
	// counted in status). f is what was decoded of it, nil if nothing.
	Drop(f *wire.Frame, reason string, lamport uint64, at time.Time)
}

// DatagramRecorder is what a Recorder also implements to record the
// datagrams a node exchanges outside its cluster's frames: NTP packets on
// timed's NTP socket, and the synclab frames (Cristian's) that travel on
// it to and from hosts that need not be members. internal/node calls it
// when its Recorder has it.
type DatagramRecorder interface {
	// Datagram: data was sent to (ev EvSend, at the transmit time patched
	// into it) or received from (EvRecv, at the kernel stamp) peer.
	Datagram(ev string, peer netip.AddrPort, data []byte, lamport uint64, at time.Time)
}

// Log is the Recorder that writes a trace through a Writer.
type Log struct {
	mu     sync.Mutex
	w      *Writer
	self   uint32
	ev     Event // reused: a line is built from it, then it is cleared
	closed bool  // Close was called: later events (frames encoded before the stop, finalized after it) are ignored
	clock  func() ClockSample
}

// ClockSample is what a Log records of its host's clock with every event
// (Event.MaxError, Event.TrueOffset), so that a checker can order events
// of different hosts by their times (internal/tracecheck).
type ClockSample struct {
	// MaxError is the clock's maximum error while it is synchronised;
	// 0: it claims no bound.
	MaxError time.Duration
	// TrueOffset is a simulated clock's exact error (reading minus true
	// time); nil: unknown (a real clock).
	TrueOffset *time.Duration
}

// SetClock has every later event carry f's sample, taken as the event is
// recorded (f must be safe for concurrent use; nil: none). Call it before
// the Log records anything.
func (l *Log) SetClock(f func() ClockSample) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clock = f
}

// stamp sets e's clock sample.
func (l *Log) stamp(e *Event) {
	if l.clock == nil {
		return
	}
	s := l.clock()
	e.MaxError = int64(max(s.MaxError, 0))
	if s.TrueOffset != nil {
		off := int64(*s.TrueOffset)
		e.TrueOffset = &off
	}
}

// NewLog starts a trace on w with header h (h.ID is the recording member),
// bounded to maxBytes (0: DefaultMaxBytes).
func NewLog(w io.Writer, h Header, maxBytes int64) (*Log, error) {
	tw, err := NewWriter(w, h, maxBytes)
	if err != nil {
		return nil, err
	}
	return &Log{w: tw, self: h.ID}, nil
}

func (l *Log) frame(e *Event, f *wire.Frame) {
	e.Kind = f.Kind.String()
	e.Frame = FrameID(f.Sender, f.Seq)
	e.From, e.To, e.Term = f.Sender, f.Receiver, f.Term
}

// vcOf converts a vector stamp; a daemon outside any cluster (ID 0) has
// none to speak of.
func (l *Log) vcOf(vc clock.Vector) VC {
	if l.self == 0 {
		return nil
	}
	return VCOf(vc)
}

// Send implements Recorder.
func (l *Log) Send(f *wire.Frame, vc clock.Vector, at time.Time) {
	fields := Fields(f.Kind, f.Payload)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	e := &l.ev
	*e = Event{T: at, Lamport: f.Lamport, VC: l.vcOf(vc), Ev: EvSend, Fields: fields}
	l.frame(e, f)
	l.stamp(e)
	l.w.Write(e)
}

// Recv implements Recorder. `to` is the receiver, this member (a multicast
// frame's receiver field is 0).
func (l *Log) Recv(f *wire.Frame, lamport uint64, vc clock.Vector, at time.Time) {
	fields := Fields(f.Kind, f.Payload)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	e := &l.ev
	*e = Event{T: at, Lamport: lamport, VC: l.vcOf(vc), Ev: EvRecv, Fields: fields}
	l.frame(e, f)
	e.To = l.self
	l.stamp(e)
	l.w.Write(e)
}

// Local implements Recorder.
func (l *Log) Local(ce core.Event, lamport uint64, vc clock.Vector, at time.Time) {
	args := Args(ce.Args)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.ev = Event{T: at, Lamport: lamport, VC: l.vcOf(vc), Ev: EvLocal, Name: ce.Name, Msg: ce.Msg, Args: args}
	l.stamp(&l.ev)
	l.w.Write(&l.ev)
}

// Drop implements Recorder.
func (l *Log) Drop(f *wire.Frame, reason string, lamport uint64, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	e := &l.ev
	*e = Event{T: at, Lamport: lamport, Ev: EvDrop, Reason: reason}
	if f != nil {
		l.frame(e, f)
		e.To = 0
	}
	l.stamp(e)
	l.w.Write(e)
}

// Datagram implements DatagramRecorder. An NTP packet is an event of kind
// ntp_<mode> (ntp_client, ntp_server, ntp_symmetric_active...) whose
// frame is "ntp:" and its transmit timestamp in hex: the same string on
// the send and on the receive of one packet (every NTP packet carries a
// fresh transmit time), so arrows match as they do for frames; its fields
// are the decoded header (t1..t3 as origin, receive, transmit). A synclab
// frame is traced as a frame, with the peer's address.
func (l *Log) Datagram(ev string, peer netip.AddrPort, data []byte, lamport uint64, at time.Time) {
	e := Event{T: at, Lamport: lamport, Ev: ev, Peer: peer.String()}
	var f wire.Frame
	if wire.IsFrame(data) && f.UnmarshalBinary(data) == nil {
		e.Fields = Fields(f.Kind, f.Payload)
		e.Kind, e.Frame, e.From, e.To, e.Term = f.Kind.String(), FrameID(f.Sender, f.Seq), f.Sender, f.Receiver, f.Term
		if ev == EvSend && f.Lamport != 0 {
			e.Lamport = f.Lamport // its logical send's stamp, as for any frame
		}
	} else {
		e.Kind, e.Frame, e.Fields = NTPFields(data)
		e.From, e.To = 0, 0
		if ev == EvSend {
			e.From = l.self
		} else {
			e.To = l.self
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.ev = e
	l.stamp(&l.ev)
	l.w.Write(&l.ev)
}

// Flush writes buffered lines to the file (a daemon flushes on a timer and
// at `X trace stop`).
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Flush()
}

// Close flushes and finishes the truncated count; the file stays open.
// Events recorded after Close are ignored.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	return l.w.Close()
}

// Bytes returns how many bytes of the trace were written (buffered ones
// included).
func (l *Log) Bytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Bytes()
}

// Err returns the destination's write error, if any (it sticks: nothing
// more is written).
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.err
}

// Dropped returns how many events the bound left out.
func (l *Log) Dropped() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Dropped()
}

// Args turns slog-style alternating keys and values into the trace's
// `args` object; a key that is not a string is named by its position, a
// value without a key is kept under "!BADKEY" as slog does.
func Args(kv []any) map[string]any {
	if len(kv) == 0 {
		return nil
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		if i+1 == len(kv) {
			m["!BADKEY"] = argValue(kv[i])
			break
		}
		k, ok := kv[i].(string)
		if !ok {
			k = fmt.Sprintf("arg%d", i/2)
		}
		m[k] = argValue(kv[i+1])
	}
	return m
}

// argValue keeps JSON's own types and names everything else by its text
// (an error, a time, a duration, an enum).
func argValue(v any) any {
	switch x := v.(type) {
	case nil, bool, string, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return x
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case error:
		return x.Error()
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}
