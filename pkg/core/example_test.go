package core_test

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// pinger is the whole contract in a few lines: it sends a heartbeat every
// second (Tick, Deadline), counts the ones it hears (Step) and keeps the
// count across restarts (Ready, Advance through core.Durable).
type pinger struct {
	core.Durable
	next  time.Time
	heard uint64
	rd    core.Ready
}

func (p *pinger) Step(m core.Message) error        { p.heard++; p.Change(false); return nil }
func (p *pinger) StepDatagram(core.Datagram) error { return core.ErrUnexpectedDatagram }
func (p *pinger) Deadline() time.Time              { return p.next }
func (p *pinger) Status() any                      { return p.heard }
func (p *pinger) Tick(now time.Time) {
	if !now.Before(p.next) {
		p.rd.Messages = append(p.rd.Messages, core.Message{To: core.Broadcast, Kind: wire.KindHeartbeat, Payload: make([]byte, 8)})
		p.next = now.Add(time.Second)
	}
}
func (p *pinger) Ready() core.Ready {
	rd := p.rd
	p.rd = core.Ready{}
	p.Durable.Ready(&rd, func() []byte { return binary.BigEndian.AppendUint64(nil, p.heard) })
	return rd
}

// The driver's side, as internal/daemon and internal/sim do it: tick the
// core when its deadline comes, step it with what arrives, act on every
// Ready (persist, then Advance, then send), sleep until the next deadline.
func Example() {
	p := &pinger{}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.Tick(now)
	_ = p.Step(core.Message{From: 2, Kind: wire.KindHeartbeat, Time: now.Add(time.Millisecond)})
	rd := p.Ready()
	fmt.Println("sent:", len(rd.Messages), "state to persist:", rd.State)
	p.Advance(true) // the driver wrote rd.State
	fmt.Println("sleep until:", p.Deadline().Sub(now))
	// Output:
	// sent: 1 state to persist: [0 0 0 0 0 0 0 1]
	// sleep until: 1s
}
