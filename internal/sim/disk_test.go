package sim_test

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/synclab/synclab/internal/sim"
	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// promiser raises its promise every tick (core.Durable keeps it pending
// until written) and sends it to node 2 (or to) every tick.
type promiser struct {
	core.Durable
	n    uint64
	msgs []core.Message
	to   uint32
}

func (p *promiser) Step(core.Message) error          { return nil }
func (p *promiser) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }
func (p *promiser) Status() any                      { return p.n }
func (p *promiser) Tick(time.Time) {
	p.n++
	p.Change(true)
	to := p.to
	if to == 0 {
		to = 2
	}
	p.msgs = append(p.msgs, core.Message{To: to, Kind: wire.KindHeartbeat, Term: p.n, Payload: make([]byte, 8)})
}
func (p *promiser) Ready() core.Ready {
	rd := core.Ready{Messages: p.msgs}
	p.msgs = nil
	p.Durable.Ready(&rd, func() []byte { return binary.BigEndian.AppendUint64(nil, p.n) })
	return rd
}

// restorePromiser builds a promiser from its disk.
func restorePromiser(env core.Env) core.Core {
	p := &promiser{}
	if len(env.State) == 8 {
		p.n = binary.BigEndian.Uint64(env.State)
	}
	return p
}

// TestDiskFaults: with a disk that fails half its writes, the driver
// withholds the frames of every Ready whose promise it could not write and
// tells the core; the oracle sees no frame whose term is not on disk.
func TestDiskFaults(t *testing.T) {
	s := sim.New(sim.Config{Seed: 4})
	s.AddNode(1, netip.AddrPort{}, restorePromiser, clock.SimConfig{})
	s.AddNode(2, netip.AddrPort{}, func(core.Env) core.Core { return &promiser{} }, clock.SimConfig{})
	s.SetDiskFaults(1, 0.5)
	sent := 0
	s.OnSend(func(f sim.SentFrame) {
		if f.From != 1 {
			return
		}
		sent++
		if on := binary.BigEndian.Uint64(f.Disk); f.Frame.Term > on {
			t.Fatalf("term %d sent with %d on disk", f.Frame.Term, on)
		}
	})
	s.Run(time.Second)
	c := s.Counters(1)
	if c.WriteFailures < 20 || c.Withheld < 20 || sent < 20 {
		t.Fatalf("failed writes %d, withheld %d, sent %d: want many of each", c.WriteFailures, c.Withheld, sent)
	}
	// A restart comes back from what was written.
	s.Restart(1)
	s.Run(100 * time.Millisecond)
}
