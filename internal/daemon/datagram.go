package daemon

import (
	"bytes"
	"errors"

	"github.com/synclab/synclab/internal/node"
	"github.com/synclab/synclab/internal/transport"
)

// answerBatch holds what one batch of datagrams made the core answer on
// the spot, in buffers reused from batch to batch: serving a request
// allocates nothing.
type answerBatch struct {
	bufs   [transport.BatchSize][]byte
	sends  []node.Send
	out    []transport.Datagram
	stamps []transport.TxStamp
}

// answerBufSize is the capacity of an answer's buffer: an NTP reply with
// the longest MAC (4 + 64 bytes), or a Cristian reply and its trailer.
const answerBufSize = 256

// serveDatagrams is the datagram socket's reader's own handling of a batch
// of datagrams, on the reader's goroutine, holding d.mu as the loop does
// for everything else. The datagrams a core answers alone (core.Answerer:
// timed's NTP and Cristian requests) are answered in one write for the
// batch, their transmit times written right before it; the others are
// stepped, and the core's Ready acted on, as the loop would. So a server
// answers without waking the loop per request.
func (d *Daemon) serveDatagrams(batch []transport.Packet) {
	select {
	case <-d.looping:
	case <-d.notServing:
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.served {
		return
	}
	a := &d.answers
	a.sends = a.sends[:0]
	stepped := false
	for i, p := range batch {
		in := node.Inbound{From: p.From, Data: p.Data, Time: d.cfg.Clock.FromKernel(p.Time), Datagram: true}
		if a.bufs[i] == nil {
			a.bufs[i] = make([]byte, 0, answerBufSize)
		}
		s, handled, err := d.node.Answer(in, a.bufs[i])
		if err != nil {
			d.log.Debug("dropped packet", "from", p.From.String(), "via", p.Via.String(), "err", err)
		}
		if !handled {
			// The batch's buffers are the reader's: the core may keep
			// what it is stepped with.
			p.Data = bytes.Clone(p.Data)
			d.receive(p, true)
			stepped = true
			continue
		}
		if s.Data != nil {
			a.sends = append(a.sends, s)
		}
	}
	if len(a.sends) > 0 {
		now := d.cfg.Clock.Now()
		a.out = a.out[:0]
		stamped := false
		for _, s := range a.sends {
			a.out = append(a.out, transport.Datagram{To: s.To, Data: d.node.FinishAnswer(s, now), Stamp: s.TxStamp})
			stamped = stamped || s.TxStamp
		}
		var n int
		var err error
		if stamped {
			// Answers whose departure the core keeps (an NTP server's
			// interleaved mode): their kernel transmit stamps.
			if cap(a.stamps) < len(a.out) {
				a.stamps = make([]transport.TxStamp, transport.BatchSize)
			}
			a.stamps = a.stamps[:len(a.out)]
			n, err = d.dgram.WriteBatchStamped(a.out, a.stamps)
			for i, st := range a.stamps {
				switch {
				case st.Kernel:
					d.node.AnswerSent(a.sends[i], a.out[i].Data, d.cfg.Clock.FromKernel(st.Time))
				case st.Missed:
					// The client gets a basic answer next time.
					d.errs["answer_tx_stamp_missed"]++
				}
			}
		} else {
			n, err = d.dgram.WriteBatch(a.out)
		}
		if err != nil {
			d.errs["send_failed"] += uint64(len(a.out) - n)
			if !errors.Is(err, transport.ErrClosed) {
				d.log.Debug("answers not sent", "count", len(a.out)-n, "err", err)
			}
		}
	}
	d.process()
	if stepped {
		// An answer moves no timer worth a wake-up (a rate limiter's
		// expiry waits for the next tick); a stepped datagram may (an NTP
		// client's reply is taken in at once).
		d.schedule()
	}
}

// endServing stops the datagram reader from stepping the core: the loop
// has ended (or never started).
func (d *Daemon) endServing() {
	d.endOnce.Do(func() {
		close(d.notServing)
		d.mu.Lock()
		d.served = true
		d.mu.Unlock()
	})
}
