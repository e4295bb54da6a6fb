package order

import (
	"fmt"
	"slices"

	"github.com/synclab/synclab/pkg/clock"
	"github.com/synclab/synclab/pkg/wire"
)

// The notes' distributed total order: p_i multicasts msg_i (to itself
// too) stamped with its Lamport time; every p_j queues it by (stamp,
// sender) and multicasts an ack; p_j delivers the head of its queue once
// every member acknowledged it and every other member has a message
// queued (an ack counts) with a later stamp: with FIFO streams nobody can
// then send one with a smaller stamp. N members, N acks per message,
// each multicast: N^2 acks.

type lamportMsg struct {
	Sender  uint32   `json:"sender"`
	Seq     uint64   `json:"seq"`
	Stamp   uint64   `json:"stamp"`
	Message []byte   `json:"message"`
	Acks    []uint32 `json:"acks"` // sorted
}

type lamportState struct {
	Queue []lamportMsg `json:"queue,omitempty"` // by (stamp, sender)
	// Latest is the highest stamp each member's stream handed on (a
	// message or an ack), this member's own included.
	Latest map[uint32]uint64 `json:"latest"`
	// Early are acks of messages not yet queued (another member's stream
	// can overtake the sender's), by sender and stamp.
	Early map[string][]uint32 `json:"early,omitempty"`
}

func earlyKey(sender uint32, stamp uint64) string { return fmt.Sprintf("%d/%d", sender, stamp) }

func (c *Core) lamportSend(msg []byte) (seq, stamp uint64) {
	stamp = c.lamport.Send()
	seq = c.emit(wire.OrderRecord{Type: wire.OrderTotal, Stamp: stamp, Message: msg})
	c.lamportQueue(c.id, seq, stamp, msg)
	return seq, stamp
}

// lamportQueue queues a message and acknowledges it to everyone.
func (c *Core) lamportQueue(sender uint32, seq, stamp uint64, msg []byte) {
	ls := &c.st.Lamport
	ls.Latest[sender] = max(ls.Latest[sender], stamp)
	m := lamportMsg{Sender: sender, Seq: seq, Stamp: stamp, Message: msg}
	key := earlyKey(sender, stamp)
	m.Acks = ls.Early[key]
	delete(ls.Early, key)
	i, _ := slices.BinarySearchFunc(ls.Queue, m, func(a, b lamportMsg) int {
		if clock.LamportLess(a.Stamp, a.Sender, b.Stamp, b.Sender) {
			return -1
		}
		if a.Stamp == b.Stamp && a.Sender == b.Sender {
			return 0
		}
		return 1
	})
	ls.Queue = slices.Insert(ls.Queue, i, m)
	ackStamp := c.lamport.Send()
	c.emit(wire.OrderRecord{Type: wire.OrderTotalAck, Stamp: ackStamp, AckSender: sender, AckStamp: stamp})
	c.lamportAck(c.id, ackStamp, sender, stamp)
}

func (c *Core) lamportReceive(from uint32, r wire.OrderRecord) {
	if r.Stamp <= c.st.Lamport.Latest[from] {
		c.count("rejected_lamport_stamp")
		c.events = append(c.events, bugEvent(fmt.Sprintf("member %d's total-order message %d has stamp %d, not after its earlier %d: dropped",
			from, r.Seq, r.Stamp, c.st.Lamport.Latest[from])))
		return
	}
	c.lamport.Receive(r.Stamp)
	c.lamportQueue(from, r.Seq, r.Stamp, r.Message)
}

func (c *Core) lamportAckReceive(from uint32, r wire.OrderRecord) {
	if _, ok := c.pos[r.AckSender]; !ok || r.Stamp <= c.st.Lamport.Latest[from] || r.AckStamp >= r.Stamp {
		c.count("rejected_lamport_ack")
		return
	}
	c.lamport.Receive(r.Stamp)
	c.lamportAck(from, r.Stamp, r.AckSender, r.AckStamp)
}

func (c *Core) lamportAck(from uint32, ackStamp uint64, sender uint32, stamp uint64) {
	ls := &c.st.Lamport
	ls.Latest[from] = max(ls.Latest[from], ackStamp)
	i := slices.IndexFunc(ls.Queue, func(m lamportMsg) bool { return m.Sender == sender && m.Stamp == stamp })
	if i >= 0 {
		if !slices.Contains(ls.Queue[i].Acks, from) {
			ls.Queue[i].Acks = append(ls.Queue[i].Acks, from)
			slices.Sort(ls.Queue[i].Acks)
		}
	} else if stamp > ls.Latest[sender] {
		// The message is still on its way (or this is its sender's own
		// ack, which FIFO brings after it). Early acks are bounded: each
		// member's stream holds at most Window unacknowledged records.
		key := earlyKey(sender, stamp)
		if len(ls.Early) >= len(c.members)*c.cfg.Window*2 {
			c.count("rejected_lamport_early_full")
		} else if !slices.Contains(ls.Early[key], from) {
			ls.Early[key] = append(ls.Early[key], from)
		}
	} else {
		c.count("lamport_late_ack")
	}
	c.lamportDeliver()
}

func (c *Core) lamportDeliver() {
	ls := &c.st.Lamport
	for len(ls.Queue) > 0 {
		h := ls.Queue[0]
		if c.lamportWaits(h) != "" {
			return
		}
		ls.Queue = ls.Queue[1:]
		c.applyTotal(Delivery{Order: TotalOrder, Sender: h.Sender, Seq: h.Seq, Lamport: h.Stamp, Message: h.Message})
	}
}

// lamportWaits says what the head waits for ("" when deliverable).
func (c *Core) lamportWaits(h lamportMsg) string {
	ls := &c.st.Lamport
	if len(h.Acks) < len(c.members) {
		var missing []uint32
		for _, m := range c.members {
			if !slices.Contains(h.Acks, m) {
				missing = append(missing, m)
			}
		}
		return fmt.Sprintf("acks from %v", missing)
	}
	for _, k := range c.members {
		if k != c.id && ls.Latest[k] <= h.Stamp {
			return fmt.Sprintf("a message from %d stamped after %d", k, h.Stamp)
		}
	}
	return ""
}

// applyTotal delivers a totally ordered message, through the state
// machine when there is one.
func (c *Core) applyTotal(d Delivery) {
	if c.machine != nil {
		if d.Lamport != 0 {
			// Not in a log: the record carries it (record.go).
			c.rec.applied = append(c.rec.applied, d.Message)
		}
		res, err := c.machine.Apply(d.Message)
		d.Result = res
		if err != nil {
			d.Error = err.Error()
		}
	}
	c.deliver(d)
}
