package order

import (
	"slices"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// A send whose write failed is taken back (core.Withdrawer): the daemon
// answers it "not sent" (503 not_sent), and the client, told so, may
// send again. Had the message been kept, as it was before, it would have
// gone out with the next write that succeeded, and the client's second
// send delivered it twice; and a client cannot tell "kept, goes later"
// from "lost with a crash" (doc.go, "Crashes").
//
// Taking it back is safe because nothing of it left this member and
// nothing of it can come back:
//
//   - no frame: a multicast is a promise, so the Ready that carries its
//     record is marked Promise and the driver withheld every frame of it
//     (and calls Withdraw only then); every record this member numbered
//     since its last good write is known to nobody else;
//   - no disk: the driver calls Withdraw only when the failed write
//     cannot be read back (nothing of it reached the file, or the driver
//     cut it off again), so a restart finds the state of the last good
//     write, which never held the message;
//   - no delivery: its own delivery here (FIFO, causal) was held by the
//     driver with the failed write's events, and is dropped from them,
//     from the history and from the counters; a Lamport message is still
//     in the queue (its members' acks cannot have come), unless the group
//     is this member alone, where it is delivered at once: then it is
//     kept (Withdraw says not all), as before.
//
// Its stream number is given to the next record: the records numbered in
// the same batch after it (the Lamport acks this member owes) are
// renumbered, which no member can tell, as none received them. A causal
// message's own entry in the vector goes back, and the message is in no
// one's causal past, as no one saw it. Its delivery index here is not
// given again (a gap, as after a restart: Delivery.Index only promises
// to increase). A restart of this member needs nothing: it reads the
// last good write.
//
// Only the calls of the failed Ready can be taken back: a Ready whose
// write failed in a way that may be read back (the driver does not call
// Withdraw) leaves its sends pending for good, to go with the next good
// write, as after any failed write (and the daemon answers them
// not_saved: may still be delivered).

// ownSend is one of this member's multicasts not yet known to be written.
type ownSend struct {
	order Order
	seq   uint64 // its number in this member's stream
	index uint64 // its delivery here (0: a Lamport message, queued)
	stamp uint64 // a Lamport message's stamp
}

// withdrawal is what a failed write can take back.
type withdrawal struct {
	// sends and records: this member's multicasts and the records of its
	// stream numbered since the last Ready.
	sends   []ownSend
	records []wire.OrderRecord
	// submitted: a multicast in sequencer total order was made since the
	// last Ready (its submission, which Withdraw cannot take back).
	submitted bool
	// inWrite holds them from the Ready that carried them in its write
	// until that write is known saved, or withdrawn.
	inWrite struct {
		sends     []ownSend
		records   []wire.OrderRecord
		submitted bool
	}
}

// ready hands the batch to the write of a Ready (wrote), or forgets it:
// a Ready without a write sends what it carries.
func (w *withdrawal) ready(wrote bool) {
	w.inWrite.sends, w.inWrite.records, w.inWrite.submitted = nil, nil, false
	if wrote {
		w.inWrite.sends, w.inWrite.records, w.inWrite.submitted = w.sends, w.records, w.submitted
	}
	w.sends, w.records, w.submitted = nil, nil, false
}

// Withdraw takes back this member's multicasts of the last Ready, whose
// write failed and cannot be read back, with their own deliveries'
// events (core.Withdrawer).
func (c *Core) Withdraw(events []core.Event) (kept []core.Event, taken int, all bool) {
	w := c.wd.inWrite
	c.wd.inWrite.sends, c.wd.inWrite.records, c.wd.inWrite.submitted = nil, nil, false
	if len(w.sends) == 0 || w.submitted {
		// Nothing to take back, or a sequencer submission among them,
		// which stays pending (the sequencer numbers it, and delivers it
		// everywhere, once a write holds it): not all was taken back,
		// so taking back the rest would only make the answers to one
		// write's calls differ (a review found "all" said here, and a
		// submission of the batch delivered).
		return events, 0, false
	}
	ls := &c.st.Lamport
	queued := func(m ownSend) int {
		return slices.IndexFunc(ls.Queue, func(q lamportMsg) bool { return q.Sender == c.id && q.Stamp == m.stamp })
	}
	for _, m := range w.sends {
		if m.order == TotalOrder && queued(m) < 0 {
			// Delivered already: this member is the whole group, and
			// the state machine applied it. It stays pending.
			return events, 0, false
		}
	}
	gone, stamps, indexes := map[uint64]bool{}, map[uint64]bool{}, map[uint64]bool{}
	for _, m := range w.sends {
		gone[m.seq] = true
		switch m.order {
		case Causal:
			c.st.Causal.V[c.pos[c.id]]--
		case TotalOrder:
			ls.Queue = slices.Delete(ls.Queue, queued(m), queued(m)+1)
			stamps[m.stamp] = true
		}
		if m.index != 0 {
			indexes[m.index] = true
			c.deliveredN[m.order]--
		}
	}
	// The stream: the records from the first one taken back on, all of
	// this batch, lose those taken back (and this member's own acks of
	// its Lamport messages among them) and are numbered again after the
	// last record kept before.
	first := w.sends[0].seq
	s := c.st.Stream
	i := slices.IndexFunc(s.Sent, func(r sentRecord) bool { return r.Seq >= first })
	if i >= 0 {
		s.Sent = s.Sent[:i]
	}
	s.Seq = first - 1
	for _, r := range w.records {
		if r.Seq < first || gone[r.Seq] || r.Type == wire.OrderTotalAck && r.AckSender == c.id && stamps[r.AckStamp] {
			continue
		}
		s.Seq++
		r.Seq = s.Seq
		if b, ok := c.bugs.Encode(&c.events, "order_record", r, nil); ok {
			s.Sent = append(s.Sent, sentRecord{Seq: r.Seq, Payload: b})
		}
	}
	for _, p := range c.peers {
		// No member received a record after the last kept: an
		// acknowledgement above it is forged (without a key).
		o := s.Out[p]
		o.Acked, o.Settled = min(o.Acked, first-1), min(o.Settled, first-1)
		for k := range o.raises {
			o.raises[k].upto = min(o.raises[k].upto, first-1)
		}
	}
	withdrawn := func(d Delivery) bool { return indexes[d.Index] }
	c.history = slices.DeleteFunc(c.history, withdrawn)
	c.fresh = slices.DeleteFunc(c.fresh, withdrawn)
	kept = slices.DeleteFunc(events, func(e core.Event) bool {
		i, ok := deliveryIndex(e)
		return ok && indexes[i]
	})
	c.counters["sends_withdrawn"] += uint64(len(w.sends))
	c.durable.Change(false)
	if len(stamps) > 0 {
		// A message taken back from the head of the queue held back the
		// ones behind it.
		c.lamportDeliver()
	}
	return kept, len(w.sends), true
}

// deliveryIndex is the delivery index an EventDelivered announces.
func deliveryIndex(e core.Event) (uint64, bool) {
	if e.Name != EventDelivered {
		return 0, false
	}
	for k := 0; k+1 < len(e.Args); k += 2 {
		if e.Args[k] == "index" {
			i, ok := e.Args[k+1].(uint64)
			return i, ok
		}
	}
	return 0, false
}
