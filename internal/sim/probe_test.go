package sim_test

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// probe is a minimal core for testing the simulator itself: every Every
// ticks it sends a numbered frame (to To, or to every member), persists its
// counter, and records what it receives and when it ticked.
type probe struct {
	id     uint32
	to     uint32 // core.Broadcast: everyone
	every  int    // ticks between sends; 0: never
	stream bool

	// dgramTo, when valid, makes the probe send 48-byte foreign datagrams
	// there (with the NTP transmit stamp) instead of frames.
	dgramTo netip.AddrPort
	dgrams  []core.Datagram

	n       uint64 // frames sent, also the persisted state
	ticks   []time.Time
	readAt  []int // len(got) at each tick
	got     []recv
	pending core.Ready
}

type recv struct {
	from uint32
	n    uint64
	at   time.Time // local receive time
	sent time.Time // sender's clock at send (patched by node.Finalize)
	// checked: configuration agreement compared the sender's
	// incarnation's configuration (core.Message.Checked).
	checked bool
}

func newProbe(id uint32, disk []byte, every int) *probe {
	p := &probe{id: id, every: every}
	if len(disk) == 8 {
		p.n = binary.BigEndian.Uint64(disk)
	}
	return p
}

func (p *probe) Step(m core.Message) error {
	p.got = append(p.got, recv{from: m.From, n: binary.BigEndian.Uint64(m.Payload), at: m.Time, sent: m.Sent, checked: m.Checked})
	return nil
}

func (p *probe) StepDatagram(d core.Datagram) error {
	p.dgrams = append(p.dgrams, d)
	return nil
}

func (p *probe) Tick(now time.Time) {
	p.ticks = append(p.ticks, now)
	p.readAt = append(p.readAt, len(p.got))
	if p.every == 0 || len(p.ticks)%p.every != 0 {
		return
	}
	p.send()
}

func (p *probe) send() {
	p.n++
	payload := binary.BigEndian.AppendUint64(nil, p.n)
	if p.dgramTo.IsValid() {
		data := make([]byte, 48)
		copy(data, payload)
		p.pending.Datagrams = append(p.pending.Datagrams, core.Datagram{Addr: p.dgramTo, Data: data, NTPStamp: true})
		return
	}
	p.pending.Messages = append(p.pending.Messages, core.Message{To: p.to, Kind: wire.KindHeartbeat, Payload: payload, Stream: p.stream})
	p.pending.State = payload
}

// adjust queues a clock adjustment, as a time core would.
func (p *probe) adjust(a clock.Adjustment) { p.pending.Adjustments = append(p.pending.Adjustments, a) }

func (p *probe) Ready() core.Ready {
	rd := p.pending
	p.pending = core.Ready{}
	return rd
}

func (p *probe) Status() any { return map[string]uint64{"sent": p.n} }
