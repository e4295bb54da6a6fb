package sim

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// Fate is what happened to a packet: one Sent entry when it leaves, then one
// entry per copy saying how that copy ended.
type Fate uint8

const (
	FateSent      Fate = iota + 1 // written by the sender (Size bytes, after Finalize)
	FateDelivered                 // accepted by the receiving node
	FateRejected                  // handed to the receiving node, which refused it (counted in its drop reasons)
	FateLost                      // dropped by the link's random loss
	FateCut                       // dropped by a partition
	FateDown                      // the receiver was crashed (or restarted since the send)
	FatePaused                    // a datagram reached a paused receiver
	FateReset                     // a stream frame whose connection was reset (crash of an end, or a cut)
	FateNoRoute                   // the destination address is no node's
)

func (f Fate) String() string {
	switch f {
	case FateSent:
		return "sent"
	case FateDelivered:
		return "delivered"
	case FateRejected:
		return "rejected"
	case FateLost:
		return "lost"
	case FateCut:
		return "cut"
	case FateDown:
		return "down"
	case FatePaused:
		return "paused"
	case FateReset:
		return "reset"
	case FateNoRoute:
		return "noroute"
	}
	return fmt.Sprintf("fate(%d)", uint8(f))
}

// TraceEntry is one line of the message trace.
type TraceEntry struct {
	At        time.Duration // virtual time since Config.Start
	Packet    uint64        // packet number, in send order; copies share it
	From, To  uint32        // To is 0 for the Sent entry of a multicast frame
	Kind      wire.Kind     // frame kind; KindInvalid for foreign datagrams
	Size      int
	Fate      Fate
	Stream    bool
	Multicast bool
	Datagram  bool
	Dup       bool // the second copy made by Duplicate
}

func (e TraceEntry) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%12v #%d %d->%d ", e.At, e.Packet, e.From, e.To)
	switch {
	case e.Datagram:
		b.WriteString("datagram")
	default:
		b.WriteString(e.Kind.String())
	}
	fmt.Fprintf(&b, " %dB %v", e.Size, e.Fate)
	for _, f := range []struct {
		on   bool
		name string
	}{{e.Stream, "stream"}, {e.Multicast, "multicast"}, {e.Dup, "dup"}} {
		if f.on {
			b.WriteString(" " + f.name)
		}
	}
	return b.String()
}

// Event is a core's event as the simulator logged it, or one of the
// simulator's own ("sim.crash", "sim.restart", "sim.pause", "sim.resume",
// "sim.partition", "sim.isolate", "sim.cut", "sim.heal"; Node 0 when
// cluster-wide).
type Event struct {
	At    time.Duration // virtual (true) time since Config.Start
	Node  uint32
	Local time.Time // the node's clock when it was reported (zero for sim events)
	core.Event
}

// Arg returns the value following key in the event's Args, if any.
func (e Event) Arg(key string) (any, bool) {
	for i := 0; i+1 < len(e.Args); i += 2 {
		if k, ok := e.Args[i].(string); ok && k == key {
			return e.Args[i+1], true
		}
	}
	return nil, false
}

func (e Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%12v node=%d %s", e.At, e.Node, e.Name)
	for i := 0; i+1 < len(e.Args); i += 2 {
		fmt.Fprintf(&b, " %v=%v", e.Args[i], e.Args[i+1])
	}
	return b.String()
}

// tracer keeps the message trace and a digest of every byte that crossed a
// link, so two runs can be compared byte for byte cheaply.
type tracer struct {
	entries []TraceEntry
	limit   int
	h       hash.Hash
}

func newTracer(limit int) *tracer { return &tracer{limit: limit, h: sha256.New()} }

func (t *tracer) add(e TraceEntry, data []byte) {
	var b [40]byte
	binary.BigEndian.PutUint64(b[0:], uint64(e.At))
	binary.BigEndian.PutUint64(b[8:], e.Packet)
	binary.BigEndian.PutUint32(b[16:], e.From)
	binary.BigEndian.PutUint32(b[20:], e.To)
	b[24], b[25] = byte(e.Kind), byte(e.Fate)
	binary.BigEndian.PutUint32(b[26:], uint32(len(data)))
	t.h.Write(b[:30])
	t.h.Write(data)
	if t.limit < 0 || len(t.entries) < t.limit {
		t.entries = append(t.entries, e)
	}
}

// Trace returns the message trace so far (up to Config.TraceLimit entries).
func (s *Sim) Trace() []TraceEntry { return s.trace.entries }

// Digest is a SHA-256 over the whole message trace, packet bytes included
// (not bounded by TraceLimit). Equal digests mean byte-identical runs.
func (s *Sim) Digest() string { return hex.EncodeToString(s.trace.h.Sum(nil)) }

// Events returns the event log so far.
func (s *Sim) Events() []Event { return s.events }

// EventsNamed returns the logged events called name, in order.
func (s *Sim) EventsNamed(name string) []Event {
	var out []Event
	for _, e := range s.events {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// Log renders the event log, one event per line, for failure messages.
func (s *Sim) Log() string {
	var b strings.Builder
	for _, e := range s.events {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}

func (s *Sim) simEvent(id uint32, name, msg string, args ...any) {
	s.events = append(s.events, Event{At: s.now, Node: id, Event: core.Event{Name: name, Msg: msg, Args: args}})
	s.traceSimEvent(id, core.Event{Name: name, Msg: msg, Args: args})
}
