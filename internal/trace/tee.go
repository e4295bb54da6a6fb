package trace

import (
	"net/netip"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// Tee records every event to each of its recorders (an operator's trace
// file and the trace window the members ask for, both on at once).
type Tee []Recorder

func (t Tee) Send(f *wire.Frame, vc clock.Vector, at time.Time) {
	for _, r := range t {
		r.Send(f, vc, at)
	}
}

func (t Tee) Recv(f *wire.Frame, lamport uint64, vc clock.Vector, at time.Time) {
	for _, r := range t {
		r.Recv(f, lamport, vc, at)
	}
}

func (t Tee) Local(e core.Event, lamport uint64, vc clock.Vector, at time.Time) {
	for _, r := range t {
		r.Local(e, lamport, vc, at)
	}
}

func (t Tee) Drop(f *wire.Frame, reason string, lamport uint64, at time.Time) {
	for _, r := range t {
		r.Drop(f, reason, lamport, at)
	}
}

// Datagram records to those of its recorders that record datagrams.
func (t Tee) Datagram(ev string, peer netip.AddrPort, data []byte, lamport uint64, at time.Time) {
	for _, r := range t {
		if d, ok := r.(DatagramRecorder); ok {
			d.Datagram(ev, peer, data, lamport, at)
		}
	}
}

var _ DatagramRecorder = Tee(nil)
